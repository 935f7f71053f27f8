"""The max-backoff bound: mf and mbow for every node of the trie (paper section 2, MAX-ARPA).

Definitions (log10). For a context h, MB(h) = max over left extensions z (z empty included) of
the backoff accumulated over the contexts z'h, z' a suffix of z:
    MB(h) = bow(h) + max(0, max over nodes a·h of MB(a·h)).
Unlisted extensions contribute 0, so they are covered by the `max(0, .)`; a context that starts
with <s> has no extension node, which gives MB = bow.

For a node c·w, mf(c·w) = max over every left extension z of log10 p(w | z·c):
    mf(c·w) = max( L,                                   z empty
                   max over nodes a·c·w of mf(a·c·w),   extensions that stay in the table
                   L + max over nodes a·c with a·c·w absent of MB(a·c) )
where L = log10 p(w|c). The last term is the case backoffs can make larger than any listed
n-gram: once a·c·w is absent, p(w | z·a·c) = p(w|c) times the backoffs of z·a·c's suffixes.
Why not the max over listed n-grams: with a positive log10 backoff, an unlisted extension can
beat every listed one (KenLM's REST_MAX has exactly this flaw); the third term covers it.
"""

from __future__ import annotations

import numpy as np

from maxarpa.arpa import ngram_lines
from maxarpa.constants import LN10
from maxarpa.errors import FormatError, shown
from maxarpa.keywalk import prefix_rows
from maxarpa.table import Trie


def group_max(values: np.ndarray, groups: np.ndarray, size: int) -> np.ndarray:
    """Max of `values` per group id in `groups` (sorted ascending); -inf for empty groups."""
    out = np.full(size, -np.inf)
    if len(values) == 0:
        return out
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    out[groups[starts]] = np.maximum.reduceat(values, starts)
    return out


def children_max(trie: Trie, k: int, values: np.ndarray) -> np.ndarray:
    """Max of `values` (one per order-k node) over each order-(k-1) node's children.

    The same as group_max over the nodes' parents, without a parents array (conversion
    peak memory and time, issue 34).
    """
    from maxarpa.native import children_max_sorted

    # Compiled (issue 34): one pass, no parents array, no temporaries.
    return children_max_sorted(trie.nodes[k - 1].keys, trie.vocab_size,
                               len(trie.nodes[k - 2].keys),
                               np.ascontiguousarray(values, dtype=np.float64))


def compute_mbow(trie: Trie) -> None:
    """Fill `mbow` for every order, from the highest order down.

    (In place where possible: on a 5M-n-gram model each temporary is tens of MB, and
    conversion's peak memory is a goal of issue 10.)
    """
    n = trie.order
    for k in range(n, 0, -1):
        trie.nodes[k - 1].mbow = mbow_step(trie, k, trie.nodes[k].mbow if k < n else None)


def mbow_step(trie: Trie, k: int, above: np.ndarray | None) -> np.ndarray:
    """Order k's mbow from order k+1's (`above`; None at the highest order)."""
    node = trie.nodes[k - 1]
    if above is None:
        child = np.zeros(len(node.keys))
    else:
        child = children_max(trie, k + 1, above)
        np.maximum(child, 0.0, out=child)
    child += node.log10bow
    return child


def compute_mf(trie: Trie, eos_id: int | None) -> None:
    """Fill `mf` for every order, from the highest order down (needs `mbow`)."""
    n = trie.order
    for k in range(n, 0, -1):
        trie.nodes[k - 1].mf = mf_step(trie, k, trie.nodes[k].mf if k < n else None, eos_id)


def mf_step(trie: Trie, k: int, above: np.ndarray | None, eos_id: int | None) -> np.ndarray:
    """Order k's mf from order k+1's (`above`; None at the highest order, whose mf is a copy
    of its log10p). Reads order k's exact `mbow` from the node (`best_absent_extension`)."""
    node = trie.nodes[k - 1]
    if above is None:
        return node.log10p.copy()
    mf = children_max(trie, k + 1, above)  # extensions in the table
    np.maximum(mf, node.log10p, out=mf)
    out_of_table = best_absent_extension(trie, k, eos_id)
    out_of_table += node.log10p
    np.maximum(mf, out_of_table, out=mf)
    return mf


def best_absent_extension(trie: Trie, k: int, eos_id: int | None) -> np.ndarray:
    """For each order-k node c·w: max MB(a·c) over nodes a·c such that a·c·w is not a node.

    Only positive MB values matter (others are dominated by z empty), so only nodes a·c with
    MB > 0 are candidates (few: a positive backoff sum is rare), and each node scans its
    context's candidates in decreasing MB order, stopping at the first a with a·c·w absent.
    Returns 0 where no positive candidate exists.
    """
    v = trie._v
    node = trie.nodes[k - 1]
    m = len(node.keys)
    result = np.zeros(m)
    if m == 0:
        return result
    score = node.mbow
    candidates = np.flatnonzero(score > 0)
    if k == 1 and eos_id is not None:
        candidates = candidates[candidates != eos_id]  # </s> is never a context
    if len(candidates) == 0:
        return result
    # The candidates a·c grouped by their context c (their parent row), best first.
    parent = trie.parents(k) if k > 1 else np.zeros(m, dtype=np.int64)  # k=1: the root
    cand_parent = parent[candidates]
    del parent
    order = candidates[np.lexsort((-score[candidates], cand_parent))]
    # Each node's context c (its prefix) at order k-1, -1 where c is no node: from the keys
    # (`prefix_rows`, a chain from order 2; no word rows), only for an order with candidates.
    context: np.ndarray = np.zeros(m, dtype=np.int64)
    below = None
    for j in range(2, k + 1):
        context = below = prefix_rows(trie.nodes[j - 1].keys, trie.nodes[j - 2].keys,
                                      trie.vocab_size, below)
    # Group boundaries by counting (parents are dense row ids), not by binary search.
    group_size = np.bincount(cand_parent, minlength=int(max(cand_parent.max(), context.max())) + 1)
    group_start = np.cumsum(group_size) - group_size
    safe = np.maximum(context, 0)
    size = np.where(context >= 0, group_size[safe], 0)
    active = np.flatnonzero(size > 0)
    starts = group_start[safe[active]]
    ends = starts + size[active]
    del context, safe, size
    rank = np.zeros(len(active), dtype=np.int64)
    while len(active):
        cand = order[starts + rank]
        first_word = (node.keys[cand] % v).astype(np.int64) if k > 1 else cand
        present = trie.find(k + 1, trie.key(active, first_word)) >= 0
        done = ~present
        result[active[done]] = score[cand[done]]
        more = present & (starts + rank + 1 < ends)
        active, starts, ends, rank = active[more], starts[more], ends[more], rank[more] + 1
    return result


def compute_bounds(trie: Trie, eos_id: int | None) -> None:
    """Fill mbow then mf on every order of `trie`."""
    compute_mbow(trie)
    compute_mf(trie, eos_id)


SUM_TERMS = 2**32
LARGEST_LOG10 = float(np.finfo(np.float64).max) / LN10 / SUM_TERMS
"""The largest log10 magnitude allowed (about 1.8e298): its natural log (x ln 10, arsdecode's
unit) summed over SUM_TERMS positions (any lattice) is still finite."""


def check_finite(trie: Trie, vocab: list[str], path: str) -> None:
    """Refuse a model whose values or bounds do not fit float64 in natural log.

    Why: an ARPA backoff of 1e308 is a valid number, but the bounds add backoffs (two such
    are +inf), arsdecode multiplies every value by ln 10 (1e308 becomes +inf), and a path's
    score adds one value per position (twelve of 1e307 are +inf): decoding then warns of
    overflow or calls every path impossible. So every log10 probability, backoff, mbow and
    mf must be -inf (probability zero) or finite with magnitude at most LARGEST_LOG10, which
    keeps any sum over a lattice finite. The first offender is named: listed values before
    accumulated bounds, and the highest order first, where an accumulated overflow starts.

    Raises:
        FormatError: naming the n-gram, its line (in an ARPA file) and the value.
    """
    fields = (("log10p", "log10 probability"), ("log10bow", "backoff"),
              ("mbow", "max backoff sum (mbow)"), ("mf", "max probability bound (mf)"))
    for field, what in fields:
        for k in range(trie.order, 0, -1):
            node = trie.nodes[k - 1]
            values = (getattr(node, field) if field in ("log10p", "log10bow") else
                      node.stored_bounds()[field == "mbow"])  # float32 as stored, no copy
            bad = np.isnan(values)
            if values.dtype != np.float32:  # (float32 bounds, maxarpa.rounded, never exceed)
                bad |= (np.abs(values) > LARGEST_LOG10) & (values != -np.inf)
            else:  # the one float32 value past LARGEST_LOG10
                bad |= values == np.inf
            if not bad.any():
                continue
            i = int(np.argmax(bad))
            words = [vocab[w] for w in node.rows[i].tolist()]
            lines = ngram_lines(path, k, words, limit=1) if node.listed[i] else []
            cause = ("is not a number" if np.isnan(values[i]) else
                     f"is {float(values[i])!r} (log10), too large for sums in natural log")
            raise FormatError(path, lines[0] if lines else None,
                              f"the {k}-gram {shown(' '.join(words))}: its {what} {cause} "
                              f"(largest magnitude {LARGEST_LOG10:.4g})")
