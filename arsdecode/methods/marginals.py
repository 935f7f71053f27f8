"""Posterior marginals p(x_i = token): exact by forward-backward, or with 95% intervals from
exact samples.

Why from samples: ARS samples are exact and i.i.d., so the count of a token at a position is
Binomial(N, m) with m the true marginal, and a binomial interval is an honest statement about
m. The Wilson score interval is used (not the Wald p +- 1.96 sd): it keeps its coverage near
0 and 1, where most marginals of a peaked posterior lie, and gives a non-trivial upper bound
(about 3.84 / N) for a candidate never drawn. Coverage is per (position, token); it is
measured against brute-force marginals in tests/test_marginals.py.

`posterior_marginals` is the whole computation behind `arsdecode.marginals` and the
`arsdecode marginals` command. method "sample": N exact samples, their marginals, and the
evidence ln Z of the same run (`methods.evidence`). method "full": the exact marginals and ln Z
by forward-backward over the merged full-model states (`methods.full.full_marginals`), reported
with zero-width intervals and `exact` true. "auto" (`methods.dispatch.exact_marginals` decides)
is "full" when the merged states fit its budget, else "sample".
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from arsdecode.errors import OptionError
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.methods.ars import sample
from arsdecode.methods.dispatch import MarginalsMethod, exact_marginals
from arsdecode.methods.evidence import Z95
from arsdecode.methods.options import check_options, kind_of
from arsdecode.methods.results import SampleResult
from arsdecode.model import ModelLike

if TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class Marginal:
    """One token's posterior marginal at a position: estimate and 95% interval."""

    token: str
    p: float
    lo: float
    hi: float

    def as_list(self) -> list:
        return [self.token, self.p, self.lo, self.hi]


def wilson(count: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion count / n."""
    if n <= 0:
        return (0.0, 1.0)
    p = count / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if count == 0 else max(0.0, centre - half)
    hi = 1.0 if count == n else min(1.0, centre + half)
    return (lo, hi)


def marginals_from_samples(
    samples: Sequence[Sequence[str]], lattice: Lattice | None = None, *, z: float = Z95
) -> list[list[Marginal]]:
    """Per position, every token's marginal with its interval, sorted by p (then token order).

    With `lattice`, every candidate is listed (never-drawn ones get p = 0 and an upper bound);
    without it, only tokens that occur in the samples. Ties in p keep lattice order (or first
    occurrence order without a lattice).
    """
    if not samples:
        return []
    n = len(samples)
    out = []
    for i in range(len(samples[0])):
        counts = Counter(s[i] for s in samples)
        if lattice is not None:
            tokens = list(lattice.tokens[i])
        else:
            tokens = list(dict.fromkeys(s[i] for s in samples))
        rows = [Marginal(t, counts.get(t, 0) / n, *wilson(counts.get(t, 0), n, z)) for t in tokens]
        order = sorted(range(len(rows)), key=lambda k: (-rows[k].p, k))
        out.append([rows[k] for k in order])
    return out


def marginal_dicts(samples: Sequence[Sequence[str]]) -> list[dict[str, float]]:
    """Per position, token -> sample frequency, most frequent first (the `tag --sample` view)."""
    return [{m.token: m.p for m in pos} for pos in marginals_from_samples(samples)]


def marginals_json(marginals: list[list[Marginal]]) -> list[list[list]]:
    return [[m.as_list() for m in pos] for pos in marginals]


@dataclass(frozen=True)
class MarginalsResult:
    """Per position, each token's posterior marginal with its 95% interval, and the evidence
    ln Z with its 95% interval, from one run of exact samples (kept in `draws`); or, with
    `exact`, the exact marginals and ln Z (zero-width intervals, `draws` None)."""

    marginals: list[list[Marginal]]
    log_Z: float
    log_Z_ci: tuple[float, float]
    draws: SampleResult | None
    exact: bool = False
    seconds: float = 0.0  # wall time of the exact computation (sampled: `draws.seconds`)

    def to_json(self) -> dict:
        """JSON-ready dict (natural logs), as `arsdecode marginals --json` prints it. Only
        "timing" varies between runs with one seed."""
        return {
            "marginals": marginals_json(self.marginals),
            "log_Z": self.log_Z,
            "log_Z_ci": list(self.log_Z_ci),
            "exact": self.exact,
            "samples": self.draws.samples if self.draws else [],
            "trials": self.draws.trials if self.draws else 0,
            "timing": {"seconds": self.draws.seconds if self.draws else self.seconds},
        }


def marginals_from_probabilities(probs: Sequence[np.ndarray], lattice: Lattice, *,
                                 all_candidates: bool = True) -> list[list[Marginal]]:
    """Exact per-candidate probabilities as Marginals with zero-width intervals, sorted like
    `marginals_from_samples` (by p, then lattice order); a token listed twice at a position is
    one row with the summed p. `all_candidates=False` drops tokens of probability 0."""
    out = []
    for toks, ps in zip(lattice.tokens, probs, strict=True):
        by_token: dict[str, float] = {}
        for t, p in zip(toks, ps, strict=True):
            by_token[t] = by_token.get(t, 0.0) + float(p)
        rows = [Marginal(t, p, p, p) for t, p in by_token.items()
                if all_candidates or p > 0.0]
        order = sorted(range(len(rows)), key=lambda k: (-rows[k].p, k))
        out.append([rows[k] for k in order])
    return out


def posterior_marginals(
    lm: ModelLike,
    lattice: Lattice | WordLattice,
    n: int,
    seed: int | None = None,
    *,
    all_candidates: bool = True,
    method: MarginalsMethod = "auto",
    **sample_options: Any,
) -> MarginalsResult:
    """Posterior marginals of every position, exact or sampled by `method` (module docstring).

    Sampled: from `n` exact samples (`methods.ars.sample`, which takes `sample_options`:
    batch, target_ar, ar_window, variant, ...), with Wilson intervals, and the run's importance
    estimate of ln Z with its interval. Exact: `n`, `seed` and `sample_options` are unused.

    `all_candidates` lists every candidate of a position, also those never drawn (p = 0 and
    an upper bound, which is information too); False lists only the drawn tokens (exact: those
    of nonzero probability).
    A word lattice (methods "full" and "auto") gets its exact arc posteriors instead: one list
    per arc, in arc order, holding the arc's word ("" for epsilon) with its posterior (empty
    for an arc of probability 0 with `all_candidates=False`).
    Raises OptionError for n < 1 or an unknown method, NoPathError if every path has
    probability zero.
    """
    if n < 1:
        raise OptionError("n (the number of samples) must be >= 1 to estimate marginals")
    t0 = time.perf_counter()
    sample_options = check_options("marginals", kind_of(lattice), method, sample_options)
    if isinstance(lattice, WordLattice):  # exact arc posteriors, one list per arc
        [post], log_z = exact_marginals(lm, lattice, method)  # type: ignore[misc]
        rows = [[Marginal(w or "", p, p, p)] if all_candidates or p > 0.0 else []
                for w, p in zip(lattice.words, post.tolist(), strict=True)]
        return MarginalsResult(rows, log_z, (log_z, log_z), None, exact=True,
                               seconds=time.perf_counter() - t0)
    exact = exact_marginals(lm, lattice, method)
    if exact is not None:
        probs, log_z = exact
        return MarginalsResult(
            marginals_from_probabilities(probs, lattice, all_candidates=all_candidates),
            log_z, (log_z, log_z), None, exact=True, seconds=time.perf_counter() - t0)
    draws = sample(lm, lattice, n, seed, **sample_options)
    assert isinstance(draws, SampleResult)  # a confusion network's samples
    marginals = marginals_from_samples(draws.samples, lattice if all_candidates else None)
    return MarginalsResult(marginals, draws.log_Z, draws.log_Z_ci, draws)
