"""The segmenters compared in experiments/segment_compare.py, behind one interface, and a small
reference Viterbi over word lattices.

Why here and not in arsdecode: `wordsegment`, `wordninja` and `symspellpy` are pip packages
the engine does not depend on (dev extras); the comparison and its tests import them from
here and skip a tool that is not installed.

Each segmenter is a callable `text -> list[str]` on normalised text (lower-case letters and
digits, `arsdecode.tasks.segment.normalize_text`), built either as shipped (`shipped(name)`) or
from the training text of our language models (`trained(name, sentences)`):

* wordsegment: its module-level `UNIGRAMS` / `BIGRAMS` count dicts replaced by ours (surface
  forms, `<s>`-free bigrams as "w1 w2"), and `Segmenter.total` by our token count;
* wordninja: `wordninja.LanguageModel(file)` on our words ranked by frequency (gzip, one a line,
  as it reads its own);
* symspellpy: `SymSpell.load_dictionary` on our "word count" lines, `word_segmentation` with
  max_edit_distance 0 (segment only, never respell: the cuts must spell the input).

`reference_dag_decode` is an independent exact Viterbi over (node, LM context) with
KenLM-style state merging (`TargetModel.minimal_context`): plain Python and numpy, written for
this comparison to cross-check `arsdecode.methods.expansion_dp.dag_decode` and to run while it is
not there.
"""

from __future__ import annotations

import gzip
import math
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from arsdecode.lattice.word_lattice import WordLattice
from arsdecode.model.interface import ModelLike, context_rows
from arsdecode.model.maxarpa_lm import as_target_model
from arsdecode.tasks.segment.lattice import surface_form

Segmenter = Callable[[str], list[str]]
TOOLS = ("wordsegment", "wordninja", "symspellpy")


def available(name: str) -> bool:
    """Whether the tool's package imports."""
    try:
        __import__(name)
    except ImportError:
        return False
    return True


# ----- counts from the training text ------------------------------------------------------------
def surface_sentences(sentences: Iterable[Sequence[str]]) -> list[list[str]]:
    """Training sentences as the segmenters see words: surface forms, punctuation dropped."""
    out = []
    for sentence in sentences:
        words = [s for s in (surface_form(w) for w in sentence) if s]
        if words:
            out.append(words)
    return out


def counts(sentences: Sequence[Sequence[str]]) -> tuple[Counter[str], Counter[str]]:
    """(unigram counts, bigram counts as "w1 w2") over surface sentences."""
    uni: Counter[str] = Counter()
    bi: Counter[str] = Counter()
    for words in sentences:
        uni.update(words)
        bi.update(f"{a} {b}" for a, b in zip(words, words[1:]))
    return uni, bi


# ----- the tools ------------------------------------------------------------------------------
def _spelled(text: str, words: list[str]) -> list[str]:
    """The tool's words, checked to spell `text` (a tool that changed characters is a bug
    here: the cuts of different characters cannot be compared)."""
    if "".join(words) != text:
        raise RuntimeError(f"segmenter output {''.join(words)[:40]!r} does not spell "
                           f"{text[:40]!r}")
    return words


def shipped(name: str) -> Segmenter:
    """The tool with its own shipped dictionary."""
    if name == "wordsegment":
        import wordsegment  # type: ignore[import-untyped]
        seg = wordsegment.Segmenter()
        seg.load()
        return lambda text: _spelled(text, seg.segment(text))
    if name == "wordninja":
        import wordninja  # type: ignore[import-untyped]
        model = wordninja.DEFAULT_LANGUAGE_MODEL
        return lambda text: _spelled(text, model.split(text))
    if name == "symspellpy":
        import importlib.resources

        from symspellpy import SymSpell  # type: ignore[import-untyped]
        sym = SymSpell(max_dictionary_edit_distance=0, prefix_length=7)
        path = importlib.resources.files("symspellpy") / "frequency_dictionary_en_82_765.txt"
        sym.load_dictionary(str(path), term_index=0, count_index=1)
        return lambda text: _spelled(text, _symspell_words(sym, text))
    raise ValueError(f"unknown tool {name!r}; one of {TOOLS}")


def trained(name: str, sentences: Sequence[Sequence[str]], workdir: Path | None = None
            ) -> Segmenter:
    """The tool fed the counts of `sentences` (surface sentences, `surface_sentences`), the
    training text of our LMs. `workdir` keeps the word files wordninja and symspellpy read
    (default: a temporary directory)."""
    uni, bi = counts(sentences)
    folder = Path(workdir or tempfile.mkdtemp(prefix="segment_tools_"))
    folder.mkdir(parents=True, exist_ok=True)
    if name == "wordsegment":
        import wordsegment
        seg = wordsegment.Segmenter()
        seg.unigrams.update({w: float(c) for w, c in uni.items()})
        seg.bigrams.update({b: float(c) for b, c in bi.items()})
        seg.total = float(sum(uni.values()))
        seg.limit = max(map(len, uni))
        return lambda text: _spelled(text, seg.segment(text))
    if name == "wordninja":
        import wordninja
        path = folder / "words_by_frequency.txt.gz"
        ranked = sorted(uni, key=lambda w: (-uni[w], w))
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write("\n".join(ranked) + "\n")
        model = wordninja.LanguageModel(str(path))
        return lambda text: _spelled(text, model.split(text))
    if name == "symspellpy":
        from symspellpy import SymSpell
        path = folder / "frequency_dictionary.txt"
        path.write_text("".join(f"{w} {c}\n" for w, c in uni.most_common()), encoding="utf-8")
        sym = SymSpell(max_dictionary_edit_distance=0, prefix_length=7)
        sym.load_dictionary(str(path), term_index=0, count_index=1)
        return lambda text: _spelled(text, _symspell_words(sym, text))
    raise ValueError(f"unknown tool {name!r}; one of {TOOLS}")


def _symspell_words(sym, text: str) -> list[str]:
    if not text:
        return []
    return sym.word_segmentation(text, max_edit_distance=0,
                                 max_segmentation_word_length=max(sym._max_length, 1)
                                 ).segmented_string.split()


# ----- the reference decoder ------------------------------------------------------------------
def reference_dag_decode(lm: ModelLike, wl: WordLattice) -> tuple[list[str], float]:
    """(words, ln score) of the best path of `wl` under `lm`: the arc and final weights plus
    the LM's ln probability with <s> and </s>. Exact: a Viterbi over (node, context) where a
    context is cut to its longest suffix the model can still use, so merged states score every
    continuation alike (the full DP's merging)."""
    tm = as_target_model(lm)
    width = max(getattr(tm, "order", 2) - 1, 1)
    bos, eos = int(tm.bos), int(tm.eos)
    word_ids = {w: int(i) for w, i in zip(
        sorted({w for w in wl.words if w is not None}),
        tm.ids(sorted({w for w in wl.words if w is not None})).tolist(), strict=True)}
    start = tuple(int(x) for x in tm.minimal_context(context_rows([[bos]], width))[0] if x >= 0)
    best: list[dict[tuple[int, ...], float]] = [dict() for _ in range(wl.n_nodes)]
    back: dict[tuple[int, tuple[int, ...]], tuple[int, tuple[int, ...], int]] = {}
    best[0][start] = 0.0
    for v in range(wl.n_nodes):
        states = best[v]
        arcs = list(wl.arcs_from(v))
        if not states or not arcs:
            continue
        ctxs = list(states)
        base = np.array([states[c] for c in ctxs])
        rows = context_rows(ctxs, width)
        for a in arcs:
            d, word, w = int(wl.dst[a]), wl.words[a], float(wl.log_weights[a])
            if word is None:
                nexts, scores = ctxs, base + w
            else:
                wid = np.full(len(ctxs), word_ids[word], dtype=np.int64)
                scores = base + w + tm.log_prob(rows, wid)
                grown = np.concatenate([rows[:, 1:], wid[:, None]], axis=1)
                nexts = [tuple(int(x) for x in r if x >= 0) for r in tm.minimal_context(grown)]
            target = best[d]
            for prev, nxt, s in zip(ctxs, nexts, scores.tolist(), strict=True):
                if s > target.get(nxt, -math.inf):
                    target[nxt] = s
                    back[(d, nxt)] = (v, prev, a)
    end: tuple[float, int, tuple[int, ...]] | None = None
    for f, fw in wl.finals.items():
        ctxs = list(best[f])
        if not ctxs:
            continue
        lp = tm.log_prob(context_rows(ctxs, width), np.full(len(ctxs), eos, dtype=np.int64))
        for c, s in zip(ctxs, (np.array([best[f][c] for c in ctxs]) + lp + fw).tolist(),
                        strict=True):
            if end is None or s > end[0]:
                end = (s, f, c)
    if end is None:
        raise ValueError("no path")
    score, node, ctx = end
    path: list[int] = []
    while (node, ctx) in back:
        node, ctx, arc = back[(node, ctx)]
        path.append(arc)
    return wl.path_words(path[::-1]), score
