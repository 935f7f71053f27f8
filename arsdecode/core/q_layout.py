"""The q-automaton's layout: a lattice read as per-node arc arrays, one `NodeStates` per node,
and q read along paths.

Why apart from `automaton.py`: this is what does not change when q is refined (the arcs, the
tables that find an arc's columns and the arcs into a node) and the read-only walks of q
(states and ln q along a path), so `automaton.py` reads as q^(0) and Algorithm 2. A confusion
network (`Lattice`) is read straight into the layout of its word lattice
(`WordLattice.from_confusion`: node i -> i + 1 per candidate of position i + 1, node L final)
without building arc objects; its paths may also be written as candidate indices (`arcs_of`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arsdecode.core.q_states import Context, NodeStates
from arsdecode.core.semiring import quiet
from arsdecode.errors import AutomatonError, LatticeError
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.model import TargetModel

Step = tuple[int, int, int, int]  # (source node, column, destination node, word id)
OutArcs = tuple[dict[tuple[int, int], list[int]], list[tuple[int, int]], list[int]]
SCANS = 32  # `columns_of`: scans of a wide node's ids before its table is built


class QLayout:
    """The lattice's arcs by node and the automaton's per-node states (module docstring).

    Arcs are numbered as in the lattice, sorted by source node; node u's arcs are
    `arc_lo[u]:arc_hi[u]`, its columns."""

    def __init__(self, model: TargetModel, lattice: Lattice | WordLattice) -> None:
        self.model = model
        self.lattice = lattice
        self.layered = isinstance(lattice, Lattice)
        self.width = max(model.order - 1, 0)  # words a context keeps
        self.nodes: list[NodeStates] = []
        self._read_arcs(model, lattice)

    def _read_arcs(self, model: TargetModel, lattice: Lattice | WordLattice) -> None:
        """The lattice as arc arrays (sorted by source node) and one NodeStates per node."""
        if isinstance(lattice, Lattice):  # the confusion network's layout, read directly
            widths = [len(t) for t in lattice.tokens]
            n_nodes = len(lattice) + 1
            src = np.repeat(np.arange(len(lattice), dtype=np.int64), widths)
            dst = src + 1
            weights = (np.concatenate(lattice.log_emissions).astype(np.float64, copy=False)
                       if widths else np.zeros(0))
            flat = [t for toks in lattice.tokens for t in toks]  # one query for them all
            ids = (model.ids(flat).astype(np.int64, copy=False) if flat
                   else np.zeros(0, np.int64))
            self.finals: dict[int, float] = {len(lattice): 0.0}
        else:
            n_nodes, src, dst, weights = (lattice.n_nodes, lattice.src, lattice.dst,
                                          lattice.log_weights)
            ids = np.full(lattice.n_arcs, -1, dtype=np.int64)
            word_arcs = [a for a, w in enumerate(lattice.words) if w is not None]
            if word_arcs:
                ids[word_arcs] = model.ids([lattice.words[a] for a in word_arcs])  # type: ignore[misc]
            self.finals = dict(lattice.finals)
        self.n_nodes = n_nodes
        self.src, self.dst, self.arc_weights, self.arc_ids = src, dst, weights, ids
        self.arc_lo = np.searchsorted(src, np.arange(n_nodes), side="left")
        self.arc_hi = np.searchsorted(src, np.arange(n_nodes), side="right")
        # the same as Python lists, for the walks along a path (no numpy scalar per step)
        self.lo_list: list[int] = self.arc_lo.tolist()
        self._lists: tuple[list[int], list[int], list[int]] | None = None  # `steps`
        self._id_lists: list[list[int]] | None = None  # `index_steps`
        spans = list(zip(self.lo_list, self.arc_hi.tolist(), strict=True))
        self.arc_dst = [dst[lo:hi] for lo, hi in spans]
        self.base = [weights[lo:hi] for lo, hi in spans]  # each node's arc weights
        self.cand_ids = [ids[lo:hi] for lo, hi in spans]  # model id per out-arc, -1: epsilon
        # per node: its epsilon columns (a mask; False: none), whether every arc is a word
        # arc, the word columns and their ids (a confusion network's: all, no copies)
        self.eps_mask: list[np.ndarray | bool]
        self.word_cols: list[np.ndarray] = []
        if self.layered:
            self.eps_mask, self.all_words = [False] * n_nodes, [True] * n_nodes
            self.word_ids = self.cand_ids
        else:
            is_word = [c >= 0 for c in self.cand_ids]
            self.eps_mask = [~m for m in is_word]
            self.all_words = [bool(m.all()) for m in is_word]
            self.word_cols = [np.flatnonzero(m) for m in is_word]
            self.word_ids = [c[m] for c, m in zip(self.cand_ids, is_word, strict=True)]
        self.is_final = [v in self.finals for v in range(n_nodes)]
        self.nodes = [NodeStates(hi - lo, not self.layered) for lo, hi in spans]
        self._into: list[dict[int, list[tuple[int, list[int]]]] | None] = [None] * n_nodes
        self._out: list[OutArcs | None] = [None] * n_nodes
        self._columns: list[dict[int, list[int]] | None] = [None] * n_nodes  # `columns_of`
        self._scans = [0] * n_nodes

    def _into_node(self, v: int) -> dict[int, list[tuple[int, list[int]]]]:
        """The arcs into node v by word id (-1: epsilon), as (source node, its columns).
        (A confusion network's are node v - 1's columns: `columns_of`.)"""
        table = self._into[v]
        if table is None:
            table = {}
            groups: dict[tuple[int, int], list[int]] = {}
            for u, col, _, w in self.steps(np.flatnonzero(self.dst == v).tolist()):
                groups.setdefault((w, u), []).append(col)
            for (w, u), cols in groups.items():
                table.setdefault(w, []).append((u, cols))
            self._into[v] = table
        return table

    def columns_of(self, u: int, w: int) -> list[int]:
        """Node u's columns of word id w, ascending (several if <unk>-mapped). Why a scan
        first on a wide node: a short decode asks a node a handful of times, while a table of
        its (often hundreds of) candidates costs about as much as 50 scans; the table is built
        once a node has been asked `SCANS` times, or at once on a node of at most `SCANS`
        arcs (a table of a few entries costs no more than one scan)."""
        table = self._columns[u]
        if table is not None:
            return table.get(w, [])
        self._scans[u] += 1
        if self._scans[u] <= SCANS and len(self.cand_ids[u]) > SCANS:
            return (self.cand_ids[u] == w).nonzero()[0].tolist()
        table = self._columns[u] = {}
        for j, x in enumerate(self.cand_ids[u].tolist()):
            table.setdefault(x, []).append(j)
        return table.get(w, [])

    def _out_node(self, u: int) -> OutArcs:
        """Node u's word columns by (destination, word id), its (epsilon column, destination)
        pairs and its destination nodes (sorted), built on first use."""
        out = self._out[u]
        if out is None:
            cols: dict[tuple[int, int], list[int]] = {}
            eps: list[tuple[int, int]] = []
            dsts = self.arc_dst[u].tolist()
            for j, (d, w) in enumerate(zip(dsts, self.cand_ids[u].tolist(), strict=True)):
                if w < 0:
                    eps.append((j, d))
                else:
                    cols.setdefault((d, w), []).append(j)
            out = self._out[u] = (cols, eps, sorted(set(dsts)))
        return out

    def cut(self, history: Sequence[int]) -> Context:
        """The last order - 1 words of a history (what a context can hold)."""
        return tuple(history[max(0, len(history) - self.width):]) if self.width else ()

    def extend(self, context: Context, arc: int) -> Context:
        """The context after `arc`: c + (w,) cut to order - 1 words, or c for epsilon."""
        w = int(self.arc_ids[arc])
        return context if w < 0 else self.cut((*context, w))

    # ----- paths ---------------------------------------------------------------------------
    # A path is a list of arcs; walked as steps (u, col, v, w): the arc's source node, its
    # column there, its destination node and its word id (-1: epsilon). A confusion
    # network's path may be given as candidate indices instead (`index_steps`), which skips
    # the arc numbering.
    def steps(self, arcs: Sequence[int]) -> list[Step]:
        """The steps of a path given as arcs."""
        if self._lists is None:  # per arc, as Python ints: no numpy scalar per step
            self._lists = (self.src.tolist(), self.dst.tolist(), self.arc_ids.tolist())
        src, dst, ids = self._lists
        lo = self.lo_list
        return [(src[a], a - lo[src[a]], dst[a], ids[a]) for a in arcs]

    def index_steps(self, idx: Sequence[int]) -> list[Step]:
        """The steps of a confusion network's path given as candidate indices."""
        if self._id_lists is None:
            self._id_lists = [c.tolist() for c in self.cand_ids]
        ids = self._id_lists
        return [(i, j, i + 1, ids[i][j]) for i, j in enumerate(idx)]

    def arcs_of(self, idx: Sequence[int]) -> list[int]:
        """The arcs of a confusion network's path given as candidate indices."""
        lo = self.lo_list
        return [lo[i] + int(j) for i, j in enumerate(idx)]

    def states_along(self, steps: Sequence[Step]) -> list[int]:
        """The state (local to its node) after each prefix of the path, the start first."""
        states = [0]
        nodes = self.nodes
        for u, col, _, _ in steps:
            states.append(int(nodes[u].targets[states[-1], col]))
        return states

    def states_on_path(self, arcs: Sequence[int]) -> list[int]:
        return self.states_along(self.steps(arcs))

    def log_q_along(self, steps: Sequence[Step], final: int) -> float:
        """ln q of a path ending at node `final`, summed in path order from 0.0, then the
        stop (as `Target` and `dag_ars.paths_log_p` sum p: an exact path has q = p)."""
        states = self.states_along(steps)
        total = 0.0
        nodes = self.nodes
        with quiet():
            for (u, col, _, _), s in zip(steps, states, strict=False):
                total += float(nodes[u].weights[s, col])
            return total + float(nodes[final].final[states[-1]])

    def log_q(self, arcs: Sequence[int], final: int) -> float:
        return self.log_q_along(self.steps(arcs), final)

    def indices(self, tokens: Sequence[str]) -> list[int]:
        if not isinstance(self.lattice, Lattice):
            raise AutomatonError("candidate indices are a confusion network's paths")
        try:
            return self.lattice.indices(tokens)
        except LatticeError as err:
            raise AutomatonError(str(err)) from None

    def log_q_indices(self, idx: Sequence[int]) -> float:
        """ln q of a confusion network's path (candidate indices): `log_q_along`'s sum, the
        same terms in the same order, in one walk (node i is position i: no steps built)."""
        nodes = self.nodes
        s, total = 0, 0.0
        for i, j in enumerate(idx):
            node = nodes[i]
            total += float(node.weights[s, j])
            s = int(node.targets[s, j])
        return total + float(nodes[len(idx)].final[s])

    def log_q_batch(self, idx: np.ndarray) -> np.ndarray:
        """ln q of many confusion-network paths at once; the arithmetic and order of
        `log_q`, one numpy operation per layer."""
        idx = np.asarray(idx, dtype=np.int64)
        k, L = idx.shape
        states = np.zeros(k, dtype=np.int64)
        total = np.zeros(k)
        with quiet():
            for i in range(L):
                node = self.nodes[i]
                total = total + node.weights[states, idx[:, i]]
                states = node.targets[states, idx[:, i]].astype(np.int64)
            return total + self.nodes[L].final[states]

    def log_q_tokens(self, tokens: Sequence[str]) -> float:
        return self.log_q_indices(self.indices(tokens))

    def context_tokens(self, v: int, s: int) -> list[str]:
        return [self.model.word(w) for w in self.nodes[v].contexts[s]]

    # ----- facts ---------------------------------------------------------------------------
    def num_states(self) -> int:
        return sum(len(node) for node in self.nodes)

    def nbytes(self) -> int:
        """The bytes of the per-node arrays as allocated (the bulk of q's memory)."""
        return sum(node.nbytes() for node in self.nodes)

    def offsets(self) -> np.ndarray:
        """Each node's first state in a global numbering (node order), and the total last."""
        return np.concatenate([[0], np.cumsum([len(node) for node in self.nodes])]).astype(
            np.int64)

    def ngrams_by_order(self) -> dict[int, int]:
        """Distinct (context, word) weights by n-gram order = len(context) + 1 (Table 1): a
        state's word arcs, and `</s>` at a final node."""
        counts: dict[int, int] = {}
        for v, node in enumerate(self.nodes):
            words = ((node.width if self.all_words[v] else len(self.word_cols[v]))
                     + int(self.is_final[v]))
            for ctx in node.contexts:
                counts[len(ctx) + 1] = counts.get(len(ctx) + 1, 0) + words
        return dict(sorted(counts.items()))

    @property
    def arc_words(self) -> list[str | None]:
        """Each arc's word (None: epsilon), in arc order."""
        if isinstance(self.lattice, Lattice):
            return [t for toks in self.lattice.tokens for t in toks]
        return list(self.lattice.words)

    def is_deterministic(self) -> bool:
        """One edge per (state, arc), and no two arcs of a node with the same word and
        destination."""
        words = self.arc_words
        for v, node in enumerate(self.nodes):
            lo, hi = int(self.arc_lo[v]), int(self.arc_hi[v])
            pairs = list(zip(self.arc_dst[v].tolist(), words[lo:hi], strict=True))
            if len(set(pairs)) != len(pairs):
                return False
            if node.state_targets().shape != (len(node), node.width):
                return False
        return True
