"""Algorithm 1 of Carter, Dymetman & Bouchard (2012), written once for every lattice kind.

    q <- q^(0)                                         the adapter's automaton
    loop:
        x* = argmax q   (decoding)   or   x ~ q / q(X)   (sampling)
        decoding: accept iff q(x*) = p(x*)   sampling: accept with probability p(x) / q(x)
        if rejected: q <- refine(q, x)                 Algorithm 2, `QPaths.refine`

Why one module: a confusion network and a word lattice, both over the one q-automaton
`core.automaton.QAutomaton`, differ in how a path is written, found, drawn, scored and
refined, not in the loop around them. The loop's rules (the two-sided certificate, the
float-noise rule when refinement can change nothing, `max_iterations`, the memory budget,
Ctrl-C with the best path so far, the acceptance-rate window, the evidence estimates) live
here, over the small `QPaths` protocol that the one adapter `ars.LatticePaths` implements for
both lattice kinds.

The certificate: q >= p on every path and q(x*) >= q(y) for all y, so q(x*) = p(x*) gives
p(x*) >= p(y). Both sides sum identical float64 terms in identical order (see `core.target`);
`tol` (`tolerances.CERTIFICATE_TOL`) only absorbs last-bit differences of a bound that is
tight. A path with p above q beyond `tol` is a broken bound (`QPaths.check_bound` raises
BoundViolationError): never certified, never clipped to an acceptance ratio of 1.
Results are natural log.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from arsdecode.core.tolerances import CERTIFICATE_TOL, FLOAT_NOISE
from arsdecode.errors import MemoryBudgetExceeded, NoPathError, OptionError
from arsdecode.methods.trials import TrialLog

P = TypeVar("P")  # a path as the automaton writes it (candidate indices, or arc numbers)


class QPaths(Protocol[P]):
    """A q-automaton and its target p, as Algorithm 1 uses them (natural log).

    `no_path`: the NoPathError message when q(X) = 0 (then p(X) = 0, as q >= p)."""

    no_path: str

    def argmax(self) -> tuple[P, float]:
        """x* = argmax q and ln q(x*), summed in path order as p is."""
        ...

    def log_p(self, paths: Sequence[P]) -> list[float]:
        """ln p of each path (decoding: the paths of x*)."""
        ...

    def draw(self, n: int, rng: np.random.Generator
             ) -> tuple[list[P], np.ndarray, np.ndarray, float]:
        """n i.i.d. paths of q / q(X), ln q and ln p of each, and ln q(X) (sampling).
        Raises NoPathError when q(X) = 0."""
        ...

    def check_bound(self, path: P, log_q: float, log_p: float, tol: float) -> None:
        """BoundViolationError if ln p > ln q + tol on `path`, naming where q fell below p."""
        ...

    def refine(self, paths: Sequence[P]) -> int:
        """Algorithm 2 along each path; how many paths changed q (0: every state exact)."""
        ...

    def prune(self, best_log_p: float) -> None:
        """Drop what cannot beat a path of ln p = best_log_p (exact), or nothing."""
        ...

    def tokens(self, path: P) -> list[str]:
        ...

    def num_states(self) -> int:
        ...

    def nbytes(self) -> int:
        ...

    def over_budget(self, iterations: int) -> str:
        """What passed the memory budget, for MemoryBudgetExceeded (names the lattice)."""
        ...

    budget_hint: str


def check_max_iterations(max_iterations: int | None) -> None:
    """The one validation of `max_iterations`, for every lattice kind (None: no limit)."""
    if max_iterations is not None and (isinstance(max_iterations, bool)
                                       or not isinstance(max_iterations, (int, np.integer))
                                       or max_iterations < 1):
        raise OptionError(f"max_iterations must be an integer >= 1, not {max_iterations!r}")


class ArsDecodeRun(Generic[P]):
    """Algorithm 1 (decoding) on one lattice: its state, and one iteration at a time.

    Why an object: `decode_loop` repeats the iteration on one lattice, `lockstep` advances
    many confusion networks at once (batching their model queries), and `kbest` proposes q's
    K best paths in place of the argmax (overriding `best_of_q`).

    One iteration (`step`), in the paper's names:
        propose()       x* = argmax q, and ln q(x*)            (NoPathError if q(X) = 0)
        score()         ln p(x*)
        judge(log_p)    q >= p on x* (`check_bound`); if q(x*) = p(x*) within `tol`, x* is
                        certified and the run is done; else, with `prune`, what cannot beat
                        the best p found is dropped
        refine()        Algorithm 2 along every inexact path of x*. The run is done when nothing
                        is left to refine (every state on x* exact: certified iff only
                        FLOAT_NOISE separates q(x*) from p(x*)) or after `max_iterations`
                        (not certified). q is then held to `max_bytes`, if given.
    """

    def __init__(self, make_q: Callable[[], QPaths[P]], *, tol: float = CERTIFICATE_TOL,
                 max_iterations: int | None = None, prune: bool = False,
                 max_bytes: int | None = None) -> None:
        """`make_q` builds q^(0) (and p) once the options are checked: a bad option costs no
        model query, on every lattice kind."""
        check_max_iterations(max_iterations)
        self.q = make_q()
        self.tol = tol
        self.max_iterations = max_iterations
        self.prune = prune
        self.max_bytes = max_bytes
        self.iterations = 0
        self.paths: list[P] = []  # x*, this iteration's proposal
        self.log_q: list[float] = []  # ln q(x*)
        self.log_p: list[float] = []  # ln p(x*)
        self.gaps: list[float] = []  # ln q(x*) - ln p(x*) >= 0
        self.trace: list[tuple[float, float]] = []  # per iteration: (ln q(x*), ln p(x*))
        self.best_log_p = -math.inf  # p of the best path scored: a lower bound on the optimum
        self.best_path: P | None = None  # that path
        self.certified = False
        self.done = False

    def best_of_q(self) -> tuple[list[P], list[float]]:
        """x* = argmax q and ln q(x*)."""
        path, log_q = self.q.argmax()
        return [path], [log_q]

    def propose(self) -> list[P]:
        """Start an iteration: x*, the best path(s) of the current q."""
        self.iterations += 1
        self.paths, self.log_q = self.best_of_q()
        if not self.paths or self.log_q[0] == -math.inf:  # q >= p: then p is 0 everywhere
            raise NoPathError(self.q.no_path)
        return self.paths

    def score(self) -> list[float]:
        """ln p(x*)."""
        return self.q.log_p(self.paths)

    def judge(self, log_p: Sequence[float]) -> None:
        """Algorithm 1's test of x* given ln p(x*): accept (certify) iff q(x*) = p(x*)."""
        self.log_p = [float(v) for v in log_p]
        self.trace.append((self.log_q[0], self.log_p[0]))
        for path, lq, lp in zip(self.paths, self.log_q, self.log_p, strict=True):
            self.q.check_bound(path, lq, lp, self.tol)
        self.gaps = [lq - lp for lq, lp in zip(self.log_q, self.log_p, strict=True)]
        j = max(range(len(self.log_p)), key=self.log_p.__getitem__)
        improved = self.log_p[j] > self.best_log_p
        if improved or self.best_path is None:
            self.best_log_p, self.best_path = self.log_p[j], self.paths[j]
        if all(g <= self.tol for g in self.gaps):  # q(x*) = p(x*) and q >= p: x* is optimal
            self.certified = self.done = True
        elif self.prune and improved:
            self.q.prune(self.best_log_p)

    def inexact(self) -> list[P]:
        """The paths of x* that q still overestimates: Algorithm 2 refines along these."""
        return [p for p, g in zip(self.paths, self.gaps, strict=True) if g > self.tol]

    def refine(self) -> None:
        """Algorithm 2 along every inexact path of x*, then `after_refine`."""
        self.after_refine(self.q.refine(self.inexact()))

    def after_refine(self, changed: int) -> None:
        """End the run when refinement changed nothing or `max_iterations` is reached; hold q
        to the memory budget (a refinement adds at most a path's length of states)."""
        if not changed:  # every state on x* is exact: q(x*) and p(x*) sum the same factors
            self.certified = all(g <= FLOAT_NOISE for g in self.gaps)  # float noise at most
            self.done = True
            return
        if self.max_bytes is not None and self.q.nbytes() > self.max_bytes:
            raise MemoryBudgetExceeded.of(self.q.over_budget(self.iterations), self.q.nbytes(),
                                          self.max_bytes, self.q.budget_hint)
        if self.max_iterations is not None and self.iterations >= self.max_iterations:
            self.done = True

    def step(self) -> None:
        """One iteration of Algorithm 1 (decoding), on this lattice alone."""
        self.propose()  # x* = argmax q
        self.judge(self.score())  # accept iff q(x*) = p(x*)
        if not self.done:
            self.refine()  # Algorithm 2 along x*


class DecodeInterrupted(KeyboardInterrupt):
    """Ctrl-C during ARS decoding (a confusion network's or a word lattice's), carrying the
    best path found so far.

    Why a KeyboardInterrupt: code that does not know this class still stops as on any
    interrupt; code that does (the `arsdecode decode` CLI) reports the partial answer.
    `result` is a DecodeResult with `certified=False` whose `tokens` and `log_p` are the best
    exactly scored path seen (with its `arcs` on a word lattice), and whose `log_q` is the least
    ln q(x*) seen, an upper bound on the optimum; `gap` = log_q - log_p >= 0 bounds how far the
    path can be from the best (natural log). `states` is -1: the automaton may have been
    interrupted mid-refinement.
    """

    def __init__(self, result: Any) -> None:
        super().__init__("interrupted")
        self.result = result

    @property
    def gap(self) -> float:
        return self.result.log_q - self.result.log_p


def decode_loop(run: ArsDecodeRun[P],
                on_iteration: Callable[[int, list[str], float, float], None] | None,
                best_so_far: Callable[[], Any]) -> None:
    """Repeat `run.step()` until the run is done, calling on_iteration(iteration, tokens,
    ln q(x*), ln p(x*)) after each. Ctrl-C raises DecodeInterrupted(best_so_far()) once a path
    has been scored (a bare KeyboardInterrupt before: there is nothing to report)."""
    try:
        while not run.done:
            run.step()
            if on_iteration is not None:
                on_iteration(run.iterations, run.q.tokens(run.paths[0]), run.log_q[0],
                             run.log_p[0])
    except KeyboardInterrupt:
        if run.best_path is None:
            raise
        raise DecodeInterrupted(best_so_far()) from None


@dataclass
class SamplingRun(Generic[P]):
    """What `sampling_loop` found: the accepted paths with ln p, and the record of trials."""

    log: TrialLog
    samples: list[P] = field(default_factory=list)
    log_p: list[float] = field(default_factory=list)
    adapted_at: int | None = None  # trials when the acceptance-rate target was reached
    frozen_from: int = 0  # the first trial drawn from the final q
    refinements: int = 0


def sampling_loop(q: QPaths[P], n: int | None, rng: np.random.Generator, *, batch: int,
                  target_ar: float, ar_window: int, max_trials: int | None,
                  stop_when_adapted: bool = False,
                  on_sample: Callable[[P, float], None] | None = None,
                  keep: bool = True) -> SamplingRun[P]:
    """Algorithm 1 (sampling): until n trials are accepted (n = None: until adapted).

    Trials are drawn B = `batch` at a time from the current q; trial x is accepted iff
    u < p(x) / q(x), u ~ U(0, 1). While the acceptance rate over the last `ar_window` trials
    is below `target_ar` (checked at the end of a batch), q is refined along every rejected
    trial of the batch; then q is frozen. Accepted trials are exact samples of p whatever q
    was, since q never depends on the trial it judges. `max_trials` stops the run, within a
    batch. `stop_when_adapted`: stop when the target is reached (the paper's Table 3 protocol).
    `on_sample(path, ln p)` sees each accepted trial; `keep=False` keeps neither the samples
    nor the per-trial trace (constant memory, `methods.trials`).
    """
    if isinstance(batch, bool) or batch < 1 or ar_window < 1:
        raise OptionError(f"batch and ar_window must be >= 1, not {batch!r} and {ar_window!r}")
    run: SamplingRun[P] = SamplingRun(TrialLog(keep, ar_window))
    log = run.log
    adapting = True
    while n is None or log.accepted < n:
        if max_trials is not None and log.trials >= max_trials:
            break
        n_states = q.num_states()
        paths, batch_log_q, batch_log_p, log_z = q.draw(batch, rng)  # x ~ q / q(X)
        u = rng.random(batch)
        broken = np.flatnonzero(batch_log_p > batch_log_q + CERTIFICATE_TOL)
        if len(broken):  # p/q > 1 is never clipped: the bound itself is wrong
            t = int(broken[0])
            q.check_bound(paths[t], float(batch_log_q[t]), float(batch_log_p[t]),
                          CERTIFICATE_TOL)
        rejected: list[P] = []
        for path, u_t, log_q, log_p in zip(paths, u.tolist(), batch_log_q.tolist(),
                                           batch_log_p.tolist()):
            ratio = 0.0 if log_p == -math.inf else math.exp(log_p - log_q)  # p(x) / q(x)
            ok = u_t < ratio
            log.add(ratio, ok, n_states, log_z, log_p, log_q)
            if ok:
                if keep:
                    run.samples.append(path)
                    run.log_p.append(log_p)
                if on_sample is not None:
                    on_sample(path, log_p)
                if log.accepted == n:
                    break
            else:
                rejected.append(path)
            if max_trials is not None and log.trials >= max_trials:
                break
        if adapting:
            rate = log.window_rate()
            if rate is not None and rate >= target_ar:
                adapting = False  # q is frozen from here on
                run.adapted_at = log.trials
                if stop_when_adapted:
                    break
            else:
                changed = q.refine(rejected)  # Algorithm 2 along every rejected trial
                run.refinements += changed
                if changed:
                    run.frozen_from = log.trials
    return run
