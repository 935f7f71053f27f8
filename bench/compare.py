"""Compare each bench's new record against its stored previous run (issue 34).

    python -m bench.compare [BENCH ...] [--threshold 0.10] [--kinds ratio count ...]
                            [--records DIR] [--update]

For every record work/bench/<bench>.figures.json (written by `bench.record`; or the named
BENCHes), the previous run is bench/history/<bench>.<mode>.json (quick and full runs are kept
apart: their settings differ). Every figure that moved by more than --threshold (relative,
default 10%), appeared as unmeasured, or is missing from the new run is printed on its own line,
and the exit status is 1. --update then stores the new records as the previous runs (do it when
the move is understood and accepted, and commit the history files). A bench with no stored run
is reported and, with --update, stored. Exit status 2: a record is unreadable, or the two runs
were made with different arguments (their figures are not comparable).

Why a file per bench in git: the previous run is what the release before measured, so the
comparison needs no server and a regression shows up in the diff that causes it.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.record import KINDS, REPO, load_record, record_dir

HISTORY = REPO / "bench" / "history"
THRESHOLD = 0.10


@dataclass(frozen=True)
class Move:
    """One figure that moved past the threshold (or appeared/disappeared)."""

    bench: str
    figure: str
    kind: str
    old: float
    new: float
    why: str  # "moved", "missing" (absent from the new run), "unmeasured" (NaN on one side)

    def line(self) -> str:
        if self.why == "missing":
            return f"{self.bench}: {self.figure} ({self.kind}) missing from the new run " \
                   f"(previous {self.old:.6g})"
        if self.why == "unmeasured":
            return f"{self.bench}: {self.figure} ({self.kind}) measured on one side only " \
                   f"(previous {self.old:.6g}, new {self.new:.6g})"
        return f"{self.bench}: {self.figure} ({self.kind}) moved {self.old:.6g} -> " \
               f"{self.new:.6g} ({relative_change(self.old, self.new):+.1%})"


def relative_change(old: float, new: float) -> float:
    """new / old - 1; 0 when both are 0, +inf when only old is 0. NaN when either is NaN."""
    if math.isnan(old) or math.isnan(new):
        return math.nan
    if old == 0:
        return 0.0 if new == 0 else math.inf
    return new / old - 1.0


def moved(old: float, new: float, threshold: float) -> bool:
    """Whether a figure moved by more than `threshold` (both unmeasured counts as unmoved)."""
    if math.isnan(old) and math.isnan(new):
        return False
    change = relative_change(old, new)
    return math.isnan(change) or abs(change) > threshold


def compare(old: dict[str, Any], new: dict[str, Any], *, threshold: float = THRESHOLD,
            kinds: tuple[str, ...] = KINDS) -> list[Move]:
    """Every figure of `old` (a loaded record) that moved in `new` past `threshold`, or is
    missing from it, in `old`'s order; only figures whose kind is in `kinds`."""
    bench = str(new.get("bench") or old.get("bench"))
    out = []
    for name, fig in old["figures"].items():
        if fig["kind"] not in kinds:
            continue
        now = new["figures"].get(name)
        if now is None:
            out.append(Move(bench, name, fig["kind"], fig["value"], math.nan, "missing"))
        elif moved(fig["value"], now["value"], threshold):
            why = "unmeasured" if math.isnan(fig["value"]) or math.isnan(now["value"]) \
                else "moved"
            out.append(Move(bench, name, fig["kind"], fig["value"], now["value"], why))
    return out


def history_path(record: dict[str, Any], history: Path = HISTORY) -> Path:
    return history / f"{record['bench']}.{record['mode']}.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("benches", nargs="*", help="bench names (default: every record found)")
    ap.add_argument("--records", type=Path, default=None,
                    help="directory of the new records (default work/bench)")
    ap.add_argument("--history", type=Path, default=HISTORY)
    ap.add_argument("--threshold", type=float, default=THRESHOLD)
    ap.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    ap.add_argument("--update", action="store_true",
                    help="store the new records as the previous runs")
    args = ap.parse_args(argv)
    directory = args.records or record_dir()
    paths = ([directory / f"{b}.figures.json" for b in args.benches] if args.benches
             else sorted(directory.glob("*.figures.json")))
    if not paths:
        print(f"bench.compare: no records in {directory}", file=sys.stderr)
        return 2
    failed = False
    for path in paths:
        try:
            new = load_record(path)
            prev_path = history_path(new, args.history)
            old = load_record(prev_path) if prev_path.exists() else None
        except ValueError as err:
            print(f"bench.compare: {err}", file=sys.stderr)
            return 2
        if old is None:
            print(f"{new['bench']}: no previous {new['mode']} run in {prev_path}")
        elif old.get("argv") != new.get("argv"):
            print(f"bench.compare: {path}: run with {new.get('argv')}, the previous run in "
                  f"{prev_path} with {old.get('argv')}: not comparable", file=sys.stderr)
            return 2
        else:
            moves = compare(old, new, threshold=args.threshold, kinds=tuple(args.kinds))
            for m in moves:
                print(m.line())
            failed |= bool(moves)
            if not moves:
                print(f"{new['bench']}: {len(old['figures'])} figures within "
                      f"{args.threshold:.0%} of the previous run")
        if args.update:
            prev_path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, prev_path)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
