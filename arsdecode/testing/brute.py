"""Brute-force references over every path of a small lattice.

Why brute force: the full model (arsdecode/methods/full.py) and the ARS engine both use dynamic
programs over shared context states; a bug in how states are merged or scores are reused would
be invisible if the reference did the same. Here every path is enumerated with
itertools.product and scored on its own, from <s> to </s>, in one of three ways:

- `brute_kenlm`: KenLM's State API (independent of maxarpa; KenLM stores float32, so agreement
  is to ~1e-5, not 1e-9);
- `brute_model`: scalar `maxarpa.Model.log10p` calls on the full history (the same float64
  numbers as the engines, for 1e-9 checks, and for ARPA files KenLM cannot load);
- `brute_target`: any `arsdecode.model.TargetModel` (your own target), through its `log_prob`
  alone, one path at a time: what `ars`, `full` and the other methods must agree with.

Everything is natural log:

    log p(x) = LN10 * [sum_i log10 p(x_i | <s> x_<i) + log10 p(</s> | <s> x)] + sum_i e_i(x_i)

Needs numpy only; `brute_kenlm` needs the kenlm module and `chi_square_pvalue` scipy (the
`test` extra), both imported when called.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from arsdecode.lattice import Lattice
from arsdecode.model import ModelLike, TargetModel, as_target_model, context_rows
from maxarpa.constants import BOS, EOS, LN10
from maxarpa.model import Model

Path = tuple[str, ...]


@dataclass(frozen=True)
class BruteResult:
    """Every path of a lattice with its exact natural-log probability (unnormalised)."""

    paths: list[Path]
    log_p: list[float]

    @property
    def best_log_p(self) -> float:
        return max(self.log_p)

    @property
    def best(self) -> Path:
        """The first path (in product order) with the largest log p."""
        return self.paths[int(np.argmax(self.log_p))]

    def near_best(self, tol: float) -> set[Path]:
        """Paths within `tol` of the best (ties, for checking a decoder's tokens)."""
        top = self.best_log_p
        return {p for p, lp in zip(self.paths, self.log_p, strict=True) if lp >= top - tol}

    @property
    def log_Z(self) -> float:
        finite = [x for x in self.log_p if x > -math.inf]
        if not finite:
            return -math.inf
        top = max(finite)
        return top + math.log(sum(math.exp(x - top) for x in finite))

    def distribution(self) -> dict[Path, float]:
        """Exact p(x)/Z for every path of nonzero probability."""
        lz = self.log_Z
        return {
            p: math.exp(lp - lz)
            for p, lp in zip(self.paths, self.log_p, strict=True)
            if lp > -math.inf
        }

    def score(self, path: Sequence[str]) -> float:
        return self.log_p[self.paths.index(tuple(path))]


def _enumerate(lattice: Lattice, path_log: Callable[[Path], float]) -> BruteResult:
    """Every path of `lattice` with ln p = path_log(path) + its emissions (-inf if either is)."""
    paths: list[Path] = []
    scores: list[float] = []
    for choice in itertools.product(*(range(w) for w in lattice.widths)):
        path = tuple(lattice.tokens[i][j] for i, j in enumerate(choice))
        emis = sum(float(lattice.log_emissions[i][j]) for i, j in enumerate(choice))
        lm = path_log(path)
        paths.append(path)
        scores.append(-math.inf if emis == -math.inf or lm == -math.inf else lm + emis)
    return BruteResult(paths, scores)


def kenlm_path_log10(km, path: Sequence[str]) -> float:
    """log10 p(<s> path </s>) from a kenlm.Model, one BaseScore per word, </s> included."""
    import kenlm

    state, scratch = kenlm.State(), kenlm.State()
    km.BeginSentenceWrite(state)
    total = 0.0
    for w in [*path, EOS]:
        total += km.BaseScore(state, w, scratch)
        state, scratch = scratch, state
    return total


def model_path_log10(lm: Model, path: Sequence[str]) -> float:
    """log10 p(<s> path </s>) from scalar `Model.log10p` calls on the full history."""
    hist = [BOS]
    total = 0.0
    for w in [*path, EOS]:
        total += lm.log10p(w, hist)
        hist.append(w)
    return total


def target_path_log(model: TargetModel, path: Sequence[str]) -> float:
    """ln p(<s> path </s>) from `model.log_prob`: one row per word, </s> included, each
    context the last order - 1 words of the history (the interface's layout)."""
    ids = [int(i) for i in model.ids(list(path))]
    history = [model.bos, *ids]
    contexts = [history[: i + 1] for i in range(len(ids) + 1)]
    rows = context_rows(contexts, model.order - 1)
    words = np.array([*ids, model.eos], dtype=np.int64)
    return float(np.sum(model.log_prob(rows, words)))


def brute_kenlm(km, lattice: Lattice) -> BruteResult:
    """Every path scored independently by KenLM."""
    return _enumerate(lattice, lambda p: LN10 * kenlm_path_log10(km, p))


def brute_model(lm: Model, lattice: Lattice) -> BruteResult:
    """Every path scored independently by `Model.log10p` (works for any ARPA maxarpa reads)."""
    return _enumerate(lattice, lambda p: LN10 * model_path_log10(lm, p))


def brute_target(model: ModelLike, lattice: Lattice) -> BruteResult:
    """Every path scored independently by a target model's `log_prob` (a maxarpa.Model is
    wrapped as the engine wraps it): the reference for a `TargetModel` of your own."""
    target = as_target_model(model)
    return _enumerate(lattice, lambda p: target_path_log(target, p))


def chi_square_pvalue(samples: Sequence[Sequence[str]], dist: dict[Path, float]) -> float:
    """Goodness of fit of `samples` to `dist` (scipy chisquare, pooling bins expected < 5).

    A sample outside the support of `dist` is a certain failure (p-value 0).
    """
    from scipy.stats import chisquare  # type: ignore[import-untyped]

    counts = Counter(tuple(s) for s in samples)
    if any(p not in dist for p in counts):
        return 0.0
    n = len(samples)
    obs: list[float] = []
    exp: list[float] = []
    pool_o = pool_e = 0.0
    for path, prob in sorted(dist.items(), key=lambda kv: -kv[1]):
        if n * prob >= 5:
            obs.append(counts.get(path, 0))
            exp.append(n * prob)
        else:
            pool_o += counts.get(path, 0)
            pool_e += n * prob
    if pool_e > 0:
        obs.append(pool_o)
        exp.append(pool_e)
    if len(obs) < 2:
        return 1.0
    exp_arr = np.asarray(exp) * (n / sum(exp))  # remove float drift so sums match exactly
    return float(chisquare(np.asarray(obs), exp_arr).pvalue)
