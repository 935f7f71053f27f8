"""Exact dynamic programs on the merged expansion of a word lattice (`methods.expansion`): the
numpy reference for DAGs and, through their layout, for confusion networks.

Why it exists: issue 21 brings word lattices (`WordLattice`: epsilon arcs, parallel arcs,
several final nodes, paths of different lengths). This module is the independent, obviously
exact baseline that ARS and the compiled DPs are checked against, for both lattice kinds: a
confusion network is laid out as the word lattice it is (`methods.full`'s entry points,
`WordLattice.from_confusion`; issue 30: one full expansion, not two). It is the "exact
lattice expansion" that SRILM's `lattice-tool -order N` builds, with states merged the way
KenLM merges them; the expansion (its states, transitions and the memory budget) is built by
`methods.expansion.dag_expand`.

The dynamic programs are the package's one semiring sweep (`core.dag_dp`, the expansion as
an `ExpansionGraph`, dense or sparse), backward node by node in reverse order (a state's value
is final once every later node is done): Viterbi (max-plus), the backward sums (log-sum-exp;
ln Z is the start state's) and sampling forward from the start state with the backward sums
(exact: each step draws the next transition, or the stop, with probability proportional to
its weight times the mass after it).
k-best (`methods.expansion_kbest`) runs on the stored expansion; arc posteriors
(`methods.expansion_posteriors`) rebuild it node by node instead of storing it, or read the stored
one (`stored_posteriors`: forward sums as the backward sweep of the reversed expansion).

Ties (float64 equal scores, as the dynamic program sums them) are broken deterministically:
- paths (`dag_decode`, `expansion_kbest`): the smaller arc-index sequence, lexicographically
  (stopping at a final node comes before any arc leaving it: a prefix comes first);
- word sequences (`dag_kbest(unique=True)`): the smaller word tuple (Python string order);
  the path shown for a word sequence is its best path, the first found in (state, arc) order.
Near-ties that differ only by float rounding may come out in either order.
"""

from __future__ import annotations

import time

import numpy as np

import arsdecode.core.dag_dp as dag_dp
from arsdecode.core.semiring import LogSumExp, MaxPlus
from arsdecode.errors import NoPathError, OptionError
from arsdecode.lattice import WordLattice
from arsdecode.methods.expansion import (  # re-exported: the names callers import from here
    TRANSITION_BYTES,
    DagExpansion,
    StatesBudgetExceeded,
    dag_expand,
    group_rows,
    start_context,
)
from arsdecode.methods.results import DagDecodeResult, DagPath, exact_decode_result
from arsdecode.model import ModelLike, TargetModel, as_target_model

__all__ = ["TRANSITION_BYTES", "DagDecodeResult", "DagExpansion", "DagPath", "ExpansionGraph",
           "StatesBudgetExceeded", "best_suffixes", "dag_decode", "dag_expand",
           "dag_log_partition", "dag_sample", "group_rows", "sample_arcs", "start_context"]


# ----- the expansion as a graph of the one sweep (`core.dag_dp`) -------------------------------
class ExpansionGraph:
    """The stored expansion as a `dag_dp.Graph`: node u's states and their transitions
    (sorted by state, then arc: a state's first maximum is its smallest arc).

    Dense when every state of a node has the same number of transitions (a confusion
    network's layout, unless the LM gives some word probability zero): node u's transitions
    are then a (states x m) matrix, column c a state's c-th transition, which the sweep reads
    in a few whole-matrix operations instead of segments (the layout's Viterbi was 15% slower
    than the layered DP it replaced, issue 30). Sparse otherwise. Both give the same values,
    paths and draws: a column is the transition's rank within its state either way."""

    def __init__(self, ex: DagExpansion) -> None:
        self.ex = ex
        self.offsets = ex.node_start
        k = np.diff(ex.node_start)
        t = np.diff(ex.out_start[ex.node_start])
        self.width = t // np.maximum(k, 1)  # per node: transitions per state, if uniform
        degree = np.diff(ex.out_start)
        self.dense = bool((degree == np.repeat(self.width, k)).all())

    def block(self, u: int, rows: np.ndarray | int | None = None) -> dag_dp.Block:
        ex = self.ex
        lo, hi = ex.node_states(u)
        if self.dense:
            m = int(self.width[u])
            elo, ehi = int(ex.out_start[lo]), int(ex.out_start[hi])
            weight = ex.weight[elo:ehi].reshape(hi - lo, m)
            dst = ex.dst[elo:ehi].reshape(hi - lo, m)
            sel = slice(None) if rows is None else rows
            return dag_dp.Block(ex.final[lo:hi][sel], weight[sel], dst[sel])
        if isinstance(rows, int):  # one state: its transitions
            e0, e1 = int(ex.out_start[lo + rows]), int(ex.out_start[lo + rows + 1])
            return dag_dp.Block(ex.final[lo + rows], ex.weight[e0:e1], ex.dst[e0:e1])
        if rows is None:
            elo, ehi = ex.node_transitions(u)
            return dag_dp.Block(ex.final[lo:hi], ex.weight[elo:ehi], ex.dst[elo:ehi],
                                ex.out_start[lo:hi] - elo)
        states = lo + rows
        first = ex.out_start[states]
        counts = ex.out_start[states + 1] - first
        edges = dag_dp.ranges(first, counts)
        return dag_dp.Block(ex.final[states], ex.weight[edges], ex.dst[edges],
                            np.r_[0, np.cumsum(counts)[:-1]].astype(np.int64))

    def transition(self, states: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """The transition id of each (state, column) of a `dag_dp` path or draw."""
        return self.ex.out_start[states] + columns


def _backward_sums(ex: DagExpansion) -> np.ndarray:
    """beta[s] = ln of the total weight of the suffixes from state s (stop included)."""
    return dag_dp.backward(ExpansionGraph(ex), LogSumExp)


def best_suffixes(ex: DagExpansion) -> np.ndarray:
    """The best suffix score of every state (stop included): k-best's A* heuristic."""
    return dag_dp.backward(ExpansionGraph(ex), MaxPlus)


# ----- public API ------------------------------------------------------------------------------
def dag_decode(lm: ModelLike, wl: WordLattice, *, minimize: bool = True,
               max_states: int | None = None) -> DagDecodeResult:
    """The best path of the word lattice under arc weights + LM (Viterbi on the expansion).

    Ties: the lexicographically smallest arc-index sequence (module docstring).

    Returns:
        DecodeResult (`DagDecodeResult`, its kept name): words, arc indices, ln score
        `log_p`, the expansion's size (`states`, `transitions`), certified=True.

    Raises:
        NoPathError: every path has probability zero.
        StatesBudgetExceeded: the expansion passed `max_states`.
    """
    t0 = time.perf_counter()
    ex = dag_expand(as_target_model(lm), wl, minimize=minimize, max_states=max_states)
    graph = ExpansionGraph(ex)
    best = dag_dp.backward(graph, MaxPlus)
    if best[0] == -np.inf:
        raise NoPathError(f"{wl.source}: every path has probability zero")
    path = dag_dp.best_path(graph, best)
    steps = graph.transition(np.array(path.states, dtype=np.int64),
                             np.array(path.columns, dtype=np.int64))
    arcs = tuple(ex.arc[steps].tolist())
    return exact_decode_result(wl.path_words(arcs), float(best[0]), ex.n_states,
                               time.perf_counter() - t0, arcs=arcs,
                               transitions=ex.n_transitions)


def dag_log_partition(lm: ModelLike, wl: WordLattice, *, minimize: bool = True,
                      max_states: int | None = None) -> float:
    """ln Z: ln of the sum over every path of exp(score); -inf if every path has p = 0."""
    ex = dag_expand(as_target_model(lm), wl, minimize=minimize, max_states=max_states)
    return float(_backward_sums(ex)[0])


def dag_sample(lm: ModelLike, wl: WordLattice, n: int,
               seed: int | np.random.Generator | None = None, *, minimize: bool = True,
               max_states: int | None = None) -> list[DagPath]:
    """`n` exact i.i.d. samples: paths drawn with probability exp(score) / Z.

    Backward sums, then every walker starts at the start state and draws, at each state, the
    stop or a transition with probability proportional to its weight times the mass after it
    (`exp(w + beta[dst] - beta[state])`): `dag_dp.sample`, the package's one sampler.

    Raises:
        OptionError: n < 1.
        NoPathError: every path has probability zero.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise OptionError(f"n (the number of samples) must be an integer >= 1, not {n!r}")
    paths, scores, _ = sample_arcs(as_target_model(lm), wl, int(n), seed, minimize=minimize,
                                max_states=max_states)
    return [DagPath(wl.path_words(p), tuple(p), s)
            for p, s in zip(paths, scores.tolist(), strict=True)]


def sample_arcs(model: TargetModel, wl: WordLattice, n: int,
                seed: int | np.random.Generator | None = None, *, minimize: bool = True,
                max_states: int | None = None
                ) -> tuple[list[list[int]], np.ndarray, float]:
    """`dag_sample`'s draws as plain arrays: each path's arc indices, the scores (ln), and
    ln Z (the backward sums' start, which the draws needed anyway: a `SampleResult`'s exact
    ln Z costs no second expansion). Why apart: a confusion network's samples
    (`full.full_sample`) need only the words, and building n `DagPath`s cost a sixth of its
    time."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    ex = dag_expand(model, wl, minimize=minimize, max_states=max_states)
    graph = ExpansionGraph(ex)
    beta = dag_dp.backward(graph, LogSumExp)
    if beta[0] == -np.inf:
        raise NoPathError(f"{wl.source}: every path has probability zero")
    drawn = dag_dp.sample(graph, beta, n, rng)
    return (drawn.paths(n, lambda src, col: ex.arc[graph.transition(src, col)]), drawn.score,
            float(beta[0]))
