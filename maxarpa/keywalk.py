"""Walks of the table's keys: word rows, prefixes and last words without stored rows.

Why keys alone: an order-k key is `row of the suffix at order k-1 * V + first word`, so a
node's words, its prefix and its last word all follow from the keys of the orders below it.
Conversion (issue 34) never keeps the word rows (4k bytes per k-gram, 87 MiB on the
5.4M-n-gram bench model): the bounds and the context tables find what they need here, and a
format-3 binary file stores none (`OrderNodes.rows` builds them on demand). This module
imports no other of maxarpa's but the compiled walks (the table imports it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class HasRows(Protocol):
    """An order's nodes as far as `rows_from_parent` reads them (maxarpa.table.OrderNodes)."""

    @property
    def rows(self) -> np.ndarray: ...


ROWS_CHUNK = 1 << 20  # rows gathered at a time by `rows_from_parent`


def rows_from_parent(keys: np.ndarray, below: HasRows, vocab_size: int) -> np.ndarray:
    """The (m, k) word rows of an order from its keys and the order below: row i is
    [keys[i] % V] followed by the row of its parent keys[i] // V (the key's definition).
    In chunks, so the transient quotient arrays stay small."""
    below_rows = below.rows
    m, k = len(keys), below_rows.shape[1] + 1
    rows = np.empty((m, k), dtype=np.int32)
    v = np.uint64(vocab_size)
    for lo in range(0, m, ROWS_CHUNK):
        chunk = keys[lo : lo + ROWS_CHUNK]
        rows[lo : lo + len(chunk), 0] = chunk % v
        rows[lo : lo + len(chunk), 1:] = below_rows[(chunk // v).astype(np.int64)]
    return rows


def unigram_rows(keys: np.ndarray) -> np.ndarray:
    """The rows of order 1: each key is its word id."""
    return keys.astype(np.int32).reshape(-1, 1)


def sort_with_order(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(keys sorted, the int64 order that sorts them, ties in index order) for uint64 keys.

    Why not `np.argsort`: when a key and its index fit in 64 bits together (the table's keys
    are row * V + word, about 2^37 for 5M n-grams), sorting the packed values is one direct
    sort, which numpy vectorises (x86-simd-sort), about twice as fast as the indirect argsort
    (issue 34). Otherwise, a stable argsort.
    """
    m = len(keys)
    shift = max((m - 1).bit_length(), 1)
    if m and int(keys.max()) < 1 << (64 - shift):
        packed = keys << np.uint64(shift)
        packed |= np.arange(m, dtype=np.uint64)
        packed.sort()
        order = (packed & np.uint64((1 << shift) - 1)).astype(np.int64)
        packed >>= np.uint64(shift)
        return packed, order
    order = np.argsort(keys, kind="stable")
    return keys[order], order


PREFIX_CHUNK = 1 << 20  # nodes whose prefix is searched at a time (`prefix_rows`)


def prefix_rows(keys: np.ndarray, keys_below: np.ndarray, vocab_size: int,
                below: np.ndarray | None) -> np.ndarray:
    """For each order-k node a1..ak (k >= 2; `keys` of order k, `keys_below` of order k-1),
    the order-(k-1) row of its prefix a1..a(k-1), or -1 if that is no node. `below` is
    this array for order k-1 (None for k = 2).

    The prefix's key is row(a2..a(k-1)) * V + a1, and a2..a(k-1) is the prefix of the node's
    suffix a2..ak (its parent), whose row `below` holds: one search per node, over keys
    only (no word rows: conversion never builds them, issue 34).
    """
    v = np.uint64(vocab_size)
    if below is None:
        return (keys % v).astype(np.int32)  # an order-1 row is the word id
    small = len(keys_below) < 2**31  # int32 rows: half the transient memory
    if small and below.dtype == np.int32 and keys.dtype == keys_below.dtype == np.uint64:
        from maxarpa.native import prefix_rows_sorted

        # Compiled: each prefix searched among its parent's children only (issue 34).
        parents_below = int(keys_below[-1] // v) + 1 if len(keys_below) else 0
        return prefix_rows_sorted(np.ascontiguousarray(keys), np.ascontiguousarray(keys_below),
                                  np.ascontiguousarray(below), parents_below, vocab_size)
    rows = np.full(len(keys), -1, dtype=np.int32 if small else np.int64)
    for lo in range(0, len(keys), PREFIX_CHUNK):  # chunks bound the transient arrays
        chunk = keys[lo : lo + PREFIX_CHUNK]
        mid = below[(chunk // v).astype(np.int64)]
        found = np.flatnonzero(mid >= 0)
        query = mid[found].astype(np.uint64) * v + chunk[found] % v
        rows[lo + found] = search_sorted(keys_below, query)
    return rows


def search_sorted(table: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Position of each query in the sorted `table`, -1 where absent. The queries are sorted
    first: a search of sorted queries walks the table forward (cache-friendly), which with
    the sort costs less than building the order's hash index (and much less than searching
    random queries, 2.3 s for 1.9M here)."""
    out = np.full(len(queries), -1, dtype=np.int64)
    if len(table) == 0 or len(queries) == 0:
        return out
    ranked, order = sort_with_order(queries)
    pos = np.minimum(np.searchsorted(table, ranked), len(table) - 1)
    hit = table[pos] == ranked
    out[order[hit]] = pos[hit]
    return out


def last_words(keys: Sequence[np.ndarray], vocab_size: int, k: int, index: np.ndarray
               ) -> np.ndarray:
    """The last word (int64 id) of the order-k nodes `index` (`keys[j - 1]`: the keys of
    order j): the word of their order-1 ancestor, k - 1 parent steps down (the keys'
    definition; no word rows needed)."""
    v = np.uint64(vocab_size)
    idx = np.asarray(index, dtype=np.int64)
    for j in range(k, 1, -1):
        idx = (keys[j - 1][idx] // v).astype(np.int64)
    return idx
