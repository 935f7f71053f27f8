"""The vocabulary conventions of lattice tools: words an LM never scores, and unknown words.

Why: recognisers write words into their lattices that are not words of the language: HTK's
sentence markers `!SENT_START`/`!SENT_END` (the LM adds `<s>`/`</s>` itself), SRILM's pause
`-pau-`, fillers such as Sphinx's `[SPEECH]` or `<sil>`. Scored as `<unk>` they cost every path
through them an unknown-word probability and can change the best path; SRILM's `lattice-tool`
skips them. The conventions, as `lattice-tool` has them:

- HTK's `!SENT_START` and `!SENT_END` are always epsilon (what `<s>`/`</s>` on a lattice arc
  already are when read), as `lattice-tool -read-htk` maps them to its sentence markers.
- The pause `-pau-` is epsilon, unless `keep_pause` (lattice-tool's `-keep-pause`).
- Noise words (`-noise-vocab FILE`) and ignored words (`-ignore-vocab FILE`) are epsilon too:
  the LM does not see them and they are not in the output's words. (lattice-tool keeps noise
  words in its output lattices; an arc that no LM scores is an epsilon arc here, which is the
  same path score.)
- An out-of-vocabulary word becomes `map_unk` instead of being scored as `<unk>`
  (`-map-unk WORD`), only when asked.

A word list file holds one word per line (its first field; blank lines and `#` comments
skipped), as SRILM's vocabulary files do.
"""

from __future__ import annotations

from collections.abc import Collection, Container
from pathlib import Path

from arsdecode.errors import LatticeError, OptionError
from arsdecode.lattice.input_files import read_input_text
from arsdecode.lattice.word_lattice import WordLattice

HTK_SENTENCE_MARKERS = frozenset({"!SENT_START", "!SENT_END"})
PAUSE_WORD = "-pau-"


def lm_transparent_words(*, keep_pause: bool = False,
                         noise_words: Collection[str] = (),
                         ignore_words: Collection[str] = ()) -> frozenset[str]:
    """The words that become epsilon (module docstring)."""
    words = set(HTK_SENTENCE_MARKERS) | set(noise_words) | set(ignore_words)
    if not keep_pause:
        words.add(PAUSE_WORD)
    return frozenset(words)


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
