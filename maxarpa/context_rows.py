"""The row builder of the useful contexts (`maxarpa.contexts`' module docstring says what they
are): from the table's word rows, for any table.

Why kept beside the node builder (`contexts.build_keys`): a pruned file, where some prefix of a
listed n-gram is no node of the table, has contexts the node builder cannot name; this one
hashes and sorts word rows instead (slower and larger, issue 34), and numbers the contexts of
each length in the same order, so the two give identical tables where both run (tests check).
"""

from __future__ import annotations

import numpy as np

from maxarpa.errors import FormatError
from maxarpa.model import Model
from maxarpa.rows import row_hashes, unique_rows

EMPTY_KEY = np.uint64(2**64 - 1)  # the empty context's key: never a real parent * V + word


def build_tables_by_rows(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The row builder of `build_keys` (any table): (rows, lens, keys) as `build_tables`."""
    trie = model.trie
    n, v = trie.order, np.uint64(trie.vocab_size)
    width = max(n - 1, 0)
    # U_j = prefixes of listed (j+1)-grams, prefixes of U_{j+1}, listed j-grams with bow != 0:
    # top-down, so each level dedupes about two orders' worth of rows, not all longer n-grams.
    level: dict[int, np.ndarray] = {}
    above = np.empty((0, width + 1), dtype=np.int32)
    for j in range(width, 0, -1):
        node_up, node = trie.nodes[j], trie.nodes[j - 1]
        parts = [node_up.rows[node_up.listed][:, :j].astype(np.int32), above[:, :j],
                 node.rows[node.listed & (node.log10bow != 0)].astype(np.int32)]
        rows = np.concatenate(parts)
        above = unique_rows(rows)[0] if len(rows) else rows
        level[j] = above
    all_rows = [np.full((1, width), -1, dtype=np.int64)]
    all_lens = [np.zeros(1, dtype=np.int32)]
    all_keys = [np.array([EMPTY_KEY], dtype=np.uint64)]
    next_gid = 1
    prev_rows, prev_gids = np.empty((0, 0), dtype=np.int32), np.zeros(1, dtype=np.int64)
    for j in range(1, width + 1):
        rows = level[j]
        g = _parent_gids(rows, prev_rows, prev_gids, model.source)
        keys = g.astype(np.uint64) * v + rows[:, -1].astype(np.uint64)
        gids = np.arange(next_gid, next_gid + len(rows), dtype=np.int64)
        next_gid += len(rows)
        padded = np.full((len(rows), width), -1, dtype=np.int64)
        padded[:, width - j :] = rows
        all_rows.append(padded)
        all_lens.append(np.full(len(rows), j, dtype=np.int32))
        all_keys.append(keys)
        prev_rows, prev_gids = rows, gids
    keys = np.concatenate(all_keys)
    return np.ascontiguousarray(np.concatenate(all_rows)), np.concatenate(all_lens), keys


def _parent_gids(rows: np.ndarray, prev_rows: np.ndarray, prev_gids: np.ndarray,
                 source: str) -> np.ndarray:
    """gid of each row's prefix rows[:, :-1] among the previous level (prev_rows, prev_gids).

    Matched by 64-bit row hash and verified row by row; a hash collision falls back to a dict.
    The levels are prefix-closed by construction (U_j holds the prefixes of U_{j+1}); a prefix
    found in neither is a broken table, refused as a FormatError naming `source`.
    """
    j = rows.shape[1]
    if j == 1 or len(rows) == 0:
        return np.zeros(len(rows), dtype=np.int64)
    prefix = np.ascontiguousarray(rows[:, :-1])
    h_prev = row_hashes(prev_rows)
    order = np.argsort(h_prev)
    hs = h_prev[order]
    h = row_hashes(prefix)
    pos = np.minimum(np.searchsorted(hs, h), len(hs) - 1)
    cand = order[pos]
    ok = (hs[pos] == h) & (prev_rows[cand] == prefix).all(axis=1)
    if not ok.all():
        index = {tuple(r): i for i, r in enumerate(prev_rows.tolist())}
        for i in np.flatnonzero(~ok):
            found = index.get(tuple(prefix[i].tolist()))
            if found is None:
                raise FormatError(source, None, "useful contexts are not prefix-closed (the "
                                  f"prefix of context {rows[i].tolist()} is not one)")
            cand[i] = found
    return prev_gids[cand]
