"""Dynamic programs over the q-automaton, in float64: Viterbi, backward filtering, sampling.

Why one backward pass serves all three: the automaton is layered and deterministic, so the
max-product (Viterbi) and sum-product (log partition) values of every state are a row-wise
max / logsumexp of `weights + next_values[targets]`, one numpy expression per layer. Forward
sampling then draws each edge with probability exp(w + beta(next) - beta(state)), which is
exact sampling from q (per path, not per state: the backward values do the normalising).
"""

from __future__ import annotations

import numpy as np

from arsdecode.automaton import QAutomaton


def backward_values(qa: QAutomaton, semiring: str) -> list[np.ndarray]:
    """Per layer, the best ("max") or total ("log") ln weight from each state to the end."""
    L = len(qa.lattice)
    values: list[np.ndarray] = [np.empty(0)] * (L + 1)
    values[L] = qa.layers[L].W()[:, 0].copy()
    for i in range(L - 1, -1, -1):
        layer = qa.layers[i]
        scores = layer.W() + values[i + 1][layer.T()]
        if semiring == "max":
            values[i] = scores.max(axis=1)
        else:
            values[i] = _logsumexp_rows(scores)
    return values


def _logsumexp_rows(scores: np.ndarray) -> np.ndarray:
    top = scores.max(axis=1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.exp(scores - safe[:, None]).sum(axis=1))


def incremental_best_values(qa: QAutomaton) -> list[np.ndarray]:
    """Per layer, the max-product value of each state, recomputing only what changed.

    Why: a refinement touches a few rows, but a full pass costs states x candidates per
    layer. A row is recomputed when its own weights or targets changed (`Layer.dirty`) or when
    a state it may point at changed value (`Layer.pointing_at`); every recomputation is the
    same float expression as the full pass, so the values are identical to `backward_values`.
    """
    L = len(qa.lattice)
    values: list[np.ndarray] = [np.empty(0)] * (L + 1)
    changed_next: np.ndarray = np.empty(0, dtype=np.int64)
    for i in range(L, -1, -1):
        layer = qa.layers[i]
        n = len(layer)
        if len(layer.best) < n:
            layer.best = np.concatenate([layer.best, np.full(n - len(layer.best), np.nan)])
        rows_set = set(layer.dirty)
        if i < L:
            for t in changed_next.tolist():
                rows_set.update(layer.pointing_at.get(t, ()))
        layer.dirty.clear()
        rows = np.fromiter(rows_set, dtype=np.int64, count=len(rows_set))
        if len(rows):
            if i == L:
                new = layer.weights[rows, 0]
            else:
                new = (layer.weights[rows] + values[i + 1][layer.targets[rows]]).max(axis=1)
            old = layer.best[rows]
            differs = ~((old == new) | (np.isnan(old) & np.isnan(new)))
            layer.best[rows] = new
            changed_next = rows[differs]
        else:
            changed_next = rows
        values[i] = layer.best[:n]
    return values


def viterbi_indices(qa: QAutomaton) -> tuple[list[int], float]:
    """The argmax path of q (candidate indices) and its log q, forward-summed."""
    values = incremental_best_values(qa)
    idx: list[int] = []
    s = 0
    for i in range(len(qa.lattice)):
        layer = qa.layers[i]
        scores = layer.weights[s] + values[i + 1][layer.targets[s]]
        j = int(np.argmax(scores))
        idx.append(j)
        s = int(layer.targets[s, j])
    return idx, qa.log_q_indices(idx)


def viterbi(qa: QAutomaton) -> tuple[list[str], float]:
    """The argmax path of q as tokens, and log q of it (natural log)."""
    idx, log_q = viterbi_indices(qa)
    return [qa.lattice.tokens[i][j] for i, j in enumerate(idx)], log_q


def log_partition(qa: QAutomaton) -> float:
    """ln q(X): the total mass of q over every path of the lattice."""
    return float(backward_values(qa, "log")[0][0])


def sample_indices(
    qa: QAutomaton, k: int, rng: np.random.Generator
) -> tuple[np.ndarray, float]:
    """Draw k i.i.d. paths from q / q(X) (candidate indices, shape (k, L)) and ln q(X)."""
    beta = backward_values(qa, "log")
    L = len(qa.lattice)
    out = np.empty((k, L), dtype=np.int64)
    states = np.zeros(k, dtype=np.int64)
    for i in range(L):
        layer = qa.layers[i]
        uniq, inverse = np.unique(states, return_inverse=True)
        W = layer.weights[uniq]
        T = layer.targets[uniq]
        logits = W + beta[i + 1][T] - beta[i][uniq][:, None]
        cdf = np.cumsum(np.exp(logits), axis=1)
        u = rng.random(k) * cdf[inverse, -1]
        choice = (cdf[inverse] <= u[:, None]).sum(axis=1)
        choice = np.minimum(choice, layer.width - 1)
        out[:, i] = choice
        states = T[inverse, choice].astype(np.int64)
    return out, float(beta[0][0])


def sample_paths(qa: QAutomaton, k: int, rng: np.random.Generator) -> list[list[str]]:
    """k exact samples from q, as token lists."""
    idx, _ = sample_indices(qa, k, rng)
    return [[qa.lattice.tokens[i][j] for i, j in enumerate(row)] for row in idx.tolist()]
