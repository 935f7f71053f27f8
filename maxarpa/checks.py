"""Checks that stored bounds are bounds: cheap ones on every load, a full recomputation on demand.

Why: a MAX-ARPA or binary file carries mf and mbow, and the decoder certifies its answer with
them. A file whose bounds were edited, truncated or written by a buggy tool would make a false
certificate. `check_stored_bounds` runs on every load of such a file: vectorised, linear in the
table, it tests necessary conditions of the recurrences in bound.py, so any bound lowered below
what the recurrences force is refused. `verify_bounds` (the `maxarpa verify` command) recomputes
every bound from the file's own log10p and backoffs and compares them bit for bit;
`recompute_bounds` is what `maxarpa.load` uses on a file without a matching digest.
"""

from __future__ import annotations

import numpy as np

from maxarpa.bound import compute_bounds, group_max
from maxarpa.compact import rounded_bounds, widened
from maxarpa.errors import FormatError, shown
from maxarpa.table import OrderNodes, Trie, fill_blank_probabilities


def ngram_text(vocab: list[str], node: OrderNodes, i: int) -> str:
    """The words of row `i` of an order, oldest first, as one string."""
    return " ".join(vocab[w] for w in node.rows[i].tolist())


def _first_bad(bad: np.ndarray) -> int | None:
    hits = np.flatnonzero(bad)
    return int(hits[0]) if len(hits) else None


def check_structure(trie: Trie, path: str) -> None:
    """The keys, rows and parent links of every order are consistent (binary files); `verify`
    also checks that each row's suffix is its parent's row.

    A MAX-ARPA text file gets its keys from the word text, so this holds by construction;
    a binary file's arrays are taken as they are, so a corrupt one is caught here rather
    than answering queries from the wrong rows.
    """
    v = np.uint64(trie.vocab_size)
    for k, node in enumerate(trie.nodes, start=1):
        m = len(node.keys)
        if (node.has_rows and node.rows.dtype.kind not in "iu") or node.listed.dtype != np.bool_:
            raise FormatError(path, None, f"order {k}: rows or listed have the wrong type")
        for f in ("log10p", "log10bow", "mf", "mbow"):
            arr = getattr(node, f)
            if arr.dtype != np.float64 or np.isnan(arr).any() or (arr == np.inf).any():
                raise FormatError(path, None, f"order {k}: {f} holds NaN, +inf or non-floats")
        if m == 0:
            continue
        if node.has_rows and ((node.rows < 0).any() or (node.rows >= trie.vocab_size).any()):
            raise FormatError(path, None, f"order {k}: a word id is outside the vocabulary")
        if k == 1:
            if not np.array_equal(node.keys, np.arange(m, dtype=np.uint64)) or not (
                not node.has_rows or np.array_equal(node.rows[:, 0], np.arange(m))
            ):
                raise FormatError(path, None, "order 1: unigram keys are not the word ids")
            continue
        if (node.keys[1:] <= node.keys[:-1]).any():
            raise FormatError(path, None, f"order {k}: keys are not strictly increasing")
        parent = node.keys // v
        below = trie.nodes[k - 2]
        if (parent >= np.uint64(len(below.keys))).any():
            raise FormatError(path, None, f"order {k}: a key points past order {k - 1}")
        # Queries and the bound checks read only keys and values; the word rows serve the
        # writers and messages, so their first column is checked against the keys, and the
        # rest (a gather of every row's suffix, the dearest check) is left to `verify`.
        # Rows not built yet (a format-3 binary file) will be built from the keys: nothing
        # to check.
        if node.has_rows and not np.array_equal((node.keys % v).astype(np.int64),
                                                node.rows[:, 0]):
            raise FormatError(path, None, f"order {k}: keys and word rows disagree")


def check_stored_bounds(trie: Trie, vocab: list[str], path: str) -> None:
    """Refuse stored bounds that break a necessary condition of the recurrences (bound.py).

    On every row of every order: mf >= log10p (z empty), mbow >= bow + max(0, mbow of each
    child) (the mbow recurrence, as an inequality so that looser bounds remain acceptable),
    and mf(c.w) >= mf(a.c.w) for each child a.c.w. Raises a one-line FormatError naming the
    first n-gram that fails.
    """
    v = np.uint64(trie.vocab_size)
    n = trie.order
    for k in range(n, 0, -1):
        node = trie.nodes[k - 1]
        m = len(node.keys)
        if k < n and len(trie.nodes[k].keys):
            above = trie.nodes[k]
            parent = (above.keys // v).astype(np.int64)
            child_mbow = group_max(above.mbow, parent, m)
            child_mf = group_max(above.mf, parent, m)
        else:
            child_mbow = child_mf = np.full(m, -np.inf)
        tests = (
            ("mf < log10p", node.mf < node.log10p),
            ("mbow < backoff", node.mbow < node.log10bow),
            ("mbow below its recurrence", node.mbow < node.log10bow + np.maximum(0.0, child_mbow)),
            ("mf below the mf of a longer n-gram ending it", node.mf < child_mf),
        )
        for what, bad in tests:
            i = _first_bad(bad)
            if i is not None:
                raise FormatError(
                    path, None, f"stored bounds are not bounds: {what} for the {k}-gram "
                    f"{shown(ngram_text(vocab, node, i))} (run `maxarpa verify`)"
                )


def verify_bounds(trie: Trie, vocab: list[str], eos_id: int | None) -> str | None:
    """Recompute blank log10p, mbow and mf from the stored listed log10p and backoffs, and
    compare with the stored values exactly. Returns None when all agree, else a one-line
    description of the first disagreement (order, n-gram, field, stored and recomputed)."""
    problem = suffix_mismatch(trie)
    if problem is not None:
        return problem
    return first_difference(trie, recompute_bounds(trie, eos_id), vocab)


def suffix_mismatch(trie: Trie) -> str | None:
    """None when every row's words after the first are its parent's row (what the keys
    say), else which row disagrees. The recomputation reads the parents through the keys."""
    v = np.uint64(trie.vocab_size)
    for k in range(2, trie.order + 1):
        node, below = trie.nodes[k - 1], trie.nodes[k - 2]
        parent = (node.keys // v).astype(np.int64)
        bad = _first_bad((below.rows[parent] != node.rows[:, 1:]).any(axis=1))
        if bad is not None:
            return f"{k}-gram row {bad}: its words disagree with its key's suffix"
    return None


def recompute_bounds(trie: Trie, eos_id: int | None) -> Trie:
    """A new table with `trie`'s keys, rows, listed log10p and backoffs, and every blank
    log10p, mbow and mf computed afresh (bound.py), as for an ARPA file.

    Why from the listed values only: they are the model; everything else is derived from
    them, so a derived value that was edited or written wrong is simply replaced. The keys
    and rows arrays are shared with `trie`, not copied (they may be memory-mapped).
    """
    fresh = Trie(trie.vocab_size, [])
    for k, node in enumerate(trie.nodes, start=1):
        log10p = np.where(node.listed, node.log10p, np.nan)
        fresh.nodes.append(OrderNodes(node.keys, node.rows, log10p,
                                      np.asarray(node.log10bow, dtype=np.float64),
                                      node.listed))
        if k > 1:
            fill_blank_probabilities(fresh, k)
    compute_bounds(fresh, eos_id)
    return fresh


def first_difference(stored: Trie, fresh: Trie, vocab: list[str]) -> str | None:
    """The first n-gram whose stored log10p, mbow or mf is not bit for bit the recomputed
    one, as one line naming the n-gram, the field and both values; None if all agree.

    Stored bounds may also be the recomputed ones rounded up to float32 as a format-3 binary
    file stores them (`maxarpa.compact.rounded_bounds`, bit for bit): still bounds, and
    exactly what this package writes. log10p is compared with the exact value only.
    """
    rounded = None
    for k, (old, new) in enumerate(zip(stored.nodes, fresh.nodes), start=1):
        for field in ("log10p", "mbow", "mf"):
            a, b = getattr(old, field), getattr(new, field)
            bad = ~((a == b) | (np.isnan(a) & np.isnan(b)))
            if field != "log10p" and bad.any():
                if rounded is None:
                    rounded = rounded_bounds(fresh)
                c = widened(getattr(rounded[k - 1], field), b)
                bad &= ~(a == c)
            i = _first_bad(bad)
            if i is not None:
                kind = "listed" if old.listed[i] else "blank"
                return (f"{kind} {k}-gram {shown(ngram_text(vocab, old, i))}: stored {field} "
                        f"{float(a[i])!r}, recomputed {float(b[i])!r}")
    return None


def check_binary_shapes(trie: Trie, path: str) -> None:
    """A binary file's tables, as read: every order's arrays agree in length and the key/row
    dtypes are the expected ones (format 3's rows are built from the keys when first read:
    right by construction)."""
    for k, node in enumerate(trie.nodes, start=1):
        m = len(node.keys)
        if node.keys.dtype != np.uint64 or node.keys.ndim != 1 or (
                node.has_rows and node.rows.shape != (m, k)):
            raise FormatError(path, None, f"corrupt maxarpa binary file (order {k} keys/rows)")
        mf, mbow = node.stored_bounds()  # as stored: reading `mf` would widen a float32 copy
        for f, arr in (("log10p", node.log10p), ("log10bow", node.log10bow),
                       ("listed", node.listed), ("mf", mf), ("mbow", mbow)):
            if arr.shape != (m,):
                raise FormatError(path, None, f"corrupt maxarpa binary file ({f}_{k})")
    if trie.nodes and len(trie.nodes[0].keys) != trie.vocab_size:
        raise FormatError(path, None, "corrupt maxarpa binary file (vocabulary size)")
