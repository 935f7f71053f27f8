"""One semiring-generic dynamic program over layered, deterministic edge arrays.

The layers' arrays, read as a block graph by `dag_dp` (`Layered`): the package's one sweep,
best path and sampler run on them. The q-automaton stores, per layer i, a weight matrix W_i
(state x candidate, ln) and a target matrix T_i (the state of layer i + 1 each edge leads
to), plus final weights (the </s> edge).
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
`full.py`). Nothing here sweeps by hand: `backward` and `forward` are `dag_dp`'s on the
layers; `best_path` only walks the one path the values point to.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arsdecode.core.dag_dp import Draws, Layered, sample
from arsdecode.core.dag_dp import backward as dag_backward
from arsdecode.core.dag_dp import forward as dag_forward
from arsdecode.core.semiring import LogSumExp, Semiring, draw_in_segments, quiet


def _graph(weights: Sequence[np.ndarray], targets: Sequence[np.ndarray],
           final: np.ndarray) -> Layered:
    return Layered(list(weights), list(targets), np.asarray(final, dtype=np.float64))


def _per_layer(flat: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
    off = offsets.tolist()
    return [flat[off[i]:off[i + 1]] for i in range(len(off) - 1)]


def backward(
    weights: Sequence[np.ndarray],
    targets: Sequence[np.ndarray],
    final: np.ndarray,
    semiring: type[Semiring],
) -> list[np.ndarray]:
    """Per layer 0..L, the semiring sum over all completions of each state (see module doc):
    `dag_dp.backward` on the layers (`Layered`), split back by layer."""
    graph = _graph(weights, targets, final)
    return _per_layer(dag_backward(graph, semiring), graph.offsets)


def total(
    weights: Sequence[np.ndarray],
    targets: Sequence[np.ndarray],
    final: np.ndarray,
    semiring: type[Semiring],
) -> float:
    """The semiring sum over every path from state 0 of layer 0 (with `LogSumExp`, ln q(X)):
    `backward`'s values[0][0], without splitting the sweep's values by layer."""
    return float(dag_backward(_graph(weights, targets, final), semiring)[0])


def forward(
    weights: Sequence[np.ndarray],
    targets: Sequence[np.ndarray],
    sizes: Sequence[int],
    semiring: type[Semiring],
) -> list[np.ndarray]:
    """Per layer 0..L, the semiring sum over all prefixes reaching each state from state 0 of
    layer 0 (`sizes[i]`: states of layer i; `dag_dp.forward` on the layers). With `backward`,
    alpha + W + beta of an edge is the best (or total) weight of the paths through it."""
    graph = _graph(weights, targets, np.zeros(sizes[len(weights)]))
    return _per_layer(dag_forward(graph, semiring), graph.offsets)


def best_path(
    weights: Sequence[np.ndarray], targets: Sequence[np.ndarray], values: Sequence[np.ndarray]
) -> list[int]:
    """The argmax path from state 0 of layer 0 (candidate indices), given max-plus `values`
    (ties: the first candidate). A walk along one path, not a sweep: `dag_dp.best_path` does
    the same on any block graph, but building a block per step costs ARS's per-iteration
    decode about 8% on SMS lattices, so the layers are walked here directly."""
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
    graph = Layered(list(weights), list(targets), np.asarray(values[len(weights)]))
    beta = np.concatenate([np.asarray(v, np.float64) for v in values])
    return _columns(sample(graph, beta, k, rng), k, len(weights))


def sample_layers(
    weights: Sequence[np.ndarray],
    targets: Sequence[np.ndarray],
    final: np.ndarray,
    k: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, float]:
    """Backward filtering then `sample_forward`, on one block graph: k paths (shape (k, L);
    (0, L) when q(X) = 0) and ln q(X). Why not `backward` then `sample_forward`: the sweep's
    values stay in the sampler's global numbering (not split by layer and joined again)."""
    graph = _graph(weights, targets, final)
    beta = dag_backward(graph, LogSumExp)
    log_z = float(beta[0])
    if log_z == -np.inf:
        return np.empty((0, len(weights)), dtype=np.int64), log_z
    return _columns(sample(graph, beta, k, rng), k, len(weights)), log_z


def _columns(drawn: Draws, k: int, L: int) -> np.ndarray:
    """The drawn candidate indices as a (k, L) matrix: step i is layer i's column."""
    out = np.empty((k, L), dtype=np.int64)
    for i, (walkers, _, cols) in enumerate(drawn.steps[:L]):
        out[walkers, i] = cols
    return out


def log_partition(values: Sequence[np.ndarray]) -> float:
    """ln of the total mass, from log-sum-exp backward values."""
    return float(values[0][0])


__all__ = ["LogSumExp", "backward", "best_path", "draw_in_segments", "forward", "log_partition",
           "sample_forward", "sample_layers", "total"]
