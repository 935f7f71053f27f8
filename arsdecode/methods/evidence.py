"""Estimates of the evidence ln Z = ln p(X) from the trials of adaptive rejection sampling.

Why a module of its own: every trial of ARS carries information about Z, not only the
accepted ones, and the way the trials are combined decides the variance, so the estimators
are kept side by side here and measured against exact ln Z in experiments/evidence_study.py.
Everything is computed in log space (logsumexp, ratios p/q <= 1): per-trial ln q_t(X) can span
thousands of nats on long lattices (issue 9 D), where exp of an unnormalised value overflows.

Trial t draws x_t from q_t / q_t(X) and knows, before drawing, Q_t = q_t(X) (q_t depends only on
earlier trials). Write r_t = p(x_t) / q_t(x_t) in [0, 1] (q >= p) and a_t = 1[accepted_t].

- "importance" (the default `SampleResult.log_Z`): every trial is an importance sample,
  w_t = r_t Q_t with E[w_t | past] = Z (Teichmann, Wansing & Koller, "Adaptive Importance
  Sampling from Probabilistic Tree Automata"). The trials are combined with the predictable
  weights 1 / Q_t, Z_is = sum_t r_t / sum_t 1 / Q_t: a trial from a loose q (large Q_t) has a
  variance of order Q_t Z, so it gets little weight. Since E[a_t | x_t, past] = r_t, this is
  the rejection estimator below with each acceptance replaced by its conditional expectation
  (Rao-Blackwell): never a larger variance. Its interval uses the variance bound
  mu_t (1 - mu_t) of a [0, 1] variable (see `importance_estimate`); "importance_empirical" is
  the same estimate with the residual variance, narrower but under-covering.
- "rejection" (`SampleResult.log_Z_rejection`): only accepted trials, Z_w = sum_t a_t /
  sum_t 1 / Q_t, since E[a_t | past] = Z / Q_t.
- "importance_plain": the plain mean of w_t, as in Teichmann et al. (unbiased for a fixed
  number of trials, but dominated by early trials from a loose q).
- "combined": inverse-variance mix of "importance" and "rejection" on the log scale. The two
  use the same trials and are correlated, so its interval is only approximate.

Intervals are 95%, Z_hat * exp(+-Z95 * relative s.e.), the relative s.e. from the martingale
central limit theorem: sum_t lambda_t (w_t - Z) with predictable lambda_t is a martingale, whose
variance is estimated by the sum of squared residuals. Coverage and width per second of work
are measured in docs/results-approx.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arsdecode.core.semiring import logsumexp
from arsdecode.core.tolerances import CERTIFICATE_TOL

Z95 = 1.959963984540054
"""The standard normal's 97.5% quantile: the half-width of every 95% interval of the engine
(these and the marginals' Wilson intervals, `methods.marginals`), in standard errors."""


@dataclass(frozen=True)
class Evidence:
    """An estimate of ln Z with its 95% interval (natural log) and the estimator's name."""

    log_Z: float
    ci: tuple[float, float]
    name: str
    rel_se: float = math.inf  # relative standard error of Z (inf when unknown)


def _interval(log_z: float, rel_se: float) -> tuple[float, float]:
    # Widened by the last-bit noise of float64 sums, so that an exact q (rel_se = 0) still
    # covers an exact ln Z summed in another order (the DPs, brute force).
    half = Z95 * rel_se + CERTIFICATE_TOL
    return (log_z - half, log_z + half)


def _no_hit(log_zq: np.ndarray, name: str) -> Evidence:
    """No trial had p > 0 weight: ln Z is -inf as far as we know, with a rule-of-three bound."""
    if len(log_zq) == 0:
        return Evidence(-math.inf, (-math.inf, math.inf), name)
    upper = math.log(3.0) - logsumexp(-log_zq)
    return Evidence(-math.inf, (-math.inf, float(upper)), name)


def rejection_estimate(log_zq: Sequence[float], accepted: Sequence[bool]) -> Evidence:
    """Z_w = sum a_t / sum 1 / Q_t, with relative s.e. sqrt(sum r_t (1 - r_t)) / sum a_t,
    r_t = Z_w / Q_t the acceptance probability of trial t under Z = Z_w."""
    lz = np.asarray(log_zq, dtype=float)
    acc = np.asarray(accepted, dtype=bool)
    n_acc = int(acc.sum())
    if n_acc == 0:
        return _no_hit(lz, "rejection")
    log_z = math.log(n_acc) - logsumexp(-lz)
    r = np.exp(np.minimum(log_z - lz, 0.0))
    rel_se = math.sqrt(float((r * (1.0 - r)).sum())) / n_acc
    return Evidence(log_z, _interval(log_z, rel_se), "rejection", rel_se)


def rejection_plain(log_zq: Sequence[float], accepted: Sequence[bool]) -> float:
    """ln of the plain mean of Q_t a_t (unbiased for a fixed number of trials, noisy)."""
    lz = np.asarray(log_zq, dtype=float)
    acc = np.asarray(accepted, dtype=bool)
    if not acc.any():
        return -math.inf
    return logsumexp(lz[acc]) - math.log(len(lz))


def importance_estimate(log_zq: Sequence[float], log_ratio: Sequence[float]) -> Evidence:
    """Z_is = sum r_t / sum 1 / Q_t (r_t = p(x_t) / q_t(x_t)), in log space.

    Interval: relative s.e. sqrt(sum_t mu_t (1 - mu_t)) / sum_t r_t with mu_t = Z_is / Q_t,
    a bound on the conditional variance of r_t (a [0, 1] variable of mean mu_t). Not the
    empirical residuals: when q is exact except on paths of tiny q-mass that no trial drew,
    every r_t is 1 and the residuals claim zero variance (measured: 82% coverage instead of
    95% on such a lattice, 2000 samples, 100 seeds). The bound is the rejection estimator's
    variance, so the interval is that of `rejection_estimate` around a better point estimate.
    """
    lz = np.asarray(log_zq, dtype=float)
    lr = np.asarray(log_ratio, dtype=float)
    if len(lr) == 0 or not np.isfinite(lr).any():
        return _no_hit(lz, "importance")
    log_num = logsumexp(lr)
    log_z = log_num - logsumexp(-lz)
    mu = np.exp(np.minimum(log_z - lz, 0.0))
    rel_se = math.sqrt(float((mu * (1.0 - mu)).sum())) / math.exp(log_num)
    return Evidence(log_z, _interval(log_z, rel_se), "importance", rel_se)


def importance_empirical_estimate(
    log_zq: Sequence[float], log_ratio: Sequence[float]
) -> Evidence:
    """The same point estimate with the empirical (residual) variance,
    sqrt(sum (r_t - Z_is / Q_t)^2) / sum r_t: narrower, but it under-covers (see above)."""
    lz = np.asarray(log_zq, dtype=float)
    lr = np.asarray(log_ratio, dtype=float)
    if len(lr) == 0 or not np.isfinite(lr).any():
        return _no_hit(lz, "importance_empirical")
    m = float(lr.max())
    log_z = logsumexp(lr) - logsumexp(-lz)
    r = np.exp(lr - m)
    expected = np.exp(np.minimum(log_z - lz - m, 700.0))
    rel_se = math.sqrt(float(((r - expected) ** 2).sum())) / float(r.sum())
    return Evidence(log_z, _interval(log_z, rel_se), "importance_empirical", rel_se)


def importance_plain_estimate(log_zq: Sequence[float], log_ratio: Sequence[float]) -> Evidence:
    """The plain mean of w_t = r_t Q_t (Teichmann et al.); rel. s.e. = sd(w) / sqrt(T) / mean."""
    lz = np.asarray(log_zq, dtype=float)
    lr = np.asarray(log_ratio, dtype=float)
    if len(lr) == 0 or not np.isfinite(lr).any():
        return _no_hit(lz, "importance_plain")
    lw = lr + lz
    top = float(lw.max())
    v = np.exp(lw - top)
    t = len(v)
    log_z = top + math.log(float(v.mean()))
    rel_se = float(v.std(ddof=1)) / math.sqrt(t) / float(v.mean()) if t > 1 else math.inf
    return Evidence(log_z, _interval(log_z, rel_se), "importance_plain", rel_se)


def combined_estimate(a: Evidence, b: Evidence) -> Evidence:
    """Inverse-variance mix of two estimates on the log scale (correlation ignored)."""
    usable = [e for e in (a, b) if math.isfinite(e.log_Z) and 0 < e.rel_se < math.inf]
    if not usable:
        return Evidence(a.log_Z, a.ci, "combined", a.rel_se)
    w = [1.0 / e.rel_se**2 for e in usable]
    log_z = sum(wi * e.log_Z for wi, e in zip(w, usable)) / sum(w)
    rel_se = 1.0 / math.sqrt(sum(w))
    return Evidence(log_z, _interval(log_z, rel_se), "combined", rel_se)


def all_estimates(
    log_zq: Sequence[float], accepted: Sequence[bool], log_ratio: Sequence[float]
) -> dict[str, Evidence]:
    """Every estimator of this module on the same trials, by name."""
    rej = rejection_estimate(log_zq, accepted)
    imp = importance_estimate(log_zq, log_ratio)
    return {
        "importance": imp,
        "rejection": rej,
        "importance_empirical": importance_empirical_estimate(log_zq, log_ratio),
        "importance_plain": importance_plain_estimate(log_zq, log_ratio),
        "combined": combined_estimate(imp, rej),
    }


DEFAULT = "importance"


class GroupedTrials:
    """The trials' tally for the importance and rejection estimates without a per-trial list
    (a streamed run, `methods.trials`): ln Q_t takes one value per refinement of q, so the
    trials are counted per value (trials, accepted), and sum_t r_t is a running logsumexp.
    The estimates are those of `importance_estimate`, `rejection_estimate` and
    `rejection_plain` on the same trials, summed in another order."""

    def __init__(self) -> None:
        self._groups: dict[float, list[int]] = {}  # ln Q -> [trials, accepted]
        self._log_sum_r = -math.inf  # ln sum_t r_t, as a running max and scaled sum
        self._top = -math.inf
        self._scaled = 0.0

    def add(self, log_zq: float, log_ratio: float, accepted: bool) -> None:
        group = self._groups.setdefault(log_zq, [0, 0])
        group[0] += 1
        group[1] += accepted
        if log_ratio == -math.inf:
            return
        if log_ratio > self._top:
            self._scaled = self._scaled * math.exp(self._top - log_ratio) + 1.0
            self._top = log_ratio
        else:
            self._scaled += math.exp(log_ratio - self._top)

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lz = np.array(list(self._groups), dtype=float)
        counts = np.array([c for c, _ in self._groups.values()], dtype=float)
        acc = np.array([a for _, a in self._groups.values()], dtype=float)
        return lz, counts, acc

    def _no_hit(self, name: str) -> Evidence:
        lz, counts, _ = self._arrays()
        if not counts.sum():
            return Evidence(-math.inf, (-math.inf, math.inf), name)
        upper = math.log(3.0) - logsumexp(-lz + np.log(counts))
        return Evidence(-math.inf, (-math.inf, float(upper)), name)

    def importance(self) -> Evidence:
        """As `importance_estimate`."""
        if self._top == -math.inf:
            return self._no_hit("importance")
        lz, counts, _ = self._arrays()
        log_num = self._top + math.log(self._scaled)
        log_z = log_num - logsumexp(-lz + np.log(counts))
        mu = np.exp(np.minimum(log_z - lz, 0.0))
        rel_se = math.sqrt(float((counts * mu * (1.0 - mu)).sum())) / math.exp(log_num)
        return Evidence(log_z, _interval(log_z, rel_se), "importance", rel_se)

    def rejection(self) -> Evidence:
        """As `rejection_estimate`."""
        lz, counts, acc = self._arrays()
        n_acc = int(acc.sum())
        if n_acc == 0:
            return self._no_hit("rejection")
        log_z = math.log(n_acc) - logsumexp(-lz + np.log(counts))
        r = np.exp(np.minimum(log_z - lz, 0.0))
        rel_se = math.sqrt(float((counts * r * (1.0 - r)).sum())) / n_acc
        return Evidence(log_z, _interval(log_z, rel_se), "rejection", rel_se)

    def rejection_plain(self) -> float:
        """As `rejection_plain`."""
        lz, counts, acc = self._arrays()
        hit = acc > 0
        if not hit.any():
            return -math.inf
        return logsumexp(lz[hit] + np.log(acc[hit])) - math.log(counts.sum())
