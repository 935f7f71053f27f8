"""The merged expansion of a word lattice (a DAG) with an n-gram LM, built node by node: the
states and transitions every full DP of the package sweeps (`methods.expansion_dp`), for word
lattices and confusion networks alike (issue 30: one expansion, not two).

Why a module of its own: building the expansion (contexts, batched `log_prob`, merging, the
memory budget) is one job; sweeping it (Viterbi, ln Z, sampling, k-best, posteriors) is
another, in `expansion_dp`, `expansion_kbest` and `expansion_posteriors`.

The expansion. A state is (lattice node, merged context): the LM history cut by the model's
`minimal_context` (so p(w | ctx) = p(w | history) for every w, and cutting commutes with
appending a word; `minimize=False` keeps the last order - 1 words instead, the literal state
space, for tests). The start state is (0, cut([<s>])). From a state at node u:

    a word arc a (u -> v, word w)  goes to (v, cut(ctx + w)) with ln weight
                                   log_weights[a] + ln p(w | ctx)
    an epsilon arc a (u -> v)      goes to (v, ctx) with ln weight log_weights[a]
    at a final node f              the path may stop, with ln weight finals[f] + ln p(</s> | ctx)

so a path's score is its arc and final weights plus the LM's ln probability of its words with
`<s>` and `</s>`, as `WordLattice` defines it. All values natural log, float64. Transitions of
ln weight -inf (p(w | ctx) = 0) are dropped, so every state built is reachable with p > 0.

The build runs in the lattice's topological node order (canonical form: node 0 first, every
arc to a higher node). Node u's states are the distinct contexts arriving at u (grouped with
`np.unique` on the rows, `group_rows`); then one batched `model.log_prob` call per
node scores every (state, word arc) pair and, at a final node, every state's `</s>`. States get
ids in node order, and transitions are stored sorted by (source state, arc index), so every
transition goes from a lower state id to a higher one.

With `max_bytes` (the memory budget) the expansion is refused, before a node's transitions are
built, once its estimated size (TRANSITION_BYTES, PAIR_BYTES, STATE_BYTES) would pass it
(issue 29).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arsdecode.core.semiring import quiet
from arsdecode.errors import ArsDecodeError, MemoryBudgetExceeded
from arsdecode.lattice import WordLattice
from arsdecode.model import TargetModel

__all__ = ["PAIR_BYTES", "RAISE_BUDGET", "STATE_BYTES", "TRANSITION_BYTES", "DagExpansion",
           "Expander", "StatesBudgetExceeded", "Step", "dag_expand", "group_rows",
           "start_context"]


class StatesBudgetExceeded(ArsDecodeError):
    """Raised when the merged states pass `max_states` (the caller falls back to another
    method). In the error tree, so that a caller who sets the budget gets one line."""


def group_rows(rows: np.ndarray) -> tuple[int, np.ndarray]:
    """Number of distinct rows and each row's group id (ids ordered like the sorted rows):
    the contexts arriving at a node, merged into its states."""
    if rows.shape[1] == 0 or len(rows) == 1:
        return 1, np.zeros(len(rows), dtype=np.int64)
    a = np.ascontiguousarray(rows)
    view = a.view(np.dtype((np.void, a.dtype.itemsize * a.shape[1]))).ravel()
    uniq, inverse = np.unique(view, return_inverse=True)
    return len(uniq), inverse.ravel().astype(np.int64)


def start_context(model: TargetModel, minimize: bool = True) -> np.ndarray:
    """The start state's context: `<s>` as a (1, order - 1) row, cut to its useful suffix
    with `minimize`."""
    w = max(model.order - 1, 0)
    ctx = np.full((1, w), -1, dtype=np.int64)
    if w:
        ctx[0, -1] = model.bos
        if minimize:
            ctx = model.minimal_context(ctx)
    return ctx


@dataclass(frozen=True)
class DagExpansion:
    """The merged expansion of a lattice (module docstring), as arrays.

    States 0..S-1 in node order (state 0 is the start state); the states of node u are
    `node_start[u]:node_start[u + 1]`. Transitions are sorted by (source state, arc index);
    those of state s are `out_start[s]:out_start[s + 1]`, and those leaving node u's states
    are `out_start[node_start[u]]:out_start[node_start[u + 1]]`."""

    node_start: np.ndarray  # (n_nodes + 1,) int64
    contexts: np.ndarray  # (S, order - 1) int64 context rows, -1 left padding
    final: np.ndarray  # (S,) ln weight of stopping: finals[f] + ln p(</s> | ctx), or -inf
    src: np.ndarray  # (E,) int64 source state
    dst: np.ndarray  # (E,) int64 destination state (> src)
    arc: np.ndarray  # (E,) int64 lattice arc
    weight: np.ndarray  # (E,) float64 ln weight (> -inf: zero-weight transitions are dropped)
    out_start: np.ndarray  # (S + 1,) int64

    @property
    def n_states(self) -> int:
        return len(self.final)

    @property
    def n_transitions(self) -> int:
        return len(self.src)

    def node_states(self, u: int) -> tuple[int, int]:
        return int(self.node_start[u]), int(self.node_start[u + 1])

    def node_transitions(self, u: int) -> tuple[int, int]:
        lo, hi = self.node_states(u)
        return int(self.out_start[lo]), int(self.out_start[hi])


# ----- the expansion ---------------------------------------------------------------------------
# Bytes the numpy expansion holds or builds, for the memory budget (`max_bytes`): a stored
# transition is src, dst, arc and weight (32 bytes), and while the expansion is built also its
# blocks, its destination's bookkeeping and the final concatenations (tracemalloc's peak on 300
# nodes of bench/bench_dag_memory.py's DAG: 75 bytes per transition); a (state, outgoing arc)
# pair of the node being built passes through about a dozen temporary columns (contexts,
# words, scores, next contexts); a state keeps its context and final weight. Used to refuse
# before allocating, not as a precise figure.
TRANSITION_BYTES = 80
PAIR_BYTES = 160
STATE_BYTES = 64


Step = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""`Expander.step`'s answer: (stop, e_state, e_arc, e_weight, e_next)."""


class Expander:
    """The expansion's step at one node: from the states (context rows) of node u, their stop
    weights and every outgoing transition (module docstring), with one batched `log_prob`.

    Why a class of its own: the expansion (`dag_expand`) stores every transition, while the
    chunked forward-backward (`methods.expansion_posteriors`) rebuilds a node's transitions in its
    backward sweep instead of keeping them all; both must build exactly the same ones."""

    def __init__(self, model: TargetModel, wl: WordLattice, minimize: bool = True) -> None:
        self.model = model
        self.wl = wl
        self.width = max(model.order - 1, 0)
        self.cut = minimize and self.width > 0
        self.start = start_context(model, minimize)
        self.is_word = np.fromiter((word is not None for word in wl.words), dtype=bool,
                                   count=wl.n_arcs)
        self.arc_ids = np.full(wl.n_arcs, -1, dtype=np.int64)
        self.no_epsilon = bool(self.is_word.all())
        self.arc_start = np.searchsorted(wl.src, np.arange(wl.n_nodes + 1), side="left")
        if self.no_epsilon:  # (a confusion network's layout): one lookup, no masks per node
            self.arc_ids[:] = model.ids(list(wl.words))  # type: ignore[arg-type]
        elif self.is_word.any():
            word_arcs = np.flatnonzero(self.is_word)
            self.arc_ids[word_arcs] = model.ids(
                [wl.words[a] for a in word_arcs.tolist()])

    def arcs(self, u: int) -> np.ndarray:
        return np.arange(self.arc_start[u], self.arc_start[u + 1], dtype=np.int64)

    def step(self, u: int, ctx: np.ndarray) -> Step:
        """(stop, e_state, e_arc, e_weight, e_next) for the states `ctx` of node u: stop[s]
        is finals[u] + ln p(</s> | ctx[s]) (-inf off a final node); the live transitions
        (ln weight > -inf) sorted by (local state, arc), with their next context rows."""
        wl, model, size = self.wl, self.model, len(ctx)
        arcs = self.arcs(u)
        warcs = arcs if self.no_epsilon else arcs[self.is_word[arcs]]
        # (state, word arc) pairs state-major, then one </s> row per state at a final node
        q_state = np.repeat(np.arange(size), len(warcs))
        q_arc = np.broadcast_to(warcs, (size, len(warcs))).reshape(-1)
        q_ctx = ctx[q_state]
        q_word = self.arc_ids[q_arc]
        fin = u in wl.finals
        if fin:
            q_ctx = np.concatenate([q_ctx, ctx])
            q_word = np.concatenate([q_word, np.full(size, model.eos, dtype=np.int64)])
        lp = model.log_prob(q_ctx, q_word) if len(q_word) else np.zeros(0)
        lp = np.asarray(lp, dtype=np.float64)
        with quiet():
            stop = (wl.finals[u] + lp[len(q_arc):]) if fin else np.full(size, -np.inf)
        # the word transitions (live ones only), then the epsilon ones, which keep the context
        n_q = len(q_arc)
        with quiet():
            w_word = wl.log_weights[q_arc] + lp[:n_q]
        live = w_word > -np.inf
        if not live.all():
            q_state, q_arc, w_word = q_state[live], q_arc[live], w_word[live]
            q_ctx, q_word = q_ctx[:n_q][live], q_word[:n_q][live]
        n_q = len(q_arc)
        if self.width:
            nxt = np.concatenate([q_ctx[:n_q, 1:], q_word[:n_q, None]], axis=1)
            if self.cut and n_q:
                nxt = model.minimal_context(nxt)
        else:
            nxt = np.zeros((n_q, 0), dtype=np.int64)
        if len(warcs) == len(arcs):  # no epsilon arc (every node of a confusion network)
            return stop, q_state, q_arc, w_word, nxt
        # sorted by (state, arc), as if every outgoing transition had been built state-major
        earcs = arcs[~self.is_word[arcs]]
        p_state = np.repeat(np.arange(size), len(earcs))
        p_arc = np.tile(earcs, size)
        e_state = np.concatenate([q_state, p_state])
        e_arc = np.concatenate([q_arc, p_arc])
        order = np.lexsort((e_arc, e_state))
        return (stop, e_state[order], e_arc[order],
                np.concatenate([w_word, wl.log_weights[p_arc]])[order],
                np.concatenate([nxt, ctx[p_state]])[order])


RAISE_BUDGET = "raise it with --memory-budget MB"


def dag_expand(model: TargetModel, wl: WordLattice, *, minimize: bool = True,
               max_states: int | None = None, max_bytes: int | None = None) -> DagExpansion:
    """Build the expansion of `wl` (module docstring), one `log_prob` call per node.

    Raises StatesBudgetExceeded as soon as the states built pass `max_states`, and
    MemoryBudgetExceeded before a node's transitions would take the expansion past
    `max_bytes` (estimated: TRANSITION_BYTES, PAIR_BYTES, STATE_BYTES)."""
    ex = Expander(model, wl, minimize)
    w = ex.width
    # pending[v]: transitions into node v waiting for their destination state's id
    pending: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(wl.n_nodes)]
    pending[0].append((np.full(1, -1, dtype=np.int64), ex.start))  # the start, no transition
    node_start = np.zeros(wl.n_nodes + 1, dtype=np.int64)
    ctx_blocks: list[np.ndarray] = []
    final_blocks: list[np.ndarray] = []
    src_blocks: list[np.ndarray] = []
    arc_blocks: list[np.ndarray] = []
    weight_blocks: list[np.ndarray] = []
    n_edges = 0
    dst_parts: list[tuple[np.ndarray, np.ndarray]] = []  # (transition ids, destination states)
    n_states = 0
    for u in range(wl.n_nodes):
        node_start[u] = n_states
        if not pending[u]:  # every way in has probability zero: no state at u
            continue
        if len(pending[u]) == 1:
            [(edge_ids, rows)] = pending[u]
        else:
            edge_ids = np.concatenate([e for e, _ in pending[u]])
            rows = np.concatenate([r for _, r in pending[u]])
        pending[u] = []
        size, group = group_rows(rows)
        ctx = np.empty((size, w), dtype=np.int64)
        ctx[group] = rows
        if u:  # (node 0's one row is the start, which no transition enters)
            dst_parts.append((edge_ids, n_states + group))
        n_states += size
        if max_states is not None and n_states > max_states:
            raise StatesBudgetExceeded(f"{n_states} merged states > {max_states}")
        if max_bytes is not None:
            need = (n_edges * TRANSITION_BYTES + n_states * STATE_BYTES
                    + size * len(ex.arcs(u)) * PAIR_BYTES)
            if need > max_bytes:
                raise MemoryBudgetExceeded.of(
                    f"{wl.source}: the lattice's expansion (by node {u} of {wl.n_nodes}: "
                    f"{n_states} states, {n_edges} transitions)", need, max_bytes, RAISE_BUDGET)
        stop, e_state, e_arc, e_weight, e_next = ex.step(u, ctx)
        final_blocks.append(stop)
        ctx_blocks.append(ctx)
        ids = np.arange(n_edges, n_edges + len(e_arc), dtype=np.int64)
        n_edges += len(e_arc)
        src_blocks.append(node_start[u] + e_state)
        arc_blocks.append(e_arc)
        weight_blocks.append(e_weight)
        _send(pending, wl.dst[e_arc], ids, e_next)
    node_start[wl.n_nodes] = n_states
    dst = np.empty(n_edges, dtype=np.int64)
    for ids, states in dst_parts:
        dst[ids] = states
    src = _cat(src_blocks, np.int64)
    out_start = np.searchsorted(src, np.arange(n_states + 1), side="left").astype(np.int64)
    return DagExpansion(
        node_start=node_start,
        contexts=np.concatenate(ctx_blocks) if ctx_blocks else np.zeros((0, w), np.int64),
        final=_cat(final_blocks, np.float64),
        src=src, dst=dst, arc=_cat(arc_blocks, np.int64),
        weight=_cat(weight_blocks, np.float64), out_start=out_start)


def _send(pending: list[list[tuple[np.ndarray, np.ndarray]]], d_node: np.ndarray,
          ids: np.ndarray, e_next: np.ndarray) -> None:
    """Queue each transition (id, next context row) at its destination node, in order. One
    destination (every node of a confusion network's layout) needs no grouping; several are
    grouped by one stable sort, not one scan per destination."""
    if not len(d_node):
        return
    first = int(d_node[0])
    if (d_node == first).all():
        pending[first].append((ids, e_next))
        return
    order = np.argsort(d_node, kind="stable")
    sorted_nodes = d_node[order]
    cuts = np.flatnonzero(sorted_nodes[1:] != sorted_nodes[:-1]) + 1
    for part in np.split(order, cuts):
        pending[int(d_node[part[0]])].append((ids[part], e_next[part]))


def _cat(blocks: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(blocks).astype(dtype, copy=False) if blocks else np.zeros(0, dtype=dtype)
