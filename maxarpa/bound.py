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

from maxarpa.table import Trie


def group_max(values: np.ndarray, groups: np.ndarray, size: int) -> np.ndarray:
    """Max of `values` per group id in `groups` (sorted ascending); -inf for empty groups."""
    out = np.full(size, -np.inf)
    if len(values) == 0:
        return out
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    out[groups[starts]] = np.maximum.reduceat(values, starts)
    return out


def compute_mbow(trie: Trie) -> None:
    """Fill `mbow` for every order, from the highest order down."""
    n = trie.order
    v = trie._v
    for k in range(n, 0, -1):
        node = trie.nodes[k - 1]
        m = len(node.keys)
        if k == n:
            child = np.full(m, -np.inf)
        else:
            above = trie.nodes[k]
            child = group_max(above.mbow, (above.keys // v).astype(np.int64), m)
        node.mbow = node.log10bow + np.maximum(0.0, child)


def compute_mf(trie: Trie, eos_id: int | None) -> None:
    """Fill `mf` for every order, from the highest order down (needs `mbow`)."""
    n = trie.order
    v = trie._v
    top = trie.nodes[n - 1]
    top.mf = top.log10p.copy()
    for k in range(n - 1, 0, -1):
        node = trie.nodes[k - 1]
        above = trie.nodes[k]
        m = len(node.keys)
        in_table = group_max(above.mf, (above.keys // v).astype(np.int64), m)
        out_of_table = best_absent_extension(trie, k, eos_id)
        node.mf = np.maximum(np.maximum(node.log10p, in_table), node.log10p + out_of_table)


def best_absent_extension(trie: Trie, k: int, eos_id: int | None) -> np.ndarray:
    """For each order-k node c·w: max MB(a·c) over nodes a·c such that a·c·w is not a node.

    Only positive MB values matter (others are dominated by z empty), so each node scans its
    context's children in decreasing MB order and stops at the first a with a·c·w absent or at
    the first MB <= 0. Returns 0 where no positive candidate exists.
    """
    v = trie._v
    node = trie.nodes[k - 1]
    m = len(node.keys)
    result = np.zeros(m)
    if m == 0:
        return result
    # Children of each context, sorted by decreasing MB: the candidates a·c live at order k.
    if k == 1:
        parent = np.zeros(m, dtype=np.int64)  # the root is every unigram's context
        context = np.zeros(m, dtype=np.int64)
        score = node.mbow.copy()
        if eos_id is not None:
            score[eos_id] = -np.inf  # </s> is never a context
    else:
        parent = (node.keys // v).astype(np.int64)
        context = trie.lookup_rows(node.rows[:, :-1])
        score = node.mbow
    order = np.lexsort((-score, parent))
    # Group boundaries by counting (parents are dense row ids), not by binary search.
    group_size = np.bincount(parent, minlength=int(max(parent.max(), context.max())) + 1)
    group_start = np.r_[0, np.cumsum(group_size)[:-1]]
    safe = np.maximum(context, 0)
    starts = group_start[safe]
    ends = starts + group_size[safe]
    active = np.flatnonzero((context >= 0) & (ends > starts))
    rank = np.zeros(len(active), dtype=np.int64)
    while len(active):
        cand = order[starts[active] + rank]
        cand_score = score[cand]
        positive = cand_score > 0
        active, rank, cand, cand_score = (
            active[positive], rank[positive], cand[positive], cand_score[positive]
        )
        if not len(active):
            break
        first_word = (node.keys[cand] % v).astype(np.int64) if k > 1 else cand
        present = trie.find(k + 1, trie.key(active, first_word)) >= 0
        done = ~present
        result[active[done]] = cand_score[done]
        active, rank = active[present], rank[present] + 1
        more = starts[active] + rank < ends[active]
        active, rank = active[more], rank[more]
    return result


def compute_bounds(trie: Trie, eos_id: int | None) -> None:
    """Fill mbow then mf on every order of `trie`."""
    compute_mbow(trie)
    compute_mf(trie, eos_id)
