"""Number formatting and run facts shared by the POS page's sections (report/pos_*.py).

Everything here is a pure function of the results JSON (plus the paper's published figures and
the issue's targets, which no run changes), so the page renders identically from the same
results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PAPER = {
    "best_accuracy": 0.9594,
    "best_order": 5,
    "full_infeasible_from": 7,
    "train": "WSJ sections 0-18 (~912k tokens)",
    "test": "WSJ sections 22-24",
}
TARGETS = {"accuracy": 0.959, "speedup_n5": 10.0, "n9_seconds": 300.0}


def pct(x: float | None, d: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.{d}f}"


def secs(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def best_order(res: dict) -> str:
    """The order (a JSON key) with the highest ARS accuracy; the first one on a tie."""
    return max(res["ars"], key=lambda n: res["ars"][n]["accuracy"])


@dataclass(frozen=True)
class Facts:
    """What several sections read: orders run, test-set size, TnT and the best ARS row."""

    orders: list[int]
    tokens: int
    sentences: int
    lattice_seconds: float
    tnt0: dict  # NLTK TnT, C=False: the baseline
    tnt1: dict  # NLTK TnT, C=True
    best: int  # the order with the best accuracy
    b: dict  # its ARS results

    @classmethod
    def of(cls, res: dict) -> Facts:
        best = int(best_order(res))
        return cls(orders=sorted(int(n) for n in res["ars"]), tokens=res["test_tokens"],
                   sentences=res["test_sentences"], lattice_seconds=res["lattice_seconds"],
                   tnt0=res["tnt"]["C=False"], tnt1=res["tnt"]["C=True"], best=best,
                   b=res["ars"][str(best)])
