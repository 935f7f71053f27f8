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
and the exact value. The loop itself (the stopping rules, Ctrl-C, the acceptance-rate window)
is `ars_loop`'s, shared with word lattices (`dag_ars`); this module adapts the confusion
network's q-automaton to it (`CnPaths`). One decoding iteration is `ArsDecoder`; `decode`
repeats it on one lattice, `lockstep` on many at once, `kbest` with q's K best paths.
Results are natural log.
"""


from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from arsdecode.core.automaton import DEFAULT_VARIANT, FillRequest, QAutomaton, Variant
from arsdecode.core.inference import log_partition, prune_hopeless, sample_indices, viterbi_indices
from arsdecode.core.target import Target
from arsdecode.core.tolerances import CERTIFICATE_TOL
from arsdecode.errors import BoundViolationError, NoPathError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.methods.ars_loop import (
    ArsDecodeRun,
    DecodeInterrupted,
    decode_loop,
    sampling_loop,
)
from arsdecode.methods.results import DecodeResult, SampleResult
from arsdecode.model import ModelLike, TargetModel, as_target_model

__all__ = ["ArsDecoder", "CnPaths", "DecodeInterrupted", "adapt", "check_bound", "decode",
           "sample"]

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
    states = qa.states_along(qa.index_steps(idx))
    history = ["<s>", *(lattice.tokens[i][j] for i, j in enumerate(idx))]
    width = max(target.width, 0)
    for i in range(L + 1):
        col = idx[i] if i < L else 0
        node = qa.nodes[i]
        q_term = float(node.weights[states[i], col] if i < L else node.final[states[i]])
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


class CnPaths:
    """A confusion network's q-automaton and p as Algorithm 1 uses them (`ars_loop.QPaths`).

    A path is a list of candidate indices, one per position. ln p is memoised by `Target`
    (exact edges of q are p's factors, remembered as they are filled); x* is found by
    incremental Viterbi; refinement is `QAutomaton.refine_many` (Algorithm 2)."""

    no_path = NO_PATH
    budget_hint = "raise --memory-budget"

    def __init__(self, qa: QAutomaton, target: Target, lattice: Lattice) -> None:
        self.qa, self.target, self.lattice = qa, target, lattice

    def argmax(self) -> tuple[list[int], float]:
        return viterbi_indices(self.qa)

    def log_p(self, paths: Sequence[Sequence[int]]) -> list[float]:
        return [self.target.log_p_indices(p) for p in paths]

    def draw(self, n: int, rng: np.random.Generator
             ) -> tuple[list[list[int]], np.ndarray, np.ndarray, float]:
        idx, log_z = sample_indices(self.qa, n, rng)
        if log_z == -math.inf:  # refinement proved that no path has probability > 0
            raise NoPathError(NO_PATH)
        return idx.tolist(), self.qa.log_q_batch(idx), self.target.log_p_batch(idx), log_z

    def check_bound(self, path: Sequence[int], log_q: float, log_p: float,
                    tol: float) -> None:
        check_bound(self.qa, self.target, list(path), log_q, log_p, tol)

    def refine(self, paths: Sequence[Sequence[int]]) -> int:
        return self.qa.refine_many(paths)

    def prune(self, best_log_p: float) -> None:
        prune_hopeless(self.qa, best_log_p)

    def tokens(self, path: Sequence[int]) -> list[str]:
        return [self.lattice.tokens[i][j] for i, j in enumerate(path)]

    def num_states(self) -> int:
        return self.qa.num_states()

    def nbytes(self) -> int:
        """The per-node arrays (what grows with refinement)."""
        return self.qa.nbytes()

    def over_budget(self, iterations: int) -> str:
        return f"ARS's q-automaton ({self.qa.num_states()} states after {iterations} iterations)"


class ArsDecoder(ArsDecodeRun[list[int]]):
    """Algorithm 1 (decoding) on one confusion network (`ars_loop.ArsDecodeRun`), with what
    `lockstep` and `kbest` need beside it: the automaton `qa`, the target `target`, the
    missing factors of x* for a batched query, and a refinement whose model queries can be
    deferred.

    x* is held as a list of paths (`paths`, with `log_q` and `log_p` alongside): one for
    decoding, q's K best for k-best (`kbest.KBestDecoder` overrides `best_of_q`), where the
    list is certified when every path is exact and refined along every inexact one. Pruning
    keeps only what can beat the single best path, so it is for decoding only.
    """

    qa: QAutomaton  # q, built once the options are checked
    target: Target  # p

    def __init__(self, model: TargetModel, lattice: Lattice, *,
                 variant: Variant = DEFAULT_VARIANT, tol: float = CERTIFICATE_TOL,
                 max_iterations: int | None = None, prune: bool = True,
                 fill: bool = True) -> None:
        """`fill=False` leaves the model queries of q^(0)'s rows to the caller
        (`qa.fill_requests(qa.unfilled)`, answered by `qa.apply_fill`; lockstep batches them
        across lattices)."""
        self.lattice = lattice

        def q0() -> CnPaths:
            self.qa = QAutomaton(model, lattice, variant=variant, fill=False)  # q^(0)
            self.target = Target(model, lattice, token_ids=self.qa.cand_ids[:len(lattice)])  # p
            self.qa.on_exact_fill = self.target.remember_context  # exact edges: p's factors
            if fill:
                self.qa.fill_pending()
            return CnPaths(self.qa, self.target, lattice)

        super().__init__(q0, tol=tol, max_iterations=max_iterations, prune=prune)

    @property
    def best_idx(self) -> list[int] | None:
        """The best exactly scored path so far (candidate indices)."""
        return self.best_path

    def missing_factors(self) -> np.ndarray:
        """The factors of p on x* not known yet, as rows (context..., word), for a caller that
        answers many decoders' in one query (lockstep) and passes them to `target.remember`."""
        return np.concatenate([self.target.missing_factors(p) for p in self.paths])

    def refine(self, *, defer: bool = False) -> list[FillRequest]:  # type: ignore[override]
        """Algorithm 2 along every inexact path of x* (`QAutomaton.refine`), or end the run.

        `defer=True` (variant "all-edges"): the model queries of the new rows are returned
        instead of made, for the caller to answer (`qa.apply_fill`) before the next
        `propose`; otherwise they are made here and nothing is returned.
        """
        if not (defer and self.qa.variant == "all-edges"):
            super().refine()
            return []
        pending: list[tuple[int, int]] = []
        changed = sum(self.qa.refine_indices(p, pending=pending) for p in self.inexact())
        requests = self.qa.fill_requests(pending)
        self.after_refine(changed)
        return requests

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
        if self.best_path is None:
            return None
        return DecodeResult(
            tokens=self.tokens(self.best_path),
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
        max_iterations: stop early (result marked `certified=False`) after this many; an
            integer >= 1 (else OptionError, before any work, as on word lattices).
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
    decode_loop(run, on_iteration, lambda: run.best_so_far(time.perf_counter() - start))
    return run.result(time.perf_counter() - start, keep_automaton=keep_automaton)


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
    """`sample` (until n accepted) and `adapt` (n = None: until adapted) on a confusion
    network: `ars_loop.sampling_loop` over its q-automaton, the samples as tokens."""
    start = time.perf_counter()
    qa = QAutomaton(model, lattice, variant=variant, track_pointers=False)
    target = Target(model, lattice, token_ids=qa.cand_ids)
    if log_partition(qa) == -math.inf:
        raise NoPathError(NO_PATH)
    q = CnPaths(qa, target, lattice)
    each = None if on_sample is None else (
        lambda row, log_p: on_sample(q.tokens(row), log_p))
    run = sampling_loop(q, n, rng, batch=batch, target_ar=target_ar, ar_window=ar_window,
                        max_trials=max_trials, stop_when_adapted=stop_when_adapted,
                        on_sample=each, keep=keep)
    log = run.log
    est, rej, plain = log.evidence()
    return SampleResult(
        samples=[q.tokens(row) for row in run.samples],
        log_p=run.log_p,
        trials=log.trials,
        acceptance_rate=log.acceptance_rate(),
        log_Z=est.log_Z,
        log_Z_ci=est.ci,
        log_Z_unweighted=plain,
        states=qa.num_states(),
        refinements=run.refinements,
        seconds=time.perf_counter() - start,
        trace=log.trace(run.frozen_from),
        adapted_at_trial=run.adapted_at,
        log_Z_rejection=rej.log_Z,
        log_Z_rejection_ci=rej.ci,
    )
