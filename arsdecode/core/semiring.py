"""Semirings over natural-log weights, for the one layered dynamic program in `dp.py`.

After torch-struct's `semirings.py` (Rush 2020): a semiring is a class with `zero`, `one`, a
reduction `sum` (over an axis, or over contiguous segments) and `times`, so Viterbi and the
log partition are the same sweep with a different class. Here arrays are numpy float64 and
`zero` is exactly -inf (not a large negative number): a path of probability zero must stay
exactly zero, since certificates compare sums bit for bit.

Weights as low as -1e308 are legal; their sums overflow to -inf, which is the right answer
(probability 0 in float64). Every operation here runs under `quiet()`, so such inputs give no
RuntimeWarning, and no NaN is produced from -inf - -inf.
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

    @classmethod
    def sum(cls, x: np.ndarray, axis: int = -1) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.shape[axis] == 0:
            return np.full(np.delete(x.shape, axis), cls.zero)
        top = x.max(axis=axis, keepdims=True)
        safe = np.where(np.isfinite(top), top, 0.0)
        with quiet():
            total = np.log(np.exp(x - safe).sum(axis=axis, keepdims=True)) + safe
            total = np.where(top == -np.inf, -np.inf, total)
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
