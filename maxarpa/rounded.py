"""Bounds computed and rounded to what a format-3 binary file stores, in one pass.

Why its own module: it joins the exact recurrences (`maxarpa.bound`), their rounding
(`maxarpa.compact`) and the writers' negative-zero rule (`maxarpa.digest`), which import one
another in that order; only `maxarpa.load` uses it, for `convert --binary` (issue 34).
"""

from __future__ import annotations

import numpy as np

from maxarpa.bound import mbow_step, mf_step
from maxarpa.compact import Stored, round_order
from maxarpa.digest import without_negative_zeros
from maxarpa.table import Trie


def compute_rounded_bounds(trie: Trie, eos_id: int | None) -> None:
    """Fill mf and mbow with the bounds a format-3 file stores
    (`maxarpa.compact.rounded_bounds`), computing the exact ones (`bound.mbow_step`,
    `mf_step`) and rounding them in one pass from the highest order down, and set
    `trie.bounds_rounded`.

    Why: `compute_bounds` keeps every order's exact bounds in float64 (96 MiB on the
    6M-n-gram bench model) until a writer rounds them; here only two orders' exact bounds are
    alive at a time, and each order keeps its float32 ones (issue 34's conversion peak). The
    highest order's bounds are its log10p and backoff arrays themselves, as a format-3 reader
    makes them. Writing the table then stores the same bytes as after `compute_bounds`
    (rounding rounded bounds again changes nothing: each already satisfies the recurrence
    on the rounded order above, and a float32 value rounds to itself). Negative zeros of
    log10p and backoffs are made +0.0 first, as every writer does before hashing.
    """
    without_negative_zeros(trie)
    n = trie.order
    exact_mf: np.ndarray | None = None  # order k+1's exact bounds
    exact_mbow: np.ndarray | None = None
    above: Stored | None = None
    for k in range(n, 0, -1):
        node = trie.nodes[k - 1]
        if k == n:  # mbow = 0 + backoff and mf = log10p, bit for bit (no -0.0 left)
            mbow, mf = node.log10bow, node.log10p
        else:
            mbow = mbow_step(trie, k, exact_mbow)
            node.mbow = mbow  # exact, for mf_step's absent extensions
            mf = mf_step(trie, k, exact_mf, eos_id)
        exact_mf, exact_mbow = mf, mbow
        stored, above = round_order(trie, k, mf, mbow, above)
        node.mf = stored.mf if stored.mf is not None else node.log10p
        node.mbow = stored.mbow if stored.mbow is not None else node.log10bow
    trie.bounds_rounded = True
