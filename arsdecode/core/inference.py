"""Inference on the q-automaton: Viterbi, log partition and sampling, via `dp.py`.

Everything derives from the one semiring-generic backward sweep (`dp.backward`) over the
automaton's per-layer weight and target matrices: max-plus values give the Viterbi path,
log-sum-exp values give ln q(X) and drive forward sampling. Decoding uses a tested fast path,
`incremental_best_values`, which recomputes only the rows a refinement touched and returns
values identical (bit for bit) to the full max-plus sweep.
"""

from __future__ import annotations

import numpy as np

import arsdecode.core.dp as dp
from arsdecode.core.automaton import QAutomaton
from arsdecode.core.semiring import LogSumExp, MaxPlus, Semiring, quiet
from arsdecode.native import _core


def _arrays(qa: QAutomaton) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    L = len(qa.lattice)
    weights = [qa.layers[i].state_weights() for i in range(L)]
    targets = [qa.layers[i].state_targets() for i in range(L)]
    return weights, targets, qa.layers[L].state_weights()[:, 0].copy()


def backward_values(qa: QAutomaton, semiring: type[Semiring]) -> list[np.ndarray]:
    """Per layer, the best (`MaxPlus`) or total (`LogSumExp`) ln weight from each state to
    the end, </s> included."""
    return dp.backward(*_arrays(qa), semiring)


def incremental_best_values(qa: QAutomaton) -> list[np.ndarray]:
    """Per layer, the max-plus value of each state, recomputing only what changed.

    Why: a refinement touches a few rows, but a full pass costs states x candidates per
    layer. A row is recomputed when its own weights or targets changed (`Layer.dirty`) or when
    a state it may point at changed value (`Layer.pointing_at`); every recomputation is the
    same float expression as `dp.backward` with `MaxPlus` (the max taken at its argmax, which
    is kept for `QAutomaton.prune_columns`), so the values are identical. The row maxima run on
    the compiled core (`_core.best_rows`: one fused pass, numpy's argmax rule for the column).
    """
    if not qa.track_pointers:  # no reverse index: the full sweep (same values)
        return backward_values(qa, MaxPlus)
    L = len(qa.lattice)
    values: list[np.ndarray] = [np.empty(0)] * (L + 1)
    changed_next: np.ndarray = np.empty(0, dtype=np.int64)  # states whose value went up
    lowered_next: np.ndarray = np.empty(0, dtype=np.int64)  # states whose value went down
    for i in range(L, -1, -1):
        layer = qa.layers[i]
        n_states = len(layer)
        if len(layer.best) < n_states:
            pad = np.full(n_states - len(layer.best), np.nan)
            layer.best = np.concatenate([layer.best, pad])
            layer.best_col = np.concatenate(
                [layer.best_col, np.zeros(n_states - len(layer.best_col), dtype=np.int64)]
            )
            layer.second = np.concatenate(
                [layer.second, np.full(n_states - len(layer.second), np.inf)]
            )
        rows_set = set(layer.dirty)
        changed_kept = np.empty(0, dtype=np.int64)
        if i < L:
            for t in changed_next.tolist():
                rows_set.update(layer.pointing_at.get(t, ()))
            if len(lowered_next):
                # A value that went down can change only the rows whose maximum came through
                # it: every other entry of such a row is unchanged or lower too, so its first
                # maximum stays where it was (refinement and pruning only lower q). If the
                # lowered entry still beats `second` (an upper bound on the other entries), it
                # is still the unique maximum: its new value is the row's, with no scan.
                through = layer.targets[np.arange(n_states), layer.best_col[:n_states]]
                is_lowered = np.zeros(len(values[i + 1]), dtype=bool)
                is_lowered[lowered_next] = True
                hit = np.flatnonzero(is_lowered[through])
                if rows_set:
                    queued = np.zeros(n_states, dtype=bool)
                    queued[list(rows_set)] = True
                    hit = hit[~queued[hit]]
                cols_hit = layer.best_col[hit]
                entry = MaxPlus.times(layer.weights[hit, cols_hit],
                                      values[i + 1][layer.targets[hit, cols_hit]])
                still = entry > layer.second[hit]
                rows_set.update(hit[~still].tolist())
                kept = hit[still]
                changed_kept = kept[entry[still] != layer.best[kept]]
                layer.best[kept] = entry[still]
            for moved, col in layer.touched:  # entries whose target moved to a new state
                score = MaxPlus.times(layer.weights[moved, col],
                                      values[i + 1][layer.targets[moved, col]])
                best, best_col = layer.best[moved], layer.best_col[moved]
                # Recompute a row if the moved entry was its maximum, now exceeds it, or ties
                # it at an earlier column (numpy's argmax keeps the first maximum).
                redo = ((best_col == col) | (score > best) | ((score == best) & (col < best_col))
                        | np.isnan(score) | np.isnan(best))
                rows_set.update(moved[redo].tolist())
                keep = moved[~redo]  # `second` stays an upper bound on the row's other entries
                layer.second[keep] = np.maximum(layer.second[keep], score[~redo])
        layer.touched.clear()
        layer.dirty.clear()
        rows = np.fromiter(rows_set, dtype=np.int64, count=len(rows_set))
        if len(rows):
            if i == L:
                new = layer.weights[rows, 0]
            else:  # the max-plus sum of each row, and where it is reached (compiled, fused)
                new, cols, second = _core.best_rows(layer.weights, layer.targets,
                                                    values[i + 1], rows, qa.alive_cols[i])
                layer.best_col[rows] = cols
                layer.second[rows] = second
            old = layer.best[rows]
            differs = ~((old == new) | (np.isnan(old) & np.isnan(new)))
            layer.best[rows] = new
            lowered = differs & (new < old)
            # A state valued for the first time (NaN before) is new: the rows pointing at it
            # are new themselves (dirty) or had an entry moved to it (`touched`), both handled
            # above, so only values that went up send their pointing rows back (never, in
            # exact arithmetic: refinement and pruning only lower q).
            changed_next = rows[differs & ~lowered & ~np.isnan(old)]
            lowered_next = rows[lowered]
        else:
            changed_next = lowered_next = rows
        if i < L and len(changed_kept):  # rows lowered without a scan, above
            lowered_next = np.union1d(lowered_next, changed_kept)
        values[i] = layer.best[:n_states]
    return values


def viterbi_indices(qa: QAutomaton) -> tuple[list[int], float]:
    """The argmax path of q (candidate indices) and its log q, forward-summed."""
    weights, targets, _ = _arrays(qa)
    idx = dp.best_path(weights, targets, incremental_best_values(qa))
    return idx, qa.log_q_indices(idx)


def prune_hopeless(qa: QAutomaton, lower_bound: float, margin: float = 1e-6) -> int:
    """Prune every candidate whose best path through q is below `lower_bound` - `margin`.

    `lower_bound` must be p(z) for a path z already found. For a candidate c at position i,
    max over states s of alpha(s) + W[s, c] + beta(T[s, c]) is the best q of any path through
    it; if that is < p(z), then p < p(z) on all those paths (q >= p), now and after any
    refinement (q only decreases), so the argmax of p avoids them. z itself is never pruned
    (its bound is >= q(z) >= p(z)); `margin` absorbs the rounding of the two sums. The
    forward pass costs one states x candidates sweep. Returns how many candidates died.
    """
    if lower_bound == -np.inf:
        return 0
    weights, targets, _ = _arrays(qa)
    beta = incremental_best_values(qa)
    alpha = dp.forward(weights, targets, [len(layer) for layer in qa.layers], MaxPlus)
    killed = 0
    with quiet():
        for i in range(len(weights)):
            through = alpha[i][:, None] + weights[i] + beta[i + 1][targets[i]]
            dead = qa.alive[i] & (MaxPlus.sum(through, axis=0) < lower_bound - margin)
            if dead.any():
                qa.prune_columns(i, np.flatnonzero(dead))
                killed += int(dead.sum())
    return killed


def viterbi(qa: QAutomaton) -> tuple[list[str], float]:
    """The argmax path of q as tokens, and log q of it (natural log)."""
    idx, log_q = viterbi_indices(qa)
    return [qa.lattice.tokens[i][j] for i, j in enumerate(idx)], log_q


def log_partition(qa: QAutomaton) -> float:
    """ln q(X): the total mass of q over every path of the lattice."""
    return dp.log_partition(backward_values(qa, LogSumExp))


def sample_indices(
    qa: QAutomaton, k: int, rng: np.random.Generator
) -> tuple[np.ndarray, float]:
    """Draw k i.i.d. paths from q / q(X) (candidate indices, shape (k, L)) and ln q(X).

    If q(X) = 0 no path is drawn (shape (0, L)) and ln q(X) = -inf is returned."""
    weights, targets, final = _arrays(qa)
    beta = dp.backward(weights, targets, final, LogSumExp)
    log_z = dp.log_partition(beta)
    if log_z == -np.inf:
        return np.empty((0, len(weights)), dtype=np.int64), log_z
    with quiet():
        return dp.sample_forward(weights, targets, beta, k, rng), log_z


def sample_paths(qa: QAutomaton, k: int, rng: np.random.Generator) -> list[list[str]]:
    """k exact samples from q, as token lists."""
    idx, _ = sample_indices(qa, k, rng)
    return [[qa.lattice.tokens[i][j] for i, j in enumerate(row)] for row in idx.tolist()]
