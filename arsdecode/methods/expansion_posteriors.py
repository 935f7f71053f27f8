"""Arc posteriors and ln Z of a word lattice by forward-backward over its merged expansion,
node by node, without storing the expansion's transitions.

Why not on `expansion_dp.dag_expand`: the stored expansion holds every transition (src, dst, arc,
weight), and the forward pass sorted them all again: on a 1,000-node, 101k-arc DAG with the
embedded 5-gram, 4.3M transitions, 0.5 GB, and several GB on denser lattices, whatever
--memory-budget said (issue 29). Here only the states are kept (their context rows and their
forward and backward sums, a few tens of bytes each): the forward sweep builds each node's
transitions (`expansion.Expander.step`, one batched `log_prob`), sends their forward sums to
the destination nodes and keeps them only while they fit half the budget; the backward sweep
(the package's one semiring sweep, `core.dag_dp.backward`, over `_Chunked`) takes them back,
or builds them again, in reverse node order, for the backward sums and the arc posteriors

    posterior[a] = sum over the transitions t on arc a of exp(alpha[src t] + w_t
                   + beta[dst t] - ln Z),

with ln Z = logsumexp over the states of alpha + stop weight. Within a budget too small for
the transitions: up to twice the model queries, memory in the states plus one node's
transitions; a request whose states would not fit the budget is refused before they are
allocated. The same transitions as the stored expansion, so the same
posteriors up to float rounding of the sums' grouping (natural log).
"""

from __future__ import annotations

import math

import numpy as np

import arsdecode.core.dag_dp as dag_dp
from arsdecode.core.semiring import LogSumExp, quiet
from arsdecode.errors import MemoryBudgetExceeded, NoPathError
from arsdecode.lattice import WordLattice
from arsdecode.methods.expansion import (
    PAIR_BYTES,
    RAISE_BUDGET,
    DagExpansion,
    Expander,
    StatesBudgetExceeded,
    Step,
    dag_expand,
    group_rows,
)
from arsdecode.methods.expansion_dp import ExpansionGraph
from arsdecode.model import ModelLike, as_target_model

__all__ = ["ReversedExpansion", "chunked_posteriors", "dag_posteriors", "stored_posteriors"]

# Bytes a state keeps (beside its width x 8-byte context row): alpha, beta, stop weight and
# the grouping's index; and a pending (row, forward sum) into a later node, beside its row.
STATE_BYTES = 40
PENDING_BYTES = 24


def _merge(rows: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows (sorted) and the log-sum of the values of each."""
    size, group = group_rows(rows)
    out = np.empty((size, rows.shape[1]), dtype=rows.dtype)
    out[group] = rows
    return out, LogSumExp.scatter_sum(vals, group, size)


def _lookup(ctx: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The index in `ctx` (distinct rows, sorted as `group_rows` sorts) of every row of
    `rows`, each of which is in `ctx` (exact row equality, no hashing)."""
    size, group = group_rows(np.concatenate([ctx, rows]))
    assert size == len(ctx), "a transition into a state the forward sweep did not build"
    return group[len(ctx):]


class _Chunked:
    """The states the forward sweep built, as a sparse `dag_dp.Graph` for the one backward
    sweep: node u's transitions are taken from `kept` (then dropped) or built again, and their
    destination states found by their context rows (`_lookup`)."""

    dense = False

    def __init__(self, ex: Expander, ctxs: list[np.ndarray | None],
                 kept: list[Step | None]) -> None:
        self.ex, self.ctxs, self.kept = ex, ctxs, kept
        self.offsets = np.r_[0, np.cumsum([0 if c is None else len(c) for c in ctxs])].astype(
            np.int64)
        self.last = (np.zeros(0, np.int64), np.zeros(0, np.int64))  # (e_state, e_arc) of u

    def block(self, u: int, rows: np.ndarray | int | None = None) -> dag_dp.Block:
        assert rows is None, "the backward sweep asks for whole nodes only"
        here = self.ctxs[u]
        assert here is not None
        step, self.kept[u] = self.kept[u] or self.ex.step(u, here), None
        stop, e_state, e_arc, e_weight, e_next = step
        d_node = self.ex.wl.dst[e_arc]
        dst = np.empty(len(e_arc), dtype=np.int64)
        for v in np.unique(d_node).tolist():
            sel = np.flatnonzero(d_node == v)
            dctx = self.ctxs[v]
            assert dctx is not None
            dst[sel] = self.offsets[v] + _lookup(dctx, e_next[sel])
        self.last = (e_state, e_arc)
        starts = np.searchsorted(e_state, np.arange(len(here)))
        return dag_dp.Block(stop, e_weight, dst, starts)


def chunked_posteriors(lm: ModelLike, wl: WordLattice, *, minimize: bool = True,
                       max_states: int | None = None, max_bytes: int | None = None
                       ) -> tuple[np.ndarray, float]:
    """Arc posteriors (one float64 per arc, 0 on no path of p > 0) and ln Z (module docstring).

    Raises:
        NoPathError: every path has probability zero.
        StatesBudgetExceeded: the states passed `max_states`.
        MemoryBudgetExceeded: the states, the pending forward sums and one node's
            transitions would pass `max_bytes` (checked before each node is built).
    """
    ex = Expander(as_target_model(lm), wl, minimize)
    row_bytes = ex.width * 8
    n = wl.n_nodes
    ctxs: list[np.ndarray | None] = [None] * n
    alphas: list[np.ndarray] = [np.zeros(0)] * n
    pending: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(n)]
    pending[0].append((ex.start, np.zeros(1)))
    pending_rows = [0] * n
    held = 0  # bytes of the states built
    waiting = 1  # rows pending
    n_states = 0
    stops: list[np.ndarray] = []
    # node u's transitions kept from the forward sweep for the backward one (None: rebuild)
    kept: list[Step | None] = [None] * n
    kept_bytes = 0
    for u in range(n):
        if not pending[u]:
            continue
        rows = np.concatenate([r for r, _ in pending[u]])
        ctx, alpha = _merge(rows, np.concatenate([a for _, a in pending[u]]))
        waiting -= pending_rows[u]
        pending[u] = []
        size = len(ctx)
        n_states += size
        if max_states is not None and n_states > max_states:
            raise StatesBudgetExceeded(f"{n_states} merged states > {max_states}")
        held += size * (row_bytes + STATE_BYTES)
        if max_bytes is not None:
            need = (held + waiting * (row_bytes + PENDING_BYTES)
                    + size * len(ex.arcs(u)) * PAIR_BYTES)
            if need > max_bytes:
                raise MemoryBudgetExceeded.of(
                    f"{wl.source}: the posteriors' states (by node {u} of {n}: {n_states} "
                    "states)", need, max_bytes, RAISE_BUDGET)
        ctxs[u], alphas[u] = ctx, alpha
        step = ex.step(u, ctx)
        stop, e_state, e_arc, e_weight, e_next = step
        size_of = sum(a.nbytes for a in step)
        if max_bytes is None or (held + kept_bytes + size_of
                                 + waiting * (row_bytes + PENDING_BYTES)) <= max_bytes // 2:
            kept[u] = step
            kept_bytes += size_of
        with quiet():
            stops.append(alpha + stop)
            vals = alpha[e_state] + e_weight
        d_node = wl.dst[e_arc]
        for v in np.unique(d_node).tolist():
            sel = d_node == v
            pending[v].append((e_next[sel], vals[sel]))
            pending_rows[v] += int(sel.sum())
            waiting += int(sel.sum())
            if pending_rows[v] > 4096 and len(pending[v]) > 1:  # keep it to v's states
                merged = _merge(np.concatenate([r for r, _ in pending[v]]),
                                np.concatenate([a for _, a in pending[v]]))
                waiting += len(merged[0]) - pending_rows[v]
                pending[v], pending_rows[v] = [merged], len(merged[0])
    log_z = float(LogSumExp.sum(np.concatenate(stops))) if stops else -math.inf
    if log_z == -math.inf:
        raise NoPathError(f"{wl.source}: every path has probability zero")
    graph = _Chunked(ex, ctxs, kept)
    post = np.zeros(wl.n_arcs)

    def visit(u: int, block: dag_dp.Block, through: np.ndarray) -> None:
        nonlocal post
        e_state, e_arc = graph.last
        with quiet():
            mass = np.exp(alphas[u][e_state] + through - log_z)
        post += np.bincount(e_arc, weights=mass, minlength=wl.n_arcs)
        alphas[u] = np.zeros(0)  # read by no other node: freed as the sweep goes

    dag_dp.backward(graph, LogSumExp, visit)
    return post.astype(np.float64), log_z


def dag_posteriors(lm: ModelLike, wl: WordLattice, *, minimize: bool = True,
                   max_states: int | None = None, max_bytes: int | None = None
                   ) -> tuple[np.ndarray, float]:
    """Arc posteriors and ln Z by forward-backward on the expansion, node by node without
    storing its transitions (`chunked_posteriors`).

    Returns:
        (posteriors, log_z): posteriors[a] = (total weight of the paths using arc a) / Z, a
        float64 array of one entry per arc (0 for an arc on no path of p > 0); ln Z.

    Raises:
        NoPathError: every path has probability zero.
        MemoryBudgetExceeded: the states would pass `max_bytes`.
    """
    return chunked_posteriors(lm, wl, minimize=minimize, max_states=max_states,
                              max_bytes=max_bytes)


# ----- on the stored expansion -----------------------------------------------------------------
class ReversedExpansion:
    """The stored expansion read backwards, as a sparse `dag_dp.Graph`: its nodes in reverse
    order, each state's edges its incoming transitions (to their sources), and the start state
    the only one that stops (weight 0). Its backward sums are the expansion's forward sums,
    alpha[s] = ln of the total weight of the paths from the start state to s.

    Why: forward-backward with the package's one sweep (`dag_dp.backward`) twice, rather than
    a forward sweep written beside it; the confusion network's exact marginals
    (`full.full_marginals`) read the expansion this way."""

    dense = False

    def __init__(self, ex: DagExpansion) -> None:
        self.ex = ex
        n_nodes = len(ex.node_start) - 1
        sizes = np.diff(ex.node_start)
        self.offsets = np.r_[0, np.cumsum(sizes[::-1])].astype(np.int64)
        node = np.repeat(np.arange(n_nodes), sizes)
        # each state's id here: its node's block comes at position n_nodes - 1 - node
        self.rev = (self.offsets[n_nodes - 1 - node]
                    + np.arange(ex.n_states) - ex.node_start[node]).astype(np.int64)
        self.incoming = np.argsort(ex.dst, kind="stable")  # transitions by destination
        self.in_start = np.searchsorted(ex.dst[self.incoming], np.arange(ex.n_states + 1))
        self.stop = np.full(ex.n_states, -np.inf)
        if ex.n_states:
            self.stop[0] = 0.0

    def block(self, k: int, rows: np.ndarray | int | None = None) -> dag_dp.Block:
        assert rows is None, "only the backward sweep reads it: whole nodes"
        ex = self.ex
        u = len(ex.node_start) - 2 - k
        lo, hi = ex.node_states(u)
        first = int(self.in_start[lo])
        e = self.incoming[first:int(self.in_start[hi])]
        return dag_dp.Block(self.stop[lo:hi], ex.weight[e], self.rev[ex.src[e]],
                            self.in_start[lo:hi] - first)


def expansion_sums(ex: DagExpansion, source: str) -> tuple[np.ndarray, np.ndarray, float]:
    """Every state's ln forward sum (alpha, by the one sweep over `ReversedExpansion`) and ln
    backward sum (beta, the one sweep), and ln Z, of a stored expansion: what its
    transitions' and stops' posteriors are made of (`stored_posteriors`, the rescored
    lattice's `p=`). Raises NoPathError naming `source` when every path has probability
    zero."""
    beta = dag_dp.backward(ExpansionGraph(ex), LogSumExp)
    log_z = float(beta[0]) if ex.n_states else -math.inf
    if log_z == -math.inf:
        raise NoPathError(f"{source}: every path has probability zero")
    reverse = ReversedExpansion(ex)
    alpha = dag_dp.backward(reverse, LogSumExp)[reverse.rev]
    return alpha, beta, log_z


def stored_posteriors(lm: ModelLike, wl: WordLattice, *, minimize: bool = True,
                      max_states: int | None = None) -> tuple[np.ndarray, float]:
    """Arc posteriors and ln Z as `expansion_posteriors` returns them, on the stored expansion:
    beta by the one sweep, alpha by the same sweep over `ReversedExpansion`, then every
    transition's exp(alpha[src] + w + beta[dst] - ln Z) summed per arc, in one pass. Faster
    than the chunked pass when the expansion fits in memory (no context row is looked up
    twice), and no memory budget: for a caller that holds the expansion anyway.

    Raises:
        NoPathError: every path has probability zero.
        StatesBudgetExceeded: the states passed `max_states`.
    """
    ex = dag_expand(as_target_model(lm), wl, minimize=minimize, max_states=max_states)
    alpha, beta, log_z = expansion_sums(ex, wl.source)
    with quiet():
        mass = np.exp(alpha[ex.src] + ex.weight + beta[ex.dst] - log_z)
    return np.bincount(ex.arc, weights=mass, minlength=wl.n_arcs).astype(np.float64), log_z
