"""One semiring-generic dynamic program over layered, deterministic edge arrays.

The q-automaton stores, per layer i, a weight matrix W_i (state x candidate, ln) and a target
matrix T_i (the state of layer i + 1 each edge leads to), plus final weights (the </s> edge).
A single backward sweep

    values[L] = final,   values[i][s] = SUM_j ( W_i[s, j] TIMES values[i + 1][T_i[s, j]] )

gives, with `MaxPlus`, the best completion of every state (Viterbi) and, with `LogSumExp`,
the total mass of every state's completions (backward filtering; values[0][0] = ln q(X)).
From these:
- `best_path`: follow the argmax forward (ties: the first candidate);
- `sample_forward`: draw each edge with probability exp(W + values[next] - values[state]),
  exact sampling of whole paths from q / q(X), by the package's one sampler (`dag_dp.sample`,
  the layers seen as a block graph).
`draw_in_segments` (in `semiring.py`, re-exported here) is the single categorical draw used by
every sampler of the package (`dag_dp.sample`, and the full model's backward sampling in
`full.py`). Why the layered sweeps stay here rather than as calls of `dag_dp.backward`: see
`dag_dp`'s module docstring.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arsdecode.core.dag_dp import Layered, sample
from arsdecode.core.semiring import LogSumExp, Semiring, draw_in_segments, quiet


def backward(
    weights: Sequence[np.ndarray],
    targets: Sequence[np.ndarray],
    final: np.ndarray,
    semiring: type[Semiring],
) -> list[np.ndarray]:
    """Per layer 0..L, the semiring sum over all completions of each state (see module doc)."""
    L = len(weights)
    values: list[np.ndarray] = [np.empty(0)] * (L + 1)
    values[L] = np.asarray(final, dtype=np.float64)
    for i in range(L - 1, -1, -1):
        values[i] = semiring.sum(semiring.times(weights[i], values[i + 1][targets[i]]), axis=1)
    return values


def forward(
    weights: Sequence[np.ndarray],
    targets: Sequence[np.ndarray],
    sizes: Sequence[int],
    semiring: type[Semiring],
) -> list[np.ndarray]:
    """Per layer 0..L, the semiring sum over all prefixes reaching each state from state 0 of
    layer 0 (`sizes[i]`: states of layer i). With `backward`, alpha + W + beta of an edge is
    the best (or total) weight of the paths through it."""
    alpha: list[np.ndarray] = [np.full(sizes[0], semiring.zero)]
    alpha[0][0] = semiring.one
    for i in range(len(weights)):
        vals = semiring.times(alpha[i][:, None], weights[i])
        alpha.append(semiring.scatter_sum(vals.ravel(), targets[i].ravel(), sizes[i + 1]))
    return alpha


def best_path(
    weights: Sequence[np.ndarray], targets: Sequence[np.ndarray], values: Sequence[np.ndarray]
) -> list[int]:
    """The argmax path from state 0 of layer 0 (candidate indices), given max-plus `values`."""
    idx: list[int] = []
    s = 0
    for i in range(len(weights)):
        with quiet():
            scores = weights[i][s] + values[i + 1][targets[i][s]]
        j = int(np.argmax(scores))
        idx.append(j)
        s = int(targets[i][s, j])
    return idx


def sample_forward(
    weights: Sequence[np.ndarray],
    targets: Sequence[np.ndarray],
    values: Sequence[np.ndarray],
    k: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """k i.i.d. paths (candidate indices, shape (k, L)) from the distribution the log-sum-exp
    `values` normalise, starting at state 0 of layer 0. Requires values[0][0] > -inf.

    The package's one sampler (`dag_dp.sample`) on the layers as a block graph (`Layered`):
    every walker moves one layer per step, so step i gives column i."""
    L = len(weights)
    graph = Layered(list(weights), list(targets), np.asarray(values[L]))
    drawn = sample(graph, np.concatenate([np.asarray(v, np.float64) for v in values]), k, rng)
    out = np.empty((k, L), dtype=np.int64)
    for i, (walkers, _, cols) in enumerate(drawn.steps[:L]):
        out[walkers, i] = cols
    return out


def log_partition(values: Sequence[np.ndarray]) -> float:
    """ln of the total mass, from log-sum-exp backward values."""
    return float(values[0][0])


__all__ = ["LogSumExp", "backward", "best_path", "draw_in_segments", "forward", "log_partition",
           "sample_forward"]
