"""The useful contexts of a backoff model (KenLM's state minimisation), written once.

Two users, one set of tables: the merged full DP's state tables (arsdecode.methods.fast_full
hands `useful_context_tables` to the compiled core) and `UsefulContexts.cut`, the longest
useful suffix of a context (arsdecode's `MaxArpaLM.minimal_context`, which the numpy full DP
merges states by). Both therefore merge exactly the same contexts.

Why here, in maxarpa, and not in arsdecode's full DP: the tables depend only on the n-gram
table, and building them costs seconds on a large model (the 5.4M-n-gram bench model: about
2 s with the node builder of issue 34, 12 s with the row builder it replaced), paid by every
process that runs the full DP. `maxarpa convert --binary` therefore builds them
once and stores them in the binary model (`binary_format`), which registers them on the model
it reads (`attach`); `useful_context_tables` then returns them instead of building them.
maxarpa must not import arsdecode, so the builder lives on this side.

A context is useful when it is a proper prefix of a listed n-gram, or a listed n-gram with a
nonzero backoff: every listed n-gram that can match after a context, and every nonzero backoff
the query adds, lies inside its longest useful suffix (KenLM's state minimisation), so
p(w | c) = p(w | cut(c)) for every w, and cutting commutes with appending a word.

Useful contexts are prefix-closed (a prefix of a listed n-gram's prefix is one), so each has a
global id (gid, 0 = the empty context) and is keyed by gid(its prefix) * V + its last word.
Tables that break this are refused with a `FormatError` naming the model's file, whether they
were built here or read from a binary file.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import numpy as np

from maxarpa.context_rows import EMPTY_KEY, build_tables_by_rows
from maxarpa.errors import FormatError
from maxarpa.hash_index import HashIndex
from maxarpa.keywalk import last_words, prefix_rows
from maxarpa.model import Model
from maxarpa.table import Trie

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
    keys (N,) uint64 = gid(prefix) * V + last word. The rows are rebuilt from the keys
    (`rows_from_keys`), as for stored tables.
    """
    lens, keys = context_keys(model)
    width = max(model.trie.order - 1, 0)
    return rows_from_keys(lens, keys, model.trie.vocab_size, width), lens, keys


def context_keys(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """(lens, keys) of the useful-context tables without their rows: the stored ones if the
    model came with them, else built (`build_keys`). What `write_binary` stores."""
    stored = _STORED.get(model)
    if stored is not None:
        return stored[1], stored[2]
    return build_keys(model)


def context_counts(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """(counts, keys): what a binary file stores of the tables, the number of contexts of
    each length 0..n-1 (int64) and their keys, without the per-context lengths when the
    tables are built here (issue 34: 15 MiB of the 6M-n-gram conversion's peak)."""
    n = max(model.order, 1)
    stored = _STORED.get(model)
    fast = None if stored is not None else _keys_from_nodes(model, with_lens=False)
    if fast is not None:
        return fast
    lens, keys = context_keys(model)
    return np.bincount(lens, minlength=n).astype(np.int64), keys


def build_keys(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """(lens, keys) of the useful contexts, numbered as `build_tables_by_rows` numbers them.

    Why two builders: when every useful context is a node of the table (always so for a
    prefix-closed file: KenLM's, unpruned SRILM's), the contexts are sets of node indices,
    found with one sorted-key search per node (`maxarpa.keywalk.prefix_rows`) and deduplicated
    as dense integers; that is several times faster and smaller than hashing and sorting word rows
    (issue 34: 11.8 s and 400 MB of 5.4M-n-gram conversion). A table where some prefix of
    a listed n-gram is no node (a pruned file) takes the row builder. Both number the
    contexts of each length in order of first occurrence in the same sequence, so they
    return identical tables (tests/test_context_tables.py checks it on random models).
    """
    fast = _keys_from_nodes(model)
    if fast is not None:
        return fast
    _, lens, keys = build_tables_by_rows(model)
    return lens, keys


def _keys_from_nodes(model: Model, with_lens: bool = True
                     ) -> tuple[np.ndarray, np.ndarray] | None:
    """`build_keys` over node indices; None when a useful context is no node of the table.
    Without `with_lens`, the first array is the count of each length (`context_counts`)."""
    trie = model.trie
    n, v = trie.order, trie._v
    width = max(n - 1, 0)
    prefixes: dict[int, np.ndarray] = {}
    below = None
    for k in range(2, n + 1):  # the prefix row of every node: one search per node
        below = prefixes[k] = prefix_rows(trie.nodes[k - 1].keys, trie.nodes[k - 2].keys,
                                          trie.vocab_size, below)
    levels = useful_levels(width, prefixes.pop, lambda k: trie.nodes[k - 1].listed,
                           lambda j: trie.nodes[j - 1].listed & (trie.nodes[j - 1].log10bow != 0),
                           lambda j: len(trie.nodes[j - 1].keys))
    if levels is None:
        return None
    level, level_prefix = levels
    total = 1 + sum(len(members) for members in level.values())
    counts = np.array([1] + [len(level[j]) for j in range(1, width + 1)], dtype=np.int64)
    keys = np.empty(total, dtype=np.uint64)
    keys[0] = EMPTY_KEY
    if total < 2**31 and all(m.dtype == np.int32 for m in level.values()):
        _fill_keys_compiled(trie, level, level_prefix, keys, model.source)
        if not with_lens:
            return counts, keys
        return np.repeat(np.arange(width + 1, dtype=np.int32), counts), keys
    lens = np.zeros(total, dtype=np.int32)  # filled in place: no list to concatenate
    gid_of = np.empty(0, dtype=np.int64)
    next_gid = 1
    for j in range(1, width + 1):
        members = level.pop(j)
        lo, hi = next_gid, next_gid + len(members)
        key = keys[lo:hi]
        key[...] = last_words([node.keys for node in trie.nodes], trie.vocab_size, j, members)
        if j > 1:
            key += gid_of[level_prefix.pop(j)].astype(np.uint64) * v
        lens[lo:hi] = j
        gid_of = np.full(len(trie.nodes[j - 1].keys), -1, dtype=np.int64)
        gid_of[members] = np.arange(lo, hi)
        next_gid = hi
    return (lens, keys) if with_lens else (counts, keys)


Levels = tuple[dict[int, np.ndarray], dict[int, np.ndarray]]


def useful_levels(width: int, prefix_of: Callable[[int], np.ndarray],
                  listed_of: Callable[[int], np.ndarray], with_bow_of: Callable[[int], np.ndarray],
                  size_of: Callable[[int], int]) -> Levels | None:
    """(level, level_prefix) of `_keys_from_nodes`: U_j as order-j node indices in gid order,
    and the order-(j-1) node of each one's prefix; None when a useful context is no node.

    Each order's arrays are asked for when used, top-down (`prefix_of(k)`: the order-(k-1)
    prefix row of each order-k node, `keywalk.prefix_rows`; `with_bow_of(j)`: listed with a
    nonzero backoff), so a caller that keeps them on disk (`maxarpa.streamed`) holds one
    order's at a time.
    """
    level: dict[int, np.ndarray] = {}
    level_prefix: dict[int, np.ndarray] = {}
    above = np.empty(0, dtype=np.int64)
    for j in range(width, 0, -1):  # as build_tables_by_rows: top-down, first occurrence
        pref = prefix_of(j + 1)
        level_prefix[j + 1] = pref[above]
        with_bow = np.flatnonzero(with_bow_of(j)).astype(pref.dtype)
        members = np.concatenate([pref[listed_of(j + 1)], level_prefix[j + 1], with_bow])
        del pref, with_bow
        if (members < 0).any():
            return None
        above = level[j] = _first_occurrences(members, size_of(j))
        del members
    return level, level_prefix


def _fill_keys_compiled(trie: Trie, level: dict[int, np.ndarray],
                        level_prefix: dict[int, np.ndarray], keys: np.ndarray,
                        source: str) -> None:
    """`_keys_from_nodes`' numbering and keys, compiled (`maxarpa.native.level_keys`): each
    level's keys written in place, with int32 gids (issue 34: no chain of int64 temporaries
    for the last words)."""
    from maxarpa.native import level_keys

    all_keys = [node.keys for node in trie.nodes]
    gid_of = np.empty(0, dtype=np.int32)
    no_prefix = np.empty(0, dtype=np.int32)
    next_gid = 1
    for j in range(1, len(level) + 1):
        members = level.pop(j)
        lo, hi = next_gid, next_gid + len(members)
        prefix = np.ascontiguousarray(level_prefix.pop(j), dtype=np.int32) if j > 1 else no_prefix
        try:
            level_keys(members, all_keys[:j], trie.vocab_size, prefix, gid_of, keys[lo:hi])
        except ValueError as err:
            raise FormatError(source, None, f"corrupt n-gram table ({err})") from None
        gid_of = np.full(len(trie.nodes[j - 1].keys), -1, dtype=np.int32)
        gid_of[members] = np.arange(lo, hi, dtype=np.int32)
        next_gid = hi


def _first_occurrences(values: np.ndarray, size: int) -> np.ndarray:
    """The distinct values of `values` (ints in [0, size)), in order of first occurrence:
    the order `unique_rows` gives rows, without sorting (a dense scatter of positions)."""
    if values.dtype == np.int32:  # compiled: one pass with a byte per value (issue 34)
        from maxarpa.native import first_occurrences

        return first_occurrences(np.ascontiguousarray(values), size)
    dtype = np.int32 if len(values) < 2**31 - 1 else np.int64
    position = np.arange(len(values), dtype=dtype)
    first = np.full(size, len(values), dtype=dtype)
    np.minimum.at(first, values, position)
    return values[first[values] == position]


class UsefulContexts:
    """The longest useful suffix of contexts (`cut`), looked up in the full DP's own tables.

    Why over the same tables: `cut` is what the numpy full DP and any caller of
    `minimal_context` merge states by, and the compiled full DP merges by these tables; one
    definition keeps the two DPs on the same state space. Only `lens` and `keys` are kept
    (gid = position), with a hash index over the keys (`maxarpa.hash_index.HashIndex`) and, for the
    first word, a dense array over the vocabulary (most contexts stop there).
    """

    def __init__(self, lens: np.ndarray, keys: np.ndarray, vocab_size: int) -> None:
        self.vocab_size = vocab_size
        self.width = int(lens[-1]) if len(lens) else 0  # the longest useful context
        self._v = np.uint64(vocab_size)
        self._index = HashIndex(np.ascontiguousarray(keys, dtype=np.uint64))
        lo, hi = np.searchsorted(lens, [1, 2])  # the one-word contexts: key = 0 * V + word
        self._first = np.full(max(vocab_size, 1), -1, dtype=np.int64)
        self._first[keys[lo:hi].astype(np.int64)] = np.arange(lo, hi)

    @classmethod
    def of(cls, model: Model) -> UsefulContexts:
        """Over `useful_context_tables(model)` (stored with a binary model, else built).

        Raises:
            FormatError: the tables are not prefix-closed (a corrupt file), naming it.
        """
        _, lens, keys = useful_context_tables(model)
        return cls(lens, keys, model.trie.vocab_size)

    def lookup(self, rows: np.ndarray) -> np.ndarray:
        """gid of each row (B, j) of word ids, oldest first, among the useful contexts; -1
        where the row is not one (a -1 or an id outside the vocabulary is never in one)."""
        b, j = rows.shape
        w = rows[:, 0]
        inside = (w >= 0) & (w < self.vocab_size)
        gid = np.where(inside, self._first[np.where(inside, w, 0)], -1)
        for k in range(1, j):
            w = rows[:, k]
            ok = (gid >= 0) & (w >= 0) & (w < self.vocab_size)
            found = np.full(b, -1, dtype=np.int64)
            if ok.any():
                key = gid[ok].astype(np.uint64) * self._v + w[ok].astype(np.uint64)
                found[ok] = self._index.find(key)
            gid = found
        return gid

    def cut(self, contexts: np.ndarray) -> np.ndarray:
        """Each context row (B, w), left-padded with -1, replaced by its longest useful suffix
        (same shape, -1 left padding)."""
        b, w = contexts.shape
        keep = np.zeros(b, dtype=np.int64)
        todo = np.arange(b)
        for j in range(min(w, self.width), 0, -1):
            if len(todo) == 0:
                break
            hit = self.lookup(contexts[todo, w - j :]) >= 0
            keep[todo[hit]] = j
            todo = todo[~hit]
        return np.where(np.arange(w)[None, :] >= (w - keep)[:, None], contexts, -1)
