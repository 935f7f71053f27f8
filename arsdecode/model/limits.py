"""The largest natural-log weight arsdecode accepts from a user (a lattice's weights, a
feature's weight): the limit maxarpa's ARPA reader already enforces on model values.

Why a limit below float64's range: a path's score adds one weight per arc or position (and
a feature's weight once per occurrence), so weights of 1e308 add up to +inf: decoding then
prints log_p=inf, a bound that is no bound, or "every path has probability zero". A magnitude
of at most `LARGEST_LN` (maxarpa.bound.LARGEST_LOG10 in natural log, about 4.2e298) keeps
any sum of up to 2**32 of them finite, as it does for the n-gram values it is checked on.
Large negative lattice weights stay legal: their sums go to -inf, which is probability zero
(arsdecode.core.semiring), the right answer.
"""

from __future__ import annotations

from maxarpa.bound import LARGEST_LOG10
from maxarpa.constants import LN10

LARGEST_LN = LARGEST_LOG10 * LN10
"""The largest magnitude (ln) of a weight: sums of up to 2**32 of them stay finite."""


def too_large(weight: float) -> str | None:
    """Why a positive ln `weight` cannot be used (a clause to follow the weight in a
    message: "has the weight 1e+308, too large ..."), or None."""
    if weight > LARGEST_LN:
        return (f"too large: sums of such weights overflow float64 (the largest ln weight is "
                f"{LARGEST_LN:.4g}, the limit the ARPA reader enforces on log10 values)")
    return None
