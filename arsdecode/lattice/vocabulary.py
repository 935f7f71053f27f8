"""The vocabulary conventions of lattice tools: words an LM never scores, and unknown words.

Why: recognisers write words into their lattices that are not words of the language: HTK's
sentence markers `!SENT_START`/`!SENT_END` (the LM adds `<s>`/`</s>` itself), SRILM's pause
`-pau-`, fillers such as Sphinx's `[SPEECH]` or `<sil>`. Scored as `<unk>` they cost every path
through them an unknown-word probability and can change the best path; SRILM's `lattice-tool`
skips them. The conventions, as `lattice-tool` has them:

- Sentence markers: HTK's `!SENT_START` and `!SENT_END` (or the pair `sentence_markers`
  names, the CLI's `--sentence-markers A,B`) are `<s>` and `</s>`, which on a lattice arc
  are epsilon because the engine adds them around every path (`lattice-tool -read-htk` maps
  them the same way).
- Pauses and fillers are skipped by the LM unless `keep_pause` (lattice-tool's
  `-keep-pause`). The default list, and the toolkit each word comes from:

  | word | toolkit |
  |---|---|
  | `-pau-` | SRILM's pause (lattice-tool skips it by default) |
  | `<sil>` | CMU Sphinx's silence |
  | `[SPEECH]`, `[NOISE]` | CMU Sphinx's fillers (the Sphinx-4 lattice has `[SPEECH]`) |
  | `!NULL` | HTK's null word (epsilon in SLF already; other formats may carry it) |

  `--pause-vocab FILE` replaces the list; `--noise-vocab FILE` and `--ignore-vocab FILE` add
  words (lattice-tool's `-noise-vocab` and `-ignore-vocab`). A skipped word is an epsilon arc:
  the LM does not see it and the output's words do not hold it (lattice-tool keeps noise words
  in its output lattices; the path's score is the same).
- An out-of-vocabulary word becomes `map_unk` instead of being scored as `<unk>`
  (`-map-unk WORD`), only when asked.
- Multiwords (`i_think`, as SRILM's SPINE lattices hold them) are split into a chain of their
  words when asked (`-split-multiwords`; the separator `_`, lattice-tool's `-multi-char`): the
  first arc of the chain keeps the arc's weight, so every path keeps its score and its words
  become the LM's words.

A word list file holds one word per line (its first field; blank lines and `#` comments
skipped), as SRILM's vocabulary files do.
"""

from __future__ import annotations

from collections.abc import Collection, Container
from pathlib import Path

from arsdecode.errors import LatticeError, OptionError
from arsdecode.lattice.input_files import read_input_text
from arsdecode.lattice.word_lattice import RawArc, WordLattice

HTK_SENTENCE_MARKERS = ("!SENT_START", "!SENT_END")
DEFAULT_PAUSE_WORDS = frozenset({"-pau-", "<sil>", "[SPEECH]", "[NOISE]", "!NULL"})


def lm_transparent_words(*, sentence_markers: Collection[str] = HTK_SENTENCE_MARKERS,
                         pause_words: Collection[str] = DEFAULT_PAUSE_WORDS,
                         keep_pause: bool = False, noise_words: Collection[str] = (),
                         ignore_words: Collection[str] = ()) -> frozenset[str]:
    """The words that become epsilon (module docstring)."""
    words = set(sentence_markers) | set(noise_words) | set(ignore_words)
    if not keep_pause:
        words |= set(pause_words)
    return frozenset(words)


def parse_sentence_markers(value: str) -> tuple[str, str]:
    """`--sentence-markers A,B`: the start and the end marker of the lattices."""
    parts = value.split(",")
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise OptionError(f"--sentence-markers {value!r}: give two words, START,END")
    return parts[0].strip(), parts[1].strip()


def read_word_list(path: str | Path) -> frozenset[str]:
    """The words of a vocabulary file (module docstring); errors name the file."""
    text = read_input_text(path, "word list", bytes_ok=True)
    words = {line.split()[0] for line in text.splitlines()
             if line.strip() and not line.lstrip().startswith("#")}
    if not words:
        raise LatticeError(f"{path}: the word list is empty")
    return frozenset(words)


def apply_conventions(wl: WordLattice, epsilon_words: Collection[str]) -> WordLattice:
    """`wl` with every arc word in `epsilon_words` made epsilon."""
    return wl.with_words(dict.fromkeys(epsilon_words))


def map_unknown_words(wl: WordLattice, vocabulary: Container[str], unk_word: str,
                      model_name: str = "the model") -> WordLattice:
    """`wl` with every word outside `vocabulary` relabelled `unk_word` (`-map-unk`), which
    must itself be a word of the model."""
    if unk_word not in vocabulary:
        raise OptionError(f"--map-unk {unk_word!r}: not a word of {model_name}")
    unknown = {w for w in wl.words if w is not None and w not in vocabulary}
    return wl.with_words(dict.fromkeys(unknown, unk_word))


MULTIWORD_SEPARATOR = "_"


def split_multiwords(wl: WordLattice, separator: str = MULTIWORD_SEPARATOR) -> WordLattice:
    """`wl` with every arc whose word joins several words by `separator` ("i_think") replaced
    by a chain of one arc per word through new nodes (module docstring). A word that starts
    or ends with the separator, or holds two in a row, is kept whole (no empty words)."""
    arcs: list[RawArc] = []
    n_nodes = wl.n_nodes
    names = list(wl.node_names)
    for a, word in enumerate(wl.words):
        src, dst, weight = int(wl.src[a]), int(wl.dst[a]), float(wl.log_weights[a])
        parts = word.split(separator) if word is not None else []
        if len(parts) < 2 or not all(parts):
            arcs.append((src, dst, word, weight))
            continue
        chain = [src, *range(n_nodes, n_nodes + len(parts) - 1), dst]
        names += [f"{names[src]}.{word}.{k}" for k in range(1, len(parts))]
        n_nodes += len(parts) - 1
        for k, part in enumerate(parts):
            arcs.append((chain[k], chain[k + 1], part, weight if k == 0 else 0.0))
    if n_nodes == wl.n_nodes:
        return wl
    return WordLattice.build(n_nodes, wl.start, dict(wl.finals), arcs, source=wl.source,
                             node_names=names)
