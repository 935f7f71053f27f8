"""The n-gram table: a reversed trie stored as sorted numpy key arrays, one per order.

Why this shape (after KenLM's sorted trie): an n-gram a1..ak is stored at order k under the key
`index(a2..ak) * V + a1`, where index(a2..ak) is its suffix's row at order k-1. Walking a query
from the newest word backwards is then one vectorised hash lookup (HashIndex, built lazily per
order) over the whole batch; the keys are kept sorted so that files are deterministic. The
table holds every listed n-gram plus every suffix of one ("blank" nodes, not listed), so that
every walk is suffix-closed; a blank's probability is its backed-off value and its backoff is
0 (log10), SRILM's meaning for a missing context.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from maxarpa.arpa import ArpaData, OrderArrays, ngram_lines
from maxarpa.errors import FormatError, shown
from maxarpa.hash_index import HashIndex
from maxarpa.keywalk import rows_from_parent, sort_with_order, unigram_rows
from maxarpa.rows import unique_rows


class _Bound:
    """mf or mbow of OrderNodes, log10. Given float32 (a format-3 file's, rounded up), it is
    kept as stored and widened to float64 (exactly, read-only if the stored array is) when
    first read. Why: the compiled mixture reads the float32 in place, and the float64 copies
    were 60 MB of `-mix-lm`'s general model (issue 34). Any other array is kept as given
    (maxarpa.rounded assigns float32 on purpose: it stays float32)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, node: OrderNodes | None, owner: type | None = None) -> np.ndarray:
        if node is None:
            return self  # type: ignore[return-value]
        value = node.__dict__.get(self.name)
        if value is None:
            stored = node.__dict__[self.name + "_stored"]
            value = node.__dict__[self.name] = stored.astype(np.float64)
            value.flags.writeable = stored.flags.writeable
        return value

    def __set__(self, node: OrderNodes, value: np.ndarray) -> None:
        node.__dict__[self.name + "_stored"] = value
        lazy = node.__dict__.get("_lazy", False) and value.dtype == np.float32
        node.__dict__[self.name] = None if lazy else value


class OrderNodes:
    """The nodes of one order, sorted by key. All log values are log10.

    `rows` may be given as a function that builds them: a binary file of format 3 does not
    store them (they follow from the keys, `rows_from_parent`), and most processes that load
    a model never read them (queries, bounds and the full DP read keys and values only), so
    they are built on first access and kept.
    """

    def __init__(self, keys: np.ndarray, rows: np.ndarray | Callable[[], np.ndarray],
                 log10p: np.ndarray, log10bow: np.ndarray, listed: np.ndarray,
                 mf: np.ndarray | None = None, mbow: np.ndarray | None = None) -> None:
        self.keys = keys  # uint64, sorted; parent_index * V + first_word
        self._rows: np.ndarray | None = None  # (m, k) int32 word ids, oldest first
        self._make_rows: Callable[[], np.ndarray] | None = None
        if callable(rows):
            self._make_rows = rows
        else:
            self._rows = rows
        self.log10p = log10p  # float64: listed value, or the backed-off value for a blank
        self.log10bow = log10bow  # float64: 0 for blanks and missing columns
        self.listed = listed  # bool
        # Filled by bound.compute_bounds (or read from a file); empty until then. Given
        # here as float32, they are widened when first read (`_Bound`).
        self._lazy = True
        self.mf = mf if mf is not None else np.empty(0)  # max log10 p over extensions
        self.mbow = mbow if mbow is not None else np.empty(0)  # max log10 backoff sum
        self._lazy = False

    mf = _Bound()
    mbow = _Bound()

    def stored_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(mf, mbow) as given, never copied: float32 where a file stored them so. Each
        float32 widens exactly to what `mf` returns, so a reader that widens each value
        where it reads it gets the same numbers without the copy (the compiled mixture)."""
        return self.__dict__["mf_stored"], self.__dict__["mbow_stored"]

    @property
    def rows(self) -> np.ndarray:
        """(m, k) int32 word ids, oldest first (built on first access when lazy)."""
        if self._rows is None:
            assert self._make_rows is not None
            self._rows, self._make_rows = self._make_rows(), None
        return self._rows

    @rows.setter
    def rows(self, value: np.ndarray) -> None:
        self._rows, self._make_rows = value, None

    @property
    def has_rows(self) -> bool:
        """Whether the rows exist already (reading `rows` would not build them)."""
        return self._rows is not None


LOOKUP_CHUNK = 1 << 18  # rows looked up at a time: ~10 transient arrays of this length


class Trie:
    """Suffix-closed reversed trie over word ids; `nodes[k-1]` holds order k."""

    def __init__(self, vocab_size: int, nodes: list[OrderNodes]) -> None:
        self.vocab_size = vocab_size
        self.nodes = nodes
        self._v = np.uint64(vocab_size)
        self._hash: dict[int, HashIndex] = {}
        # True when mf and mbow were read rounded up to float32 (a format-3 binary file,
        # maxarpa.compact): still bounds, but the text writer recomputes the exact ones.
        self.bounds_rounded = False

    @property
    def order(self) -> int:
        return len(self.nodes)

    def find(self, order: int, keys: np.ndarray) -> np.ndarray:
        """Row index of each key at `order`, or -1 where absent. `keys` are uint64."""
        if order == 1:
            k = keys.astype(np.int64)
            return np.where((k >= 0) & (k < self.vocab_size), k, -1)
        index = self._hash.get(order)
        if index is None:  # built lazily, on the first lookup at this order
            index = self._hash[order] = HashIndex(self.nodes[order - 1].keys)
        return index.find(keys)

    def key(self, parent: np.ndarray, word: np.ndarray) -> np.ndarray:
        """Key of the node whose suffix is row `parent` (one order down) and first word `word`."""
        return parent.astype(np.uint64) * self._v + word.astype(np.uint64)

    def lookup_rows(self, rows: np.ndarray) -> np.ndarray:
        """Row index of each n-gram in `rows` (m, k) at order k, or -1 where absent.

        Looked up in chunks, so the transient arrays stay small on million-row inputs.
        """
        m, k = rows.shape
        out = np.empty(m, dtype=np.int64)
        for lo in range(0, m, LOOKUP_CHUNK):
            chunk = rows[lo : lo + LOOKUP_CHUNK]
            idx = chunk[:, k - 1].astype(np.int64)
            for j in range(2, k + 1):
                ok = idx >= 0
                found = np.full(len(chunk), -1, dtype=np.int64)
                if ok.any():
                    found[ok] = self.find(j, self.key(idx[ok], chunk[ok, k - j]))
                idx = found
            out[lo : lo + len(chunk)] = idx
        return out

    def parents(self, order: int) -> np.ndarray:
        """The row one order down of each node's suffix (key // V), as int64."""
        return np.floor_divide(self.nodes[order - 1].keys, self._v).view(np.int64)


def build_trie(data: ArpaData, path: str = "<arpa>") -> Trie:
    """Build the suffix-closed trie, adding blank nodes for unlisted suffixes of listed n-grams.

    Consumes `data.orders`: each order's arrays are released (replaced by empty ones) once
    they have been copied into the table, so that the ARPA arrays and the table are not
    both alive at full size (conversion peak memory, issue 10).
    """
    trie = _build_closed(data)
    if trie is not None:
        return trie
    return _build_with_blanks(data, path)


def _build_closed(data: ArpaData) -> Trie | None:
    """The table of a file that is already suffix-closed (KenLM's and SRILM's unpruned
    output), or None if it is not (or repeats an n-gram), for the general build.

    Why a separate path: with no blanks to add, each order only needs its keys and one sort,
    and the ARPA value arrays can become the table's arrays, permuted in place: no row
    hashing, no second copy (issue 10's conversion time and memory). The word rows are not
    kept at all: they follow from the keys (`rows_from_parent`), and conversion never reads
    them (bounds and context tables walk the keys), so each order's ARPA ids are released
    once the next order has been linked to them, and the table's rows are built only if
    something asks (issue 34: 87 MiB and their permutation, on the 5.4M-n-gram model). On
    None, `data.orders` is restored (the orders done so far from the table, in key order,
    which the general build does not mind).

    Each n-gram's suffix row is found by one forward scan of the order below in file order
    (`_file_order_suffixes`) when the file lists every order sorted by reversed n-gram, as
    lmplz does; else by the hash walk (`Trie.lookup_rows`, k - 1 lookups per n-gram: most
    of this build's time on a 5M-n-gram file, issue 34).
    """
    n = len(data.orders)
    vocab_size = len(data.vocab)
    first = data.orders[0]
    if len(first.log10p) != vocab_size or not np.array_equal(first.ids[:, 0],
                                                             np.arange(vocab_size)):
        return None
    trie = Trie(vocab_size, [])
    scanned = None  # this order's suffix rows in the order below's file order, if found
    moved = None  # the order below's position after sorting, by its file position
    for k in range(1, n + 1):
        own = data.orders[k - 1]
        if k == 1:
            keys = own.ids[:, 0].astype(np.uint64)
        else:
            if scanned is not None and moved is not None:
                suffix = moved[scanned]
            else:
                suffix = trie.lookup_rows(own.ids[:, 1:])
                if (suffix < 0).any():
                    _restore(data, trie)
                    return None
            del scanned, moved
            keys = trie.key(suffix, own.ids[:, 0])
            del suffix
        scanned = _file_order_suffixes(data, k + 1) if k < n else None
        moved = None
        if k > 1:
            keys, perm = sort_with_order(keys)
            if (keys[1:] == keys[:-1]).any():
                _restore(data, trie)
                return None
            for column in (own.log10p, own.log10bow):
                column[...] = column[perm]
            if scanned is not None:
                moved = np.empty(len(perm), dtype=np.int64)
                moved[perm] = np.arange(len(perm))
            del perm
        else:
            moved = np.arange(len(keys))
        listed = np.ones(len(keys), dtype=bool)
        rows = (partial(unigram_rows, keys) if k == 1 else
                partial(rows_from_parent, keys, trie.nodes[k - 2], vocab_size))
        trie.nodes.append(OrderNodes(keys, rows, own.log10p, own.log10bow, listed))
        # The ids of this order were needed to link the next one (the scan above, or the
        # hash walk, which needs only the next order's ids): the table owns the values.
        data.orders[k - 1] = OrderArrays(np.empty((0, k), np.int32), own.log10p,
                                         own.log10bow)
        del own
    for k in range(n):  # the table owns the arrays now
        data.orders[k] = OrderArrays(np.empty((0, k + 1), np.int32), np.empty(0), np.empty(0))
    return trie


def _restore(data: ArpaData, trie: Trie) -> None:
    """Put back the ARPA arrays of the orders `_build_closed` has done (in key order, their
    rows built from the keys), for the general build."""
    for k, node in enumerate(trie.nodes, start=1):
        data.orders[k - 1] = OrderArrays(node.rows, node.log10p, node.log10bow)


def _file_order_suffixes(data: ArpaData, k: int) -> np.ndarray | None:
    """The file position, among the (k-1)-grams, of each k-gram's suffix, found by one
    forward scan (`maxarpa.native.parents_in_order`): None unless the k-grams' suffixes
    appear in the same order as the (k-1)-grams (lmplz sorts each order by reversed n-gram)
    and every one is listed. Both orders must still be in file order."""
    from maxarpa.native import parents_in_order

    rows = np.ascontiguousarray(data.orders[k - 1].ids, dtype=np.int32)
    below = np.ascontiguousarray(data.orders[k - 2].ids, dtype=np.int32)
    if len(rows) == 0:
        return None
    return parents_in_order(rows, below)


def _build_with_blanks(data: ArpaData, path: str) -> Trie:
    """The general build: blank nodes for every unlisted suffix, and duplicates reported."""
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
        if int(is_listed.sum()) != m:  # own rows come first, so fewer distinct ones: a repeat
            raise duplicate_error(data, k, unique_rows(own.ids)[1], path)
        src = np.where(is_listed, first, 0)
        rows[k - 1] = uniq
        logp[k - 1] = np.where(is_listed, own.log10p[src] if m else np.nan, np.nan)
        bow[k - 1] = np.where(is_listed, own.log10bow[src] if m else 0.0, 0.0)
        listed[k - 1] = is_listed
        # (np.empty, not a [:0] slice: a slice is a view that would keep the array alive)
        data.orders[k - 1] = OrderArrays(np.empty((0, k), np.int32), np.empty(0), np.empty(0))
        del own, combined, parts, uniq, first, src
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
            perm = np.argsort(keys)  # keys are unique: no stability needed
            keys = keys[perm]
        node = OrderNodes(keys, r[perm], logp[k - 1][perm], bow[k - 1][perm], listed[k - 1][perm])
        trie.nodes.append(node)
        if k > 1:
            fill_blank_probabilities(trie, k)
        # The node holds its own (permuted) copies; the staging arrays can go.
        rows[k - 1], logp[k - 1] = np.empty((0, k), np.int32), np.empty(0)
        bow[k - 1], listed[k - 1] = np.empty(0), np.empty(0, bool)
        del r
    return trie


def duplicate_error(data: ArpaData, k: int, first_seen: np.ndarray, path: str) -> FormatError:
    """The error for a k-gram listed twice, naming it and the lines of both listings."""
    repeat = np.ones(len(data.orders[k - 1].log10p), dtype=bool)
    repeat[first_seen] = False
    words = [data.vocab[w] for w in data.orders[k - 1].ids[int(np.argmax(repeat))].tolist()]
    lines = ngram_lines(path, k, words) if path != "<arpa>" else []
    where = lines[1] if len(lines) == 2 else None
    also = f" (first listed at line {lines[0]})" if len(lines) == 2 else ""
    return FormatError(path, where, f"duplicate {k}-gram {shown(' '.join(words))}{also}")


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

