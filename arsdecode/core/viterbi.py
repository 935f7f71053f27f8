"""The incremental Viterbi pass: the max-plus backward values of a q-automaton, recomputed only
where a refinement or a pruning changed something.

Why an object apart from the automaton: a full max-plus sweep costs states x candidates per
layer, but one refinement (Algorithm 2) touches a few rows. The bookkeeping that finds those
rows (which rows changed, which rows may point at a state, each row's cached maximum) is a
cache with its own invariants; keeping it here lets the automaton read as Algorithm 2 and
lets anyone change refinement by emitting the same four events (`AutomatonListener`):

    state_created(i, s, targets_row)    a new state s of layer i, its outgoing targets
    rows_changed([(i, s), ...])         the weights of these rows were (re)queried
    edges_moved(i, rows, col, target)   edges (rows, col) of layer i now lead to `target`
    columns_pruned(i, cols)             candidates `cols` of position i now weigh -inf

It is attached to an automaton (as its `listener`) the first time an incremental pass is
asked for (`incremental_viterbi`), starting from the automaton's current q as if every state
had just been created. A sampling-only automaton never gets one.

Every recomputed value is the float expression of `dp.backward` with `MaxPlus`, so
`values(qa)` equals the full sweep bit for bit (tests/test_incremental_viterbi.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from arsdecode.core.semiring import MaxPlus
from arsdecode.errors import AutomatonError
from arsdecode.native import _core

if TYPE_CHECKING:
    from arsdecode.core.automaton import QAutomaton
    from arsdecode.core.q_states import NodeStates


class LayerCache:
    """What the incremental pass knows about one layer of the automaton.

    Invariants between passes: a row whose weights or targets changed, or that has no
    cached value yet, is in `dirty`; `pointing_at[t]` holds every row whose edges may lead
    to state t of the next layer (a superset is fine); `best[s]` is row s's max-plus value,
    reached first at column `best_col[s]` (numpy's argmax rule); `second[s]` bounds the
    row's other entries from above.
    """

    def __init__(self) -> None:
        self.dirty: set[int] = set()
        # Entries whose target moved to a newly created state (weights unchanged): (rows, col).
        # A row need not be recomputed unless the moved entry was or now beats its maximum.
        self.touched: list[tuple[np.ndarray, int]] = []
        self.pointing_at: dict[int, set[int]] = {}
        self.best = np.empty(0)
        self.best_col = np.empty(0, dtype=np.int64)
        self.second = np.empty(0)

    def grow(self, n_states: int) -> None:
        """Room for `n_states` > len(best) rows; new rows have no value yet (NaN)."""
        extra = n_states - len(self.best)
        self.best = np.concatenate([self.best, np.full(extra, np.nan)])
        self.best_col = np.concatenate([self.best_col, np.zeros(extra, dtype=np.int64)])
        self.second = np.concatenate([self.second, np.full(extra, np.inf)])


class IncrementalViterbi:
    """Max-plus backward values of one q-automaton, kept up to date from its events.

    It does not keep the automaton (which is passed to `values`): the automaton holds its
    listener, and a reference back would make a cycle that keeps a finished automaton's
    arrays alive until the cyclic garbage collector runs.
    """

    def __init__(self, qa: QAutomaton) -> None:
        """Start from `qa` as it is now, as if every existing state had just been created
        (dirty, and in the reverse index of its targets). Attaching happens at the first
        pass, when most layers still hold one state, so the replay is short. Only for a
        layered automaton (a confusion network: every arc of node i goes to node i + 1)."""
        if not qa.layered:
            raise AutomatonError("the incremental Viterbi runs on a layered q-automaton only")
        self.L = qa.n_nodes - 1
        self.caches = [LayerCache() for _ in qa.nodes]
        for i, layer in enumerate(qa.nodes):
            for s in range(len(layer)):
                self.state_created(i, s, layer.targets[s])

    # ----- events (see `q_states.AutomatonListener`) ------------------------------------------
    def state_created(self, i: int, s: int, targets_row: np.ndarray) -> None:
        cache = self.caches[i]
        cache.dirty.add(s)
        if i < self.L:
            for t in np.flatnonzero(np.bincount(targets_row)).tolist():  # its distinct targets
                cache.pointing_at.setdefault(t, set()).add(s)

    def rows_changed(self, rows: list[tuple[int, int]]) -> None:
        caches = self.caches
        for i, s in rows:
            caches[i].dirty.add(s)

    def edges_moved(self, i: int, rows: np.ndarray, col: int, target: int) -> None:
        cache = self.caches[i]
        cache.pointing_at.setdefault(target, set()).update(rows.tolist())
        cache.touched.append((rows, col))

    def columns_pruned(self, i: int, cols: np.ndarray) -> None:
        # Only rows whose cached maximum came through a pruned column change value (the
        # others lose entries below their maximum); rows without a value are dirty already.
        cache = self.caches[i]
        cache.dirty.update(np.flatnonzero(np.isin(cache.best_col, cols)).tolist())

    # ----- the pass ------------------------------------------------------------------------------
    def values(self, qa: QAutomaton) -> list[np.ndarray]:
        """Per layer, the max-plus value of each state of `qa` (the automaton whose events
        this cache received), recomputing only what changed.

        A row is recomputed when its own weights or targets changed (`dirty`) or when a state
        it may point at changed value (`pointing_at`); the max is taken at its argmax, which
        is kept for `columns_pruned`. The row maxima run on the compiled core
        (`_core.best_rows`: one fused pass, numpy's argmax rule for the column).
        """
        L = self.L
        values: list[np.ndarray] = [np.empty(0)] * (L + 1)
        changed_next: np.ndarray = np.empty(0, dtype=np.int64)  # states whose value went up
        lowered_next: np.ndarray = np.empty(0, dtype=np.int64)  # states whose value went down
        for i in range(L, -1, -1):
            layer, cache = qa.nodes[i], self.caches[i]
            n_states = len(layer)
            if len(cache.best) < n_states:
                cache.grow(n_states)
            rows_set = set(cache.dirty)
            changed_kept = np.empty(0, dtype=np.int64)
            if i < L:
                for t in changed_next.tolist():
                    rows_set.update(cache.pointing_at.get(t, ()))
                if len(lowered_next):
                    changed_kept = _lowered(layer, cache, values[i + 1], lowered_next,
                                            rows_set)
                if cache.touched:
                    _moved(layer, cache, values[i + 1], rows_set)
            cache.touched.clear()
            cache.dirty.clear()
            rows = np.fromiter(rows_set, dtype=np.int64, count=len(rows_set))
            if len(rows):
                if i == L:
                    new = layer.final[rows]
                else:  # the max-plus sum of each row, and where it is reached (compiled, fused)
                    new, cols, second = _core.best_rows(layer.weights, layer.targets,
                                                        values[i + 1], rows, qa.alive_cols[i])
                    cache.best_col[rows] = cols
                    cache.second[rows] = second
                old = cache.best[rows]
                differs = ~((old == new) | (np.isnan(old) & np.isnan(new)))
                cache.best[rows] = new
                lowered = differs & (new < old)
                # A state valued for the first time (NaN before) is new: the rows pointing at
                # it are new themselves (dirty) or had an entry moved to it (`touched`), both
                # handled above, so only values that went up send their pointing rows back
                # (never, in exact arithmetic: refinement and pruning only lower q).
                changed_next = rows[differs & ~lowered & ~np.isnan(old)]
                lowered_next = rows[lowered]
            else:
                changed_next = lowered_next = rows
            if i < L and len(changed_kept):  # rows lowered without a scan, in `_lowered`
                lowered_next = np.union1d(lowered_next, changed_kept)
            values[i] = cache.best[:n_states]
        return values


def _lowered(layer: NodeStates, cache: LayerCache, next_values: np.ndarray,
             lowered_next: np.ndarray, rows_set: set[int]) -> np.ndarray:
    """Rows of the layer whose maximum came through a state whose value went down.

    A value that went down can change only the rows whose maximum came through it: every
    other entry of such a row is unchanged or lower too, so its first maximum stays where
    it was (refinement and pruning only lower q). If the lowered entry still beats
    `second` (an upper bound on the other entries), it is still the unique maximum: its
    new value is the row's, with no scan. The other rows join `rows_set`. Returns the rows
    whose value changed this way.
    """
    n_states = len(layer)
    through = layer.targets[np.arange(n_states), cache.best_col[:n_states]]
    is_lowered = np.zeros(len(next_values), dtype=bool)
    is_lowered[lowered_next] = True
    hit = np.flatnonzero(is_lowered[through])
    if rows_set:
        queued = np.zeros(n_states, dtype=bool)
        queued[list(rows_set)] = True
        hit = hit[~queued[hit]]
    cols_hit = cache.best_col[hit]
    entry = MaxPlus.times(layer.weights[hit, cols_hit],
                          next_values[layer.targets[hit, cols_hit]])
    still = entry > cache.second[hit]
    rows_set.update(hit[~still].tolist())
    kept = hit[still]
    changed_kept = kept[entry[still] != cache.best[kept]]
    cache.best[kept] = entry[still]
    return changed_kept


def _moved(layer: NodeStates, cache: LayerCache, next_values: np.ndarray,
           rows_set: set[int]) -> None:
    """Queue the rows of the layer whose maximum an edge moved to a new state may change.

    A moved entry changes its row's value only if it was the maximum, now exceeds it, or
    ties it at an earlier column (numpy's argmax keeps the first maximum); otherwise the
    row keeps its value and `second` stays an upper bound on the other entries.
    """
    for moved, col in cache.touched:
        score = MaxPlus.times(layer.weights[moved, col],
                              next_values[layer.targets[moved, col]])
        best, best_col = cache.best[moved], cache.best_col[moved]
        redo = ((best_col == col) | (score > best) | ((score == best) & (col < best_col))
                | np.isnan(score) | np.isnan(best))
        rows_set.update(moved[redo].tolist())
        keep = moved[~redo]
        cache.second[keep] = np.maximum(cache.second[keep], score[~redo])


def incremental_viterbi(qa: QAutomaton) -> IncrementalViterbi:
    """The automaton's incremental Viterbi, attached (as its listener) on first use."""
    viterbi = qa.listener
    if not isinstance(viterbi, IncrementalViterbi):
        viterbi = IncrementalViterbi(qa)
        qa.listener = viterbi
    return viterbi
