"""One semiring dynamic program over a DAG of (node, state) blocks: Viterbi, ln Z, posteriors'
backward sums, the best path and exact forward sampling, for every word-lattice graph.

Why one module: the q-automaton of a word lattice (`core.automaton`), the merged expansion
(`methods.dag_full`) and the chunked expansion of the posteriors (`methods.dag_posteriors`)
are the same kind of graph, and their max and log-sum-exp sweeps used to be written once per
file (issue 30). Here the sweep is written once, parameterised by the semiring (`MaxPlus`:
Viterbi; `LogSumExp`: backward filtering, ln Z), torch-struct's shape.

The graph (`Graph`): nodes 0..N-1 in topological order (every edge goes to a later node); node
u holds the states `offsets[u]:offsets[u + 1]` of one global numbering. Every state has a stop
weight (ln; -inf where no path may end) and out-edges (ln weight, global destination state).
`Graph.block(u, rows)` gives them for some of node u's states (`Block`), in one of two layouts:

    dense   weight, dst: (states x m) matrices, one column per outgoing lattice arc (the
            q-automaton: every state has an edge on every arc);
    sparse  weight, dst: (E,) edges sorted by state, `starts` the first edge of each state
            (the expansion: transitions of weight zero are not stored).

A state's segment is [stop, w_e + values[dst_e] for its edges]; the backward sweep is

    values[s] = SUM over its segment          (reverse node order: dst is already done)

and the forward pass from state 0 either follows the first maximum of the segment (stop on
a tie, then the smallest column: `best_path`) or, with log-sum-exp values, draws from it with
probability exp(entry - values[s]) by the one categorical draw `semiring.draw_in_segments`
(`sample`: forward sampling after backward filtering, exact draws from the graph's
distribution). A path's score is summed from 0.0 along the path, edge by edge, then the stop,
as `QAutomaton.log_q` and `paths_log_p` sum q and p, so a path drawn or followed here has
bit for bit the score those give (the certificate compares them).

The layered confusion-network DP (`core.dp`) is this one on its layers as a block graph
(`Layered`): a layer's block has no stop (`stop` None: no -inf column is built) and keeps its
targets local to the next layer (`base`: no offset added), so its sweep is the same numpy
expression as a hand-written layered sweep, bit for bit (the incremental Viterbi of
`core.viterbi` recomputes touched rows with that expression). `forward` serves the pruning's
prefix sums. Every sweep, best path and sampler of the package is here.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np

from arsdecode.core.semiring import Semiring, draw_in_segments, quiet

if TYPE_CHECKING:
    from arsdecode.core.automaton import QAutomaton

__all__ = ["Block", "Draws", "Graph", "Layered", "Path", "QGraph", "backward", "best_path",
           "forward", "node_of", "ranges", "sample"]


class Block(NamedTuple):
    """Some states of one node: their stop weights and out-edges (module docstring)."""

    stop: np.ndarray | None  # (k,) ln weight of ending at each state, -inf where no path
    # ends; None: no state of the block may stop (a confusion network's inner layers)
    weight: np.ndarray  # dense (k, m) or sparse (E,): ln weight of each edge
    dst: np.ndarray  # the same shape: the state each edge leads to, counted from `base`
    starts: np.ndarray | None = None  # sparse: (k,) first edge of each state; dense: None
    base: int = 0  # dst + base is the global state (a layer's targets stay local: no copy)
    span: int = 0  # > 0: every dst is in [0, span) and no other block's edges reach those
    # states (a layer's edges reach the next layer, which no other layer reaches), so a
    # forward scatter needs neither the destinations' min and max, nor a shift, nor a sum
    # with what other blocks sent there

    def ends(self) -> np.ndarray:
        """The stop weights, -inf everywhere when the block has none."""
        if self.stop is None:
            return np.full(self.weight.shape[:-1] if self.starts is None else
                           len(self.starts), -np.inf)
        return self.stop


class Graph(Protocol):
    """A DAG of (node, state) blocks (module docstring)."""

    offsets: np.ndarray  # (nodes + 1,) node u's states are offsets[u]:offsets[u + 1]
    dense: bool  # the layout of its blocks

    def block(self, u: int, rows: np.ndarray | int | None = None) -> Block:
        """The stop weights and out-edges of node u's local states `rows` (sorted and distinct
        for a sparse graph, possibly repeated for a dense one; None: all of them, in order).
        An int: that one state, its stop a scalar and its edges 1-d (`starts` None)."""
        ...


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The concatenation of arange(starts[i], starts[i] + counts[i]) over i."""
    total = int(counts.sum())
    base = np.repeat(starts - np.r_[0, np.cumsum(counts)[:-1]], counts)
    return base + np.arange(total, dtype=np.int64)


def _segments(block: Block, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, int,
                                                          np.ndarray]:
    """Each state's segment laid flat, [stop, w_e + values[dst_e]...] (a dense block without
    stops: [w_e + values[dst_e]...], no -inf column built), where each segment starts, how
    many stop entries lead it (1 or 0), and the edges' entries alone (dense: (k, m); sparse:
    flat). Called under the caller's `quiet()` (one per sweep: entering it costs
    microseconds)."""
    through = values[block.base:][block.dst]  # a fresh gather: the weights added in place
    through += block.weight
    if block.starts is None:
        k, m = through.shape
        if block.stop is None:  # a layer: the row-major matrix is the flat layout
            return through.ravel(), np.arange(k) * m, 0, through
        seg = np.empty((k, m + 1))
        seg[:, 0] = block.stop
        seg[:, 1:] = through
        return seg.ravel(), np.arange(k) * (m + 1), 1, through
    stop = block.ends()
    k = len(stop)
    flat = np.empty(k + len(through))
    heads = block.starts + np.arange(k)
    flat[heads] = stop
    flat[_edge_slots(block)] = through
    return flat, heads, 1, through


def _edge_slots(block: Block) -> np.ndarray:
    """Sparse layout: the flat position of every edge (after its state's stop and the edges of
    the states before it)."""
    assert block.starts is not None
    counts = np.diff(np.r_[block.starts, len(block.weight)])
    return np.arange(len(block.weight)) + np.repeat(np.arange(len(block.starts)), counts) + 1


def backward(graph: Graph, semiring: type[Semiring],
             visit: Callable[[int, Block, np.ndarray], None] | None = None) -> np.ndarray:
    """values[s] (global numbering): the semiring sum over every completion of state s, its
    stop included, by one sweep in reverse node order. `visit(u, block, through)`, if given,
    sees each node's block and its edges' w + values[dst] (for posteriors) once it is done."""
    off = graph.offsets.tolist()  # Python ints: the loop is per node
    values = np.empty(off[-1])
    plus, total = semiring.plus, semiring.sum  # bound once
    with quiet():
        for u in range(len(off) - 2, -1, -1):
            lo, hi = off[u], off[u + 1]
            if hi == lo:
                continue
            block = graph.block(u)
            if block.starts is None:  # dense: stop PLUS the row's sum (no segment copied)
                if not block.weight.shape[1]:  # no edge: the stops alone, nothing to add
                    through = block.weight
                    values[lo:hi] = block.ends()
                    if visit is not None:
                        visit(u, block, through)
                    continue
                through = values[block.base:][block.dst]  # a fresh gather: add in place
                through += block.weight
                if block.stop is None:  # no stop: the row's sum alone (bit for bit core.dp's)
                    values[lo:hi] = total(through, axis=1)
                else:
                    values[lo:hi] = plus(block.stop, total(through, axis=1))
            else:
                flat, heads, _, through = _segments(block, values)
                values[lo:hi] = semiring.segment_sum(flat, heads)
            if visit is not None:
                visit(u, block, through)
    return values


def forward(graph: Graph, semiring: type[Semiring]) -> np.ndarray:
    """alpha[s] (global numbering): the semiring sum over every prefix from state 0 to state
    s, by one sweep in node order (each node's edges scattered into their destinations, all
    at later nodes). With `backward`, alpha + w + values[dst] of an edge is the best (or
    total) weight of the paths through it."""
    off = graph.offsets.tolist()  # Python ints: no numpy scalar per node
    alpha = np.full(off[-1], semiring.zero)
    if len(alpha):
        alpha[0] = semiring.one
    with quiet():
        for u in range(len(off) - 1):
            lo, hi = off[u], off[u + 1]
            if hi == lo:
                continue
            block = graph.block(u)
            if not block.dst.size:  # no out-edges (a final layer)
                continue
            if block.starts is None:
                vals = (alpha[lo:hi, None] + block.weight).ravel()
            else:
                counts = np.diff(np.r_[block.starts, len(block.weight)])
                vals = np.repeat(alpha[lo:hi], counts) + block.weight
            if block.span:  # the next layer, reached from this block only: its sums are these
                first, span = block.base, block.span
                alpha[first:first + span] = semiring.scatter_sum(vals, block.dst.ravel(), span)
                continue
            dst = block.dst.ravel() + block.base
            first = int(dst.min())
            span = int(dst.max()) - first + 1
            alpha[first:first + span] = semiring.plus(
                alpha[first:first + span], semiring.scatter_sum(vals, dst - first, span))
    return alpha


def node_of(off: np.ndarray, states: np.ndarray) -> np.ndarray:
    """The node holding each global state (empty nodes share their offset with the next)."""
    return np.searchsorted(off, states, side="right") - 1


class Path(NamedTuple):
    """A path from state 0: per edge its source state (global), its node and column (dense: the
    arc's column; sparse: the edge's rank among its state's), the final state and its node,
    and the score (summed along the path from 0.0, stop last)."""

    states: list[int]
    nodes: list[int]
    columns: list[int]
    final: int
    final_node: int
    score: float


def best_path(graph: Graph, values: np.ndarray) -> Path:
    """The argmax path from state 0 given max-plus `values`: at each state the first maximum
    of its segment (stop wins a tie, then the smallest column; a block without stops always
    goes on, by its first maximum even when every edge is -inf, as a layered argmax does)."""
    off = graph.offsets
    node_of_state = np.repeat(np.arange(len(off) - 1), np.diff(off))
    states: list[int] = []
    nodes: list[int] = []
    cols: list[int] = []
    s, score = 0, 0.0
    with quiet():
        while True:
            u = int(node_of_state[s])
            block = graph.block(u, s - int(off[u]))  # one row: 1-d edges, a scalar stop
            weight, dst = block.weight, block.dst + block.base
            stop = -np.inf if block.stop is None else float(block.stop)
            if len(weight):
                through = weight + values[dst]
                c = int(np.argmax(through))
                if through[c] > stop or block.stop is None:  # no stop: a path goes on
                    states.append(s)
                    nodes.append(u)
                    cols.append(c)
                    score += float(weight[c])
                    s = int(dst[c])
                    continue
            return Path(states, nodes, cols, s, u, score + stop)


class Draws(NamedTuple):
    """`sample`'s walkers: every step (walkers, source states, columns) in step order, each
    walker's final state and its score (ln, summed along its path from 0.0, stop last)."""

    steps: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    final: np.ndarray
    score: np.ndarray

    def paths(self, n: int, label: Callable[[np.ndarray, np.ndarray], np.ndarray]
              ) -> list[list[int]]:
        """Per walker, its edges in path order, each named by `label(source states, columns)`
        (vectorised: e.g. the lattice arc)."""
        if not self.steps:
            return [[] for _ in range(n)]
        walkers = np.concatenate([w for w, _, _ in self.steps])
        named = np.concatenate([label(s, c) for _, s, c in self.steps])
        order = np.argsort(walkers, kind="stable")  # each walker's edges stay in step order
        bounds = np.searchsorted(walkers[order], np.arange(n + 1))
        flat = named[order].tolist()
        return [flat[bounds[i]:bounds[i + 1]] for i in range(n)]


def sample(graph: Graph, beta: np.ndarray, n: int, rng: np.random.Generator) -> Draws:
    """n i.i.d. paths from state 0, drawn with the probability the log-sum-exp `beta`
    normalises (requires beta[0] > -inf): forward sampling after backward filtering.

    Nodes are visited in order; the walkers standing at node u each draw, from their state's
    segment, the stop or an edge (`draw_in_segments`, one uniform per walker; none at a node
    without edges, where every walker stops), so a walker moves once per node it visits.
    Only the rows of the distinct states the walkers are at are built, once each (a
    confusion network's layer: the walkers share a few states), and a layer's segments are
    its matrix itself (no stop column), so on the layers the draws are the layered
    sampler's, bit for bit and uniform for uniform."""
    off = graph.offsets
    state = np.zeros(n, dtype=np.int64)
    node = np.zeros(n, dtype=np.int64)
    final = np.full(n, -1, dtype=np.int64)
    score = np.zeros(n)
    steps: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    active = np.arange(n)
    with quiet():
        while len(active):
            at = node[active]
            u = int(at.min())
            here = active[at == u]
            rows, which = _distinct(state[here] - off[u], int(off[u + 1] - off[u]))
            block = graph.block(u, rows)
            if not block.weight.size:  # no edge: every walker stops, no uniform drawn
                final[here] = state[here]
                score[here] += block.ends()[which]
                active = active[final[active] < 0]
                continue
            # the distinct rows only; every one of them holds a walker (`every`)
            flat, heads, lead, _ = _segments(block, beta)
            col = (draw_in_segments(flat, heads, which, rng.random(len(here)), every=True)
                   - heads[which] - lead)
            stop = col < 0
            go, gw, gc = here, which, col
            some_stop = bool(stop.any())
            if some_stop:
                ends = here[stop]
                final[ends] = state[ends]
                score[ends] += block.ends()[which[stop]]
                on = ~stop
                go, gw, gc = here[on], which[on], col[on]
            if block.starts is None:
                w, nxt = block.weight[gw, gc], block.dst[gw, gc] + block.base
            else:
                e = block.starts[gw] + gc
                w, nxt = block.weight[e], block.dst[e] + block.base
            steps.append((go, state[go], gc))
            score[go] += w
            state[go] = nxt
            node[go] = node_of(off, nxt)
            if some_stop:
                active = active[final[active] < 0]
    return Draws(steps, final, score)


def _distinct(local: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(local, return_inverse=True)` for states 0..size-1 of one node (the sorted
    distinct rows, and each walker's rank among them), by marking rather than sorting: a
    sampler asks once per node, where the sort was most of a small layer's cost."""
    seen = np.zeros(size, dtype=bool)
    seen[local] = True
    rows = np.flatnonzero(seen)
    rank = np.empty(size, dtype=np.int64)
    rank[rows] = np.arange(len(rows))
    return rows, rank[local]


class Layered:
    """A confusion network's layered q-automaton (`core.dp`'s arrays) as a `Graph`: node i is
    layer i, no state stops before the last layer, whose stop weights are `final`."""

    dense = True

    def __init__(self, weights: list[np.ndarray], targets: list[np.ndarray],
                 final: np.ndarray) -> None:
        self.weights, self.targets, self.final = weights, targets, final
        sizes = [len(w) for w in weights] + [len(final)]
        self.spans = sizes[1:]  # layer u's edges reach layer u + 1
        self.bases = list(accumulate(sizes))  # layer u + 1's first state
        self.offsets = np.array([0, *self.bases], dtype=np.int64)

    def block(self, u: int, rows: np.ndarray | int | None = None) -> Block:
        if u == len(self.weights):
            stop = self.final if rows is None else self.final[rows]
            none = np.shape(stop) + (0,)
            return Block(stop, np.zeros(none), np.zeros(none, np.int64))
        if rows is None:  # the layer's own matrices (no view made per sweep)
            return Block(None, self.weights[u], self.targets[u], base=self.bases[u],
                         span=self.spans[u])
        return Block(None, self.weights[u][rows], self.targets[u][rows], base=self.bases[u],
                     span=self.spans[u])


class QGraph:
    """A word lattice's q-automaton (`QAutomaton`) as a dense `Graph`: one column per
    outgoing arc of the node, the targets made global by their destination node's offset."""

    dense = True

    def __init__(self, qa: QAutomaton) -> None:
        self.nodes = qa.nodes
        self.offsets = off = qa.offsets()
        self.base = [off[d] for d in qa.arc_dst]  # each column's destination's first state

    def block(self, u: int, rows: np.ndarray | int | None = None) -> Block:
        node = self.nodes[u]
        sel = slice(0, len(node)) if rows is None else rows
        return Block(node.final[sel], node.weights[sel], node.targets[sel] + self.base[u])
