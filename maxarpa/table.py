"""The n-gram table: a reversed trie stored as sorted numpy key arrays, one per order.

Why this shape (after KenLM's sorted trie): an n-gram a1..ak is stored at order k under the key
`index(a2..ak) * V + a1`, where index(a2..ak) is its suffix's row at order k-1. Walking a query
from the newest word backwards is then one `searchsorted` per order over the whole batch. The
table holds every listed n-gram plus every suffix of one ("blank" nodes, not listed), so that
every walk is suffix-closed; a blank's probability is its backed-off value and its backoff is
0 (log10), SRILM's meaning for a missing context.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from maxarpa.arpa import ArpaData
from maxarpa.errors import FormatError


@dataclass
class OrderNodes:
    """The nodes of one order, sorted by key. All log values are log10."""

    keys: np.ndarray  # uint64, sorted; parent_index * V + first_word
    rows: np.ndarray  # (m, k) int32 word ids, oldest first
    log10p: np.ndarray  # float64: listed value, or the backed-off value for a blank
    log10bow: np.ndarray  # float64: 0 for blanks and missing columns
    listed: np.ndarray  # bool
    mf: np.ndarray | None = None  # max log10 prob over left extensions (bound.py)
    mbow: np.ndarray | None = None  # max accumulated log10 backoff over left extensions


def unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique rows of a 2-D int32 array and the index of each one's first occurrence."""
    a = np.ascontiguousarray(a)
    view = a.view(np.dtype((np.void, a.dtype.itemsize * a.shape[1]))).ravel()
    _, first = np.unique(view, return_index=True)
    return a[first], first


class Trie:
    """Suffix-closed reversed trie over word ids; `nodes[k-1]` holds order k."""

    def __init__(self, vocab_size: int, nodes: list[OrderNodes]) -> None:
        self.vocab_size = vocab_size
        self.nodes = nodes
        self._v = np.uint64(vocab_size)

    @property
    def order(self) -> int:
        return len(self.nodes)

    def find(self, order: int, keys: np.ndarray) -> np.ndarray:
        """Row index of each key at `order`, or -1 where absent. `keys` are uint64."""
        table = self.nodes[order - 1].keys
        if order == 1:
            k = keys.astype(np.int64)
            return np.where((k >= 0) & (k < self.vocab_size), k, -1)
        if len(table) == 0:
            return np.full(keys.shape, -1, dtype=np.int64)
        pos = np.searchsorted(table, keys)
        pos = np.minimum(pos, len(table) - 1)
        return np.where(table[pos] == keys, pos, -1).astype(np.int64)

    def key(self, parent: np.ndarray, word: np.ndarray) -> np.ndarray:
        """Key of the node whose suffix is row `parent` (one order down) and first word `word`."""
        return parent.astype(np.uint64) * self._v + word.astype(np.uint64)

    def lookup_rows(self, rows: np.ndarray) -> np.ndarray:
        """Row index of each n-gram in `rows` (m, k) at order k, or -1 where absent."""
        m, k = rows.shape
        idx = rows[:, k - 1].astype(np.int64)
        for j in range(2, k + 1):
            ok = idx >= 0
            found = np.full(m, -1, dtype=np.int64)
            if ok.any():
                found[ok] = self.find(j, self.key(idx[ok], rows[ok, k - j]))
            idx = found
        return idx


def build_trie(data: ArpaData, path: str = "<arpa>") -> Trie:
    """Build the suffix-closed trie, adding blank nodes for unlisted suffixes of listed n-grams."""
    n = len(data.orders)
    vocab_size = len(data.vocab)
    rows: list[np.ndarray] = [np.empty((0, k + 1), np.int32) for k in range(n)]
    logp: list[np.ndarray] = [np.empty(0)] * n
    bow: list[np.ndarray] = [np.empty(0)] * n
    listed: list[np.ndarray] = [np.empty(0, bool)] * n
    # High to low: each order's nodes are its listed n-grams plus the suffixes of the order above.
    for k in range(n, 0, -1):
        own = data.orders[k - 1]
        m = len(own.log10p)
        if m and len(unique_rows(own.ids)[1]) != m:
            raise FormatError(path, None, f"the {k}-gram section lists an n-gram twice")
        parts = [own.ids] if k == n else [own.ids, rows[k][:, 1:]]
        combined = np.concatenate(parts) if len(parts) > 1 else own.ids
        if len(combined) == 0:
            rows[k - 1] = combined.reshape(0, k)
            logp[k - 1] = np.empty(0)
            bow[k - 1] = np.empty(0)
            listed[k - 1] = np.empty(0, bool)
            continue
        uniq, first = unique_rows(combined)
        if k == 1:  # the void view sorts bytewise; unigrams must be in id order
            by_id = np.argsort(uniq[:, 0], kind="stable")
            uniq, first = uniq[by_id], first[by_id]
        is_listed = first < m
        src = np.where(is_listed, first, 0)
        rows[k - 1] = uniq
        logp[k - 1] = np.where(is_listed, own.log10p[src] if m else np.nan, np.nan)
        bow[k - 1] = np.where(is_listed, own.log10bow[src] if m else 0.0, 0.0)
        listed[k - 1] = is_listed
    if len(rows[0]) != vocab_size or not np.array_equal(rows[0][:, 0], np.arange(vocab_size)):
        raise FormatError(path, None, "every word of a higher order must be among the 1-grams")
    trie = Trie(vocab_size, [])
    for k in range(1, n + 1):
        r = rows[k - 1]
        if k == 1:
            keys = r[:, 0].astype(np.uint64)
            perm = np.arange(len(r))
        else:
            suffix = trie.lookup_rows(r[:, 1:])
            if (suffix < 0).any():  # cannot happen: the table is suffix-closed by construction
                raise FormatError(path, None, f"internal: unlinked {k}-gram suffix")
            keys = trie.key(suffix, r[:, 0])
            perm = np.argsort(keys, kind="stable")
            keys = keys[perm]
        node = OrderNodes(keys, r[perm], logp[k - 1][perm], bow[k - 1][perm], listed[k - 1][perm])
        trie.nodes.append(node)
        if k > 1:
            fill_blank_probabilities(trie, k)
    return trie


def fill_blank_probabilities(trie: Trie, k: int) -> None:
    """A blank node c·w gets log10 p(w|c) = bow(c) + log10 p(w|c[1:]), SRILM's backoff."""
    node = trie.nodes[k - 1]
    blank = ~node.listed
    if not blank.any():
        return
    r = node.rows[blank]
    v = trie._v
    suffix_idx = (node.keys[blank] // v).astype(np.int64)  # row of c[1:]·w at order k-1
    context_idx = trie.lookup_rows(r[:, :-1])  # row of c at order k-1, or -1
    ctx_bow = np.where(
        context_idx >= 0, trie.nodes[k - 2].log10bow[np.maximum(context_idx, 0)], 0.0
    )
    node.log10p[blank] = ctx_bow + trie.nodes[k - 2].log10p[suffix_idx]
