"""The per-target bench's figures, checks and table (bench/bench_targets.py measures them).

Why a module of its own: measuring (loading the targets, timing decode and sample on the
lattices) and judging (do the methods agree within TOL, how each target's time compares with
the plain ARPA target's in the same run) are separate jobs; apart, the measurement stays
readable and the figures can be recomputed from a saved run's rows (issue 30: the bench was
over 400 lines). Times are CPU seconds; ln p is natural log.
"""

from __future__ import annotations

import datetime
import math
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TOL = 1e-9
"""The largest |ln p| gap between two exact methods on one lattice still called agreement."""


def say(msg: str) -> None:
    """Progress, on a terminal only (a redirected run's stderr stays clean)."""
    if sys.stderr.isatty():
        print(msg, file=sys.stderr, flush=True)


def shown_path(path: Path) -> str:
    p = path.resolve()
    return str(p.relative_to(REPO)) if p.is_relative_to(REPO) else str(path)


def summary(values: Sequence[float]) -> dict[str, float]:
    xs = [float(v) for v in values]
    return {"mean": statistics.fmean(xs), "median": statistics.median(xs)} if xs else \
        {"mean": math.nan, "median": math.nan}


def ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


def checks(out: dict[str, Any]) -> dict[str, Any]:
    """The sanity checks: each target's methods agree (ln p within 1e-9), on the lattices and
    on the small lattices, and every decode is certified."""
    res: dict[str, Any] = {}
    for name, t in out["targets"].items():
        rows = t["decode"]
        ars = rows["ars"]["log_p"]
        pairs = list(zip(rows["auto"]["log_p"], ars, strict=True))
        for method in ("full", "auto_set_up"):
            if method in rows:
                pairs += list(zip(rows[method]["log_p"], ars, strict=True))
        if "full_small" in rows:
            pairs += list(zip(rows["full_small"]["log_p"], rows["ars_small"]["log_p"],
                              strict=True))
        worst = max((abs(a - b) for a, b in pairs), default=0.0)
        res[name] = {"methods_agree": worst <= TOL, "max_log_p_gap": worst,
                     "certified": sum(sum(r["certified"]) for r in rows.values()),
                     "decodes": sum(len(r["certified"]) for r in rows.values())}
    return res


def summarize(out: dict[str, Any]) -> dict[str, Any]:
    """Per target: each decode method's and the sampler's figures, and their ratios to the
    plain target's same method on the same lattices (ratio of means, and the median of the
    per-lattice ratios)."""
    plain = out["targets"].get("plain")
    res: dict[str, Any] = {}
    for name, t in out["targets"].items():
        dec = {}
        for method, row in t["decode"].items():
            # auto_set_up (auto once a target's compiled DP is set up) against plain's auto
            base = plain["decode"].get("auto" if method == "auto_set_up" else method) \
                if plain else None
            dec[method] = _figures(row, base, ("iterations", "states"))
            dec[method]["ran"] = dict(Counter(row["ran"]))
            dec[method]["certified"] = sum(row["certified"])
            dec[method]["n"] = len(row["certified"])
        res[name] = {"decode": dec,
                     "sample": _figures(t["sample"], plain["sample"] if plain else None,
                                        ("acceptance_rate", "trials"))}
    return res


def _figures(row: dict[str, list[Any]], base: dict[str, list[Any]] | None,
             fields: Sequence[str]) -> dict[str, Any]:
    """Mean and median of the seconds and `fields`, and their ratios to `base`'s."""
    fig: dict[str, Any] = {"seconds": summary(row["seconds"])}
    for f in fields:
        fig[f] = summary(row[f])
    if base is not None:
        fig["x_plain"] = {"seconds_mean": ratio(fig["seconds"]["mean"],
                                                statistics.fmean(base["seconds"])),
                          "seconds_median_per_lattice": statistics.median(
                              ratio(a, b) for a, b in zip(row["seconds"], base["seconds"],
                                                          strict=True))}
        for f in fields:
            fig["x_plain"][f"{f}_mean"] = ratio(fig[f]["mean"], statistics.fmean(base[f]))
    return fig


def format_target(name: str, res: dict[str, Any]) -> str:
    """A one-line progress summary of one target's decode and sample times."""
    cells = [name]
    for method, row in res["decode"].items():
        cells.append(f"{method} {statistics.fmean(row['seconds']):.4f} s")
    cells.append(f"sample {statistics.fmean(res['sample']['seconds']):.4f} s")
    return " | ".join(cells)


def table(out: dict[str, Any]) -> str:
    """The printed tables (decode, then sampling), every figure beside its ratio to plain."""
    lines = [f"{out['lattices']} lattices (lengths {out['lengths']}, median width "
             f"{out['median_width']:.0f}); sampling: {out['sample_lattices']} lattices, "
             f"n={out['samples']}; *_small: {out['small_lattices']} lattices, the first of each "
             f"of the lengths {out['small_lengths']}, cut to the {out['small_top_k']} best "
             "candidates per "
             "position (the numpy full DP of the non-plain targets needs that). CPU seconds "
             "per lattice; (x) = ratio to plain, same method, same lattices.",
             "| target | method | ran | mean s (x) | median s (median per-lattice x) | "
             "iterations mean (x) | states mean (x) | certified |",
             "|---|---|---|---|---|---|---|---|"]
    for name, s in out["summary"].items():
        for method, d in s["decode"].items():
            x = d.get("x_plain", {})
            ran = ", ".join(f"{k} {v}" for k, v in d["ran"].items())
            lines.append(
                f"| {name} | {method} | {ran} | {d['seconds']['mean']:.4f} "
                f"({x.get('seconds_mean', math.nan):.2f}x) | {d['seconds']['median']:.4f} "
                f"({x.get('seconds_median_per_lattice', math.nan):.2f}x) | "
                f"{d['iterations']['mean']:.1f} ({x.get('iterations_mean', math.nan):.2f}x) | "
                f"{d['states']['mean']:,.0f} ({x.get('states_mean', math.nan):.2f}x) | "
                f"{d['certified']}/{d['n']} |")
    setups = [f"{name} {t['compiled_setup_cpu_seconds']:.2f} CPU-s (auto on these "
              f"lattices would set it up: {t.get('auto_builds_for_these_lattices')})"
              for name, t in out["targets"].items() if "compiled_setup_cpu_seconds" in t]
    if setups:
        lines += ["", "Compiled DP set up once before row auto_set_up (outside its "
                      "per-lattice seconds): " + "; ".join(setups)]
    lines += ["", "| target | sample mean s (x) | median s (median per-lattice x) | "
                  "acceptance mean (x) | trials mean |", "|---|---|---|---|---|"]
    for name, s in out["summary"].items():
        d = s["sample"]
        x = d.get("x_plain", {})
        lines.append(f"| {name} | {d['seconds']['mean']:.4f} "
                     f"({x.get('seconds_mean', math.nan):.2f}x) | {d['seconds']['median']:.4f} "
                     f"({x.get('seconds_median_per_lattice', math.nan):.2f}x) | "
                     f"{d['acceptance_rate']['mean']:.3f} "
                     f"({x.get('acceptance_rate_mean', math.nan):.2f}x) | "
                     f"{d['trials']['mean']:.0f} |")
    lines.append("")
    for name, c in out["checks"].items():
        lines.append(f"check {name}: methods agree {c['methods_agree']} (largest ln p gap "
                     f"{c['max_log_p_gap']:.1e}), certified {c['certified']}/{c['decodes']}")
    return "\n".join(lines)


def doc_section(out: dict[str, Any]) -> str:
    """docs/performance.md's `targets` section (issue 34): the run's date, command, machine
    load and anchor (the plain ARPA target, same lattices, same run), the process's peak RSS
    after each target, then the tables."""
    rss = ", ".join(f"{name} {t['peak_rss_mib']:.0f}" for name, t in out["targets"].items())
    first, rest = table(out).split("\n", 1)
    return "\n".join([
        f"Generated by `{out['command']}` on {datetime.date.today().isoformat()}, load "
        f"average {out['load_average']:.2f} (2 cores), {out['run_wall_seconds']:.0f} s wall. "
        "Anchor: the plain ARPA target (lm.5, the KenLM 5-gram of the SMS train split) on the "
        "same lattices in the same run; every (x) is a ratio to it. Peak RSS of the bench "
        f"process after each target (MiB, cumulative high-water mark): {rss}.", "", first, "",
        rest])
