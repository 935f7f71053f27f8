"""A/B table of the benches between two revisions, measured in one run (issue 30: "every ratio
is within 5% of before, measured in the same run with A/B alternation").

    python -m bench.ab [--a 199a3de] [--b HEAD] [--benches bench_ars ...] [--rounds 3]
                       [--threshold 0.05] [--keep-trees]

What it does, and why:
  - Two git worktrees, work/ab/a and work/ab/b, at the two revisions (gitignored, removed at
    the end unless --keep-trees). Their compiled extensions are copied from this checkout when
    the compiled sources (the .pyx/.pxi/.pxd/.hpp files and setup.py) are the same as here, and
    built in the worktree (`setup.py build_ext --inplace`) otherwise.
  - Both worktrees get this checkout's bench/ and data_prep/ (the measuring code), so the two
    sides differ only in the engine (arsdecode/, maxarpa/): the same bench, the same figures,
    the same record format. The data (work/sms, work/pos) is this checkout's, linked into both
    (built here on first use by data_prep).
  - Each bench runs with --quick in a fresh process per run, A and B back to back (one round:
    every bench A then B; odd rounds B then A, so a drift of the machine's load falls on both
    sides). The process's wall time and peak RSS (os.wait4) join the bench's own figures.
  - Per figure: the median over the rounds on each side, B/A, and a flag when |B/A - 1| is
    above --threshold. bench_ars's cells (5-60 ms calls) are CPU seconds, each the median of
    5 repeats inside the process (`bench_ars.cpu_seconds`): a single wall-time call swung
    +-30% between runs here, above the gate. Ratios (both timings in one process) are what
    to read: absolute times move with the load of a shared machine.
The table goes to stdout and work/ab/table.md (--out), every run's figures beside it
(table.json).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.compare import relative_change
from bench.record import OUT_ENV, REPO, load_record, nan_to_none, record_path

AB = REPO / "work" / "ab"
DEFAULT_A = "199a3de"  # the commit before issue 30's work
BENCHES = ("bench_ars", "bench_variants", "bench_sms_decode", "bench_auto",
           "bench_compiled_choice", "bench_lattice", "bench_targets", "bench_pos", "bench_batch")
NEEDS_MODULE = {"bench_compiled_choice": "numba", "bench_pos": "nltk", "bench_batch": "dask"}
COMPILED = ("*.pyx", "*.pxi", "*.pxd", "*.hpp", "setup.py")
SHARED_DATA = ("sms", "pos")
KIND_ORDER = {"ratio": 0, "count": 1, "rss_mb": 2, "time": 3}


@dataclass
class Run:
    """One bench process on one side."""

    bench: str
    side: str
    round: int
    exit: int
    wall_s: float
    peak_rss_mb: float
    figures: dict[str, dict[str, Any]] = field(default_factory=dict)
    log: str = ""


def git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def skip_reason(bench: str) -> str | None:
    """Why a bench cannot run on this machine (a missing module), or None."""
    need = NEEDS_MODULE.get(bench)
    if need and importlib.util.find_spec(need) is None:
        return f"needs the Python module {need!r}, not installed in this venv"
    return None


def make_tree(side: str, rev: str, built: Path | None = None) -> Path:
    """A fresh detached worktree at `rev`, with this checkout's bench/, data_prep/, data and
    (when the compiled sources agree) compiled extensions; `built`: a checkout whose compiled
    extensions were built from `rev`'s compiled sources, copied instead of building (an old
    revision's setup may not build with today's setuptools)."""
    tree = AB / side
    if tree.exists():
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO,
                       capture_output=True)
        shutil.rmtree(tree, ignore_errors=True)
    git("worktree", "add", "--detach", "--force", str(tree), rev)
    for folder in ("bench", "data_prep"):
        for src in (REPO / folder).glob("*.py"):
            shutil.copy2(src, tree / folder / src.name)
    (tree / "work").mkdir(exist_ok=True)
    shared = REPO.parent / "shared"  # the corpora a checkout finds in ../shared/data
    if shared.is_dir() and not (AB / "shared").exists():
        (AB / "shared").symlink_to(shared)
    for name in SHARED_DATA:
        (tree / "work" / name).symlink_to(REPO / "work" / name)
    changed = git("diff", "--name-only", rev, "--", *COMPILED)
    if built is not None:
        for so in [*built.glob("arsdecode/native/*.so"), *built.glob("maxarpa/native/*.so")]:
            shutil.copy2(so, tree / so.relative_to(built))
    elif changed:
        print(f"{side} ({rev}): compiled sources differ from this checkout "
              f"({', '.join(changed.split())}): building", flush=True)
        subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tree,
                       check=True, stdout=subprocess.DEVNULL)
    else:
        for so in [*REPO.glob("arsdecode/native/*.so"), *REPO.glob("maxarpa/native/*.so")]:
            shutil.copy2(so, tree / so.relative_to(REPO))
    return tree


def ensure_data() -> None:
    """The SMS split and the POS models, built once here (both sides read them)."""
    if not (REPO / "work" / "sms" / "lm.5.maxarpa").exists():
        subprocess.run([sys.executable, "-m", "data_prep.prepare_sms", "--out", "work/sms",
                        "--corpora", "state_union"], cwd=REPO, check=True)
    if not (REPO / "work" / "pos" / "tags.9.maxarpa").exists():
        subprocess.run([sys.executable, "-m", "data_prep.pos_data", "--out", "work/pos"],
                       cwd=REPO, check=True)


def run_once(tree: Path, bench: str, side: str, rnd: int, timeout: float) -> Run:
    """`python -m bench.<bench> --quick` in `tree`, in its own process group; wall time and
    peak RSS from wait4 (the child's and its waited-for descendants')."""
    out_dir = AB / "records" / f"{side}{rnd}"
    out = record_path(bench, out_dir)
    out.unlink(missing_ok=True)
    log = AB / "logs" / f"{bench}.{side}{rnd}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(tree), **{OUT_ENV: str(out_dir)})
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", f"bench.{bench}", "--quick"], cwd=tree,
                                env=env, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout:
                os.killpg(proc.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.1)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    run = Run(bench, side, rnd, proc.returncode, time.perf_counter() - t0,
              usage.ru_maxrss / 1024.0, log=str(log.relative_to(REPO)))
    if run.exit == 0 and out.exists():
        run.figures = load_record(out)["figures"]
    run.figures["process.wall_s"] = {"value": run.wall_s, "kind": "time",
                                     "peak_rss_mb": round(run.peak_rss_mb, 1)}
    run.figures["process.peak_rss_mb"] = {"value": run.peak_rss_mb, "kind": "rss_mb"}
    return run


def medians(runs: list[Run]) -> dict[str, tuple[str, float]]:
    """figure -> (kind, median over the successful runs; NaN values left out)."""
    values: dict[str, list[float]] = {}
    kinds: dict[str, str] = {}
    for run in runs:
        if run.exit != 0:
            continue
        for name, fig in run.figures.items():
            kinds[name] = fig["kind"]
            if not math.isnan(fig["value"]):
                values.setdefault(name, []).append(fig["value"])
    return {name: (kinds[name], statistics.median(values[name]) if name in values else math.nan)
            for name in kinds}


def table_rows(bench: str, a: dict[str, tuple[str, float]], b: dict[str, tuple[str, float]],
               threshold: float) -> list[str]:
    """Markdown rows of one bench: ratios first, then counts, RSS and times."""
    names = sorted(set(a) | set(b), key=lambda n: (KIND_ORDER[(b.get(n) or a[n])[0]],
                                                   list(b).index(n) if n in b else 0))
    rows = []
    for name in names:
        kind = (b.get(name) or a[name])[0]
        va = a.get(name, (kind, math.nan))[1]
        vb = b.get(name, (kind, math.nan))[1]
        change = relative_change(va, vb)
        ratio = "n/a" if math.isnan(change) else f"{change + 1:.3f}"
        flag = "" if math.isnan(change) or abs(change) <= threshold else \
            f"**{change:+.0%}**"
        rows.append(f"| {bench} | {name} | {kind} | {fmt(va)} | {fmt(vb)} | {ratio} | {flag} |")
    return rows


def fmt(v: float) -> str:
    return "-" if math.isnan(v) else f"{v:.4g}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", default=DEFAULT_A, help=f"revision A (default {DEFAULT_A})")
    ap.add_argument("--b", default="HEAD", help="revision B (default HEAD)")
    ap.add_argument("--a-built", type=Path, default=None, metavar="DIR",
                    help="copy A's compiled extensions from DIR, a checkout built from A's "
                         "compiled sources (instead of building them)")
    ap.add_argument("--b-built", type=Path, default=None, metavar="DIR",
                    help="the same for B")
    ap.add_argument("--benches", nargs="+", default=list(BENCHES))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threshold", type=float, default=0.05)
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per bench run")
    ap.add_argument("--keep-trees", action="store_true")
    ap.add_argument("--out", type=Path, default=AB / "table.md",
                    help="the table (default work/ab/table.md); the runs go beside it, .json")
    args = ap.parse_args(argv)
    unknown = [b for b in args.benches if not (REPO / "bench" / f"{b}.py").exists()]
    if unknown:
        print(f"bench.ab: no such bench: {', '.join(unknown)}", file=sys.stderr)
        return 2
    revs = {"a": git("rev-parse", "--short", args.a), "b": git("rev-parse", "--short", args.b)}
    t_start = time.perf_counter()
    ensure_data()
    trees = {side: make_tree(side, rev, getattr(args, f"{side}_built"))
             for side, rev in revs.items()}
    skipped = {b: why for b in args.benches if (why := skip_reason(b))}
    benches = [b for b in args.benches if b not in skipped]
    runs: list[Run] = []
    try:
        for rnd in range(args.rounds):
            for bench in benches:
                for side in ("a", "b") if rnd % 2 == 0 else ("b", "a"):
                    run = run_once(trees[side], bench, side, rnd, args.timeout)
                    runs.append(run)
                    print(f"round {rnd + 1} {bench} {side}={revs[side]}: exit {run.exit}, "
                          f"{run.wall_s:.1f} s, {run.peak_rss_mb:.0f} MB", flush=True)
    finally:
        if not args.keep_trees:
            for tree in trees.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO,
                               capture_output=True)
    elapsed = time.perf_counter() - t_start
    lines = [f"A = {revs['a']}, B = {revs['b']}; {args.rounds} rounds, --quick, alternating "
             f"(A then B, B then A); median per side; flag: |B/A - 1| > {args.threshold:.0%}. "
             f"Whole run {elapsed / 60:.1f} min, load average {os.getloadavg()[0]:.1f} at the "
             "end. Ratios are measured inside one process; times are absolute (load-bound).",
             "", "| bench | figure | kind | A median | B median | B/A | flag |",
             "|---|---|---|---|---|---|---|"]
    for bench in benches:
        mine = [r for r in runs if r.bench == bench]
        failed = [r for r in mine if r.exit != 0]
        for r in failed:
            lines.append(f"| {bench} | (run failed: exit {r.exit}, side {r.side}, round "
                         f"{r.round + 1}, {r.log}) | | | | | |")
        lines += table_rows(bench, medians([r for r in mine if r.side == "a"]),
                            medians([r for r in mine if r.side == "b"]), args.threshold)
    for bench, reason in skipped.items():
        lines.append(f"| {bench} | (skipped: {reason}) | | | | | |")
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    every_run = nan_to_none([r.__dict__ for r in runs])
    args.out.with_suffix(".json").write_text(json.dumps(every_run, indent=1) + "\n")
    print(text)
    return 1 if any(r.exit != 0 for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
