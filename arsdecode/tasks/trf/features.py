"""The random field's features: which n-grams, their counts per sentence, the model they make,
and the `ngram<TAB>weight` file that carries the learned weights.

Why its own module: training (`train`), both samplers' expectations and the held-out
evaluation all need f(x) for many sentences, and must count exactly what `LogLinearLM` scores
(`arsdecode.model.loglinear`): a pattern fires once per window of `<s> x </s>` whose words
match it (`*` matches any one word) and whose last word is not `<s>` (that word is never
predicted, so a pattern ending at `<s>` never fires). The tests check the counts against the
target's own scores (`score.sentence_log_scores` minus the base model).

Feature set (Wang, Ou and Tan's "w" and "s" types, up to order 3): every n-gram of order 1..3
of the training text with its `<s>` and `</s>`, and every skip-bigram `a * c`, kept when seen at
least `min_count` times. The counts are a sparse `Counts` (sentences x features) of numpy index
arrays: scipy is only a test dependency, and training needs three operations on them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from arsdecode.errors import ModelError
from arsdecode.model.interface import ModelLike
from arsdecode.model.loglinear import SKIP, LogLinearLM
from maxarpa.constants import BOS, EOS
from maxarpa.output import atomic_output

Pattern = tuple[str, ...]

LNZ_PREFIX = "# lnZ length="
"""The comment line that carries ln Z at one length in a feature file (`write_feature_file`)."""


def _windows(words: Sequence[str], max_order: int, skip: bool) -> Iterable[Pattern]:
    """Every pattern instance of `<s> words </s>` that `LogLinearLM` would fire: n-grams of
    order 1..max_order and (with `skip`) skip-bigrams `a * c`, never ending at `<s>`."""
    padded = [BOS, *words, EOS]
    for end in range(1, len(padded)):
        for n in range(1, max_order + 1):
            if end - n + 1 >= 0:
                yield tuple(padded[end - n + 1: end + 1])
        if skip and end >= 2:
            yield (padded[end - 2], SKIP, padded[end])


class Counts:
    """Feature counts of sentences, sparse: one entry (row, col) per firing, duplicates
    allowed (they add up). The three operations training needs, and `toarray` for tests."""

    def __init__(self, rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> None:
        self.rows = np.asarray(rows, dtype=np.int64)
        self.cols = np.asarray(cols, dtype=np.int64)
        self.shape = shape

    def mean(self, which: np.ndarray | Sequence[int] | None = None) -> np.ndarray:
        """The mean count vector over the rows `which` (all rows: None; a row listed twice
        counts twice)."""
        n_rows, n_cols = self.shape
        if which is None:
            per_row = np.ones(n_rows)
        else:
            per_row = np.bincount(np.asarray(which, dtype=np.int64),
                                  minlength=n_rows).astype(np.float64)
        total = float(per_row.sum())
        if total == 0:
            return np.zeros(n_cols)
        return np.bincount(self.cols, weights=per_row[self.rows], minlength=n_cols) / total

    def __matmul__(self, weights: np.ndarray) -> np.ndarray:
        """lambda . f(x) per row."""
        w = np.asarray(weights, dtype=np.float64)
        return np.bincount(self.rows, weights=w[self.cols], minlength=self.shape[0])

    def toarray(self) -> np.ndarray:
        out = np.zeros(self.shape)
        np.add.at(out, (self.rows, self.cols), 1.0)
        return out


@dataclass(frozen=True)
class FeatureSet:
    """The chosen patterns, in a fixed order (column j of every count matrix is patterns[j])."""

    patterns: list[Pattern]
    max_order: int = 3
    skip: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", {p: j for j, p in enumerate(self.patterns)})

    def __len__(self) -> int:
        return len(self.patterns)

    def counts(self, sentences: Sequence[Sequence[str]]) -> Counts:
        """f(x) of each sentence (words without `<s>`/`</s>`), one row each."""
        index: dict[Pattern, int] = self.index  # type: ignore[attr-defined]
        rows: list[int] = []
        cols: list[int] = []
        for r, words in enumerate(sentences):
            for p in _windows(words, self.max_order, self.skip):
                j = index.get(p)
                if j is not None:
                    rows.append(r)
                    cols.append(j)
        return Counts(np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64),
                      (len(sentences), len(self.patterns)))


def select_features(sentences: Iterable[Sequence[str]], *, max_order: int = 3,
                    skip: bool = True, min_count: int = 2) -> FeatureSet:
    """The n-grams of order 1..max_order and skip-bigrams seen >= `min_count` times in
    `sentences` (with `<s>` and `</s>`), most frequent first, ties by the pattern."""
    if max_order < 1:
        raise ValueError("max_order must be >= 1")
    seen: Counter[Pattern] = Counter()
    for words in sentences:
        seen.update(_windows(words, max_order, skip))
    kept = sorted((p for p, c in seen.items() if c >= min_count), key=lambda p: (-seen[p], p))
    return FeatureSet(kept, max_order=max_order, skip=skip)


def build_model(base: ModelLike, features: FeatureSet, weights: np.ndarray, *,
                length_prior: Mapping[int, float] | None = None) -> LogLinearLM:
    """The random field score(x) = ln p_base(x) + weights . f(x) as a `LogLinearLM` (alpha 1),
    the target both samplers and the evaluation use. Zero weights are left out (they add
    nothing, and every feature costs the bound a lookup)."""
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != (len(features),):
        raise ValueError(f"{len(features)} features but {weights.shape} weights")
    table = {" ".join(p): float(w) for p, w in zip(features.patterns, weights, strict=True)
             if w != 0.0}
    return LogLinearLM([base], [1.0], features=table, length_prior=length_prior)


def write_feature_file(path: str | Path, features: FeatureSet, weights: np.ndarray,
                       log_z: Mapping[int, float] | None = None, *,
                       header: Sequence[str] = ()) -> None:
    """Write `ngram<TAB>weight` lines (natural log; the file `decode/sample --features` and
    `arsdecode.loglinear(..., features=path)` read), zero weights left out, after `# ` header
    lines and one `# lnZ length=L value` line per length of `log_z`. Atomic: a failed write
    leaves no half file."""
    with atomic_output(path) as tmp, open(tmp, "w", encoding="utf-8") as out:
        for line in header:
            out.write(f"# {line}\n")
        for length, value in sorted((log_z or {}).items()):
            out.write(f"{LNZ_PREFIX}{int(length)} {float(value)!r}\n")
        for p, w in zip(features.patterns, np.asarray(weights, dtype=np.float64), strict=True):
            if w != 0.0:
                out.write(f"{' '.join(p)}\t{float(w)!r}\n")


def read_log_z(path: str | Path) -> dict[int, float]:
    """The `# lnZ length=L value` lines of a feature file (ModelError naming the line if one is
    malformed)."""
    out: dict[int, float] = {}
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.startswith(LNZ_PREFIX):
                continue
            fields = line[len(LNZ_PREFIX):].split()
            try:
                length, value = int(fields[0]), float(fields[1])
            except (IndexError, ValueError):
                raise ModelError(f"{path}:{number}: expected '{LNZ_PREFIX}L value', got "
                                 f"{line.strip()!r}") from None
            if length < 1 or math.isnan(value):
                raise ModelError(f"{path}:{number}: bad length or value in {line.strip()!r}")
            out[length] = value
    return out
