"""The weights of the q-automaton's rows: batched model queries, and pruning for decoding.

Why apart from `automaton.py`: giving rows their weights is one job (which words a row needs,
one `log_prob` query for exact rows and one `log_bound` query for the others, possibly batched
across automata by `methods.lockstep`, and the events a cache is told), and Algorithm 2 is
another. A row's weight on a word arc is the arc's own ln weight (a confusion network's
emission) plus the model's term; on an epsilon arc the arc's weight alone; its stop weight at a
final node is the final weight plus the `</s>` term.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from arsdecode.core.q_layout import QLayout
from arsdecode.core.q_states import AutomatonListener, FillRequest
from arsdecode.core.semiring import quiet
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.model import TargetModel, context_rows


class QWeights(QLayout):
    """The rows' weights of the q-automaton (module docstring); `automaton.QAutomaton` adds
    q^(0) and Algorithm 2."""

    def __init__(self, model: TargetModel, lattice: Lattice | WordLattice) -> None:
        super().__init__(model, lattice)
        self.lm = model
        self.order, self.bos, self.eos = model.order, model.bos, model.eos
        self.pruned = False
        # Arcs still in play for decoding (`prune_columns`), as a mask and as columns.
        self.alive = [np.ones(n.width, dtype=bool) for n in self.nodes]
        self.alive_cols = [np.arange(n.width, dtype=np.int64) for n in self.nodes]
        self.on_exact_fill: Callable[[tuple[int, ...], np.ndarray, np.ndarray], None] | None
        self.on_exact_fill = None  # optional callback(context_row, words, values), apply_fill
        # Told of every change to q after construction; `viterbi.incremental_viterbi` attaches
        # the incremental Viterbi here on the first decoding pass (it starts from q as it is).
        self.listener: AutomatonListener | None = None
        # q^(0)'s rows to fill: at construction, or by the caller (lockstep ARS batches them
        # across sentences) through `fill_requests(self.unfilled)` / `apply_fill`.
        self.unfilled: list[tuple[int, int]] = []

    # ----- weights -------------------------------------------------------------------------
    def fill_pending(self) -> None:
        """Query the rows of q^(0) (when constructed with `fill=False`, else done already)."""
        pending, self.unfilled = self.unfilled, []
        self.fill(pending)

    def fill(self, pending: Sequence[tuple[int, int]], only: dict | None = None) -> None:
        """Give (node, state) rows their own weights: one batched model query per kind."""
        for request in self.fill_requests(pending, only):
            query = self.model.log_prob if request.exact else self.model.log_bound
            self.apply_fill(request, np.asarray(query(request.contexts, request.words),
                                                dtype=np.float64))

    def fill_requests(self, pending: Sequence[tuple[int, int]], only: dict | None = None
                      ) -> list[FillRequest]:
        """The model queries that give the weights of `pending` rows: at most two, exact rows
        (`log_prob`, the very call `Target` makes for the same factor, so an exact edge equals
        p's factor bit for bit) and inexact rows (`log_bound`). A row's words are its word
        arcs', then `</s>` at a final node. `only[(node, state)] = column` restricts the
        query to that edge (the paper variant)."""
        eos = np.array([self.eos], dtype=np.int64)
        groups: dict[bool, list] = {True: [], False: []}
        for v, s in pending:
            stop = False
            cols: np.ndarray | None
            if only is not None and (v, s) in only:
                col = only[(v, s)]
                cols = np.array([col] if self.cand_ids[v][col] >= 0 else [], dtype=np.int64)
                words = self.cand_ids[v][cols]
            else:
                if self.pruned and not self.alive[v].all():
                    alive = self.alive[v]
                    cols = np.flatnonzero(alive if self.all_words[v]
                                          else alive & (self.cand_ids[v] >= 0))
                    words = self.cand_ids[v][cols]
                else:
                    cols = None if self.all_words[v] else self.word_cols[v]
                    words = self.word_ids[v]
                if self.is_final[v]:
                    words, stop = np.concatenate([words, eos]), True
            groups[self.nodes[v].exact[s]].append((v, s, words, cols, stop))
        requests = []
        for exact, items in groups.items():
            if not items:
                continue
            contexts = context_rows([self.nodes[v].contexts[s] for v, s, _, _, _ in items],
                                    self.width)
            counts = [len(it[2]) for it in items]
            word_arr = np.concatenate([it[2] for it in items]).astype(np.int64)
            requests.append(FillRequest(exact, np.repeat(contexts, counts, axis=0), word_arr,
                                        items))
        return requests

    def apply_fill(self, request: FillRequest, values: np.ndarray) -> None:
        """Store the answers `values` (ln) to `request` as edge weights (plus arc weights).

        Exact answers are p's factors too: they are passed to
        `on_exact_fill(context_row, words, values)` (`Target.remember_context`), so a path
        through exact states is scored without another model query."""
        tell = self.on_exact_fill if request.exact else None
        pos = 0
        with quiet():
            for v, s, words, cols, stop in request.items:
                node = self.nodes[v]
                vals = values[pos: pos + len(words)]
                if tell is not None and len(words):
                    tell(tuple(request.contexts[pos].tolist()), words, vals)
                pos += len(words)
                if stop:
                    node.final[s] = self.finals[v] + vals[-1]
                    vals = vals[:-1]
                if cols is None:  # the whole row
                    if node.width:
                        node.weights[s] = vals + self.base[v]
                        node.own_weight[s] = True
                elif len(cols):
                    node.weights[s, cols] = vals + self.base[v][cols]
                    node.own_weight[s, cols] = True
        if self.listener is not None:
            self.listener.rows_changed([(v, s) for v, s, _, _, _ in request.items])

    def prune_columns(self, v: int, cols: np.ndarray) -> None:
        """Remove arcs `cols` of node v from play, for DECODING only: their edges get weight
        -inf in every present and future row and are never queried again.

        Exact for decoding when every path through them has p below that of a path already
        found (inference.prune_hopeless): the argmax of p is unaffected and the certificate
        still holds. q is then no longer an upper bound on those paths, so a pruned
        automaton must not be used for sampling (`pruned` is set)."""
        node = self.nodes[v]
        self.alive[v][cols] = False
        self.alive_cols[v] = np.flatnonzero(self.alive[v])
        self.pruned = True
        node.weights[: len(node), cols] = -np.inf
        if self.listener is not None:
            self.listener.columns_pruned(v, cols)
