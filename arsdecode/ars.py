"""Adaptive rejection sampling and exact decoding: Algorithm 1 of Carter, Dymetman & Bouchard.

    q <- q^(0)                                        QAutomaton(lm, lattice)
    loop:
        x ~ q   (sampling)   or   x = argmax q (decoding)
        accept with probability p(x) / q(x)           decoding: accept iff q(x*) = p(x*)
        if rejected: q <- refine(q, x)                Algorithm 2, QAutomaton.refine

Decoding's stopping rule is a certificate: q >= p everywhere and q(x*) >= q(y) for all y, so
q(x*) = p(x*) gives p(x*) >= p(y). The comparison is made on float64 sums of identical terms
in identical order (see target.py); `tol` (default 1e-9 nats) only absorbs the last-bit
differences between a max-backoff bound that happens to be tight and the exact value.
Results are natural log.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from arsdecode import evidence
from arsdecode.automaton import QAutomaton
from arsdecode.errors import NoPathError
from arsdecode.inference import log_partition, sample_indices, viterbi_indices
from arsdecode.lattice import Lattice
from arsdecode.target import Target
from maxarpa.model import Model

DEFAULT_TOL = 1e-9


@dataclass(frozen=True)
class DecodeResult:
    """The exact argmax of p, with the paper's Table 1 and Table 2 facts (natural log)."""

    tokens: list[str]
    log_p: float
    log_q: float
    iterations: int
    states: int
    ngrams_by_order: dict[int, int]
    trace: list[tuple[float, float]]  # per iteration: (log q(x*), log p(x*))
    seconds: float
    certified: bool = True
    automaton: QAutomaton | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class SampleTrace:
    """Per trial: the ratio p/q, acceptance, and the automaton size when it was drawn."""

    ratios: list[float]
    accepted: list[bool]
    states: list[int]
    log_Z_q: list[float]  # ln q_t(X) of the automaton each trial was drawn from
    log_p: list[float] = field(default_factory=list)  # ln p(x_t) of each trial
    log_q: list[float] = field(default_factory=list)  # ln q_t(x_t) of each trial

    def cumulative_ar(self) -> list[float]:
        acc = np.cumsum(self.accepted)
        return (acc / np.arange(1, len(acc) + 1)).tolist()

    def windowed_ar(self, window: int = 100) -> list[float]:
        a = np.asarray(self.accepted, dtype=float)
        c = np.r_[0.0, np.cumsum(a)]
        idx = np.arange(1, len(a) + 1)
        lo = np.maximum(0, idx - window)
        return ((c[idx] - c[lo]) / (idx - lo)).tolist()


@dataclass(frozen=True)
class SampleResult:
    """Exact i.i.d. samples of p, the trace of the run, and an unbiased estimate of p(X)."""

    samples: list[list[str]]
    log_p: list[float]
    trials: int
    acceptance_rate: float
    log_Z: float  # ln p(X), importance estimate from every trial (arsdecode.evidence)
    log_Z_ci: tuple[float, float]  # 95% interval of log_Z
    log_Z_unweighted: float  # ln of the plain mean of q_t(X) 1[acc_t] (unbiased, noisy)
    states: int
    refinements: int
    seconds: float
    trace: SampleTrace = field(repr=False)
    log_Z_rejection: float = -math.inf  # from accepted trials only (evidence.rejection_estimate)
    log_Z_rejection_ci: tuple[float, float] = (-math.inf, math.inf)


def decode(
    lm: Model,
    lattice: Lattice,
    *,
    variant: str = "fresh",
    max_iterations: int | None = None,
    tol: float = DEFAULT_TOL,
    on_iteration=None,
    keep_automaton: bool = False,
) -> DecodeResult:
    """The exact most probable path of p over the lattice (Algorithm 1, decoding).

    Args:
        max_iterations: stop early (result marked `certified=False`) after this many.
        on_iteration: optional callback(iteration, tokens, log_q, log_p) for traces.
        keep_automaton: return the final q-automaton in `automaton` (for export); off by
            default because it can hold tens of MB.
    """
    start = time.perf_counter()
    target = Target(lm, lattice)
    qa = QAutomaton(lm, lattice, variant=variant)
    trace: list[tuple[float, float]] = []
    iteration = 0
    certified = False
    while True:
        iteration += 1
        idx, log_q = viterbi_indices(qa)
        log_p = target.log_p_indices(idx)
        trace.append((log_q, log_p))
        if on_iteration is not None:
            on_iteration(iteration, [lattice.tokens[i][j] for i, j in enumerate(idx)], log_q, log_p)
        if log_q == -math.inf:
            raise NoPathError("every path of the lattice has probability 0 under the model")
        if log_q - log_p <= tol:
            certified = True
            break
        if not qa.refine_indices(idx):
            certified = log_q - log_p <= 1e-6  # only float noise is left on an exact path
            break
        if max_iterations is not None and iteration >= max_iterations:
            break
    return DecodeResult(
        tokens=[lattice.tokens[i][j] for i, j in enumerate(idx)],
        log_p=float(log_p),
        log_q=float(log_q),
        iterations=iteration,
        states=qa.num_states(),
        ngrams_by_order=qa.ngrams_by_order(),
        trace=trace,
        seconds=time.perf_counter() - start,
        certified=certified,
        automaton=qa if keep_automaton else None,
    )


def sample(
    lm: Model,
    lattice: Lattice,
    n: int,
    seed: int | None = None,
    *,
    batch: int = 100,
    target_ar: float = 0.2,
    ar_window: int = 100,
    variant: str = "fresh",
    max_trials: int | None = None,
    stop_when_adapted: bool = False,
    rng: np.random.Generator | None = None,
) -> SampleResult:
    """n exact i.i.d. samples of p by adaptive rejection (Algorithm 1, sampling).

    Trials are drawn B = `batch` at a time from the current q. While the acceptance rate over
    the last `ar_window` trials is below `target_ar`, every rejected trial of the batch refines
    q; afterwards q is frozen and batches are drawn until n samples are accepted. Accepted
    trials are exact samples whatever q was, since q never depends on the trial it judges.
    `stop_when_adapted` ends the run as soon as the target is reached (the paper's Table 3
    and Fig. 3c/3d measure exactly that), even with fewer than n samples.

    log_Z: every trial's importance weight p(x_t)/q_t(x_t) * q_t(X), averaged with predictable
    weights 1 / q_t(X); log_Z_rejection uses accepted trials only, log_Z_unweighted is the
    plain mean of q_t(X) 1[accepted_t]. All in log space; see arsdecode.evidence.
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    if batch < 1:
        raise ValueError("batch must be >= 1")
    start = time.perf_counter()
    rng = rng if rng is not None else np.random.default_rng(seed)
    target = Target(lm, lattice)
    qa = QAutomaton(lm, lattice, variant=variant)
    if log_partition(qa) == -math.inf:
        raise NoPathError("every path of the lattice has probability 0 under the model")
    samples: list[list[str]] = []
    sample_log_p: list[float] = []
    ratios: list[float] = []
    accepted: list[bool] = []
    states: list[int] = []
    log_zq: list[float] = []
    trial_log_p: list[float] = []
    trial_log_q: list[float] = []
    adapting = True
    refinements = 0
    while len(samples) < n:
        if max_trials is not None and len(accepted) >= max_trials:
            break
        paths, log_z = sample_indices(qa, batch, rng)
        if log_z == -math.inf:  # refinement proved that no path has probability > 0
            raise NoPathError("every path of the lattice has probability 0 under the model")
        u = rng.random(batch)
        rejected: list[list[int]] = []
        n_states = qa.num_states()
        batch_log_q = qa.log_q_batch(paths)
        batch_log_p = target.log_p_batch(paths)
        for row, u_t, log_q, log_p in zip(
            paths.tolist(), u.tolist(), batch_log_q.tolist(), batch_log_p.tolist()
        ):
            ratio = 0.0 if log_p == -math.inf else math.exp(min(0.0, log_p - log_q))
            ok = u_t < ratio
            ratios.append(ratio if log_p == -math.inf else math.exp(log_p - log_q))
            accepted.append(ok)
            states.append(n_states)
            log_zq.append(log_z)
            trial_log_p.append(log_p)
            trial_log_q.append(log_q)
            if ok:
                samples.append([lattice.tokens[i][j] for i, j in enumerate(row)])
                sample_log_p.append(log_p)
                if len(samples) == n:
                    break
            else:
                rejected.append(row)
        if adapting:
            window = accepted[-ar_window:]
            if len(accepted) >= ar_window and sum(window) / len(window) >= target_ar:
                adapting = False
                if stop_when_adapted:  # the paper's protocol: time to reach the AR target
                    break
            else:
                refinements += qa.refine_many(rejected)
    log_ratio = np.asarray(trial_log_p) - np.asarray(trial_log_q)
    est = evidence.importance_estimate(log_zq, log_ratio)
    rej = evidence.rejection_estimate(log_zq, accepted)
    trials = len(accepted)
    return SampleResult(
        samples=samples,
        log_p=sample_log_p,
        trials=trials,
        acceptance_rate=(sum(accepted) / trials) if trials else 0.0,
        log_Z=est.log_Z,
        log_Z_ci=est.ci,
        log_Z_unweighted=evidence.rejection_plain(log_zq, accepted),
        states=qa.num_states(),
        refinements=refinements,
        seconds=time.perf_counter() - start,
        trace=SampleTrace(ratios, accepted, states, log_zq, trial_log_p, trial_log_q),
        log_Z_rejection=rej.log_Z,
        log_Z_rejection_ci=rej.ci,
    )

