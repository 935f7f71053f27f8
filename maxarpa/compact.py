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

from dataclasses import dataclass

import numpy as np

from maxarpa.bound import children_max
from maxarpa.table import Trie

F32_MAX = float(np.finfo(np.float32).max)


def round_up_f32(values: np.ndarray) -> np.ndarray | None:
    """The smallest float32 >= each float64 value (-0.0 made 0.0, -inf kept), or None when
    a value does not fit (above float32's largest finite value; such an order keeps float64).
    """
    if len(values) and float(np.max(values)) > F32_MAX:
        return None
    with np.errstate(over="ignore"):
        out = values.astype(np.float32)  # to nearest: below the value about half the time
    low = out.astype(np.float64) < values  # (a value below -F32_MAX became -inf: low too)
    out[low] = np.nextafter(out[low], np.float32(np.inf))
    out += np.float32(0.0)  # -0.0 + 0.0 = +0.0: no negative zero reaches a file
    return out


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
    """A stored bound as the model holds it (float64), or `default` where none is stored."""
    if stored is None:
        return default
    return stored.astype(np.float64) if stored.dtype != np.float64 else stored


def rounded_bounds(trie: Trie) -> list[Stored]:
    """Each order's bounds as a format-3 file stores them (see the module docstring).

    The highest order stores none when its mf is its log10p and its mbow its backoff, as
    bound.py makes them (compared bit for bit; otherwise they are rounded like the others).
    """
    n = trie.order
    out: list[Stored] = [Stored(None, None) for _ in range(n)]
    above_mf = above_mbow = None  # the rounded bounds of order k + 1, as float64
    for k in range(n, 0, -1):
        node = trie.nodes[k - 1]
        mf = np.asarray(node.mf, dtype=np.float64)
        mbow = np.asarray(node.mbow, dtype=np.float64)
        if k == n and _same_bits(mf, node.log10p) and _same_bits(mbow, node.log10bow):
            above_mf, above_mbow = mf, mbow
            continue
        if above_mf is not None and above_mbow is not None:
            child = children_max(trie, k + 1, above_mbow)
            np.maximum(child, 0.0, out=child)
            child += node.log10bow
            mbow = np.maximum(mbow, child)
            child = children_max(trie, k + 1, above_mf)
            mf = np.maximum(mf, child)
            del child
        stored_mf, stored_mbow = round_up_f32(mf), round_up_f32(mbow)
        out[k - 1] = Stored(stored_mf if stored_mf is not None else mf,
                            stored_mbow if stored_mbow is not None else mbow)
        above_mf = widened(out[k - 1].mf, mf)
        above_mbow = widened(out[k - 1].mbow, mbow)
    return out
