"""An open-addressing hash from uint64 keys to their rows, built and probed in numpy batches.

Why its own module: the n-gram table (`maxarpa.table`, one index per order) and the useful
contexts (`maxarpa.contexts.UsefulContexts`) both look keys up through it, a batch at a time.
"""

from __future__ import annotations

import numpy as np

from maxarpa.rows import HASH_MIX

INSERT_CHUNK = 1 << 18  # keys placed in the hash at a time


class HashIndex:
    """Open-addressing hash from uint64 key to row, built with vectorised linear probing.

    Why: a lookup costs one or two random memory reads instead of a binary search's twenty,
    which is what makes batch queries reach millions per second.
    """

    def __init__(self, keys: np.ndarray) -> None:
        m = len(keys)
        self.bits = max(4, int(np.ceil(np.log2(max(2 * m, 2)))))
        self.mask = (1 << self.bits) - 1
        self.keys = keys
        self.slots = np.full(1 << self.bits, -1, dtype=np.int32)
        for lo in range(0, m, INSERT_CHUNK):  # chunks bound the transient arrays
            self._insert(np.arange(lo, min(lo + INSERT_CHUNK, m), dtype=np.int64))

    def _insert(self, pending: np.ndarray) -> None:
        """Place rows `pending` by vectorised linear probing (any insertion order is valid)."""
        pos = self._home(self.keys[pending])
        while len(pending):
            free = self.slots[pos] < 0
            cand_pos = pos[free]
            cand_item = pending[free]
            _, winner = np.unique(cand_pos, return_index=True)
            self.slots[cand_pos[winner]] = cand_item[winner]
            placed = np.zeros(len(pending), dtype=bool)
            placed[np.flatnonzero(free)[winner]] = True
            pending = pending[~placed]
            pos = (pos[~placed] + 1) & self.mask

    def _home(self, keys: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return ((keys * HASH_MIX) >> np.uint64(64 - self.bits)).astype(np.int64)

    def find(self, queries: np.ndarray) -> np.ndarray:
        """Row of each query key, or -1."""
        out = np.full(len(queries), -1, dtype=np.int64)
        if len(self.keys) == 0 or len(queries) == 0:
            return out
        active = np.arange(len(queries))
        pos = self._home(queries)
        q = queries
        while len(active):
            idx = self.slots[pos]
            occupied = idx >= 0
            hit = occupied & (self.keys[np.maximum(idx, 0)] == q)
            out[active[hit]] = idx[hit]
            more = occupied & ~hit
            active, q, pos = active[more], q[more], (pos[more] + 1) & self.mask
        return out
