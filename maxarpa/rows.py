"""Hashing and deduplicating rows of word ids (n-grams and contexts as int rows).

Why a module of its own: the table's hash index, the context tables and the q-automaton's
state store all key rows of word ids by one 64-bit hash, and it needs nothing of the table.
"""

from __future__ import annotations

import numpy as np

HASH_MIX = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio: Fibonacci hashing


def row_hashes(a: np.ndarray) -> np.ndarray:
    """A 64-bit polynomial hash of each row (wrapping arithmetic)."""
    h = np.zeros(len(a), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(a.shape[1]):
            h = (h ^ a[:, j].astype(np.uint64)) * HASH_MIX + np.uint64(j + 1)
    return h


def unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique rows of a 2-D int32 array and the index of each one's first occurrence.

    Why hashes: sorting 64-bit row hashes is several times faster than sorting rows as raw
    bytes. Exactness does not rest on the hash: equal-hash groups are verified row by row
    (one column at a time, to keep the transient copies small), and any collision falls
    back to the byte-wise sort.
    """
    a = np.ascontiguousarray(a)
    if len(a) == 0:
        return a, np.empty(0, dtype=np.int64)
    h = row_hashes(a)
    order = np.argsort(h)  # unstable is fine: each group's first index is taken as its min
    hs = h[order]
    starts = np.flatnonzero(np.r_[True, hs[1:] != hs[:-1]])
    first = np.minimum.reduceat(order, starts)
    group_first = np.repeat(first, np.diff(np.r_[starts, len(order)]))
    if all(np.array_equal(a[order, j], a[group_first, j]) for j in range(a.shape[1])):
        first.sort()  # rows in order of first occurrence
        return a[first], first
    view = a.view(np.dtype((np.void, a.dtype.itemsize * a.shape[1]))).ravel()
    _, first = np.unique(view, return_index=True)
    return a[first], first
