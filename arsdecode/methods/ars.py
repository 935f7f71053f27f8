"""Adaptive rejection sampling and exact decoding: Algorithm 1 of Carter, Dymetman & Bouchard.

    q <- q^(0)                                        QAutomaton(lm, lattice)
    loop:
        x ~ q   (sampling)   or   x = argmax q (decoding)
        accept with probability p(x) / q(x)           decoding: accept iff q(x*) = p(x*)
        if rejected: q <- refine(q, x)                Algorithm 2, QAutomaton.refine

Decoding's stopping rule is a certificate: q >= p everywhere and q(x*) >= q(y) for all y, so
q(x*) = p(x*) gives p(x*) >= p(y). (With pruning, q >= p holds on every path that avoids the
pruned candidates, and every path through one has p below a path already found; see
`inference.prune_hopeless`.) The comparison is made on float64 sums of identical terms
in identical order (see target.py); `tol` (default 1e-9 nats) only absorbs the last-bit
differences between a max-backoff bound that happens to be tight and the exact value.
Results are natural log.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

import arsdecode.methods.evidence as evidence
from arsdecode.core.automaton import DEFAULT_VARIANT, QAutomaton, Variant
from arsdecode.core.inference import log_partition, prune_hopeless, sample_indices, viterbi_indices
from arsdecode.core.target import Target
from arsdecode.errors import BoundViolationError, NoPathError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.model import TargetModel, as_target_model
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
    method: str = "ars"  # which exact method produced it: "ars" or "full" (corpus.decode_many)

    def to_json(self) -> dict:
        """JSON-ready dict (natural logs). Only "timing" varies between identical runs."""
        return {
            "tokens": self.tokens,
            "log_p": self.log_p,
            "log_q": self.log_q,
            "certified": self.certified,
            "method": self.method,
            "iterations": self.iterations,
            "states": self.states,
            "ngrams_by_order": {str(k): v for k, v in self.ngrams_by_order.items()},
            "trace": [{"log_q": q, "log_p": p} for q, p in self.trace],
            "timing": {"seconds": self.seconds},
        }


@dataclass(frozen=True)
class SampleTrace:
    """Per trial: the ratio p/q, acceptance, and the automaton size when it was drawn."""

    ratios: list[float]
    accepted: list[bool]
    states: list[int]
    log_Z_q: list[float]  # ln q_t(X) of the automaton each trial was drawn from
    # Index (into the lists above) of the first trial drawn from the final q, the one never
    # refined again; len(ratios) if q was refined after the last trial. Trials from there on
    # are i.i.d. given that q (e.g. for an importance-sampling estimate over them).
    frozen_from: int
    log_p: list[float] = field(default_factory=list)  # ln p(x_t) of each trial
    log_q: list[float] = field(default_factory=list)  # ln q_t(x_t) of each trial


@dataclass(frozen=True)
class SampleResult:
    """Exact i.i.d. samples of p, the trace of the run, and an unbiased estimate of p(X)."""

    samples: list[list[str]]
    log_p: list[float]
    trials: int
    acceptance_rate: float
    log_Z: float  # ln p(X), importance estimate from every trial (arsdecode.methods.evidence)
    log_Z_ci: tuple[float, float]  # 95% interval of log_Z
    log_Z_unweighted: float  # ln of the plain mean of q_t(X) 1[acc_t] (unbiased, noisy)
    states: int
    refinements: int
    seconds: float
    trace: SampleTrace = field(repr=False)
    # Trials drawn when the acceptance rate over the last `ar_window` trials first reached
    # `target_ar` (checked at the end of a batch; q is frozen from then on); None if never.
    adapted_at_trial: int | None
    log_Z_rejection: float = -math.inf  # from accepted trials only (evidence.rejection_estimate)
    log_Z_rejection_ci: tuple[float, float] = (-math.inf, math.inf)

    def ranked(self) -> list[tuple[list[str], int, float]]:
        """Distinct samples as (tokens, count, ln p), most frequent first (the paper's Table 4).

        Ties are broken by higher ln p, then by the tokens, so the order is reproducible.
        """
        counts: dict[tuple[str, ...], int] = {}
        score: dict[tuple[str, ...], float] = {}
        for tokens, log_p in zip(self.samples, self.log_p, strict=True):
            key = tuple(tokens)
            counts[key] = counts.get(key, 0) + 1
            score[key] = log_p
        order = sorted(counts, key=lambda k: (-counts[k], -score[k], k))
        return [(list(k), counts[k], score[k]) for k in order]

    def to_json(self) -> dict:
        """JSON-ready dict (natural logs). Only "timing" varies between runs with one seed."""
        return {
            "samples": self.samples,
            "log_p": self.log_p,
            "trials": self.trials,
            "acceptance_rate": self.acceptance_rate,
            "log_Z": self.log_Z,
            "log_Z_ci": list(self.log_Z_ci),
            "log_Z_unweighted": self.log_Z_unweighted,
            "log_Z_rejection": self.log_Z_rejection,
            "log_Z_rejection_ci": list(self.log_Z_rejection_ci),
            "states": self.states,
            "refinements": self.refinements,
            "timing": {"seconds": self.seconds},
        }


def check_bound(qa: QAutomaton, target: Target, idx: Sequence[int], log_q: float,
                log_p: float, tol: float = DEFAULT_TOL) -> None:
    """Raise BoundViolationError if p(x) > q(x) beyond `tol` on the path `idx`.

    Why: q >= p is what every certificate and every acceptance ratio rests on. One-sided,
    the decoder's test `log q - log p <= tol` also passes when p exceeds q, certifying a path
    on a broken bound, and a sampler that clips p/q to 1 silently draws from the wrong
    distribution. So wherever a path is scored under both, a violation is an error that
    names where q fell below p: the first factor (position, word, context) whose p term
    exceeds its q edge, found by rescoring the path factor by factor.
    """
    if not log_p > log_q + tol:
        return
    lattice = target.lattice
    L = len(idx)
    words = [int(target.token_ids[i][j]) for i, j in enumerate(idx)]
    factors = target.factors(words)
    states = qa.states_on_path(idx)
    history = ["<s>", *(lattice.tokens[i][j] for i, j in enumerate(idx))]
    width = max(target.width, 0)
    for i in range(L + 1):
        col = idx[i] if i < L else 0
        q_term = float(qa.layers[i].weights[states[i], col])
        p_term = factors[i] + (float(lattice.log_emissions[i][col]) if i < L else 0.0)
        if p_term > q_term + tol:
            word = lattice.tokens[i][col] if i < L else "</s>"
            context = " ".join(history[max(0, i + 1 - width) : i + 1])
            bound_context = " ".join(qa.context_tokens(i, states[i])) or "(empty)"
            raise BoundViolationError(
                f"the bound is below the model at position {i + 1}: ln p({word} | {context}) "
                f"= {p_term!r} > its bound ln q = {q_term!r} (q's context: {bound_context}); "
                "the model's max-backoff bounds are wrong (check the file with "
                "`maxarpa verify`)")
    raise BoundViolationError(
        f"the bound is below the model on the path {' '.join(history[1:])!r}: ln p = "
        f"{log_p!r} > ln q = {log_q!r}; the model's max-backoff bounds are wrong")


def decode(
    lm: Model | TargetModel,
    lattice: Lattice,
    *,
    variant: Variant = DEFAULT_VARIANT,
    max_iterations: int | None = None,
    tol: float = DEFAULT_TOL,
    on_iteration=None,
    keep_automaton: bool = False,
    prune: bool | None = None,
) -> DecodeResult:
    """The exact most probable path of p over the lattice (Algorithm 1, decoding).

    Args:
        lm: a maxarpa.Model (wrapped by `arsdecode.model.MaxArpaLM`) or any `TargetModel`.
        variant: Algorithm 2's refinement, "all-edges" or "paper" (see `automaton.py`).
        max_iterations: stop early (result marked `certified=False`) after this many.
        on_iteration: optional callback(iteration, tokens, log_q, log_p) for traces.
        keep_automaton: return the final q-automaton in `automaton` (for export); off by
            default because it can hold tens of MB.
        prune: drop candidates whose best q-path is below the best p found so far
            (`inference.prune_hopeless`; exact, fewer model queries on large candidate
            lists). Default: on, unless `keep_automaton` (an exported q stays a bound on p).
    """
    start = time.perf_counter()
    model = as_target_model(lm)
    qa = QAutomaton(model, lattice, variant=variant, fill=False)
    target = Target(model, lattice, token_ids=qa.cand_ids)
    qa.on_exact_fill = target.remember_context  # exact edges are p's factors: reuse them
    qa.fill_pending()
    prune = (not keep_automaton) if prune is None else prune
    best_log_p = -math.inf  # p of the best path seen: a lower bound on the optimum
    best_idx: list[int] | None = None  # that path
    trace: list[tuple[float, float]] = []
    iteration = 0
    certified = False
    try:
        while True:
            iteration += 1
            idx, log_q = viterbi_indices(qa)
            log_p = target.log_p_indices(idx)
            trace.append((log_q, log_p))
            if on_iteration is not None:
                on_iteration(iteration, [lattice.tokens[i][j] for i, j in enumerate(idx)],
                             log_q, log_p)
            if log_q == -math.inf:
                raise NoPathError("every path of the lattice has probability 0 under the model")
            check_bound(qa, target, idx, log_q, log_p, tol)  # the certificate is two-sided
            improved = log_p > best_log_p
            if improved:
                best_log_p, best_idx = log_p, idx
            if log_q - log_p <= tol:
                certified = True
                break
            if prune and improved:  # drop candidates that cannot beat it (exact)
                prune_hopeless(qa, best_log_p)
            if not qa.refine_indices(idx):
                certified = log_q - log_p <= 1e-6  # only float noise is left on an exact path
                break
            if max_iterations is not None and iteration >= max_iterations:
                break
    except KeyboardInterrupt:
        if best_idx is None:  # no path scored yet: nothing to report
            raise
        # Every log q(x*) seen bounds the optimum from above (q >= p); the least is the gap's top.
        bound = min(q for q, _ in trace)
        raise DecodeInterrupted(DecodeResult(
            tokens=[lattice.tokens[i][j] for i, j in enumerate(best_idx)],
            log_p=float(best_log_p),
            log_q=float(bound),
            iterations=iteration,
            states=-1,  # the automaton may be mid-refinement: its size is not reported
            ngrams_by_order={},
            trace=trace,
            seconds=time.perf_counter() - start,
            certified=False,
        )) from None
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


class DecodeInterrupted(KeyboardInterrupt):
    """Ctrl-C during `decode`, carrying the best path found so far.

    Why a KeyboardInterrupt: code that does not know this class still stops as on any
    interrupt; code that does (the `arsdecode decode` CLI) reports the partial answer.
    `result` is a DecodeResult with `certified=False` whose tokens and `log_p` are the best
    exactly scored path seen, and whose `log_q` is the least log q(x*) seen, an upper bound
    on the optimum; `gap` = log_q - log_p >= 0 bounds how far the path can be from the best
    (natural log). `states` is -1: the automaton may have been interrupted mid-refinement.
    """

    def __init__(self, result: DecodeResult) -> None:
        super().__init__("interrupted")
        self.result = result

    @property
    def gap(self) -> float:
        return self.result.log_q - self.result.log_p


def sample(
    lm: Model | TargetModel,
    lattice: Lattice,
    n: int,
    seed: int | None = None,
    *,
    batch: int = 100,
    target_ar: float = 0.2,
    ar_window: int = 100,
    variant: Variant = DEFAULT_VARIANT,
    max_trials: int | None = None,
    stop_when_adapted: bool = False,
    rng: np.random.Generator | None = None,
    on_sample: Callable[[list[str], float], None] | None = None,
) -> SampleResult:
    """n exact i.i.d. samples of p by adaptive rejection (Algorithm 1, sampling).

    Trials are drawn B = `batch` at a time from the current q. While the acceptance rate over
    the last `ar_window` trials is below `target_ar`, every rejected trial of the batch refines
    q; afterwards q is frozen and batches are drawn until n samples are accepted. Accepted
    trials are exact samples whatever q was, since q never depends on the trial it judges.
    `stop_when_adapted` ends the run as soon as the target is reached (the paper's Table 3
    and Fig. 3c/3d measure exactly that), even with fewer than n samples; `adapt` is the
    entry point for that protocol.

    log_Z: every trial's importance weight p(x_t)/q_t(x_t) * q_t(X), averaged with predictable
    weights 1 / q_t(X); log_Z_rejection uses accepted trials only, log_Z_unweighted is the
    plain mean of q_t(X) 1[accepted_t]. All in log space; see arsdecode.methods.evidence.

    on_sample: optional callback(tokens, log_p) called as each sample is accepted (for
    streaming output and progress); an exception in it ends the run.
    """
    if n < 0:
        raise OptionError("n (the number of samples) must be >= 0")
    rng = rng if rng is not None else np.random.default_rng(seed)
    return _adaptive_rejection(
        lm, lattice, n, rng, batch=batch, target_ar=target_ar, ar_window=ar_window,
        variant=variant, max_trials=max_trials, stop_when_adapted=stop_when_adapted,
        on_sample=on_sample,
    )


def adapt(
    lm: Model | TargetModel,
    lattice: Lattice,
    *,
    batch: int = 100,
    target_ar: float = 0.2,
    ar_window: int = 100,
    variant: Variant = DEFAULT_VARIANT,
    max_trials: int | None = None,
    seed: int | None = None,
    rng: np.random.Generator | None = None,
) -> SampleResult:
    """Refine q until it is good enough to sample from, then stop (the paper's Table 3 and
    Fig. 3c/3d protocol: trials, states and time to reach the acceptance-rate target).

    The same loop as `sample`: batches of B = `batch` trials, every rejected trial of a batch
    refines q, until the acceptance rate over the last `ar_window` trials is >= `target_ar` at
    the end of a batch (so `trials` is a multiple of B); `adapted_at_trial` is then `trials`.
    If `max_trials` runs out first, `adapted_at_trial` is None. The trials accepted on the way
    are exact samples of p, in `samples`. Times are in `seconds` (q^(0) and the target
    included); logs are natural.
    """
    rng = rng if rng is not None else np.random.default_rng(seed)
    return _adaptive_rejection(
        lm, lattice, None, rng, batch=batch, target_ar=target_ar, ar_window=ar_window,
        variant=variant, max_trials=max_trials, stop_when_adapted=True,
    )


def _adaptive_rejection(
    lm: Model | TargetModel,
    lattice: Lattice,
    n: int | None,
    rng: np.random.Generator,
    *,
    batch: int,
    target_ar: float,
    ar_window: int,
    variant: Variant,
    max_trials: int | None,
    stop_when_adapted: bool,
    on_sample: Callable[[list[str], float], None] | None = None,
) -> SampleResult:
    """The loop shared by `sample` (until n accepted) and `adapt` (n = None: until adapted)."""
    if batch < 1:
        raise OptionError("batch must be >= 1")
    start = time.perf_counter()
    model = as_target_model(lm)
    qa = QAutomaton(model, lattice, variant=variant, track_pointers=False)
    target = Target(model, lattice, token_ids=qa.cand_ids)
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
    adapted_at: int | None = None
    frozen_from = 0
    refinements = 0
    while n is None or len(samples) < n:
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
        broken = np.flatnonzero(batch_log_p > batch_log_q + DEFAULT_TOL)
        if len(broken):  # p/q > 1 is never clipped: the bound itself is wrong
            t = int(broken[0])
            check_bound(qa, target, paths[t].tolist(), float(batch_log_q[t]),
                        float(batch_log_p[t]))
        for row, u_t, log_q, log_p in zip(
            paths.tolist(), u.tolist(), batch_log_q.tolist(), batch_log_p.tolist()
        ):
            ratio = 0.0 if log_p == -math.inf else math.exp(log_p - log_q)
            ok = u_t < ratio
            ratios.append(ratio)
            accepted.append(ok)
            states.append(n_states)
            log_zq.append(log_z)
            trial_log_p.append(log_p)
            trial_log_q.append(log_q)
            if ok:
                samples.append([lattice.tokens[i][j] for i, j in enumerate(row)])
                sample_log_p.append(log_p)
                if on_sample is not None:
                    on_sample(samples[-1], log_p)
                if len(samples) == n:
                    break
            else:
                rejected.append(row)
        if adapting:
            window = accepted[-ar_window:]
            if len(accepted) >= ar_window and sum(window) / len(window) >= target_ar:
                adapting = False
                adapted_at = len(accepted)
                if stop_when_adapted:  # the paper's protocol: time to reach the AR target
                    break
            else:
                changed = qa.refine_many(rejected)
                refinements += changed
                if changed:
                    frozen_from = len(accepted)
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
        trace=SampleTrace(ratios, accepted, states, log_zq, frozen_from, trial_log_p,
                          trial_log_q),
        adapted_at_trial=adapted_at,
        log_Z_rejection=rej.log_Z,
        log_Z_rejection_ci=rej.ci,
    )
