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
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
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


def upper_mask(words: Sequence[str]) -> list[bool]:
    """`word_class(w) == "upper"` for every word, without a function call per word."""
    return [w[:1].isupper() for w in words]


def case_variants(words: Sequence[str], counts: np.ndarray, rare_max_count: int) -> np.ndarray:
    """Which words are rare case variants of frequent words: capitalised (`word_class` upper),
    count <= `rare_max_count`, and their lower-cased form counted more than that.

    Why: such a word ("Which", "Each", "Whose": the sentence-initial forms of function words)
    is rare only because of its capital, not because it behaves like an unseen word, and the
    suffix model is an estimate of how unseen words behave. Kept in the statistics, "Which"
    alone made the capitalised suffix "ich" ~35% WDT, and "He visited Munich yesterday ."
    came out Munich/WDT. Dropping them was better on EWT dev at every order (unknown words
    +0.1 to +1.2 points with capitalised states; docs/results-pos.md).
    """
    count_of = dict(zip(words, counts.tolist()))
    return np.array([w[:1].isupper() and count_of[w] <= rare_max_count
                     and count_of.get(w.lower(), 0) > rare_max_count for w in words],
                    dtype=bool)


def tnt_theta(tag_counts: Sequence[float]) -> float:
    """Standard deviation (s - 1 denominator) of the unconditional ML tag probabilities."""
    counts = np.asarray(tag_counts, dtype=np.float64)
    if counts.size < 2 or counts.sum() <= 0:
        return 0.0
    probs = counts / counts.sum()
    return float(np.std(probs, ddof=1))


def by_reversal(words: Sequence[str]) -> tuple[list[int], list[str]]:
    """The order `SuffixCounts` keeps, where the words ending with one suffix are contiguous:
    (indices of `words` sorted by the reversed word, the reversed words in that order)."""
    reversed_words = [w[::-1] for w in words]
    order = sorted(range(len(words)), key=reversed_words.__getitem__)
    return order, [reversed_words[k] for k in order]


class SuffixCounts(Mapping[str, np.ndarray]):
    """suffix -> tag counts of the rare tokens ending with it, answered on demand.

    Why not a trie of count vectors: building one node per (word, suffix) cost ~0.15 s per
    model load, most of a tagger's start-up, while a corpus asks for a few thousand nodes. Here
    the rare words are sorted by their reversal, so the words ending with a suffix are one
    contiguous range (two bisections), and its counts are a difference of prefix sums. Counts
    are integers, so the sums are exact in float64: the same vectors as adding word by word.
    """

    def __init__(self, reversed_words: list[str], cumulative: np.ndarray, max_len: int) -> None:
        # Sorted; word k's tag counts are cumulative[:, k + 1] - cumulative[:, k] (one row per
        # tag: a running sum along contiguous memory costs half the one across rows).
        self._keys = reversed_words
        self._cumulative = cumulative
        self._max_len = max_len

    def _range(self, suffix: str) -> tuple[int, int]:
        if len(suffix) > self._max_len:
            return 0, 0
        if not suffix:
            return 0, len(self._keys)
        prefix = suffix[::-1]
        lo = bisect.bisect_left(self._keys, prefix)
        last = ord(prefix[-1])
        if last < 0x10FFFF:  # the first string past every one that starts with `prefix`
            return lo, bisect.bisect_left(self._keys, prefix[:-1] + chr(last + 1), lo)
        hi = lo
        while hi < len(self._keys) and self._keys[hi].startswith(prefix):
            hi += 1
        return lo, hi

    def longest(self, word: str) -> int:
        """Length of the longest suffix of `word` (at most max_len) that some rare word ends
        with: the longest common prefix of the reversed word with its sorted neighbours."""
        query = word[::-1][: self._max_len]
        pos = bisect.bisect_left(self._keys, query)
        best = 0
        for k in (pos - 1, pos):
            if 0 <= k < len(self._keys):
                key = self._keys[k]
                n = 0
                for a, b in zip(query, key):
                    if a != b:
                        break
                    n += 1
                best = max(best, n)
        return best

    def __getitem__(self, suffix: str) -> np.ndarray:
        lo, hi = self._range(suffix)
        if hi == lo and suffix:
            raise KeyError(suffix)
        return self._cumulative[:, hi] - self._cumulative[:, lo]

    def many(self, suffixes: Sequence[str]) -> np.ndarray:
        """`self[s]` of every suffix (all present), one row each, by one numpy gather: the
        same numbers as row by row, without a numpy call (or a search) per repeated suffix."""
        ranges = {s: self._range(s) for s in dict.fromkeys(suffixes)}
        lo, hi = zip(*map(ranges.__getitem__, suffixes))
        return (self._cumulative[:, list(hi)] - self._cumulative[:, list(lo)]).T

    def __contains__(self, suffix: object) -> bool:
        if not isinstance(suffix, str):
            return False
        lo, hi = self._range(suffix)
        return hi > lo or not suffix

    def __iter__(self) -> Iterator[str]:
        seen = {""}
        yield ""
        for rev in self._keys:
            for i in range(1, min(self._max_len, len(rev)) + 1):
                if rev[:i] not in seen:
                    seen.add(rev[:i])
                    yield rev[:i][::-1]

    def __len__(self) -> int:
        return sum(1 for _ in self)


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
        index = {t: i for i, t in enumerate(tags)}
        rare = list(rare_words)
        order, reversed_words = by_reversal([w for w, _ in rare])
        vectors = np.zeros((len(tags), len(rare)))
        for k, i in enumerate(order):
            for tag, n in rare[i][1].items():
                vectors[index[tag], k] += n
        return cls.from_sorted(tags, reversed_words, vectors, theta, max_len, alpha)

    @classmethod
    def from_sorted(
        cls,
        tags: Sequence[str],
        reversed_words: list[str],
        vectors: np.ndarray,
        theta: float,
        max_len: int = SUFFIX_MAX_LEN,
        alpha: float | None = SUFFIX_ALPHA,
    ) -> SuffixTrie:
        """As `build`, from the rare words reversed and sorted (`by_reversal`; not checked)
        and their tag counts as the columns of `vectors` (float64, one row per tag, same
        order): what `TnTEmissions` has at hand, with no mapping per word."""
        if alpha is not None and not alpha > 0:
            raise OptionError(f"suffix alpha must be positive (or None for TnT), got {alpha!r}")
        cumulative = np.zeros((len(tags), len(reversed_words) + 1))
        np.cumsum(vectors, axis=1, out=cumulative[:, 1:])
        counts = SuffixCounts(reversed_words, cumulative, int(max_len))
        return cls(tuple(tags), float(theta), int(max_len), counts,
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
        if isinstance(counts, SuffixCounts):
            return counts.longest(word)
        n = 0
        for i in range(1, min(self.max_len, len(word)) + 1):
            if word[-i:] not in counts:
                break
            n = i
        return n

    def posterior_many(self, words: Sequence[str],
                       depths: Sequence[int] | None = None) -> np.ndarray:
        """`posterior` of every word, one row each, vectorised over the words at each suffix
        length (a corpus's unknown words at once). Each row starts at the root and takes one
        abstraction step per matched suffix length, then is re-normalised away from the last
        ulp of rounding so callers can rely on an exact sum. `depths`, if given, are the
        words' `longest_suffix` (a caller that already has them saves the search).

        Rows are independent: a word's row is the same whatever else is in `words`. The words
        are processed deepest first, so the rows still abstracting at length i are a prefix
        of the array (slices, not gathers)."""
        out = np.tile(self.root, (len(words), 1))
        if not len(words) or not out.any():
            return out
        theta, alpha = self.theta, self.alpha
        depth = [self.longest_suffix(w) for w in words] if depths is None else list(depths)
        order = sorted(range(len(words)), key=depth.__getitem__, reverse=True)
        deepest = [words[r] for r in order]
        depth = [depth[r] for r in order]
        many = getattr(self.counts, "many", None)
        m = len(words)
        for i in range(1, depth[0] + 1):
            while depth[m - 1] < i:  # rows :m have a matched suffix of length i
                m -= 1
            suffixes = [w[-i:] for w in deepest[:m]]
            node = many(suffixes) if many else np.stack([self.counts[s] for s in suffixes])
            total = node.sum(axis=1)[:, None]
            if alpha is None:
                out[:m] = (node / total + theta * out[:m]) / (1.0 + theta)
            else:
                out[:m] = (node + alpha * out[:m]) / (total + alpha)
        sums = [math.fsum(row) for row in out.tolist()]  # exact sums, as row by row
        out /= np.array(sums)[:, None]
        result = np.empty_like(out)
        result[order] = out
        return result

    def posterior(self, word: str) -> np.ndarray:
        """P(t | suffix of `word`) over `tags` by successive abstraction; sums to 1 (or all 0
        when the class has no rare tokens at all)."""
        return self.posterior_many([word])[0]
