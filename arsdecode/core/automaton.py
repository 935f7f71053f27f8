"""The q-automaton: a deterministic, position-layered weighted automaton over variable contexts.

Layer i holds the states reached after i tokens; a state is a context, a suffix of the true
history `<s> x_1 .. x_i`. Every state has exactly one edge per candidate of position i + 1
(deterministic), whose natural-log weight is
    model.log_bound(context, x) + emission(x)      while the context is inexact,
    model.log_prob(context, x) + emission(x)       once `model.is_exact(i, context)`
(n - 1 words, or the whole history). An edge goes to the LONGEST state of the next layer that
is a suffix of `context + x`; since every state's context is a suffix of every history that
reaches it, every weight bounds the true factor: q >= p. The model is reached only through
`arsdecode.model.TargetModel` (callers convert a maxarpa.Model once, with `as_target_model`).

This module is q and Algorithm 2 (`refine`) only. The incremental Viterbi's cache lives in
`viterbi.py`, fed by the events this automaton emits to its `listener` (`AutomatonListener`).

Storage: per layer, dense float64 weight and int32 target matrices (state x candidate), so the
dynamic programs (`dp.py`, `inference.py`) are a few numpy operations per layer. float64
throughout; OpenFst's tropical and log arcs are float32, so pynini is used for export and
inspection (`arsdecode.core.export.to_fst`, log64 arcs), not for the dynamic programs.

Variants of Algorithm 2 (`refine`):
- "all-edges" (default): a new state's whole row of outgoing edges is re-bounded at the new,
  longer context (one batched query), which lowers many weights per refinement.
- "paper": as in the paper, a new state copies its suffix state's outgoing edges and only the
  edge on the refined path is lowered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, cast

import numpy as np

from arsdecode.core.semiring import quiet
from arsdecode.errors import AutomatonError, LatticeError
from arsdecode.lattice import Lattice
from arsdecode.model import TargetModel, context_rows

Variant = Literal["all-edges", "paper"]
VARIANTS: tuple[str, ...] = ("all-edges", "paper")
DEFAULT_VARIANT: Variant = "all-edges"


class Layer:
    """The states of one position: contexts, weights over the next candidates, targets."""

    def __init__(self, width: int) -> None:
        self.width = width  # candidates of the next position (1 for the final layer)
        self.contexts: list[tuple[int, ...]] = []
        self.index: dict[tuple[int, ...], int] = {}
        self.by_suffix: dict[tuple[int, ...], list[int]] = {}  # suffix -> states ending with it
        self.weights = np.empty((4, width))
        self.targets = np.zeros((4, width), dtype=np.int32)
        # True where the weight was queried at this row's own context (False: copied from the
        # suffix state when the state was created, a valid but looser bound).
        self.own_weight = np.zeros((4, width), dtype=bool)
        self.ctx_len = np.zeros(4, dtype=np.int64)
        self.exact: list[bool] = []

    def __len__(self) -> int:
        return len(self.contexts)

    def add(self, context: tuple[int, ...], exact: bool) -> int:
        s = len(self.contexts)
        if s == len(self.weights):
            grow = max(4, s)
            self.weights = np.concatenate([self.weights, np.empty((grow, self.width))])
            self.targets = np.concatenate(
                [self.targets, np.zeros((grow, self.width), dtype=np.int32)]
            )
            self.own_weight = np.concatenate(
                [self.own_weight, np.zeros((grow, self.width), dtype=bool)]
            )
            self.ctx_len = np.concatenate([self.ctx_len, np.zeros(grow, dtype=np.int64)])
        self.contexts.append(context)
        self.ctx_len[s] = len(context)
        self.index[context] = s
        self.exact.append(exact)
        for k in range(len(context) + 1):
            self.by_suffix.setdefault(context[len(context) - k :], []).append(s)
        return s

    def state_weights(self) -> np.ndarray:
        """The (states, width) weight matrix of the states created so far (a view)."""
        return self.weights[: len(self.contexts)]

    def state_targets(self) -> np.ndarray:
        """The (states, width) target matrix of the states created so far (a view)."""
        return self.targets[: len(self.contexts)]


class AutomatonListener(Protocol):
    """What a cache over q is told when q changes (`viterbi.IncrementalViterbi` is one).

    Events come after the change is made, with layer index i and state (row) indices.
    """

    def state_created(self, i: int, s: int, targets_row: np.ndarray) -> None:
        """State s of layer i was created with these outgoing targets (weights to come)."""

    def rows_changed(self, rows: list[tuple[int, int]]) -> None:
        """Weights of these (layer, state) rows were (re)queried."""

    def edges_moved(self, i: int, rows: np.ndarray, col: int, target: int) -> None:
        """Edges (rows, col) of layer i now lead to the new state `target` of layer i + 1."""

    def columns_pruned(self, i: int, cols: np.ndarray) -> None:
        """Candidates `cols` of position i now weigh -inf in every row."""


@dataclass(frozen=True)
class FillRequest:
    """One batched model query for edge weights: `log_prob` if `exact`, else `log_bound`."""

    exact: bool
    contexts: np.ndarray  # (B, order - 1), left-padded with -1
    words: np.ndarray  # (B,)
    items: list  # (layer, state, words, columns) per row group, in order


class QAutomaton:
    """The refinable upper bound q on the target p over a lattice (see module docstring)."""

    def __init__(
        self,
        lm: TargetModel,
        lattice: Lattice,
        variant: str = DEFAULT_VARIANT,
        *,
        fill: bool = True,
        track_pointers: bool = True,
    ) -> None:
        """`fill=False` leaves the initial rows' weights to the caller (`unfilled`, then
        `fill_pending`, or `fill_requests` / `apply_fill` batched across automata).
        `track_pointers=False`: Viterbi always runs the full sweep and never attaches the
        incremental cache (`viterbi.py`); for a sampling-only automaton."""
        if variant not in VARIANTS:
            raise AutomatonError(f"unknown variant {variant!r}; choose from {VARIANTS}")
        self.lm = lm
        self.lattice = lattice
        self.variant = variant
        self.order = lm.order
        self.bos = lm.bos
        self.eos = lm.eos
        self.cand_ids = [lm.ids(list(t)) for t in lattice.tokens]
        # Candidates still in play for decoding (see `prune_columns`); all, unless pruned.
        self.alive = [np.ones(len(t), dtype=bool) for t in lattice.tokens]
        # The alive candidates of each position as column indices: the row maxima of the
        # incremental Viterbi scan only these (pruned columns are -inf and never win).
        self.alive_cols = [np.arange(len(t), dtype=np.int64) for t in lattice.tokens]
        self.pruned = False
        self.on_exact_fill: Callable[[tuple[int, ...], np.ndarray, np.ndarray], None] | None
        self.on_exact_fill = None  # optional callback(context_row, words, values), apply_fill
        self.track_pointers = track_pointers
        # Told of every change to q after construction; `viterbi.incremental_viterbi` attaches
        # the incremental Viterbi here on the first decoding pass (it starts from q as it is).
        self.listener: AutomatonListener | None = None
        self._columns: list[dict[int, list[int]] | None] = [None] * len(lattice.tokens)
        L = len(lattice)
        self.layers = [Layer(len(t)) for t in lattice.tokens] + [Layer(1)]
        # q^(0): <s> is the whole history at layer 0; every later layer starts with the empty
        # context (exact only for a unigram model), and every edge leads to it (targets 0).
        root = self.layers[0].add((self.bos,), exact=lm.is_exact(0, (self.bos,)))
        pending = [(0, root)]
        for i in range(1, L + 1):
            pending.append((i, self.layers[i].add((), exact=lm.is_exact(i, ()))))
        # The initial rows' weights: queried now, or by the caller (lockstep ARS batches them
        # across sentences) through `fill_requests(self.unfilled)` / `apply_fill`.
        self.unfilled: list[tuple[int, int]] = []
        if fill:
            self._fill(pending)
        else:
            self.unfilled = pending

    # ----- weights -------------------------------------------------------------------------
    def fill_pending(self) -> None:
        """Query the initial rows' weights (when constructed with `fill=False`)."""
        pending, self.unfilled = self.unfilled, []
        self._fill(pending)

    def _fill(self, pending: Sequence[tuple[int, int]], only: dict | None = None) -> None:
        """Compute the weights of (layer, state) rows: one batched model query per kind."""
        for request in self.fill_requests(pending, only):
            query = self.lm.log_prob if request.exact else self.lm.log_bound
            self.apply_fill(request, query(request.contexts, request.words))

    def fill_requests(
        self, pending: Sequence[tuple[int, int]], only: dict | None = None
    ) -> list[FillRequest]:
        """The model queries that give the weights of `pending` rows: at most two, exact rows
        (`log_prob`) and inexact rows (`log_bound`).

        `only[(layer, state)] = column` restricts the query to one edge (the paper variant).
        Exact rows use `log_prob` on the padded context, the very call `Target` makes for the
        same factor, so an exact edge equals p's factor bit for bit.
        """
        width = max(self.order - 1, 0)
        L = len(self.lattice)
        eos = np.array([self.eos], dtype=np.int64)
        groups: dict[bool, list] = {True: [], False: []}
        for i, s in pending:
            if only is not None and (i, s) in only:
                cols = np.array([only[(i, s)]])  # one column
                words = self.cand_ids[i][cols]
            elif i == L:
                cols, words = None, eos  # None: the whole row
            elif self.pruned and not self.alive[i].all():
                cols = np.flatnonzero(self.alive[i])
                words = self.cand_ids[i][cols]
            else:
                cols, words = None, self.cand_ids[i]
            groups[self.layers[i].exact[s]].append((i, s, words, cols))
        requests = []
        for exact, items in groups.items():
            if not items:
                continue
            contexts = context_rows([self.layers[i].contexts[s] for i, s, _, _ in items], width)
            counts = [len(w) for _, _, w, _ in items]
            word_arr = np.concatenate([w for _, _, w, _ in items]).astype(np.int64)
            requests.append(
                FillRequest(exact, np.repeat(contexts, counts, axis=0), word_arr, items)
            )
        return requests

    def apply_fill(self, request: FillRequest, values: np.ndarray) -> None:
        """Store the answers `values` (ln) to `request` as edge weights (plus emissions).

        Exact answers are p's factors too: they are passed to
        `on_exact_fill(context_row, words, values)` (`Target.remember_context`), so a path
        through exact states is scored without another model query.
        """
        tell = self.on_exact_fill if request.exact else None
        L = len(self.lattice)
        pos = 0
        with quiet():
            for i, s, words, cols in request.items:
                layer = self.layers[i]
                v = values[pos : pos + len(words)]
                if tell is not None:
                    tell(tuple(request.contexts[pos].tolist()), words, v)
                pos += len(words)
                if cols is None:  # the whole row
                    layer.weights[s] = v + self.lattice.log_emissions[i] if i < L else v
                    layer.own_weight[s] = True
                else:
                    layer.weights[s, cols] = v + self.lattice.log_emissions[i][cols]
                    layer.own_weight[s, cols] = True
        if self.listener is not None:
            self.listener.rows_changed([(i, s) for i, s, _, _ in request.items])

    def prune_columns(self, i: int, cols: np.ndarray) -> None:
        """Remove candidates `cols` of position i from play, for DECODING only: their edges
        get weight -inf in every present and future row and are never queried again.

        Exact for decoding when every path through them has p below that of a path already
        found (inference.prune_hopeless): the argmax of p is unaffected and the certificate
        still holds. q is then no longer an upper bound on those paths, so a pruned
        automaton must not be used for sampling (`pruned` is set).
        """
        layer = self.layers[i]
        self.alive[i][cols] = False
        self.alive_cols[i] = np.flatnonzero(self.alive[i])
        self.pruned = True
        layer.weights[: len(layer), cols] = -np.inf
        if self.listener is not None:
            self.listener.columns_pruned(i, cols)

    # ----- paths ---------------------------------------------------------------------------
    def indices(self, tokens: Sequence[str]) -> list[int]:
        try:
            return self.lattice.indices(tokens)
        except LatticeError as err:
            raise AutomatonError(str(err)) from None

    def states_on_path(self, idx: Sequence[int]) -> list[int]:
        """State index at each layer 0..L along a path given as candidate indices."""
        states = [0]
        for i, j in enumerate(idx):
            states.append(int(self.layers[i].targets[states[-1], j]))
        return states

    def log_q_indices(self, idx: Sequence[int]) -> float:
        """log q(path), summed in position order exactly like Target.log_p_indices."""
        states = self.states_on_path(idx)
        total = 0.0
        with quiet():
            for i, j in enumerate(idx):
                total += self.layers[i].weights[states[i], j]
            return float(total + self.layers[-1].weights[states[-1], 0])

    def log_q_batch(self, idx: np.ndarray) -> np.ndarray:
        """log q of many paths at once; same arithmetic and order as `log_q_indices`."""
        idx = np.asarray(idx, dtype=np.int64)
        k, L = idx.shape
        states = np.zeros(k, dtype=np.int64)
        total = np.zeros(k)
        with quiet():
            for i in range(L):
                layer = self.layers[i]
                total = total + layer.weights[states, idx[:, i]]
                states = layer.targets[states, idx[:, i]].astype(np.int64)
            return total + self.layers[L].weights[states, 0]

    def log_q(self, tokens: Sequence[str]) -> float:
        return self.log_q_indices(self.indices(tokens))

    # ----- Algorithm 2 ---------------------------------------------------------------------
    def refine(self, tokens: Sequence[str]) -> bool:
        return self.refine_indices(self.indices(tokens))

    def refine_many(self, paths: Sequence[Sequence[int]]) -> int:
        """Refine along several paths; in the "all-edges" variant the new states' weights are
        computed in one batched query at the end. Returns how many paths changed q.

        Deferring is exact: a state created before its suffix state was filled copies that
        state's (older, larger) bounds, and is refilled itself before q is used again.
        """
        if self.variant != "all-edges":
            return sum(self.refine_indices(p) for p in paths)
        pending: list[tuple[int, int]] = []
        changed = 0
        for p in paths:
            changed += self.refine_indices(p, pending=pending)
        if pending:
            self._fill(pending)
        return changed

    def refine_indices(self, idx: Sequence[int], pending: list | None = None) -> bool:
        """Raise the context order by one at every position of the path x (Algorithm 2).

        For i = 1..L (left to right, so the previous path state is already refined): let c be
        the context x's path uses at layer i, of length ORDER(i); if it is not exact, create
        the state SUF(<s> x_1..x_i, ORDER(i) + 1), the next longer suffix of the history,
        moving into it every edge whose source context determines it. Weights of new states
        are computed in one batched query at the end (variant "all-edges": the whole row;
        "paper": the edge on the path only), or appended to `pending` for the caller.
        Returns True if anything changed (a state created or a weight lowered).
        """
        L = len(self.lattice)
        history = [self.bos] + [int(self.cand_ids[i][j]) for i, j in enumerate(idx)]  # <s> x
        deferred = pending is not None
        pending = pending if deferred else []
        assert pending is not None
        start_pending = len(pending)
        only: dict[tuple[int, int], int] = {}
        s = 0  # the path's state at layer i - 1
        for i in range(1, L + 1):
            prev = self.layers[i - 1]
            t = int(prev.targets[s, idx[i - 1]])  # the path's state at layer i: context c
            layer = self.layers[i]
            if not layer.exact[t]:
                ctx = layer.contexts[t]  # |c| = ORDER(i)
                new_ctx = tuple(history[max(0, i - len(ctx)) : i + 1])  # SUF(.., ORDER(i) + 1)
                if new_ctx not in layer.index:
                    self._create(i, new_ctx, t)
                    pending.append((i, len(layer) - 1))
                t = int(prev.targets[s, idx[i - 1]])  # the edge now leads to the new state
            s = t
            if (self.variant == "paper" and i < L and not layer.own_weight[s, idx[i]]
                    and self.alive[i][idx[i]]):  # a pruned edge stays -inf
                if (i, s) not in only:  # lower the weight of the edge on the path only
                    only[(i, s)] = idx[i]
                    pending.append((i, s))
        if self.variant == "paper":
            for i, s in pending:  # exact states and final weights are filled in full
                if (self.layers[i].exact[s] or i == L) and (i, s) in only:
                    del only[(i, s)]
        if len(pending) == start_pending:
            return False
        if not deferred:
            self._fill(pending, only if self.variant == "paper" else None)
        return True

    def _create(self, i: int, ctx: tuple[int, ...], suffix_state: int) -> int:
        """Create state `ctx` at layer i from its suffix state, and move edges into it.

        Outgoing edges are copied from the suffix state (same targets: no state of layer i + 1
        can extend a context that did not exist; weights are valid bounds until refilled).
        Incoming edges: every state of layer i - 1 whose context ends with ctx[:-1] now leads
        here on token ctx[-1], since ctx is the longest state that is a suffix of its history.
        """
        layer = self.layers[i]
        s = layer.add(ctx, exact=self.lm.is_exact(i, ctx))
        layer.weights[s] = layer.weights[suffix_state]
        layer.targets[s] = layer.targets[suffix_state]
        layer.own_weight[s] = False
        listener = self.listener
        if listener is not None:
            listener.state_created(i, s, layer.targets[s])
        prev = self.layers[i - 1]
        sources = prev.by_suffix.get(ctx[:-1])
        if sources:
            src = np.asarray(sources)
            for col in self.position_of_id(i - 1, ctx[-1]):
                cur = prev.targets[src, col]
                moved = src[layer.ctx_len[cur] < len(ctx)]  # a shorter target: ctx is longer
                prev.targets[moved, col] = s
                if listener is not None and len(moved):
                    listener.edges_moved(i - 1, moved, col, s)
        return s

    def position_of_id(self, i: int, word_id: int) -> list[int]:
        """Candidate columns at position i whose model id is `word_id` (several if
        <unk>-mapped)."""
        if self._columns[i] is None:
            table: dict[int, list[int]] = {}
            for j, w in enumerate(self.cand_ids[i].tolist()):
                table.setdefault(w, []).append(j)
            self._columns[i] = table
        return cast("dict[int, list[int]]", self._columns[i]).get(word_id, [])

    # ----- facts ---------------------------------------------------------------------------
    def num_states(self) -> int:
        return sum(len(layer) for layer in self.layers)

    def ngrams_by_order(self) -> dict[int, int]:
        """Distinct (context, token) weights by n-gram order = len(context) + 1 (Table 1)."""
        counts: dict[int, int] = {}
        for layer in self.layers:
            for ctx in layer.contexts:
                counts[len(ctx) + 1] = counts.get(len(ctx) + 1, 0) + layer.width
        return dict(sorted(counts.items()))

    def is_deterministic(self) -> bool:
        """One edge per (state, candidate token), and tokens are distinct within a position."""
        return all(len(set(t)) == len(t) for t in self.lattice.tokens) and all(
            layer.state_targets().shape == (len(layer), layer.width) for layer in self.layers
        )

    def context_tokens(self, i: int, s: int) -> list[str]:
        return [self.lm.word(w) for w in self.layers[i].contexts[s]]
