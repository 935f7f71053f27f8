"""The segmentation lattice built in Python: the reference the compiled builder is tested
against (issue 33).

Why kept: `lattice.segmentation_lattice` builds its lattices in compiled code
(`compiled.build_batch`); this is the Python builder it replaced, written the plain way
(a prefix walk of the vocabulary's surface forms from each offset, every unknown-word span in
numpy), so that tests/test_segment_compiled.py can check arc for arc, on random and real
text, that the fast builder makes the same lattice. Not used by the segmenter.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable
from dataclasses import dataclass

import numpy as np

from arsdecode.lattice.word_lattice import WordLattice
from arsdecode.tasks.segment.lattice import (
    DEFAULT_UNKNOWN_MAX_LENGTH,
    DEFAULT_UNKNOWN_PENALTY_PER_CHAR,
    SurfaceIndex,
    check_lattice_options,
)
from arsdecode.tasks.segment.spelling import SpellingModel, encode


def reference_segmentation_lattice(
    text: str,
    vocabulary: SurfaceIndex | Iterable[str],
    *,
    max_word_length: int | None = None,
    unknown_penalty_per_char: float = DEFAULT_UNKNOWN_PENALTY_PER_CHAR,
    unknown_max_length: int = DEFAULT_UNKNOWN_MAX_LENGTH,
    breaks: Collection[int] = frozenset(),
    source: str = "segmentation",
    spelling: SpellingModel | None = None,
    spelling_scale: float = 1.0,
    unknown_word_cost: float = 0.0,
    boundary_bonus: np.ndarray | None = None,
) -> WordLattice:
    """`lattice.segmentation_lattice`, built in Python (same arguments, same lattice)."""
    index, longest_word = check_lattice_options(
        text, vocabulary, max_word_length, unknown_penalty_per_char, unknown_max_length,
        boundary_bonus, source)
    unknown = (_FlatUnknown(unknown_penalty_per_char) if spelling is None
               else _SpelledUnknown(spelling, spelling_scale, unknown_word_cost))
    wl = _canonical_lattice(text, index, longest_word, unknown, unknown_max_length, breaks,
                            source)
    if boundary_bonus is not None:
        bonus = np.asarray(boundary_bonus, dtype=np.float64)[wl.dst]
        wl = dataclasses.replace(wl, log_weights=wl.log_weights + np.where(
            wl.dst < len(text), bonus, 0.0))
    return wl


@dataclass(frozen=True)
class _FlatUnknown:
    penalty: float

    def log_weights(self, text: str, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        return -self.penalty * lengths.astype(np.float64)


@dataclass(frozen=True)
class _SpelledUnknown:
    model: SpellingModel
    scale: float
    per_word: float

    def log_weights(self, text: str, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        return self.scale * self.model.unknown_log_p(encode(text), starts, lengths) \
            - self.per_word


def _canonical_lattice(text: str, index: SurfaceIndex, longest_word: int,
                       unknown: _FlatUnknown | _SpelledUnknown,
                       unknown_max_length: int, breaks: Collection[int],
                       source: str) -> WordLattice:
    """The lattice, made directly in `WordLattice`'s canonical form, which it already has by
    construction: node i is offset i (a topological order: every arc goes forward), every node
    is on a path (each character has an arc, and no break stops a one-character arc), every
    weight is finite, arcs are sorted by source. `WordLattice.build` would check all that
    again and take three times as long as finding the arcs (the tests compare both).

    Word arcs walk the prefix set from each offset and stop at the first non-prefix (a few
    characters on average); unknown arcs are every (offset, length) pair, in numpy, minus the
    word pairs and those crossing a break."""
    n = len(text)
    next_break = _next_break_array(n, breaks)
    limit = np.minimum(next_break, np.arange(n) + longest_word)
    prefixes, lookup = index.prefixes, index.words.get
    w_src: list[int] = []
    w_dst: list[int] = []
    w_words: list[str] = []
    for i in range(n):
        stop = int(limit[i])
        j = i + 1
        while j <= stop:
            piece = text[i:j]
            if piece not in prefixes:
                break
            for word in lookup(piece, ()):
                w_src.append(i)
                w_dst.append(j)
                w_words.append(word)
            j += 1
    u = unknown_max_length
    u_src = np.repeat(np.arange(n, dtype=np.int64), u)
    u_len = np.tile(np.arange(1, u + 1, dtype=np.int64), n)
    fits = u_src + u_len <= next_break[u_src]
    is_word = np.zeros((n, u + 1), dtype=bool)
    ws, wd = np.array(w_src, dtype=np.int64), np.array(w_dst, dtype=np.int64)
    short = wd - ws <= u
    is_word[ws[short], (wd - ws)[short]] = True
    keep = fits & ~is_word[u_src, u_len]
    u_src, u_len = u_src[keep], u_len[keep]
    u_dst = u_src + u_len
    src = np.concatenate([ws, u_src])
    order = np.argsort(src, kind="stable")
    unknown_words = [text[i:j] for i, j in zip(u_src.tolist(), u_dst.tolist(), strict=True)]
    words = w_words + unknown_words
    weights = np.concatenate([np.zeros(len(ws)), unknown.log_weights(text, u_src, u_len)])
    return WordLattice(
        n_nodes=n + 1, finals={n: 0.0}, src=src[order], dst=np.concatenate([wd, u_dst])[order],
        words=tuple(words[k] for k in order.tolist()), log_weights=weights[order],
        node_names=tuple(map(str, range(n + 1))), source=source)


def _next_break_array(n: int, breaks: Collection[int]) -> np.ndarray:
    """For each offset i < n, the first break after i (or n): the farthest an arc may reach."""
    inside = np.array(sorted({b for b in breaks if 0 < b < n}) + [n], dtype=np.int64)
    return inside[np.searchsorted(inside, np.arange(n), side="right")]
