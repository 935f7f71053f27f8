"""The bounds of a format-3 binary file: float32, rounded up, never down.

Why float32: mf and mbow are half of what a binary model stores besides keys and
probabilities (issue 34: the file was 2.9x KenLM's). They are upper bounds, not the model: a
bound that is larger stays a bound, so storing each one rounded up to float32 (about 7
significant digits, a relative slack of at most 2^-24, 6e-8) keeps every certificate valid
and costs the decoder at most that much looseness. Probabilities and backoffs are the model
and stay float64, bit for bit what the ARPA text says (a float32 p would change every score
and make the certificate's exact comparison of q and p false).

Why rounded top-down rather than each value alone: the load-time checks of an untrusted file
(`maxarpa.checks.check_stored_bounds`) test the recurrences of bound.py as inequalities, on
the stored values: mbow >= bow + max(0, mbow of each child) and mf >= mf of each child. A
parent rounded alone could land below its rounded child. So each order's values are rounded
from max(exact value, what the recurrence gives on the rounded children), highest order first,
and every rounded table satisfies the same inequalities the exact one does; `maxarpa verify`
recomputes the exact bounds, rounds them this way and compares bit for bit
(`rounded_bounds`).

The highest order needs nothing stored: its mf is its log10p and its mbow its backoff
(bound.py), which the reader takes when the members are absent (`Stored.mf is None`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from maxarpa.table import Trie

F32_MAX = float(np.finfo(np.float32).max)


def round_up_f32(values: np.ndarray) -> np.ndarray | None:
    """The smallest float32 >= each float64 value (-0.0 made 0.0, -inf kept), or None when
    a value does not fit (above float32's largest finite value; such an order keeps float64).
    """
    from maxarpa.native import round_up_f32_array

    if len(values) and float(np.max(values)) > F32_MAX:
        return None
    # Compiled (issue 34): to nearest, then one float32 step up where that fell below the
    # value; -0.0 + 0.0 = +0.0, so no negative zero reaches a file.
    return round_up_f32_array(np.ascontiguousarray(values, dtype=np.float64))


@dataclass
class Stored:
    """What one order stores for its bounds: float32 (or float64 when float32 cannot hold
    them) arrays, or None where the reader derives the value (mf = log10p, mbow = log10bow)."""

    mf: np.ndarray | None
    mbow: np.ndarray | None


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and bool(
        np.array_equal(a.view(np.uint64), b.view(np.uint64)))


def widened(stored: np.ndarray | None, default: np.ndarray) -> np.ndarray:
    """A stored bound as the model is given it, or `default` where none is stored. A float32
    bound stays float32 here (no copy): `OrderNodes` widens it to float64 when `mf`/`mbow`
    is first read, and the compiled mixture reads it as stored (issue 34). Comparisons and
    float64 arithmetic with it widen each value exactly."""
    if stored is None:
        return default
    return stored if stored.dtype in (np.float32, np.float64) else stored.astype(np.float64)


def rounded_bounds(trie: Trie) -> list[Stored]:
    """Each order's bounds as a format-3 file stores them (see the module docstring), in
    order 1..n (`rounded_orders` gives them one at a time, highest order first)."""
    out: list[Stored] = [Stored(None, None) for _ in range(trie.order)]
    for k, stored in rounded_orders(trie):
        out[k - 1] = stored
    return out


def rounded_orders(trie: Trie) -> Iterator[tuple[int, Stored]]:
    """(k, what order k stores for its bounds), from the highest order down: each order's
    rounding needs only the rounded order above, so a writer holds one order's at a time.

    The highest order stores none when its mf is its log10p and its mbow its backoff, as
    bound.py makes them (compared bit for bit; otherwise they are rounded like the others).
    """
    above: Stored | None = None  # what order k + 1 stores, as arrays (float32 or float64)
    for k in range(trie.order, 0, -1):
        node = trie.nodes[k - 1]
        stored, above = round_order(trie, k, np.asarray(node.mf, dtype=np.float64),
                                     np.asarray(node.mbow, dtype=np.float64), above)
        yield k, stored


def stored_orders(trie: Trie, trusted: bool) -> Iterator[tuple[int, Stored]]:
    """(k, order k's bounds as stored), from the highest order down. Only bounds known exact
    are rounded (and so made to satisfy the recurrences again, `maxarpa.compact`); others
    are written as they are, in float64, for the reader to check and recompute."""
    if trusted and already_stored(trie):
        for k in range(trie.order, 0, -1):
            node = trie.nodes[k - 1]
            yield k, Stored(None if node.mf is node.log10p else node.mf,
                            None if node.mbow is node.log10bow else node.mbow)
        return
    if trusted:
        yield from rounded_orders(trie)
        return
    for k in range(trie.order, 0, -1):
        node = trie.nodes[k - 1]
        yield k, Stored(np.asarray(node.mf, dtype=np.float64),
                        np.asarray(node.mbow, dtype=np.float64))


def already_stored(trie: Trie) -> bool:
    """Whether the trie holds its bounds as `maxarpa.rounded` leaves them: each order's
    float32 arrays, or the highest order's log10p and backoff themselves. Rounding them again
    (`rounded_orders`) would give the same arrays (see there), so they are written as they
    are. (A format-3 file read back holds them widened to float64: those are rounded again.)
    """
    if not trie.bounds_rounded:
        return False
    for k, node in enumerate(trie.nodes, start=1):
        top = k == trie.order and node.mf is node.log10p and node.mbow is node.log10bow
        if not top and (node.mf.dtype != np.float32 or node.mbow.dtype != np.float32):
            return False
    return True


def round_order(trie: Trie, k: int, mf: np.ndarray, mbow: np.ndarray, above: Stored | None
                 ) -> tuple[Stored, Stored]:
    """Order k's stored bounds from its exact ones (float64) and order k+1's stored arrays
    (`above`, None at the highest order): (what the file stores, the arrays order k-1's
    rounding reads)."""
    node = trie.nodes[k - 1]
    if k == trie.order and _same_bits(mf, node.log10p) and _same_bits(mbow, node.log10bow):
        return Stored(None, None), Stored(mf, mbow)
    if above is not None and above.mf is not None and above.mbow is not None:
        # The maxima of float32 values are float32, widened exactly into float64.
        child_mbow, child_mf = _children_max2(trie, k + 1, above.mbow, above.mf)
        np.maximum(child_mbow, 0.0, out=child_mbow)
        child_mbow += node.log10bow
        np.maximum(child_mbow, mbow, out=child_mbow)
        np.maximum(child_mf, mf, out=child_mf)
        mbow, mf = child_mbow, child_mf
        del child_mbow, child_mf
    rounded_mf, rounded_mbow = round_up_f32(mf), round_up_f32(mbow)
    stored = Stored(rounded_mf if rounded_mf is not None else mf,
                    rounded_mbow if rounded_mbow is not None else mbow)
    return stored, stored


def _children_max2(trie: Trie, k: int, a: np.ndarray, b: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """`bound.children_max` of two arrays of order k at once (float32 or float64), in one
    compiled pass when they have the same type."""
    from maxarpa.native import children_max_sorted

    keys, size = trie.nodes[k - 1].keys, len(trie.nodes[k - 2].keys)
    if a.dtype == b.dtype and a.dtype in (np.float32, np.float64):
        return children_max_sorted(keys, trie.vocab_size, size, np.ascontiguousarray(a),
                                   np.ascontiguousarray(b))
    return (children_max_sorted(keys, trie.vocab_size, size, np.asarray(a, np.float64)),
            children_max_sorted(keys, trie.vocab_size, size, np.asarray(b, np.float64)))
