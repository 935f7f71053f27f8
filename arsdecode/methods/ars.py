"""Adaptive rejection sampling and exact decoding, Algorithm 1 of Carter, Dymetman & Bouchard,
on every lattice kind.

    q <- q^(0)                                        QAutomaton(model, lattice)
    loop:
        x ~ q   (sampling)   or   x* = argmax q (decoding)
        accept with probability p(x) / q(x)           decoding: accept iff q(x*) = p(x*)
        if rejected: q <- refine(q, x)                Algorithm 2, `QAutomaton.refine_paths`

Decoding's stopping rule is a certificate: q >= p everywhere and q(x*) >= q(y) for all y, so
q(x*) = p(x*) gives p(x*) >= p(y). (With pruning, q >= p holds on every path that avoids the
pruned candidates, and every path through one has p below a path already found; see
`inference.prune_hopeless`.) Both sides sum identical float64 terms in identical order; `tol`
(`tolerances.CERTIFICATE_TOL`) only absorbs the last bits of a bound that happens to be tight.

One engine (issue 30). The loop (stopping rules, Ctrl-C, the acceptance-rate window) is
`ars_loop`'s; `LatticePaths` is the one adapter of the one q-automaton to it, for a confusion
network (a path: candidate indices, the layered fast paths: incremental Viterbi, column
pruning, memoised p) and a word lattice (a path: arc numbers, the `core.dag_dp` sweep) alike;
what differs is the layout, a branch per primitive (`ars_paths`). One decoding iteration is
`ArsDecoder`; `decode` repeats it on one lattice, `lockstep` on many confusion networks at
once, `kbest` with q's K best paths. A word lattice's results add the path's `arcs`
(`DagArsResult`, `DagArsSampleResult`). Results are natural log.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from arsdecode.core.automaton import ARS_HINT, DEFAULT_VARIANT, FillRequest, QAutomaton, Variant
from arsdecode.core.inference import log_partition, prune_hopeless, sample_indices, viterbi_indices
from arsdecode.core.target import Target
from arsdecode.core.tolerances import CERTIFICATE_TOL
from arsdecode.errors import NoPathError, OptionError
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.methods import ars_paths
from arsdecode.methods.ars_loop import ArsDecodeRun, DecodeInterrupted, decode_loop, sampling_loop
from arsdecode.methods.results import (
    DagArsResult,
    DagArsSampleResult,
    DagPath,
    DecodeResult,
    SampleResult,
)
from arsdecode.model import ModelLike, TargetModel, as_target_model

__all__ = ["ArsDecoder", "DagArsResult", "DagArsSampleResult", "DecodeInterrupted",
           "LatticePaths", "adapt", "dag_ars_decode", "dag_ars_sample", "decode", "sample"]


class LatticePaths:
    """A lattice's q-automaton and its target p as Algorithm 1 uses them (`ars_loop.QPaths`),
    for both layouts of the one lattice (`qa.layered`: a confusion network).

    A path is a list of candidate indices (layered) or of arc numbers (ending at the last arc's
    destination, the start node when empty). Layered: p is `Target` (memoised; q's exact edges
    are its factors), x* the incremental Viterbi, draws the layered DP, pruning exact. Else:
    p is `ars_paths.paths_log_p` on the true histories, x* and draws the `core.dag_dp` sweep,
    refinement `depth` words a step. Refinement is Algorithm 2 (`QAutomaton`) either way."""

    budget_hint = ARS_HINT
    target: Target  # p, on a confusion network
    wl: WordLattice  # the lattice, when it is not a confusion network

    def __init__(self, model: TargetModel, qa: QAutomaton, depth: int | None = 1) -> None:
        self.model, self.qa, self.depth, lattice = model, qa, depth, qa.lattice
        self.layered = isinstance(lattice, Lattice)
        if isinstance(lattice, Lattice):
            self.tokens_at = lattice.tokens
            self.target = Target(model, lattice, token_ids=qa.cand_ids[:len(lattice)])
            self.no_path, self.where = ars_paths.NO_PATH, ""
        else:
            self.wl = lattice
            self.no_path, self.where = ars_paths.no_path(qa), f"{lattice.source}: "

    def argmax(self) -> tuple[list[int], float]:
        if self.layered:
            return viterbi_indices(self.qa)
        arcs, _, log_q = ars_paths.viterbi(self.qa)
        return arcs, log_q

    def log_p(self, paths: Sequence[Sequence[int]]) -> list[float]:
        if self.layered:
            return [self.target.log_p_indices(p) for p in paths]
        finals = [int(self.wl.dst[a[-1]]) if a else 0 for a in paths]  # where each path ends
        return ars_paths.paths_log_p(self.model, self.wl, paths, finals).tolist()

    def draw(self, n: int, rng: np.random.Generator
             ) -> tuple[list[list[int]], np.ndarray, np.ndarray, float]:
        if not self.layered:
            paths, finals, log_q, log_z = ars_paths.draw(self.qa, n, rng)
            return paths, log_q, ars_paths.paths_log_p(self.model, self.wl, paths, finals), log_z
        idx, log_z = sample_indices(self.qa, n, rng)
        if log_z == -math.inf:  # refinement proved that no path has probability > 0
            raise NoPathError(ars_paths.NO_PATH)
        return idx.tolist(), self.qa.log_q_batch(idx), self.target.log_p_batch(idx), log_z

    def log_partition(self) -> float:
        """ln q(X) (-inf: then p(X) = 0 too)."""
        if self.layered:
            return log_partition(self.qa)
        return float(ars_paths.backward_sums(self.qa)[0][0])

    def check_bound(self, path: Sequence[int], log_q: float, log_p: float,
                    tol: float) -> None:
        if self.layered:
            ars_paths.check_bound(self.qa, self.target, list(path), log_q, log_p, tol)
        else:
            ars_paths.check_arcs_bound(self.qa, path, log_q, log_p, tol)

    def refine(self, paths: Sequence[Sequence[int]]) -> int:
        if self.layered:
            return self.qa.refine_many(paths)
        return self.qa.refine_paths(paths, self.depth) if paths else 0

    def prune(self, best_log_p: float) -> None:
        """Drop what cannot beat the best p found (a confusion network's columns; a word
        lattice's run is built with prune=False)."""
        if self.layered:
            prune_hopeless(self.qa, best_log_p)

    def tokens(self, path: Sequence[int]) -> list[str]:
        if self.layered:
            return [self.tokens_at[i][j] for i, j in enumerate(path)]
        return self.wl.path_words(path)

    def num_states(self) -> int:
        return self.qa.num_states()

    def nbytes(self) -> int:
        """The per-node arrays (what grows with refinement)."""
        return self.qa.nbytes()

    def over_budget(self, iterations: int) -> str:
        return (f"{self.where}--method ars's q-automaton ({self.qa.num_states()} states after "
                f"{iterations} iterations)")


class ArsDecoder(ArsDecodeRun[list[int]]):
    """Algorithm 1 (decoding) on one lattice (`ars_loop.ArsDecodeRun`), with what `lockstep`
    and `kbest` need beside it on a confusion network: the automaton `qa`, the target `target`,
    the missing factors of x* for a batched query, and a refinement whose model queries can be
    deferred.

    x* is held as a list of paths (`paths`, with `log_q` and `log_p` alongside): one for
    decoding, q's K best for k-best (`kbest.KBestDecoder` overrides `best_of_q`), where the
    list is certified when every path is exact and refined along every inexact one. Pruning
    keeps only what can beat the single best path, so it is for decoding only.
    """

    qa: QAutomaton  # q, built once the options are checked
    target: Target  # p (a confusion network's)
    q: LatticePaths

    def __init__(self, model: TargetModel, lattice: Lattice | WordLattice, *,
                 variant: Variant = DEFAULT_VARIANT, tol: float = CERTIFICATE_TOL,
                 max_iterations: int | None = None, prune: bool = True,
                 fill: bool = True, depth: int | None = 1, first_words: bool | None = None,
                 max_bytes: int | None = None) -> None:
        """`fill=False` leaves the model queries of q^(0)'s rows to the caller
        (`qa.fill_requests(qa.unfilled)`, answered by `qa.apply_fill`; lockstep batches them
        across lattices)."""
        self.lattice = lattice

        def q0() -> LatticePaths:
            self.qa = QAutomaton(model, lattice, variant=variant, fill=False,  # q^(0)
                                 first_words=first_words, max_bytes=max_bytes)
            q = LatticePaths(model, self.qa, depth)  # and p
            if q.layered:
                self.target = q.target
                self.qa.on_exact_fill = self.target.remember_context  # exact edges: p's factors
            if fill:
                self.qa.fill_pending()
            return q

        super().__init__(q0, tol=tol, max_iterations=max_iterations, prune=prune,
                         max_bytes=max_bytes)

    @property
    def best_idx(self) -> list[int] | None:
        """The best exactly scored path so far (candidate indices or arcs)."""
        return self.best_path

    def missing_factors(self) -> np.ndarray:
        """The factors of p on x* not known yet, as rows (context..., word), for a caller that
        answers many decoders' in one query (lockstep) and passes them to `target.remember`."""
        return np.concatenate([self.target.missing_factors(p) for p in self.paths])

    def refine(self, *, defer: bool = False) -> list[FillRequest]:  # type: ignore[override]
        """Algorithm 2 along every inexact path of x* (`QAutomaton.refine`), or end the run.

        `defer=True` (a confusion network, variant "all-edges"): the model queries of the new
        rows are returned instead of made, for the caller to answer (`qa.apply_fill`) before
        the next `propose`; otherwise they are made here and nothing is returned.
        """
        if not (defer and self.q.layered and self.qa.variant == "all-edges"):
            super().refine()
            return []
        pending: list[tuple[int, int]] = []
        changed = sum(self.qa.refine_indices(p, pending=pending) for p in self.inexact())
        requests = self.qa.fill_requests(pending)
        self.after_refine(changed)
        return requests

    def tokens(self, path: Sequence[int]) -> list[str]:
        return self.q.tokens(path)

    def _result(self, path: list[int], log_p: float, log_q: float, states: int,
                certified: bool, seconds: float, automaton: QAutomaton | None = None
                ) -> DecodeResult:
        """The one decode result: a word lattice's (`DagArsResult`) adds the path's arcs."""
        common: dict[str, Any] = dict(
            tokens=self.tokens(path), log_p=log_p, log_q=log_q, iterations=self.iterations,
            states=states, trace=self.trace, seconds=seconds, certified=certified,
            automaton=automaton)
        if self.q.layered:
            return DecodeResult(**common, ngrams_by_order=(
                self.qa.ngrams_by_order() if states >= 0 else {}))
        return DagArsResult(**common, ngrams_by_order={}, arcs=tuple(path))

    def result(self, seconds: float, *, keep_automaton: bool = False) -> DecodeResult:
        """The run's answer: x* of the last iteration, certified or not (`certified`)."""
        return self._result(self.paths[0], self.log_p[0], self.log_q[0], self.qa.num_states(),
                            self.certified, seconds, self.qa if keep_automaton else None)

    def best_so_far(self, seconds: float) -> DecodeResult | None:
        """For an interrupted run: the best exactly scored path, uncertified, bounded above by
        the least ln q(x*) seen (every one bounds the optimum, q >= p); None if none scored.
        `states` is -1: the automaton may be mid-refinement."""
        if self.best_path is None:
            return None
        return self._result(self.best_path, self.best_log_p, min(q for q, _ in self.trace), -1,
                            False, seconds)


def decode(lm: ModelLike, lattice: Lattice | WordLattice, *,
           variant: Variant = DEFAULT_VARIANT, max_iterations: int | None = None,
           tol: float = CERTIFICATE_TOL,
           on_iteration: Callable[[int, list[str], float, float], None] | None = None,
           keep_automaton: bool = False, prune: bool | None = None, depth: int | None = 1,
           first_words: bool | None = None, max_bytes: int | None = None) -> DecodeResult:
    """The exact most probable path of p over the lattice (Algorithm 1, decoding).

    Args:
        lm: a maxarpa.Model (wrapped by `arsdecode.model.MaxArpaLM`) or any `TargetModel`.
        lattice: a confusion network or a word lattice (then a `DagArsResult`, with `arcs`).
        variant: Algorithm 2's refinement, "all-edges" or "paper" (see `automaton.py`).
        max_iterations: stop early (result marked `certified=False`) after this many; an
            integer >= 1 (else OptionError, before any work).
        on_iteration: optional callback(iteration, tokens, log_q, log_p) of x*, called after
            each iteration (for traces and progress).
        keep_automaton: return the final q-automaton in `automaton` (for export); off by
            default because it can hold tens of MB.
        prune: drop candidates whose best q-path is below the best p found so far
            (`inference.prune_hopeless`; exact, fewer model queries on large candidate
            lists). Default: on, unless `keep_automaton` (an exported q stays a bound on p);
            confusion networks only.
        depth: words a context may gain per step of x* (1: the paper's Algorithm 2; None: all
            the previous state tells apart); word lattices only (`QAutomaton.refine_paths`).
        first_words: q^(0) also holds one-word contexts (default: on for a word lattice, off
            for a confusion network, whose q^(0) is the paper's).
        max_bytes: q's memory budget, checked before q^(0) and after every refinement.

    Raises OptionError (a bad or inapplicable option, before any work), NoPathError (every
    path has probability zero), BoundViolationError (p > q on x*: the model's bounds are
    wrong), MemoryBudgetExceeded. Ctrl-C raises `DecodeInterrupted` with the best path scored
    so far (uncertified; `log_q` the least ln q(x*) seen).
    """
    ars_paths.check_depth(depth, lattice)
    layered = isinstance(lattice, Lattice)
    if prune and not layered:
        raise OptionError("prune applies to confusion networks only")
    start = time.perf_counter()
    run = ArsDecoder(as_target_model(lm), lattice, variant=variant, tol=tol,
                     max_iterations=max_iterations, depth=depth, first_words=first_words,
                     prune=layered and (not keep_automaton if prune is None else prune),
                     max_bytes=max_bytes)
    decode_loop(run, on_iteration, lambda: run.best_so_far(time.perf_counter() - start))
    return run.result(time.perf_counter() - start, keep_automaton=keep_automaton)


def dag_ars_decode(lm: ModelLike, wl: WordLattice, **options: Any) -> DagArsResult:
    """`decode` on a word lattice (its name before issue 30): a `DagArsResult`."""
    result = decode(lm, wl, **options)
    assert isinstance(result, DagArsResult)
    return result


def sample(lm: ModelLike, lattice: Lattice | WordLattice, n: int,
           seed: int | np.random.Generator | None = None, *, batch: int = 100,
           target_ar: float = 0.2, ar_window: int = 100, variant: Variant = DEFAULT_VARIANT,
           max_trials: int | None = None, stop_when_adapted: bool = False,
           rng: np.random.Generator | None = None,
           on_sample: Callable[[list[str], float], None] | None = None, keep: bool = True,
           depth: int | None = 1, first_words: bool | None = None
           ) -> SampleResult | DagArsSampleResult:
    """n exact i.i.d. samples of p by adaptive rejection (Algorithm 1, sampling).

    Trials are drawn B = `batch` at a time from the current q. While the acceptance rate over
    the last `ar_window` trials is below `target_ar`, every rejected trial of the batch refines
    q; afterwards q is frozen and batches are drawn until n samples are accepted. Accepted
    trials are exact samples whatever q was, since q never depends on the trial it judges.
    `stop_when_adapted` ends the run as soon as the target is reached (the paper's Table 3
    and Fig. 3c/3d measure exactly that), even with fewer than n samples; `adapt` is the
    entry point for that protocol. `max_trials` stops the run (with fewer samples).

    log_Z: the importance estimate of ln p(X) from every trial, log_Z_rejection from the
    accepted ones, log_Z_unweighted the plain mean of q_t(X) 1[accepted_t] (`methods.evidence`).

    on_sample: optional callback(tokens, log_p) called as each sample is accepted (for
    streaming output and progress); an exception in it ends the run. keep=False: a streamed
    run in constant memory (`methods.trials`): the samples go to `on_sample` only and the
    trace's lists are empty; the estimates are the same up to float64 summation order.
    `depth` and `first_words` as in `decode`. A word lattice's result is a
    `DagArsSampleResult` (each sample a `DagPath`: tokens, arcs, ln p).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise OptionError(f"n (the number of samples) must be an integer >= 0, not {n!r}")
    if isinstance(seed, np.random.Generator):
        rng = seed
    return _adaptive_rejection(
        as_target_model(lm), lattice, int(n), rng if rng is not None else
        np.random.default_rng(seed), batch=batch, target_ar=target_ar, ar_window=ar_window,
        variant=variant, max_trials=max_trials, stop_when_adapted=stop_when_adapted,
        on_sample=on_sample, keep=keep, depth=depth, first_words=first_words)


def dag_ars_sample(lm: ModelLike, wl: WordLattice, n: int,
                   seed: int | np.random.Generator | None = None, **options: Any
                   ) -> DagArsSampleResult:
    """`sample` on a word lattice (its name before issue 30), n >= 1: a `DagArsSampleResult`."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise OptionError(f"n (the number of samples) must be an integer >= 1, not {n!r}")
    result = sample(lm, wl, n, seed, **options)
    assert isinstance(result, DagArsSampleResult)
    return result


def adapt(lm: ModelLike, lattice: Lattice | WordLattice, *, batch: int = 100,
          target_ar: float = 0.2, ar_window: int = 100, variant: Variant = DEFAULT_VARIANT,
          max_trials: int | None = None, seed: int | None = None,
          rng: np.random.Generator | None = None) -> SampleResult | DagArsSampleResult:
    """Refine q until it is good enough to sample from, then stop (the paper's Table 3 and
    Fig. 3c/3d protocol: trials, states and time to reach the acceptance-rate target).

    `sample`'s loop until the acceptance rate over the last `ar_window` trials is >=
    `target_ar` at the end of a batch (`trials` a multiple of B, `adapted_at_trial` then
    `trials`; None if `max_trials` runs out first). The trials accepted on the way are exact
    samples of p, in `samples`. `seconds` includes q^(0) and the target; logs are natural.
    """
    rng = rng if rng is not None else np.random.default_rng(seed)
    return _adaptive_rejection(
        as_target_model(lm), lattice, None, rng, batch=batch, target_ar=target_ar,
        ar_window=ar_window, variant=variant, max_trials=max_trials, stop_when_adapted=True)


def _adaptive_rejection(model: TargetModel, lattice: Lattice | WordLattice, n: int | None,
                        rng: np.random.Generator, *, batch: int, target_ar: float,
                        ar_window: int, variant: Variant, max_trials: int | None,
                        stop_when_adapted: bool,
                        on_sample: Callable[[list[str], float], None] | None = None,
                        keep: bool = True, depth: int | None = 1,
                        first_words: bool | None = None
                        ) -> SampleResult | DagArsSampleResult:
    """`sample` (until n accepted) and `adapt` (n = None: until adapted): `ars_loop.
    sampling_loop` over the lattice's q-automaton, the samples as tokens (and arcs)."""
    ars_paths.check_depth(depth, lattice)
    if isinstance(batch, bool) or batch < 1 or ar_window < 1:
        raise OptionError(f"batch and ar_window must be >= 1, not {batch!r} and {ar_window!r}")
    start = time.perf_counter()
    qa = QAutomaton(model, lattice, variant=variant, track_pointers=False,
                    first_words=first_words)
    q = LatticePaths(model, qa, depth)
    if q.log_partition() == -math.inf:
        raise NoPathError(q.no_path)
    each = None if on_sample is None else (
        lambda path, log_p: on_sample(q.tokens(path), log_p))
    run = sampling_loop(q, n, rng, batch=batch, target_ar=target_ar, ar_window=ar_window,
                        max_trials=max_trials, stop_when_adapted=stop_when_adapted,
                        on_sample=each, keep=keep)
    log = run.log
    est, rej, plain = log.evidence()
    common: dict[str, Any] = dict(
        trials=log.trials, acceptance_rate=log.acceptance_rate(), log_Z=est.log_Z,
        log_Z_ci=est.ci, log_Z_unweighted=plain, states=qa.num_states(),
        refinements=run.refinements, seconds=time.perf_counter() - start,
        trace=log.trace(run.frozen_from), adapted_at_trial=run.adapted_at,
        log_Z_rejection=rej.log_Z, log_Z_rejection_ci=rej.ci)
    if q.layered:
        return SampleResult(samples=[q.tokens(p) for p in run.samples], log_p=run.log_p,
                            **common)
    return DagArsSampleResult(samples=[DagPath(q.tokens(a), tuple(a), lp) for a, lp in zip(
        run.samples, run.log_p, strict=True)], **common)
