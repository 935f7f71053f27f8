"""The useful contexts of a backoff model, with global ids: the merged full DP's state tables.

Why here, in maxarpa, and not in arsdecode's full DP: the tables depend only on the n-gram
table, and building them costs about a microsecond per n-gram (8 s for a 5.4M-n-gram model),
paid by every process that runs the full DP. `maxarpa convert --binary` therefore builds them
once and stores them in the binary model (`binary_format`), which registers them on the model
it reads (`attach`); `useful_context_tables` then returns them instead of building them.
maxarpa must not import arsdecode, so the builder lives on this side.

A context is useful when it is a proper prefix of a listed n-gram, or a listed n-gram with a
nonzero backoff: every listed n-gram that can match after a context, and every nonzero backoff
the query adds, lies inside its longest useful suffix (KenLM's state minimisation).
"""

from __future__ import annotations

import weakref

import numpy as np

from maxarpa.errors import FormatError
from maxarpa.model import Model
from maxarpa.table import row_hashes, unique_rows

EMPTY_KEY = np.uint64(2**64 - 1)  # the empty context's key: never a real parent * V + word

Tables = tuple[np.ndarray, np.ndarray, np.ndarray]  # rows, lens, keys

# model -> (rows or None until rebuilt, lens, keys)
_STORED: weakref.WeakKeyDictionary[Model, tuple] = weakref.WeakKeyDictionary()


def attach(model: Model, lens: np.ndarray, keys: np.ndarray) -> None:
    """Register the tables read from a binary model file (`lens` and `keys` as stored; the
    rows are rebuilt from them when first asked for, so a process that never runs the full
    DP pays nothing). Tables of the wrong type or shape are refused as corrupt, naming the
    file."""
    n = len(lens)
    if (n < 1 or keys.shape != (n,) or lens.dtype != np.int32 or keys.dtype != np.uint64
            or lens[0] != 0 or keys[0] != EMPTY_KEY):
        raise FormatError(model.source, None, "corrupt maxarpa binary file (useful contexts)")
    _STORED[model] = (None, lens, keys)


def stored_tables(model: Model) -> Tables | None:
    """The tables read with the model from its binary file, or None (built at run time).

    Raises:
        FormatError: the stored keys do not describe prefix-closed contexts of this model.
    """
    stored = _STORED.get(model)
    if stored is None or stored[0] is not None:
        return stored
    _, lens, keys = stored
    width = max(model.order - 1, 0)
    try:
        if (np.diff(lens) < 0).any() or lens[-1] > width:
            raise IndexError("context lengths not ascending within the order")
        rows = rows_from_keys(lens, keys, model.trie.vocab_size, width)
    except IndexError as err:
        raise FormatError(model.source, None,
                          f"corrupt maxarpa binary file (useful contexts: {err})") from None
    _STORED[model] = (rows, lens, keys)
    return _STORED[model]


def has_stored_tables(model: Model) -> bool:
    """Whether the model came with its tables (cheap: does not rebuild the rows)."""
    return model in _STORED


def useful_context_tables(model: Model) -> Tables:
    """The stored tables if the model came with them, else `build_tables(model)`."""
    stored = stored_tables(model)
    return stored if stored is not None else build_tables(model)


def rows_from_keys(lens: np.ndarray, keys: np.ndarray, vocab_size: int, width: int
                   ) -> np.ndarray:
    """The (N, width) context rows of the tables from their keys (gid(prefix) * V + last
    word) and lengths (ascending): each row is its prefix's row shifted left by one word, with
    its last word appended. Why: the rows are most of the tables' bytes (8 bytes a word), the
    keys determine them, and this costs a few numpy passes, not the build's sort and hash.

    Raises IndexError when a key names a prefix that is not a shorter context.
    """
    n = len(lens)
    rows = np.full((n, width), -1, dtype=np.int64)
    v = np.uint64(vocab_size)
    bounds = np.searchsorted(lens, np.arange(width + 2))
    for j in range(1, width + 1):
        lo, hi = int(bounds[j]), int(bounds[j + 1])
        if lo == hi:
            continue
        parent = (keys[lo:hi] // v).astype(np.int64)
        if j > 1 and ((parent < bounds[j - 1]) | (parent >= lo)).any():
            raise IndexError("a context's prefix is not one word shorter")
        if j == 1 and (parent != 0).any():
            raise IndexError("a one-word context's prefix is not the empty context")
        if width > 1:
            rows[lo:hi, :-1] = rows[parent, 1:]
        rows[lo:hi, -1] = (keys[lo:hi] % v).astype(np.int64)
    if width and (rows[:, -1] >= vocab_size).any():
        raise IndexError("a word id past the vocabulary")
    return rows


def build_tables(model: Model) -> Tables:
    """All useful contexts with a global id (0 = empty context), prefix-closed, by length.

    Returns (rows, lens, keys): rows (N, n-1) int64 left-padded with -1, lens (N,) int32,
    keys (N,) uint64 = gid(prefix) * V + last word.
    """
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
        g = _parent_gids(rows, prev_rows, prev_gids)
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


def _parent_gids(rows: np.ndarray, prev_rows: np.ndarray, prev_gids: np.ndarray) -> np.ndarray:
    """gid of each row's prefix rows[:, :-1] among the previous level (prev_rows, prev_gids).

    Matched by 64-bit row hash and verified row by row; a hash collision falls back to a dict.
    The levels are prefix-closed by construction (U_j holds the prefixes of U_{j+1}).
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
            cand[i] = index[tuple(prefix[i].tolist())]
    return prev_gids[cand]
