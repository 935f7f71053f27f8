"""TnT's suffix model for unknown words (Brants 2000, section 2.3), one trie per word class.

Why its own module: it is the only part of the POS emission model with real estimation
choices (which words, which prior, which theta), and each choice is documented and tested
here rather than buried in the lexicon code of `pos.py`.

Choices, all as in TnT unless noted:

* Statistics come from *rare* words only: word types whose total training count is at most
  `RARE_MAX_COUNT` (10). Their tokens (not types) are counted, so a word seen 7 times weighs 7.
  Rare words behave like unseen ones far more than frequent function words do.
* Suffixes are the last 1..`SUFFIX_MAX_LEN` (10) characters of the word, case kept.
* Successive abstraction: starting from the root distribution, for i = 1 .. length of the
  longest suffix present in the trie, with ``n(s)`` the rare tokens ending in suffix s and
  ``P^`` the maximum likelihood estimate at that node,
  ``P(t | l[-i:]) = (n(s) P^(t | s) + alpha P(t | l[-i+1:])) / (n(s) + alpha)``.
  This is NOT TnT's weighting (ours): it is the posterior mean under a Dirichlet prior of
  strength `alpha` centred on the shorter suffix's estimate, so a suffix seen on one or two
  rare tokens barely moves the estimate while a frequent one dominates. TnT instead uses
  ``(P^ + theta P_prev) / (1 + theta)`` with one global theta, the sample standard deviation
  (denominator s - 1) of the unconditional ML tag probabilities (0.032 here), so every
  matched suffix, however rare, takes ~97% of the weight and the longest matched suffix
  (often seen once) decides. `alpha=None` restores TnT's rule (`tnt_theta`).
  Why: on a development split carved from the training data (see data_prep/pos_data.py and
  docs/results-pos.md) unknown-word accuracy rose from 80.4% (TnT's theta) to 85.5% (alpha
  50, trigram); alpha 30..100 is a plateau. `SUFFIX_ALPHA` is that choice.
* The root (empty suffix) is the maximum likelihood tag distribution of the class's rare
  tokens. (NLTK's TnT port starts from the all-token prior instead.) This root is what makes
  the Bayes inversion in `pos.py` a proper conditional model: it *is* P(t | unknown word of
  this class), so tags never seen on a rare word of the class (DT, TO, ...) get probability 0
  and do not appear in unknown-word lattices.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from arsdecode.errors import OptionError

RARE_MAX_COUNT = 10
SUFFIX_MAX_LEN = 10
SUFFIX_ALPHA: float | None = 50.0
WordClass = Literal["upper", "lower"]
WORD_CLASSES: tuple[WordClass, ...] = ("upper", "lower")


def word_class(word: str) -> WordClass:
    """TnT keeps separate tries for capitalised and other words: "upper" or "lower"."""
    return "upper" if word[:1].isupper() else "lower"


def tnt_theta(tag_counts: Sequence[float]) -> float:
    """Standard deviation (s - 1 denominator) of the unconditional ML tag probabilities."""
    counts = np.asarray(tag_counts, dtype=np.float64)
    if counts.size < 2 or counts.sum() <= 0:
        return 0.0
    probs = counts / counts.sum()
    return float(np.std(probs, ddof=1))


class SuffixCounts(Mapping[str, np.ndarray]):
    """suffix -> tag counts (a row of one matrix): the trie's nodes without a dict of arrays."""

    def __init__(self, ids: dict[str, int], matrix: np.ndarray) -> None:
        self.ids = ids  # suffix -> row of `matrix`
        self.matrix = matrix

    def __getitem__(self, suffix: str) -> np.ndarray:
        return self.matrix[self.ids[suffix]]

    def __contains__(self, suffix: object) -> bool:
        return suffix in self.ids

    def __iter__(self):
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True, eq=False)
class SuffixTrie:
    """Tag counts of the rare tokens of one word class, keyed by suffix ("" is the root).

    `counts[suffix]` is a float64 array over `tags` (the model's full tag list, so arrays of
    different classes line up).
    """

    tags: tuple[str, ...]
    theta: float
    max_len: int
    counts: Mapping[str, np.ndarray] = field(repr=False)
    alpha: float | None = SUFFIX_ALPHA

    @classmethod
    def build(
        cls,
        tags: Sequence[str],
        rare_words: Iterable[tuple[str, Mapping[str, int]]],
        theta: float,
        max_len: int = SUFFIX_MAX_LEN,
        alpha: float | None = SUFFIX_ALPHA,
    ) -> SuffixTrie:
        """Count every suffix (length 1..max_len, and the root) of each `(word, {tag: n})`.

        `alpha` is the Dirichlet strength of successive abstraction; None uses TnT's `theta`.
        """
        if alpha is not None and not alpha > 0:
            raise OptionError(f"suffix alpha must be positive (or None for TnT), got {alpha!r}")
        index = {t: i for i, t in enumerate(tags)}
        # Vectorised: every (suffix, tag, count) entry is collected in flat lists, then summed
        # into one (suffixes x tags) matrix by a single bincount. Counts are integers, so the
        # sums are exact in float64 whatever the order (same values as adding word by word).
        rare = sorted(rare_words, key=lambda wt: -len(wt[0]))  # longest first: see below
        words = [w for w, _ in rare]
        tag_idx = [index[t] for _, tc in rare for t in tc]
        tag_n = [n for _, tc in rare for n in tc.values()]
        tag_off = [0, *itertools.accumulate(len(tc) for _, tc in rare)]
        suffix_id: dict[str, int] = {"": 0}
        new_id = suffix_id.setdefault
        occ_word: list[int] = list(range(len(words)))  # the root, for every word
        occ_suffix: list[int] = [0] * len(words)
        lengths = [len(w) for w in words]
        for i in range(1, max_len + 1):  # one pass per suffix length, over the words that long
            count = bisect.bisect_right(lengths, -i, key=lambda n: -n)  # a prefix: sorted
            if not count:
                break
            occ_word += range(count)
            occ_suffix += [new_id(w[-i:], len(suffix_id)) for w in words[:count]]
        n_tags = len(tags)
        offsets = np.asarray(tag_off, dtype=np.int64)
        per_word = np.diff(offsets)
        occ = np.asarray(occ_word, dtype=np.int64)
        reps = per_word[occ]  # each occurrence expands to its word's tags
        entry_suffix = np.repeat(np.asarray(occ_suffix, dtype=np.int64), reps)
        first = np.repeat(offsets[:-1][occ], reps)
        within = np.arange(len(entry_suffix)) - np.repeat(np.cumsum(reps) - reps, reps)
        entry = first + within
        flat = entry_suffix * n_tags + np.asarray(tag_idx, dtype=np.int64)[entry]
        matrix = np.bincount(flat, weights=np.asarray(tag_n, dtype=np.float64)[entry],
                             minlength=len(suffix_id) * n_tags).reshape(len(suffix_id), n_tags)
        return cls(tuple(tags), float(theta), int(max_len), SuffixCounts(suffix_id, matrix),
                   None if alpha is None else float(alpha))

    @property
    def total(self) -> float:
        """Number of rare tokens in this class."""
        return float(self.counts[""].sum())

    @property
    def root(self) -> np.ndarray:
        """P(t | unknown word of this class): ML over the class's rare tokens (zeros if none)."""
        root = self.counts[""]
        s = root.sum()
        return root / s if s > 0 else np.zeros_like(root)

    def longest_suffix(self, word: str) -> int:
        """Length of the longest suffix of `word` present in the trie (0: root only)."""
        counts = self.counts
        present = counts.ids if isinstance(counts, SuffixCounts) else counts  # a plain dict
        n = 0
        for i in range(1, min(self.max_len, len(word)) + 1):
            if word[-i:] not in present:
                break
            n = i
        return n

    def posterior_many(self, words: Sequence[str]) -> np.ndarray:
        """`posterior` of every word, one row each, with the same floating-point operations
        per row, but vectorised over the words at each suffix length (for a corpus's unknown
        words at once)."""
        out = np.tile(self.root, (len(words), 1))
        if not len(words) or not out.any():
            return out
        theta, alpha = self.theta, self.alpha
        depth = [self.longest_suffix(w) for w in words]
        for i in range(1, max(depth) + 1):
            rows = [r for r, d in enumerate(depth) if d >= i]
            node = np.stack([self.counts[words[r][-i:]] for r in rows])
            total = node.sum(axis=1)[:, None]
            if alpha is None:
                out[rows] = (node / total + theta * out[rows]) / (1.0 + theta)
            else:
                out[rows] = (node + alpha * out[rows]) / (total + alpha)
        for r in range(len(words)):
            out[r] /= math.fsum(out[r])
        return out

    def posterior(self, word: str) -> np.ndarray:
        """P(t | suffix of `word`) over `tags` by successive abstraction; sums to 1 (or all 0
        when the class has no rare tokens at all)."""
        p = self.root
        if not p.any():
            return p
        theta, alpha = self.theta, self.alpha
        for i in range(1, self.longest_suffix(word) + 1):
            node = self.counts[word[-i:]]
            if alpha is None:
                p = (node / node.sum() + theta * p) / (1.0 + theta)
            else:
                p = (node + alpha * p) / (node.sum() + alpha)
        # Re-normalise away the last ulp of rounding so callers can rely on an exact sum.
        return p / math.fsum(p)
