"""Number formatting and run facts shared by the SMS page's sections (report/sms_*.py).

Everything here is a pure function of the results JSON, so the page renders identically from the
same results.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence

import numpy as np

PAPER_SECONDS = 11.4  # the paper's sampling run, length-10 sentence, 5-gram (Fig. 3a/3b)
TARGETS = {"decode_median": 0.15, "decode_p95": 1.0, "sample_median": 0.3, "load_median": 1.0}


# ----- number formatting ---------------------------------------------------------------------
def fmt(x: float | None, d: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:,.{d}f}"


def sci(x: float) -> str:
    return f"{x:.2e}" if x >= 1e6 else f"{int(x):,}"


def mean(values: Sequence[float]) -> float:
    return float(statistics.fmean(values)) if len(values) else math.nan


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if len(values) else math.nan


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else math.nan


def md_table(header: Sequence[str], rows: Iterable[Sequence]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def words_and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def group(rows: Sequence[dict], *keys: str) -> dict:
    out: dict = {}
    for r in rows:
        out.setdefault(tuple(r[k] for k in keys), []).append(r)
    return out


# ----- facts derived from the results --------------------------------------------------------
def window_ar(accepted: Sequence[bool], end: int, window: int) -> float:
    """Acceptance rate over the `window` trials ending at trial `end` (1-based)."""
    chunk = accepted[max(0, end - window) : end]
    return sum(chunk) / len(chunk) if chunk else math.nan


def model_error(r: dict) -> bool:
    """Decoded != truth although the truth is in the lattice and scores strictly lower."""
    o = r["oracle_log_p"]
    return o is not None and o < r["log_p"] - 1e-6 and not r["exact_match"]


def status(value: float, target: float) -> str:
    return "met" if value <= target else f"**missed ×{value / target:.1f}**"


class Facts:
    """The run's shape, read once from the results: orders, main order, long length, etc."""

    def __init__(self, res: dict) -> None:
        cfg = res["config"]
        self.cfg = cfg
        self.opts = cfg["options"]
        self.orders: list[int] = self.opts["orders"]
        self.top: int = cfg["main_order"]
        self.long: int = cfg["long_length"]
        self.k: int = cfg["top_k"]
        self.window: int = cfg["ar_window"]
        self.target: float = cfg["target_ar"]
        self.ar = f"AR-{self.window} ≥ {100 * self.target:.0f}%"
        self.lengths = range(1, self.long + 1)



def by_length_table(rows_in: Sequence[dict], lengths: Sequence[int], orders: Sequence[int],
                    counts: Sequence[str]) -> str:
    """Per length and order: the mean of each field in `counts`, then the median seconds."""
    g = group(rows_in, "order", "length")
    rows = []
    for length in lengths:
        row: list = [length]
        for n in orders:
            rs = g.get((n, length), [])
            row += [fmt(mean([r[c] for r in rs]), 1 if c == "iterations" else 0)
                    for c in counts]
            row.append(fmt(median([r["seconds"] for r in rs]), 3))
        rows.append(row)
    return md_table(["length"] + [f"{h} n={n}" for n in orders
                                  for h in (*counts, "median s")], rows)
