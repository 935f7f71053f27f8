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
  exact sampling of whole paths from q / q(X).
`draw_in_segments` is the single categorical draw used by every sampler of the package (here,
and the full model's backward sampling in `full.py`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arsdecode.core.semiring import LogSumExp, Semiring, quiet


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
    `values` normalise, starting at state 0 of layer 0. Requires values[0][0] > -inf."""
    L = len(weights)
    out = np.empty((k, L), dtype=np.int64)
    states = np.zeros(k, dtype=np.int64)
    for i in range(L):
        uniq, inverse = np.unique(states, return_inverse=True)
        w = weights[i].shape[1]
        rows_t = targets[i][uniq]
        with quiet():
            logits = weights[i][uniq] + values[i + 1][rows_t]
        pick = draw_in_segments(logits.ravel(), np.arange(len(uniq)) * w, inverse.ravel(),
                                rng.random(k))
        choice = pick % w
        out[:, i] = choice
        states = rows_t[inverse.ravel(), choice].astype(np.int64)
    return out


def draw_in_segments(
    logits: np.ndarray, starts: np.ndarray, which: np.ndarray, u: np.ndarray
) -> np.ndarray:
    """For each walker k, an index of `logits` inside segment which[k], drawn with probability
    proportional to exp(logits) within the segment, by inverse CDF at uniform u[k].

    Segment s is logits[starts[s]:starts[s + 1]] (the last runs to the end). Only the segments
    some walker is in are touched, and cumulative sums restart per segment in effect (the base
    subtracted is at most the selected segments' mass), so precision does not degrade with the
    size of the layer. A zero-probability entry is never returned.
    """
    n = len(logits)
    if len(which) == 0:
        return np.empty(0, dtype=np.int64)
    ends = np.r_[starts[1:], n]
    segs, inv = np.unique(which, return_inverse=True)
    inv = inv.ravel()
    lens = ends[segs] - starts[segs]
    offs = np.r_[0, np.cumsum(lens)[:-1]]
    total_len = int(lens.sum())
    local_seg = np.repeat(np.arange(len(segs)), lens)
    flat = starts[segs][local_seg] + (np.arange(total_len) - offs[local_seg])
    x = logits[flat]
    top = np.maximum.reduceat(x, offs)
    safe = np.where(np.isfinite(top), top, 0.0)
    with quiet():
        p = np.exp(x - safe[local_seg])
    cum = np.cumsum(p)
    base = cum[offs] - p[offs]
    seg_total = cum[offs + lens - 1] - base
    last_pos = np.maximum.reduceat(np.where(p > 0, np.arange(total_len), -1), offs)
    pick = np.searchsorted(cum, base[inv] + u * seg_total[inv], side="right")
    pick = np.clip(pick, offs[inv], last_pos[inv])
    return flat[pick]


def log_partition(values: Sequence[np.ndarray]) -> float:
    """ln of the total mass, from log-sum-exp backward values."""
    return float(values[0][0])


__all__ = ["LogSumExp", "backward", "best_path", "draw_in_segments", "forward", "log_partition",
           "sample_forward"]
