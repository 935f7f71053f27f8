"""Semirings over natural-log weights, for the one layered dynamic program in `dp.py`.

After torch-struct's `semirings.py` (Rush 2020): a semiring is a class with `zero`, `one`, a
reduction `sum` (over an axis, or over contiguous segments) and `times`, so Viterbi and the
log partition are the same sweep with a different class. Here arrays are numpy float64 and
`zero` is exactly -inf (not a large negative number): a path of probability zero must stay
exactly zero, since certificates compare sums bit for bit.

Weights as low as -1e308 are legal; their sums overflow to -inf, which is the right answer
(probability 0 in float64). Every operation here runs under `quiet()`, so such inputs give no
RuntimeWarning, and no NaN is produced from -inf - -inf.

`draw_in_segments` is log-sum-exp's sampling counterpart, the package's one categorical draw:
every sampler (`dag_dp.sample`, `full.py`'s backward sampling) draws through it.
"""

from __future__ import annotations

import numpy as np


def quiet() -> np.errstate:
    """numpy error state for log-space arithmetic: overflow to -inf and log(0) are expected."""
    return np.errstate(over="ignore", divide="ignore", invalid="ignore", under="ignore")


class Semiring:
    """Interface: `zero`, `one`, `times(a, b)`, and the sums `sum(x, axis)`,
    `segment_sum(x, starts)` (contiguous groups), `scatter_sum(x, index, size)` (by label)."""

    zero: float = -np.inf
    one: float = 0.0
    name: str = ""

    @staticmethod
    def times(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        with quiet():
            return a + b

    @classmethod
    def sum(cls, x: np.ndarray, axis: int = -1) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def plus(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The semiring sum of two arrays, elementwise."""
        raise NotImplementedError

    @classmethod
    def segment_sum(cls, x: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """The semiring sum of each segment x[starts[k]:starts[k + 1]] (segments non-empty)."""
        raise NotImplementedError

    @classmethod
    def scatter_sum(cls, x: np.ndarray, index: np.ndarray, size: int) -> np.ndarray:
        """out[t] = semiring sum of x[index == t], `zero` where no entry maps to t."""
        out = np.full(size, cls.zero)
        if len(x) == 0:
            return out
        order = np.argsort(index, kind="stable")
        sidx = index[order]
        starts = np.flatnonzero(np.r_[True, sidx[1:] != sidx[:-1]])
        out[sidx[starts]] = cls.segment_sum(x[order], starts)
        return out


class MaxPlus(Semiring):
    """(max, +): the best path (Viterbi)."""

    name = "max-plus"

    @staticmethod
    def plus(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.maximum(a, b)

    @classmethod
    def sum(cls, x: np.ndarray, axis: int = -1) -> np.ndarray:
        if x.shape[axis] == 0:
            return np.full(np.delete(x.shape, axis), cls.zero)
        return x.max(axis=axis)

    @classmethod
    def segment_sum(cls, x: np.ndarray, starts: np.ndarray) -> np.ndarray:
        return np.maximum.reduceat(x, starts)

    @classmethod
    def scatter_sum(cls, x: np.ndarray, index: np.ndarray, size: int) -> np.ndarray:
        out = np.full(size, cls.zero)
        np.maximum.at(out, index, x)
        return out


class LogSumExp(Semiring):
    """(logsumexp, +): the total mass of all paths (log partition, sampling)."""

    name = "log-sum-exp"

    @staticmethod
    def plus(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        with quiet():
            return np.logaddexp(a, b)

    @classmethod
    def sum(cls, x: np.ndarray, axis: int = -1) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.shape[axis] == 0:
            return np.full(np.delete(x.shape, axis), cls.zero)
        top = x.max(axis=axis, keepdims=True)
        safe = np.where(np.isfinite(top), top, 0.0)
        with quiet():  # log(sum(exp(x - safe))) + safe, the temporaries reused in place
            p = np.subtract(x, safe)
            np.exp(p, out=p)
            total = p.sum(axis=axis, keepdims=True)
            np.log(total, out=total)
            total += safe
            total[top == -np.inf] = -np.inf
        return np.squeeze(total, axis=axis)

    @classmethod
    def segment_sum(cls, x: np.ndarray, starts: np.ndarray) -> np.ndarray:
        top = np.maximum.reduceat(x, starts)
        safe = np.where(np.isfinite(top), top, 0.0)
        seg = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(x)]))
        with quiet():
            total = np.log(np.add.reduceat(np.exp(x - safe[seg]), starts)) + safe
        return np.where(top == -np.inf, -np.inf, total)


def logsumexp(x: np.ndarray) -> float:
    """ln sum exp(x) of a 1-d array as a float; -inf for an empty or all -inf array."""
    return float(LogSumExp.sum(np.asarray(x, dtype=np.float64).ravel(), axis=0))


def draw_in_segments(
    logits: np.ndarray, starts: np.ndarray, which: np.ndarray, u: np.ndarray, *,
    every: bool = False
) -> np.ndarray:
    """For each walker k, an index of `logits` inside segment which[k], drawn with probability
    proportional to exp(logits) within the segment, by inverse CDF at uniform u[k].

    Segment s is logits[starts[s]:starts[s + 1]] (the last runs to the end); a matrix's rows
    laid flat are segments of equal length (`dag_dp`'s dense blocks).
    Only the segments some walker is in are touched, and cumulative sums restart per segment
    in effect (the base subtracted is at most the selected segments' mass), so precision does
    not degrade with the size of the layer. A zero-probability entry is never returned.
    `every`: the caller knows every segment holds a walker (`which` takes every value
    0..len(starts) - 1, e.g. the inverse of an `np.unique`), so they are not found again:
    the same draw, one sort fewer.
    """
    n = len(logits)
    if len(which) == 0:
        return np.empty(0, dtype=np.int64)
    # (np.concatenate, np.minimum/maximum: np.r_ and np.clip's results, without their
    # microseconds of Python per call: a sampler draws once per node)
    ends = np.concatenate((starts[1:], [n]))
    if every:
        segs, inv = np.arange(len(starts)), which
    else:
        segs, inv = np.unique(which, return_inverse=True)
        inv = inv.ravel()
    lens = ends[segs] - starts[segs]
    offs = np.concatenate(([0], np.cumsum(lens)[:-1]))
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
    pick = np.minimum(np.maximum(pick, offs[inv]), last_pos[inv])
    return flat[pick]
