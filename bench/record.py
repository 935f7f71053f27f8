"""One recorder for every bench: named figures, each with its kind and, beside every time, the
process's peak RSS so far (issue 34: "Peak RSS goes beside every time").

Why one module: the A/B table (`bench.ab`) and the comparison against the stored previous run
(`bench.compare`) read the same flat file from every bench, so no bench-specific parsing exists
anywhere; a bench only names its figures.

A bench does

    rec = Record("bench_ars", quick=args.quick)
    rec.ratio("n5.len10.w100.full/ars_decode", t_full / t_ars)
    rec.time("n5.len10.w100.ars_decode_s", t_ars)
    rec.save()

and `save` writes work/bench/<bench>.figures.json:

    {"bench": ..., "mode": "quick" | "full", "argv": [...], "python": ...,
     "figures": {name: {"value": float, "kind": "time" | "ratio" | "count" | "rss_mb",
                        "peak_rss_mb": float (times only)}}}

The process's own peak RSS is always added as the figure "peak_rss_mb" (self and its
waited-for children, whichever is larger). Kinds say how a figure may be read: a ratio is
measured inside one run (both sides under the same load), a time is absolute (noisy on a shared
machine), a count is deterministic, an RSS is in MiB.
"""

from __future__ import annotations

import json
import math
import os
import resource
import sys
from pathlib import Path
from typing import Any, Literal

REPO = Path(__file__).resolve().parent.parent
Kind = Literal["time", "ratio", "count", "rss_mb"]
KINDS: tuple[str, ...] = ("time", "ratio", "count", "rss_mb")
OUT_ENV = "BENCH_RECORD_DIR"  # bench.ab points every run's record at a directory of its own


def peak_rss_mb() -> float:
    """Peak resident set size of this process or of its largest waited-for child, in MiB
    (ru_maxrss is in KiB on Linux)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024.0


def record_dir() -> Path:
    """Where records go: $BENCH_RECORD_DIR, else this checkout's work/bench."""
    env = os.environ.get(OUT_ENV)
    return Path(env) if env else REPO / "work" / "bench"


def record_path(bench: str, directory: Path | None = None) -> Path:
    return (directory or record_dir()) / f"{bench}.figures.json"


class Record:
    """The figures of one bench run, in the order they were measured."""

    def __init__(self, bench: str, *, quick: bool = False,
                 argv: list[str] | None = None) -> None:
        self.bench = bench
        self.mode = "quick" if quick else "full"
        self.argv = list(sys.argv[1:] if argv is None else argv)
        self.figures: dict[str, dict[str, Any]] = {}

    def add(self, name: str, value: float | None, kind: Kind) -> None:
        """One figure. None (not measured in this run) is stored as NaN, so a figure that
        disappears is seen by the comparison rather than silently absent."""
        if kind not in KINDS:
            raise ValueError(f"unknown figure kind {kind!r} for {name!r}")
        if name in self.figures:
            raise ValueError(f"figure {name!r} recorded twice in {self.bench}")
        v = math.nan if value is None else float(value)
        fig: dict[str, Any] = {"value": v, "kind": kind}
        if kind == "time":
            fig["peak_rss_mb"] = round(peak_rss_mb(), 1)
        self.figures[name] = fig

    def time(self, name: str, seconds: float | None) -> None:
        self.add(name, seconds, "time")

    def ratio(self, name: str, value: float | None) -> None:
        self.add(name, value, "ratio")

    def count(self, name: str, value: float | None) -> None:
        self.add(name, value, "count")

    def to_json(self) -> dict[str, Any]:
        figures = dict(self.figures)
        figures["peak_rss_mb"] = {"value": round(peak_rss_mb(), 1), "kind": "rss_mb"}
        return {"bench": self.bench, "mode": self.mode, "argv": self.argv,
                "python": sys.version.split()[0], "figures": figures}

    def save(self, directory: Path | None = None) -> Path:
        """Write the record (see the module docstring) and say where."""
        out = record_path(self.bench, directory)
        out.parent.mkdir(parents=True, exist_ok=True)
        # NaN is written as JSON null: figures not measured in this run
        out.write_text(json.dumps(nan_to_none(self.to_json()), indent=1) + "\n")
        print(f"figures: {out}")
        return out


def nan_to_none(obj: Any) -> Any:
    """NaN floats as None (JSON null), through dicts and lists."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [nan_to_none(v) for v in obj]
    return obj


def load_record(path: Path) -> dict[str, Any]:
    """A saved record, with null values read back as NaN. Raises ValueError naming the file
    when it is not a record."""
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a bench record ({err})") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("figures"), dict):
        raise ValueError(f"{path}: not a bench record (no 'figures' object)")
    for name, fig in obj["figures"].items():
        if not isinstance(fig, dict) or fig.get("kind") not in KINDS:
            raise ValueError(f"{path}: figure {name!r} has no valid kind")
        fig["value"] = math.nan if fig.get("value") is None else float(fig["value"])
    return obj
