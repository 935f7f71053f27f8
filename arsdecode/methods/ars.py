"""Adaptive rejection sampling and exact decoding: Algorithm 1 of Carter, Dymetman & Bouchard.

    q <- q^(0)                                        QAutomaton(lm, lattice)
    loop:
        x ~ q   (sampling)   or   x* = argmax q (decoding)
        accept with probability p(x) / q(x)           decoding: accept iff q(x*) = p(x*)
        if rejected: q <- refine(q, x)                Algorithm 2, QAutomaton.refine

Decoding's stopping rule is a certificate: q >= p everywhere and q(x*) >= q(y) for all y, so
q(x*) = p(x*) gives p(x*) >= p(y). (With pruning, q >= p holds on every path that avoids the
pruned candidates, and every path through one has p below a path already found; see
`inference.prune_hopeless`.) The comparison is made on float64 sums of identical terms
in identical order (see target.py); `tol` (default `tolerances.CERTIFICATE_TOL`, 1e-9 nats)
only absorbs the last-bit differences between a max-backoff bound that happens to be tight
and the exact value. One decoding iteration is `ArsDecoder`; `decode` repeats it on one
lattice, `lockstep` on many at once, `kbest` with q's K best paths. Results are natural log.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from arsdecode.core.automaton import DEFAULT_VARIANT, FillRequest, QAutomaton, Variant
from arsdecode.core.inference import log_partition, prune_hopeless, sample_indices, viterbi_indices
from arsdecode.core.target import Target
from arsdecode.core.tolerances import CERTIFICATE_TOL, FLOAT_NOISE
from arsdecode.errors import BoundViolationError, NoPathError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.methods.results import DecodeResult, SampleResult
from arsdecode.methods.trials import TrialLog
from arsdecode.model import ModelLike, TargetModel, as_target_model

NO_PATH = "every path of the lattice has probability 0 under the model"


def check_bound(qa: QAutomaton, target: Target, idx: Sequence[int], log_q: float,
                log_p: float, tol: float = CERTIFICATE_TOL) -> None:
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


class ArsDecoder:
    """Algorithm 1 (decoding) on one lattice: its state, and one iteration at a time.

    Why an object: the iteration is what `decode` repeats on one lattice, what `lockstep`
    advances on many lattices at once (batching their model queries) and what `kbest` repeats
    with q's K best paths in place of the argmax. Written once, the stopping rule, the pruning
    and the refinement cannot drift apart between them.

    One iteration (`step`; lockstep calls the parts), in the paper's names:
        propose()       x* = argmax q, and ln q(x*)            (NoPathError if q(X) = 0)
        score()         ln p(x*), querying only the factors not known yet
        judge(log_p)    q >= p on x* (`check_bound`); if q(x*) = p(x*) within `tol`, x* is
                        certified and the run is done; else candidates whose every path is
                        below the best p found are pruned (`prune`)
        refine()        Algorithm 2 along x*. The run is done when nothing is left to refine
                        (every state on x* exact: certified iff only FLOAT_NOISE separates
                        q(x*) from p(x*)) or after `max_iterations` (not certified).

    x* is held as a list of paths (`paths`, with `log_q` and `log_p` alongside): one for
    decoding, q's K best for k-best (`kbest.KBestDecoder` overrides `best_of_q`), where the
    list is certified when every path is exact and refined along every inexact one. Pruning
    keeps only what can beat the single best path, so it is for decoding only.
    """

    def __init__(self, model: TargetModel, lattice: Lattice, *,
                 variant: Variant = DEFAULT_VARIANT, tol: float = CERTIFICATE_TOL,
                 max_iterations: int | None = None, prune: bool = True,
                 fill: bool = True) -> None:
        """`fill=False` leaves the model queries of q^(0)'s rows to the caller
        (`qa.fill_requests(qa.unfilled)`, answered by `qa.apply_fill`; lockstep batches them
        across lattices)."""
        self.lattice = lattice
        self.qa = QAutomaton(model, lattice, variant=variant, fill=False)  # q^(0)
        self.target = Target(model, lattice, token_ids=self.qa.cand_ids)  # p
        self.qa.on_exact_fill = self.target.remember_context  # exact edges are p's factors
        if fill:
            self.qa.fill_pending()
        self.tol = tol
        self.max_iterations = max_iterations
        self.prune = prune
        self.iterations = 0
        self.paths: list[list[int]] = []  # x* (candidate indices), this iteration's proposal
        self.log_q: list[float] = []  # ln q(x*)
        self.log_p: list[float] = []  # ln p(x*)
        self.gaps: list[float] = []  # ln q(x*) - ln p(x*) >= 0
        self.trace: list[tuple[float, float]] = []  # per iteration: (ln q(x*), ln p(x*))
        self.best_log_p = -math.inf  # p of the best path scored: a lower bound on the optimum
        self.best_idx: list[int] | None = None  # that path
        self.certified = False
        self.done = False

    def best_of_q(self) -> tuple[list[list[int]], list[float]]:
        """x* = argmax q (incremental Viterbi) and ln q(x*), forward-summed like p."""
        idx, log_q = viterbi_indices(self.qa)
        return [idx], [log_q]

    def propose(self) -> list[list[int]]:
        """Start an iteration: x*, the best path(s) of the current q."""
        self.iterations += 1
        self.paths, self.log_q = self.best_of_q()
        if not self.paths or self.log_q[0] == -math.inf:  # q >= p: then p is 0 everywhere
            raise NoPathError(NO_PATH)
        return self.paths

    def missing_factors(self) -> np.ndarray:
        """The factors of p on x* not known yet, as rows (context..., word), for a caller that
        answers many decoders' in one query (lockstep) and passes them to `target.remember`."""
        return np.concatenate([self.target.missing_factors(p) for p in self.paths])

    def score(self) -> list[float]:
        """ln p(x*): `Target` queries the factors it has not memoised (none after lockstep's
        batched query; exact edges of q are memoised as they are filled)."""
        return [self.target.log_p_indices(p) for p in self.paths]

    def judge(self, log_p: Sequence[float]) -> None:
        """Algorithm 1's test of x* given ln p(x*): accept (certify) iff q(x*) = p(x*).

        The certificate is two-sided (`check_bound`). A path scored above the best so far
        prunes the candidates that cannot beat it (exact; `inference.prune_hopeless`).
        """
        self.log_p = [float(v) for v in log_p]
        self.trace.append((self.log_q[0], self.log_p[0]))
        for idx, lq, lp in zip(self.paths, self.log_q, self.log_p, strict=True):
            check_bound(self.qa, self.target, idx, lq, lp, self.tol)
        self.gaps = [lq - lp for lq, lp in zip(self.log_q, self.log_p, strict=True)]
        j = max(range(len(self.log_p)), key=self.log_p.__getitem__)
        improved = self.log_p[j] > self.best_log_p
        if improved:
            self.best_log_p, self.best_idx = self.log_p[j], self.paths[j]
        if all(g <= self.tol for g in self.gaps):  # q(x*) = p(x*) and q >= p: x* is optimal
            self.certified = self.done = True
        elif self.prune and improved:
            prune_hopeless(self.qa, self.best_log_p)

    def refine(self, *, defer: bool = False) -> list[FillRequest]:
        """Algorithm 2 along every inexact path of x* (`QAutomaton.refine`), or end the run.

        `defer=True` (variant "all-edges"): the model queries of the new rows are returned
        instead of made, for the caller to answer (`qa.apply_fill`) before the next
        `propose`; otherwise they are made here and nothing is returned.
        """
        inexact = [p for p, g in zip(self.paths, self.gaps, strict=True) if g > self.tol]
        requests: list[FillRequest] = []
        if defer and self.qa.variant == "all-edges":
            pending: list[tuple[int, int]] = []
            changed = sum(self.qa.refine_indices(p, pending=pending) for p in inexact)
            requests = self.qa.fill_requests(pending)
        else:
            changed = self.qa.refine_many(inexact)
        if not changed:  # every state on x* is exact: q(x*) and p(x*) sum the same factors
            self.certified = all(g <= FLOAT_NOISE for g in self.gaps)  # float noise at most
            self.done = True
        elif self.max_iterations is not None and self.iterations >= self.max_iterations:
            self.done = True
        return requests

    def step(self) -> None:
        """One iteration of Algorithm 1 (decoding), on this lattice alone."""
        self.propose()  # x* = argmax q
        self.judge(self.score())  # accept iff q(x*) = p(x*)
        if not self.done:
            self.refine()  # Algorithm 2 along x*

    def tokens(self, idx: Sequence[int]) -> list[str]:
        return [self.lattice.tokens[i][j] for i, j in enumerate(idx)]

    def result(self, seconds: float, *, keep_automaton: bool = False) -> DecodeResult:
        """The run's answer: x* of the last iteration, certified or not (`certified`)."""
        return DecodeResult(
            tokens=self.tokens(self.paths[0]),
            log_p=self.log_p[0],
            log_q=self.log_q[0],
            iterations=self.iterations,
            states=self.qa.num_states(),
            ngrams_by_order=self.qa.ngrams_by_order(),
            trace=self.trace,
            seconds=seconds,
            certified=self.certified,
            automaton=self.qa if keep_automaton else None,
        )

    def best_so_far(self, seconds: float) -> DecodeResult | None:
        """For an interrupted run: the best exactly scored path, uncertified, bounded above by
        the least ln q(x*) seen (every one bounds the optimum, q >= p); None if none scored."""
        if self.best_idx is None:
            return None
        return DecodeResult(
            tokens=self.tokens(self.best_idx),
            log_p=self.best_log_p,
            log_q=min(q for q, _ in self.trace),
            iterations=self.iterations,
            states=-1,  # the automaton may be mid-refinement: its size is not reported
            ngrams_by_order={},
            trace=self.trace,
            seconds=seconds,
            certified=False,
        )


def decode(
    lm: ModelLike,
    lattice: Lattice,
    *,
    variant: Variant = DEFAULT_VARIANT,
    max_iterations: int | None = None,
    tol: float = CERTIFICATE_TOL,
    on_iteration: Callable[[int, list[str], float, float], None] | None = None,
    keep_automaton: bool = False,
    prune: bool | None = None,
) -> DecodeResult:
    """The exact most probable path of p over the lattice (Algorithm 1, decoding).

    Args:
        lm: a maxarpa.Model (wrapped by `arsdecode.model.MaxArpaLM`) or any `TargetModel`.
        variant: Algorithm 2's refinement, "all-edges" or "paper" (see `automaton.py`).
        max_iterations: stop early (result marked `certified=False`) after this many.
        on_iteration: optional callback(iteration, tokens, log_q, log_p) of x*, called after
            each iteration (for traces and progress).
        keep_automaton: return the final q-automaton in `automaton` (for export); off by
            default because it can hold tens of MB.
        prune: drop candidates whose best q-path is below the best p found so far
            (`inference.prune_hopeless`; exact, fewer model queries on large candidate
            lists). Default: on, unless `keep_automaton` (an exported q stays a bound on p).

    Ctrl-C raises `DecodeInterrupted` with the best path scored so far.
    """
    start = time.perf_counter()
    run = ArsDecoder(as_target_model(lm), lattice, variant=variant, tol=tol,
                     max_iterations=max_iterations,
                     prune=(not keep_automaton) if prune is None else prune)
    try:
        while not run.done:
            run.step()
            if on_iteration is not None:
                on_iteration(run.iterations, run.tokens(run.paths[0]), run.log_q[0],
                             run.log_p[0])
    except KeyboardInterrupt:
        partial = run.best_so_far(time.perf_counter() - start)
        if partial is None:  # no path scored yet: nothing to report
            raise
        raise DecodeInterrupted(partial) from None
    return run.result(time.perf_counter() - start, keep_automaton=keep_automaton)


class DecodeInterrupted(KeyboardInterrupt):
    """Ctrl-C during `decode` (or `dag_ars.dag_ars_decode` on a word lattice), carrying the
    best path found so far.

    Why a KeyboardInterrupt: code that does not know this class still stops as on any
    interrupt; code that does (the `arsdecode decode` CLI) reports the partial answer.
    `result` is a DecodeResult (a DagArsResult on a word lattice) with `certified=False`
    whose path and `log_p` are the best exactly scored path seen, and whose `log_q` is the
    least log q(x*) seen, an upper bound on the optimum; `gap` = log_q - log_p >= 0 bounds
    how far the path can be from the best (natural log). `states` is -1: the automaton may
    have been interrupted mid-refinement.
    """

    def __init__(self, result: Any) -> None:
        # Any, not DecodeResult | DagArsResult: naming dag_ars here, even for typing only,
        # closes an import circle (dag_ars raises this class); see tests/test_imports.py.
        super().__init__("interrupted")
        self.result = result

    @property
    def gap(self) -> float:
        return self.result.log_q - self.result.log_p


def sample(
    lm: ModelLike,
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
    keep: bool = True,
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

    keep=False: a streamed run in constant memory (`methods.trials`): the samples go to
    `on_sample` only (`samples` and `log_p` are empty) and the trace's lists are empty; the
    estimates are the same up to float64 summation order.
    """
    if n < 0:
        raise OptionError("n (the number of samples) must be >= 0")
    rng = rng if rng is not None else np.random.default_rng(seed)
    return _adaptive_rejection(
        as_target_model(lm), lattice, n, rng, batch=batch, target_ar=target_ar,
        ar_window=ar_window, variant=variant, max_trials=max_trials,
        stop_when_adapted=stop_when_adapted, on_sample=on_sample, keep=keep,
    )


def adapt(
    lm: ModelLike,
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
        as_target_model(lm), lattice, None, rng, batch=batch, target_ar=target_ar,
        ar_window=ar_window, variant=variant, max_trials=max_trials, stop_when_adapted=True,
    )


def _adaptive_rejection(
    model: TargetModel,
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
    keep: bool = True,
) -> SampleResult:
    """The loop shared by `sample` (until n accepted) and `adapt` (n = None: until adapted)."""
    if batch < 1 or ar_window < 1:
        raise OptionError("batch and ar_window must be >= 1")
    start = time.perf_counter()
    qa = QAutomaton(model, lattice, variant=variant, track_pointers=False)
    target = Target(model, lattice, token_ids=qa.cand_ids)
    if log_partition(qa) == -math.inf:
        raise NoPathError(NO_PATH)
    samples: list[list[str]] = []
    sample_log_p: list[float] = []
    log = TrialLog(keep, ar_window)
    adapting = True
    adapted_at: int | None = None
    frozen_from = 0
    refinements = 0
    while n is None or log.accepted < n:
        if max_trials is not None and log.trials >= max_trials:
            break
        paths, log_z = sample_indices(qa, batch, rng)
        if log_z == -math.inf:  # refinement proved that no path has probability > 0
            raise NoPathError(NO_PATH)
        u = rng.random(batch)
        rejected: list[list[int]] = []
        n_states = qa.num_states()
        batch_log_q = qa.log_q_batch(paths)
        batch_log_p = target.log_p_batch(paths)
        broken = np.flatnonzero(batch_log_p > batch_log_q + CERTIFICATE_TOL)
        if len(broken):  # p/q > 1 is never clipped: the bound itself is wrong
            t = int(broken[0])
            check_bound(qa, target, paths[t].tolist(), float(batch_log_q[t]),
                        float(batch_log_p[t]))
        for row, u_t, log_q, log_p in zip(
            paths.tolist(), u.tolist(), batch_log_q.tolist(), batch_log_p.tolist()
        ):
            ratio = 0.0 if log_p == -math.inf else math.exp(log_p - log_q)
            ok = u_t < ratio
            log.add(ratio, ok, n_states, log_z, log_p, log_q)
            if ok:
                tokens = [lattice.tokens[i][j] for i, j in enumerate(row)]
                if keep:
                    samples.append(tokens)
                    sample_log_p.append(log_p)
                if on_sample is not None:
                    on_sample(tokens, log_p)
                if log.accepted == n:
                    break
            else:
                rejected.append(row)
        if adapting:
            rate = log.window_rate()
            if rate is not None and rate >= target_ar:
                adapting = False
                adapted_at = log.trials
                if stop_when_adapted:  # the paper's protocol: time to reach the AR target
                    break
            else:
                changed = qa.refine_many(rejected)
                refinements += changed
                if changed:
                    frozen_from = log.trials
    est, rej, plain = log.evidence()
    return SampleResult(
        samples=samples,
        log_p=sample_log_p,
        trials=log.trials,
        acceptance_rate=log.acceptance_rate(),
        log_Z=est.log_Z,
        log_Z_ci=est.ci,
        log_Z_unweighted=plain,
        states=qa.num_states(),
        refinements=refinements,
        seconds=time.perf_counter() - start,
        trace=log.trace(frozen_from),
        adapted_at_trial=adapted_at,
        log_Z_rejection=rej.log_Z,
        log_Z_rejection_ci=rej.ci,
    )
