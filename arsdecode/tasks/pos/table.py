"""The POS emission model's counts and candidates as flat arrays, built with numpy.

Why: tagging a file needs every distinct word's `(tag, ln emission)` candidates. Computing them
word by word in Python (a dict, a sort and a `math.log` per tag) cost more than the compiled
DP that uses them, and rebuilding the model's counts from the lexicon dict entry by entry cost
most of its load. Here the lexicon is read once into arrays (`Lexicon`), every known word's
candidates are one table (`CandidateRows`, row = word), unknown words' rows come from a
matrix of suffix posteriors, and a corpus gathers its tokens' candidates with one numpy
indexing per call.

Bit-identity with the per-word path (`TnTEmissions.candidates`) is by construction and tested:
ln emissions are `math.log` of the same Python numbers (a count, a posterior) plus the same
float64 scale, added in the same order (`np.log` may differ from `math.log` in the last ulp, so
it is never used for them); candidates are in tag order, as there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from arsdecode.errors import ModelError


@dataclass(frozen=True)
class CandidateRows:
    """Ragged rows of candidates: row r is entries `offsets[r]:offsets[r + 1]` of `tag` (index
    into the model's tags, ascending within a row) and `log_emission` (ln p(word | tag))."""

    offsets: np.ndarray  # (R + 1,) int64, offsets[0] == 0
    tag: np.ndarray  # (E,) intp
    log_emission: np.ndarray  # (E,) float64

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def widths(self) -> np.ndarray:
        """Candidates per row."""
        return np.diff(self.offsets)

    def take(self, rows: np.ndarray) -> CandidateRows:
        """Rows `rows` (any order, repeats allowed) as a new table, by one numpy gather."""
        offsets, entries = gather_rows(self.offsets, rows)
        return CandidateRows(offsets, self.tag[entries], self.log_emission[entries])

    def concat(self, other: CandidateRows) -> CandidateRows:
        """This table's rows, then `other`'s."""
        return CandidateRows(
            np.concatenate([self.offsets, other.offsets[1:] + self.offsets[-1]]),
            np.concatenate([self.tag, other.tag]),
            np.concatenate([self.log_emission, other.log_emission]),
        )


@dataclass(frozen=True)
class Lexicon:
    """word -> {tag: count} as arrays: word i's entries are `offsets[i]:offsets[i + 1]` of
    `tag` (index into `tags`, ascending) and `count` (positive)."""

    words: list[str]
    tags: tuple[str, ...]  # sorted
    offsets: np.ndarray  # (W + 1,) int64
    tag: np.ndarray  # (E,) intp
    count: np.ndarray  # (E,) int64

    @classmethod
    def from_mapping(cls, lexicon: Mapping[str, Mapping[str, int]]) -> Lexicon:
        """Validate and convert: counts must be ints >= 0 (zeros are dropped, and words left
        with none), tags non-empty strings without whitespace; ModelError names the entry."""
        per_word = list(lexicon.values())
        counts = [n for tc in per_word for n in tc.values()]
        if not all(issubclass(tp, int) for tp in set(map(type, counts))):
            _raise_first_bad_count(lexicon)
        try:
            count = np.array(counts, dtype=np.int64)
        except OverflowError:
            raise ModelError("a lexicon count does not fit in 64 bits") from None
        if len(count) and count.min() < 0:
            _raise_first_bad_count(lexicon)
        words = list(lexicon)
        widths = np.array(list(map(len, per_word)), dtype=np.int64)
        names = [t for tc in per_word for t in tc]
        if not count.all():  # drop zero counts, then words with no entry left
            keep = count > 0
            names = [t for t, k in zip(names, keep.tolist()) if k]
            count = count[keep]
            row = np.repeat(np.arange(len(words)), widths)
            widths = np.bincount(row[keep], minlength=len(words)).astype(np.int64)
            words = [w for w, n in zip(words, widths.tolist()) if n]
            widths = widths[widths > 0]
        if not words:
            raise ModelError("cannot build emissions from an empty training set")
        distinct = set(names)
        for t in distinct:
            if not isinstance(t, str) or not t or t != "".join(t.split()):
                w = next(w for w, tc in lexicon.items() if tc.get(t))
                raise ModelError(f"bad lexicon entry {w!r}: {t!r} -> {lexicon[w][t]!r}")
        tags = tuple(sorted(distinct))
        index = {t: i for i, t in enumerate(tags)}
        tag = np.array([index[t] for t in names], dtype=np.intp)
        offsets = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum(widths, out=offsets[1:])
        ascending = np.diff(tag) > 0
        ascending[offsets[1:-1] - 1] = True  # a word's first tag follows the previous word's
        if not ascending.all():  # (saved files are: their keys are sorted)
            order = np.lexsort((tag, np.repeat(np.arange(len(words)), widths)))
            tag, count = tag[order], count[order]
        return cls(words, tags, offsets, tag, count)

    def to_mapping(self) -> dict[str, dict[str, int]]:
        """The lexicon as word -> {tag: count} (what `save` writes)."""
        tag = [self.tags[t] for t in self.tag.tolist()]
        count = self.count.tolist()
        bounds = self.offsets.tolist()
        return {w: dict(zip(tag[lo:hi], count[lo:hi]))
                for w, lo, hi in zip(self.words, bounds, bounds[1:])}

    def tag_counts(self) -> np.ndarray:
        """c(t): tokens per tag, float64 (exact: integer sums below 2**53)."""
        return np.bincount(self.tag, weights=self.count, minlength=len(self.tags))

    def word_counts(self) -> np.ndarray:
        """Tokens per word, int64."""
        return np.add.reduceat(self.count, self.offsets[:-1])

    def vectors(self, words: np.ndarray) -> np.ndarray:
        """Tag counts of the words with indices `words`, float64, one row per tag and one
        column per word (the layout `SuffixTrie.from_sorted` takes)."""
        offsets, entries = gather_rows(self.offsets, words)
        out = np.zeros((len(self.tags), len(words)))
        column = np.repeat(np.arange(len(words)), np.diff(offsets))
        out[self.tag[entries], column] = self.count[entries]  # (word, tag) pairs are distinct
        return out

    def known_rows(self, log_scale: np.ndarray) -> CandidateRows:
        """Every word's candidates, row = word: ln emission `math.log(count) + log_scale[tag]`
        (the per-word formula of `TnTEmissions.known_log_emissions`, gathered)."""
        distinct = sorted(set(self.count.tolist()))
        logs = np.array([math.log(n) for n in distinct])
        log_count = logs[np.searchsorted(np.array(distinct, dtype=np.int64), self.count)]
        return CandidateRows(self.offsets, self.tag, log_count + log_scale[self.tag])


def unknown_rows(posterior: np.ndarray, log_scale: np.ndarray) -> CandidateRows:
    """Candidates of unknown words, one row per row of `posterior` (P(t | suffix) over tags):
    the tags with P > 0, ln emission `math.log(P) + log_scale[tag]` (see TnTEmissions)."""
    mask = posterior > 0
    offsets = np.zeros(len(posterior) + 1, dtype=np.int64)
    np.cumsum(mask.sum(axis=1), out=offsets[1:])
    row, tag = np.nonzero(mask)  # row-major: by row, tags ascending
    p = posterior[row, tag].tolist()
    log_p = np.fromiter(map(math.log, p), dtype=np.float64, count=len(p))
    return CandidateRows(offsets, tag.astype(np.intp), log_p + log_scale[tag])


def gather_rows(offsets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ragged rows delimited by `offsets`, the layout of rows `rows` laid end to end:
    (their offsets, the index of each of their entries in the original arrays)."""
    starts = offsets[:-1][rows]
    widths = offsets[1:][rows] - starts
    new_offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(widths, out=new_offsets[1:])
    # entry j of row i sits at starts[i] + j in the original and new_offsets[i] + j here
    entries = np.arange(int(new_offsets[-1]), dtype=np.int64)
    entries += np.repeat(starts - new_offsets[:-1], widths)
    return new_offsets, entries


def _raise_first_bad_count(lexicon: Mapping[str, Mapping[str, int]]) -> None:
    """The first entry whose count is not an int >= 0, in lexicon order, as a ModelError."""
    for w, tc in lexicon.items():
        for t, n in tc.items():
            if not isinstance(n, int) or n < 0:
                raise ModelError(f"bad lexicon entry {w!r}: {t!r} -> {n!r}")
