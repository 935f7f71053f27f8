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


class QLayout:
    """The lattice's arcs by node and the automaton's per-node states (module docstring).

    Arcs are numbered as in the lattice, sorted by source node; node u's arcs are
    `arc_lo[u]:arc_hi[u]`, its columns. `position[v]`: the words before node v on every path,
    on a confusion network (-1 on a word lattice: see `_read_arcs`)."""

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
            weights = (np.concatenate(lattice.log_emissions).astype(np.float64)
                       if widths else np.zeros(0))
            per_node = [model.ids(list(t)) for t in lattice.tokens]
            ids = (np.concatenate(per_node).astype(np.int64) if per_node
                   else np.zeros(0, np.int64))
            self.arc_words: list[str | None] = [t for toks in lattice.tokens for t in toks]
            self.finals: dict[int, float] = {len(lattice): 0.0}
            self.position = np.arange(n_nodes, dtype=np.int64)  # words before each node
        else:
            n_nodes, src, dst, weights = (lattice.n_nodes, lattice.src, lattice.dst,
                                          lattice.log_weights)
            ids = np.full(lattice.n_arcs, -1, dtype=np.int64)
            word_arcs = [a for a, w in enumerate(lattice.words) if w is not None]
            if word_arcs:
                ids[word_arcs] = model.ids([lattice.words[a] for a in word_arcs])  # type: ignore[misc]
            self.arc_words = list(lattice.words)
            self.finals = dict(lattice.finals)
            # No node's position is used on a word lattice, even where every path to it has
            # the same length: a context exact only by its position (WeightedLM without <s>)
            # drops `<s>`, which a later node reached by paths of several lengths needs.
            self.position = np.full(n_nodes, -1, dtype=np.int64)
        self.n_nodes = n_nodes
        self.src, self.dst, self.arc_weights, self.arc_ids = src, dst, weights, ids
        self.arc_lo = np.searchsorted(src, np.arange(n_nodes), side="left")
        self.arc_hi = np.searchsorted(src, np.arange(n_nodes), side="right")
        # the same as Python lists, for the walks along a path (no numpy scalar per step)
        self.lo_list: list[int] = self.arc_lo.tolist()
        self.src_list: list[int] = src.tolist()
        self.dst_list: list[int] = dst.tolist()
        self.ids_list: list[int] = ids.tolist()
        spans = list(zip(self.lo_list, self.arc_hi.tolist(), strict=True))
        self.arc_dst = [dst[lo:hi] for lo, hi in spans]
        self.base = [weights[lo:hi] for lo, hi in spans]  # each node's arc weights
        self.cand_ids = [ids[lo:hi] for lo, hi in spans]  # model id per out-arc, -1: epsilon
        is_word = [c >= 0 for c in self.cand_ids]
        self.eps_mask = [~m for m in is_word]
        self.all_words = [bool(m.all()) for m in is_word]
        self.word_cols = [np.flatnonzero(m) for m in is_word]
        self.word_ids = [c if a else c[m] for c, a, m in zip(self.cand_ids, self.all_words,
                                                             is_word, strict=True)]
        self.is_final = np.zeros(n_nodes, dtype=bool)
        self.is_final[list(self.finals)] = True
        self.nodes = [NodeStates(hi - lo) for lo, hi in spans]
        self._into: list[dict[int, list[tuple[int, list[int]]]] | None] = [None] * n_nodes
        self._out: list[tuple[dict[tuple[int, int], list[int]], list[tuple[int, int]]] | None]
        self._out = [None] * n_nodes

    def _into_node(self, v: int) -> dict[int, list[tuple[int, list[int]]]]:
        """The arcs into node v by word id (-1: epsilon), as (source node, its columns)."""
        table = self._into[v]
        if table is None:
            table = {}
            if self.layered:  # node v - 1's columns, all into v
                by_word: dict[int, list[int]] = {}
                for j, w in enumerate(self.cand_ids[v - 1].tolist()):
                    by_word.setdefault(w, []).append(j)
                table = {w: [(v - 1, cols)] for w, cols in by_word.items()}
            else:
                groups: dict[tuple[int, int], list[int]] = {}
                lo, src, ids = self.lo_list, self.src_list, self.ids_list
                for a in np.flatnonzero(self.dst == v).tolist():
                    u = src[a]
                    groups.setdefault((ids[a], u), []).append(a - lo[u])
                for (w, u), cols in groups.items():
                    table.setdefault(w, []).append((u, cols))
            self._into[v] = table
        return table

    def _out_node(self, u: int) -> tuple[dict[tuple[int, int], list[int]], list[tuple[int, int]]]:
        """Node u's word columns by (destination, word id), and its (epsilon column, dst)."""
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
            out = self._out[u] = (cols, eps)
        return out

    def cut(self, history: Sequence[int]) -> Context:
        """The last order - 1 words of a history (what a context can hold)."""
        return tuple(history[max(0, len(history) - self.width):]) if self.width else ()

    def extend(self, context: Context, arc: int) -> Context:
        """The context after `arc`: c + (w,) cut to order - 1 words, or c for epsilon."""
        w = int(self.arc_ids[arc])
        return context if w < 0 else self.cut((*context, w))

    # ----- paths ---------------------------------------------------------------------------
    def states_on_path(self, arcs: Sequence[int]) -> list[int]:
        """The state (local to its node) after each prefix of the path, the start first."""
        states = [0]
        src, lo, nodes = self.src_list, self.lo_list, self.nodes
        for a in arcs:
            u = src[a]
            states.append(int(nodes[u].targets[states[-1], a - lo[u]]))
        return states

    def log_q(self, arcs: Sequence[int], final: int) -> float:
        """ln q of a path ending at node `final`, summed in path order from 0.0, then the
        stop (as `Target` and `dag_ars.paths_log_p` sum p: an exact path has q = p)."""
        states = self.states_on_path(arcs)
        total = 0.0
        src, lo, nodes = self.src_list, self.lo_list, self.nodes
        with quiet():
            for a, s in zip(arcs, states, strict=False):
                u = src[a]
                total += float(nodes[u].weights[s, a - lo[u]])
            return total + float(self.nodes[final].final[states[-1]])

    # The candidate-index view of a layered automaton (a confusion network): a path is one
    # candidate index per position, arc arc_lo[i] + j.
    def arcs_of(self, idx: Sequence[int]) -> list[int]:
        """The arcs of a confusion network's path given as candidate indices."""
        lo = self.lo_list
        return [lo[i] + int(j) for i, j in enumerate(idx)]

    def indices(self, tokens: Sequence[str]) -> list[int]:
        if not isinstance(self.lattice, Lattice):
            raise AutomatonError("candidate indices are a confusion network's paths")
        try:
            return self.lattice.indices(tokens)
        except LatticeError as err:
            raise AutomatonError(str(err)) from None

    def log_q_indices(self, idx: Sequence[int]) -> float:
        """ln q of a confusion network's path (candidate indices)."""
        return self.log_q(self.arcs_of(idx), len(idx))

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

    def is_deterministic(self) -> bool:
        """One edge per (state, arc), and no two arcs of a node with the same word and
        destination."""
        for v, node in enumerate(self.nodes):
            lo, hi = int(self.arc_lo[v]), int(self.arc_hi[v])
            pairs = list(zip(self.arc_dst[v].tolist(), self.arc_words[lo:hi], strict=True))
            if len(set(pairs)) != len(pairs):
                return False
            if node.state_targets().shape != (len(node), node.width):
                return False
        return True
