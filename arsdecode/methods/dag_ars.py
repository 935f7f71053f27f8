"""Adaptive rejection on word lattices (DAGs): exact decoding with a certificate, exact sampling.

Why: the exact expansion (`dag_full`) builds every (node, merged context) state the lattice can
reach; the paper's method builds only the states the best path (or the rejected samples) need,
on the one q-automaton of `arsdecode.core.automaton` (states (node, context); a confusion
network is its layered case, issue 30). Algorithm 1, as `ars.py` runs it on confusion networks:

    q <- q^(0)                                   QAutomaton(model, lattice)
    loop:
        x* = argmax q   (decode)  or  x ~ q (sample)
        accept iff q(x*) = p(x*)  (decode)  or  with probability p(x) / q(x) (sample)
        if rejected: refine q along x (Algorithm 2, QAutomaton.refine_paths)

The certificate: q >= p on every path and q(x*) >= q(y) for all y, so q(x*) = p(x*) (within
`CERTIFICATE_TOL`, float64 sums of the same terms in the same order) gives p(x*) >= p(y). A path
with p above q (beyond the tolerance) is a broken bound and raises BoundViolationError; it is
never certified or accepted.

The dynamic programs are the package's one semiring sweep over (node, state) blocks
(`core.dag_dp`, q as a dense `QGraph`): backward over the nodes in reverse topological order
(every arc goes to a higher node), one numpy operation per node over its (state x outgoing
arc) matrix, for Viterbi (max-plus; ties: stopping first, then the smallest arc) and the
backward sums (log-sum-exp). Sampling draws all the walkers of a batch forward over the nodes
in order (a walker at node u moves to a later node), each step by the one categorical draw
over stop and the outgoing arcs, weighted by the mass after them: an exact draw from q / q(X).

All values natural log. The model is reached only through `TargetModel`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import numpy as np

import arsdecode.core.dag_dp as dag_dp
from arsdecode.core.automaton import ARS_HINT, QAutomaton
from arsdecode.core.semiring import LogSumExp, MaxPlus, quiet
from arsdecode.core.tolerances import CERTIFICATE_TOL
from arsdecode.errors import BoundViolationError, NoPathError, OptionError
from arsdecode.lattice import WordLattice
from arsdecode.methods.ars_loop import ArsDecodeRun, decode_loop, sampling_loop
from arsdecode.methods.results import DagArsResult, DagArsSampleResult, DagPath
from arsdecode.model import ModelLike, TargetModel, as_target_model, context_rows

__all__ = ["DagArsResult", "DagArsSampleResult", "DagPaths", "dag_ars_decode", "dag_ars_sample",
           "path_log_p", "paths_log_p"]


# ----- p and the bound check --------------------------------------------------------------------
def path_log_p(model: TargetModel, wl: WordLattice, arcs: Sequence[int], final: int) -> float:
    """ln p of a path (arc weights, final weight, LM with `<s>` and `</s>`); see
    `paths_log_p`."""
    return float(paths_log_p(model, wl, [arcs], [final])[0])


def paths_log_p(model: TargetModel, wl: WordLattice, paths: Sequence[Sequence[int]],
                finals: Sequence[int]) -> np.ndarray:
    """ln p of each path, with one batched `log_prob` call on the paths' true histories.

    Each path's terms (arc weight, plus ln p(w | history) on a word arc; final weight plus
    ln p(</s> | history)) are summed in path order from 0.0, exactly as
    `QAutomaton.log_q` sums q, so an exact path has q = p bit for bit (padding adds 0.0,
    which changes no float)."""
    width = max(model.order - 1, 0)
    ctxs: list[list[int]] = []
    words: list[int] = []
    all_words = [w for arcs in paths for a in arcs if (w := wl.words[a]) is not None]
    ids = model.ids(all_words).tolist() if all_words else []
    k = 0
    for arcs in paths:
        history = [model.bos]
        for a in arcs:
            if wl.words[a] is not None:
                ctxs.append(history[max(0, len(history) - width):] if width else [])
                history.append(int(ids[k]))
                words.append(int(ids[k]))
                k += 1
        ctxs.append(history[max(0, len(history) - width):] if width else [])
        words.append(model.eos)
    lp = np.asarray(model.log_prob(context_rows(ctxs, width), np.array(words, dtype=np.int64)),
                    dtype=np.float64)
    longest = max((len(arcs) for arcs in paths), default=0)
    terms = np.zeros((len(paths), longest))
    last = np.empty(len(paths))
    pos = 0
    with quiet():
        for i, (arcs, final) in enumerate(zip(paths, finals, strict=True)):
            if arcs:
                idx = np.asarray(arcs, dtype=np.int64)
                is_word = np.array([wl.words[x] is not None for x in arcs], dtype=bool)
                row = wl.log_weights[idx].copy()
                n_words = int(is_word.sum())
                row[is_word] += lp[pos:pos + n_words]
                terms[i, :len(arcs)] = row
                pos += n_words
            last[i] = np.float64(wl.finals[final]) + lp[pos]
            pos += 1
        total = np.zeros(len(paths))
        for j in range(longest):
            total = total + terms[:, j]
        return total + last


def _word_lattice(qa: QAutomaton) -> WordLattice:
    """The word lattice q was built over (this module's automata are built over one)."""
    assert isinstance(qa.lattice, WordLattice)
    return qa.lattice


def _no_path(qa: QAutomaton) -> str:
    return f"{_word_lattice(qa).source}: every path has probability zero under the model"


def _check_bound(qa: QAutomaton, arcs: Sequence[int], log_q: float, log_p: float,
                 tol: float = CERTIFICATE_TOL) -> None:
    """BoundViolationError if p > q beyond `tol` on the path: q >= p is what the certificate
    and the acceptance ratio rest on, so a broken bound is an error, never clipped."""
    if log_p > log_q + tol:
        wl = _word_lattice(qa)
        words = " ".join(wl.path_words(arcs))
        raise BoundViolationError(
            f"the bound is below the model on the path {words!r} of {wl.source}: ln p = "
            f"{log_p!r} > ln q = {log_q!r}; the model's bounds are wrong (check the file "
            "with `maxarpa verify`)")


# ----- dynamic programs over q (the one sweep and sampler of `core.dag_dp`) ----------------------
def viterbi(qa: QAutomaton) -> tuple[list[int], int, float]:
    """x* = argmax q: its arcs, its final node and ln q(x*) (summed in path order).

    The max-plus sweep keeps only each state's best value; the choices are recomputed along x*
    alone (stop on a tie with the best arc, else the first best arc: the smallest).
    Raises NoPathError when q (hence p) is zero on every path."""
    graph = dag_dp.QGraph(qa)
    best = dag_dp.backward(graph, MaxPlus)
    if best[0] == -np.inf:
        raise NoPathError(_no_path(qa))
    path = dag_dp.best_path(graph, best)
    arcs = [int(qa.arc_lo[u]) + c for u, c in zip(path.nodes, path.columns, strict=True)]
    return arcs, path.final_node, qa.log_q(arcs, path.final_node)


def backward_sums(qa: QAutomaton) -> tuple[np.ndarray, np.ndarray]:
    """beta (global state numbering): ln of q's mass after each state, and the offsets."""
    graph = dag_dp.QGraph(qa)
    return dag_dp.backward(graph, LogSumExp), graph.offsets


def draw(qa: QAutomaton, n: int, rng: np.random.Generator
         ) -> tuple[list[list[int]], list[int], np.ndarray, float]:
    """n i.i.d. paths of q / q(X): their arcs, final nodes, ln q of each, and ln q(X).

    Forward sampling after backward filtering (`dag_dp.sample`): every walker draws, at each
    node it reaches, the stop or an arc with probability proportional to its weight times the
    mass after it. ln q of a path is summed along it in path order, as `QAutomaton.log_q`
    sums it."""
    graph = dag_dp.QGraph(qa)
    beta = dag_dp.backward(graph, LogSumExp)
    log_z = float(beta[0])
    if log_z == -math.inf:
        raise NoPathError(_no_path(qa))
    drawn = dag_dp.sample(graph, beta, n, rng)
    off = graph.offsets
    arcs = drawn.paths(n, lambda src, col: qa.arc_lo[dag_dp.node_of(off, src)] + col)
    return arcs, dag_dp.node_of(off, drawn.final).tolist(), drawn.score, log_z


def _check_depth(depth: int | None) -> None:
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int)
                              or depth < 1):
        raise OptionError(f"depth (words a context gains per refinement step) must be an "
                          f"integer >= 1 or None, not {depth!r}")


# ----- the q-automaton as Algorithm 1 uses it ---------------------------------------------------
class DagPaths:
    """A word lattice's q-automaton and p as Algorithm 1 uses them (`ars_loop.QPaths`).

    A path is a list of arc numbers; it ends at the last arc's destination (the start node 0
    when empty). x* is `viterbi`, a draw is `draw`, ln p is `paths_log_p` on the true
    histories, refinement is `QAutomaton.refine_paths` with `depth` words per step."""

    budget_hint = ARS_HINT

    def __init__(self, model: TargetModel, qa: QAutomaton, depth: int | None) -> None:
        self.model, self.qa, self.wl, self.depth = model, qa, _word_lattice(qa), depth
        self.no_path = _no_path(qa)

    def final(self, arcs: Sequence[int]) -> int:
        return int(self.wl.dst[arcs[-1]]) if arcs else 0

    def argmax(self) -> tuple[list[int], float]:
        arcs, _, log_q = viterbi(self.qa)
        return arcs, log_q

    def log_p(self, paths: Sequence[Sequence[int]]) -> list[float]:
        return paths_log_p(self.model, self.wl, paths, [self.final(a) for a in paths]).tolist()

    def draw(self, n: int, rng: np.random.Generator
             ) -> tuple[list[list[int]], np.ndarray, np.ndarray, float]:
        paths, finals, log_q, log_z = draw(self.qa, n, rng)
        return paths, log_q, paths_log_p(self.model, self.wl, paths, finals), log_z

    def check_bound(self, path: Sequence[int], log_q: float, log_p: float,
                    tol: float) -> None:
        _check_bound(self.qa, path, log_q, log_p, tol)

    def refine(self, paths: Sequence[Sequence[int]]) -> int:
        return self.qa.refine_paths(paths, self.depth) if paths else 0

    def prune(self, best_log_p: float) -> None:
        """No pruning on word lattices (the run is built with prune=False)."""

    def tokens(self, path: Sequence[int]) -> list[str]:
        return self.wl.path_words(path)

    def num_states(self) -> int:
        return self.qa.num_states()

    def nbytes(self) -> int:
        return self.qa.nbytes()

    def over_budget(self, iterations: int) -> str:
        return (f"{self.wl.source}: --method ars's q-automaton ({self.qa.num_states()} states "
                f"after {iterations} iterations)")


# ----- decode ------------------------------------------------------------------------------------
def dag_ars_decode(lm: ModelLike, wl: WordLattice, *, max_iterations: int | None = None,
                   tol: float = CERTIFICATE_TOL, depth: int | None = 1,
                   first_words: bool = True, on_iteration: Callable[..., None] | None = None,
                   max_bytes: int | None = None) -> DagArsResult:
    """The exact best path of the word lattice, with a certificate (Algorithm 1, decoding).

    `ars_loop.ArsDecodeRun` and `decode_loop`, as on confusion networks: each iteration,
    x* = argmax q (Viterbi), ln p(x*) on its true history; certified when
    ln q(x*) - ln p(x*) <= `tol`; else q is refined along x*. When refinement can change
    nothing on x* (every state on it exact), q(x*) and p(x*) sum the same factors and x* is
    certified if only float noise (`FLOAT_NOISE`) separates them. `max_iterations` stops the
    run uncertified. `depth`: words a context may gain per step of x* (1: the paper's
    Algorithm 2; None: all the previous state tells apart); see `QAutomaton.refine_paths`.
    `first_words`: start from one-word contexts (`QAutomaton`); False: the paper's q^(0).
    `on_iteration`: callback(iteration, words, ln q(x*), ln p(x*)) after each iteration, as
    `ars.decode`'s. Ctrl-C raises `ars.DecodeInterrupted` with the best path scored so far
    (uncertified; `log_q` the least ln q(x*) seen), as on confusion networks.
    `max_bytes`: the q-automaton's memory budget, checked before q^(0) is built and after
    every refinement (which adds at most a path's length of states).

    Returns a DagArsResult: a DecodeResult with the path's `arcs`.

    Raises:
        OptionError: max_iterations or depth < 1.
        NoPathError: every path has probability zero.
        BoundViolationError: p > q on x* (the model's bounds are wrong).
        MemoryBudgetExceeded: q would pass `max_bytes`.
    """
    _check_depth(depth)
    t0 = time.perf_counter()
    model = as_target_model(lm)
    run = ArsDecodeRun(lambda: DagPaths(model, QAutomaton(
        model, wl, first_words=first_words, max_bytes=max_bytes), depth),
        tol=tol, max_iterations=max_iterations, max_bytes=max_bytes)

    def result(arcs: list[int], log_p: float, log_q: float, states: int,
               certified: bool) -> DagArsResult:
        return DagArsResult(tokens=wl.path_words(arcs), log_p=log_p, log_q=log_q,
                            iterations=run.iterations, states=states, ngrams_by_order={},
                            trace=run.trace, seconds=time.perf_counter() - t0,
                            certified=certified, arcs=tuple(arcs))

    decode_loop(run, on_iteration, lambda: result(  # states -1: q may be mid-refinement
        run.best_path or [], run.best_log_p, min(q for q, _ in run.trace), -1, False))
    return result(run.paths[0], run.log_p[0], run.log_q[0], run.q.num_states(), run.certified)


# ----- sample ------------------------------------------------------------------------------------
def dag_ars_sample(lm: ModelLike, wl: WordLattice, n: int,
                   seed: int | np.random.Generator | None = None, *, batch: int = 100,
                   target_ar: float = 0.2, ar_window: int = 100,
                   max_trials: int | None = None, depth: int | None = 1,
                   first_words: bool = True) -> DagArsSampleResult:
    """n exact i.i.d. samples of the lattice's paths, P(path) = exp(score) / Z, by adaptive
    rejection (Algorithm 1, sampling): `ars_loop.sampling_loop`, as `ars.sample` on
    confusion networks.

    Trials are drawn `batch` at a time from the current q; each is accepted with probability
    p(x) / q(x). While the acceptance rate over the last `ar_window` trials is below
    `target_ar`, q is refined along every rejected trial of the batch; afterwards q is frozen.
    Accepted trials are exact samples whatever q was, since q never depends on the trial it
    judges. `max_trials` stops the run (with fewer samples). `depth` and `first_words` as in
    `dag_ars_decode`.

    Raises:
        OptionError: n < 1, batch < 1 or depth < 1.
        NoPathError: every path has probability zero.
        BoundViolationError: p > q on a trial (the model's bounds are wrong).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise OptionError(f"n (the number of samples) must be an integer >= 1, not {n!r}")
    if isinstance(batch, bool) or batch < 1 or ar_window < 1:
        raise OptionError(f"batch and ar_window must be >= 1, not {batch!r} and {ar_window!r}")
    _check_depth(depth)
    t0 = time.perf_counter()
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    model = as_target_model(lm)
    q = DagPaths(model, QAutomaton(model, wl, first_words=first_words), depth)
    run = sampling_loop(q, n, rng, batch=batch, target_ar=target_ar, ar_window=ar_window,
                        max_trials=max_trials)
    est, rej, plain = run.log.evidence()
    return DagArsSampleResult(
        samples=[DagPath(wl.path_words(arcs), tuple(arcs), log_p)
                 for arcs, log_p in zip(run.samples, run.log_p, strict=True)],
        trials=run.log.trials, acceptance_rate=run.log.acceptance_rate(),
        log_Z=est.log_Z, log_Z_ci=est.ci, log_Z_rejection=rej.log_Z,
        log_Z_rejection_ci=rej.ci, states=q.num_states(), refinements=run.refinements,
        adapted_at_trial=run.adapted_at, seconds=time.perf_counter() - t0,
        log_Z_unweighted=plain, trace=run.log.trace(run.frozen_from))
