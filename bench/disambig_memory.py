"""Where the memory of `arsdecode disambig` goes, phase by phase (issue 34, "Memory").

Why its own module: the whole-process peak (bench/bench_disambig.py) says how much, not where.
This runs the steps `arsdecode.cli.disambig.run` takes, one child process per setting, and
after each phase records the resident set (VmRSS), the peak so far (VmHWM), and what
tracemalloc saw allocated in the phase (Python objects and numpy arrays; the compiled core's
C++ vectors are invisible to it, so RSS minus tracemalloc is that, the interpreter and the
shared libraries). Phases: the interpreter, `import numpy`, the CLI's imports, the model (read
or mapped), the map and the text (lattices), the compiled DP's set-up (its context tables and
the walk's tables), then the setting's work (decode, k-best, forward-backward) with the DP's
transition cache size after it. The resident set is split into file pages (a mapped binary
model's, shared with the page cache and every process mapping the file) and private memory
(copies, tables, caches): issue 34's -mix-lm profile needs the two apart.

Usage: python -m bench.disambig_memory --text OBS --map MAP [--lm M] [--mix-lm G --lambda L]
           [--settings best nbest posteriors mix-lm] [--no-tracemalloc] [--doc]
           [--baseline-tree DIR]
With --baseline-tree, every setting is run again from the checkout DIR (A, its own copy of
this module) and from this one (B), without tracemalloc, and a table of A -> B per phase
follows (issue 34: A/B in the same run).
Prints one table per setting (MB); `--json` writes them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

SETTINGS = {"best": [], "nbest": ["--nbest", "10"], "posteriors": ["--posteriors", "--totals"],
            "mix-lm": []}
"""disambig's settings; "mix-lm" is 1-best with the --mix-lm model (run when one is given)."""


def status_mb() -> dict[str, float]:
    """VmRSS, VmHWM, RssAnon and RssFile of this process in MB, from /proc/self/status.
    RssFile is the file pages mapped in (a mapped binary model's, shared with the page
    cache), RssAnon the process's own memory (copies, tables, caches)."""
    got = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            got[key] = int(value.split()[0]) / 1024.0
    return got


class Phases:
    """Records (phase, RSS, peak RSS, tracemalloc net and peak in the phase) in MB."""

    def __init__(self, trace: bool) -> None:
        self.trace = trace
        self.rows: list[dict[str, Any]] = []

    def mark(self, name: str) -> None:
        st = status_mb()
        row: dict[str, Any] = {"phase": name, "rss_mb": round(st["VmRSS"], 1),
                               "peak_rss_mb": round(st["VmHWM"], 1),
                               "file_mb": round(st.get("RssFile", 0.0), 1),
                               "private_mb": round(st.get("RssAnon", 0.0), 1)}
        if self.trace and tracemalloc.is_tracing():
            cur, peak = tracemalloc.get_traced_memory()
            row["traced_mb"] = round(cur / 2**20, 1)
            row["traced_peak_in_phase_mb"] = round(peak / 2**20, 1)
            tracemalloc.reset_peak()
        self.rows.append(row)


def child(args: argparse.Namespace) -> list[dict[str, Any]]:
    """One setting, in this process (the parent runs each setting as its own child)."""
    ph = Phases(not args.no_tracemalloc)
    if ph.trace:
        tracemalloc.start()
    ph.mark("interpreter")
    import numpy  # noqa: F401

    ph.mark("import numpy")
    from arsdecode.cli.disambig import _posteriors
    from arsdecode.cli.main import build_parser
    from arsdecode.cli.target import build, target_spec
    from arsdecode.lattice.disambig_map import DisambigMap, text_sentences

    ph.mark("CLI imports")
    argv = ["disambig", "--text", args.text, "--map", args.map, "--logmap",
            *SETTINGS[args.setting]]
    if args.lm:
        argv += ["--lm", args.lm]
    if args.setting == "mix-lm":
        argv += ["--mix-lm", args.mix_lm, "--lambda", str(args.lam)]
    ns = build_parser().parse_args(argv)
    from arsdecode.api import DEFAULT_LM

    spec = target_spec(ns, lm=str(DEFAULT_LM) if ns.lm is None else ns.lm, order=None,
                       sentence_start=True, sentence_end=True)
    target = build(spec).model
    ph.mark("model read/mapped")
    dmap = DisambigMap.read(ns.map, logmap=True)
    sentences = text_sentences(dmap, ns.text, mapw=1.0, keep_unk=False)
    lattices = [lat for _, lat in sentences if lat is not None]
    ph.mark("map + lattices")
    from arsdecode.api import decode, decode_kbest, decode_many

    decode(target, lattices[0], method="auto")
    ph.mark("DP set-up (1st lattice)")
    if args.setting in ("best", "mix-lm"):
        from arsdecode.cli.disambig import _chunks

        for chunk in _chunks(list(lattices)):  # as the CLI batches them
            decode_many(target, [lat for lat in chunk if lat is not None], method="auto")
    elif args.setting == "nbest":
        for lat in lattices[:20]:
            decode_kbest(target, lat, min(10, lat.num_paths()))
    else:
        for _ in _posteriors(target, lattices):  # lazily, one sentence at a time, as the CLI
            pass
    ph.mark("the setting's work (1-best, 10-best of 20, or forward-backward)")
    ph.rows[-1]["dp_cache_mb"] = round(_cache_mb(target), 1)
    return ph.rows


def _cache_mb(target: Any) -> float:
    """MB the compiled DPs' transition caches hold now, over every DP built in this process."""
    from arsdecode.methods import fast_full

    return sum(dp.cache_bytes() for dp in list(fast_full._DP.values())  # None: no compiled path
               if dp is not None) / 2**20


def run_child(args: argparse.Namespace, setting: str, trace: bool,
              tree: Path = REPO) -> list[dict[str, Any]]:
    """One setting's phases, measured in a child process of its own, run from the checkout
    `tree` (its own copy of this module, so each checkout measures its own CLI's steps)."""
    from bench.bench_disambig import tree_env

    cmd = [sys.executable, "-m", "bench.disambig_memory", "--setting", setting,
           "--text", _absolute(args.text), "--map", _absolute(args.map),
           "--lambda", str(args.lam)]
    for flag, value in (("--lm", args.lm), ("--mix-lm", args.mix_lm)):
        if value:
            cmd += [flag, _absolute(value)]
    if not trace:
        cmd.append("--no-tracemalloc")
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=tree,
                          env=tree_env(tree))
    return json.loads(proc.stdout.splitlines()[-1])


def _absolute(path: str) -> str:
    return str(Path(path).resolve())


Rows = dict[str, list[dict[str, Any]]]  # setting -> its phases' rows


def _phase_table(intro: str, out: Rows, cell: Callable[[str, int], str]) -> str:
    """Phases as rows, settings as columns, `cell(setting, phase index)` in each."""
    settings = list(out)
    lines = [intro, "", "| phase | " + " | ".join(settings) + " |",
             "|---|" + "---|" * len(settings)]
    for i, row in enumerate(out[settings[0]]):
        lines.append(f"| {row['phase']} | " + " | ".join(cell(st, i) for st in settings)
                     + " |")
    return "\n".join(lines)


def ab_markdown(a: Rows, b: Rows, baseline: Path) -> str:
    """Each cell "A -> B": RSS after the phase (peak so far) [file pages], MB; A is
    `baseline`, B this checkout, in the same run."""
    def cell(st: str, i: int) -> str:
        return " -> ".join(f"{r['rss_mb']:.1f} ({r['peak_rss_mb']:.1f}) [{r['file_mb']:.0f}]"
                           for r in (a[st][i], b[st][i]))

    return _phase_table(f"A/B in the same run: A is the checkout `{baseline}`, B this one; "
                        "MB, RSS after the phase (peak so far), file pages in brackets.",
                        b, cell)


def markdown(out: Rows, traced: Rows, args: argparse.Namespace) -> str:
    """Each cell: RSS after the phase (peak so far), its file pages, traced MB."""
    import datetime

    def cell(st: str, i: int) -> str:
        r, t = out[st][i], traced[st][i]
        return (f"{r['rss_mb']:.0f} ({r['peak_rss_mb']:.0f}), file "
                f"{r.get('file_mb', 0.0):.0f} / {t['traced_mb']:.0f}"
                + (f", cache {r['dp_cache_mb']} MB" if "dp_cache_mb" in r else ""))

    return _phase_table(
        f"Generated by `python -m bench.disambig_memory --doc` on "
        f"{datetime.date.today().isoformat()}: model {args.lm or 'the embedded 5-gram'}"
        + (f" (mix-lm: mixed with {Path(args.mix_lm).name}, lambda {args.lam})"
           if args.mix_lm else "") + "; MB, RSS after the phase (peak so far), of "
        "which file pages (the mapped model) / traced by tracemalloc.", out, cell)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--text", required=True)
    ap.add_argument("--map", required=True)
    ap.add_argument("--lm", default=None)
    ap.add_argument("--mix-lm", default=None)
    ap.add_argument("--lambda", dest="lam", type=float, default=0.6)
    ap.add_argument("--settings", nargs="+", default=None, choices=list(SETTINGS),
                    help="default: all, mix-lm only with --mix-lm")
    ap.add_argument("--setting", choices=list(SETTINGS), help=argparse.SUPPRESS)
    ap.add_argument("--no-tracemalloc", action="store_true")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--baseline-tree", type=Path, default=None, metavar="DIR",
                    help="also run every setting from the checkout DIR (A) and print the "
                         "phases A -> B")
    ap.add_argument("--doc", action="store_true",
                    help="write docs/performance.md's section (each setting run twice)")
    args = ap.parse_args(argv)
    if args.setting:  # the child
        print(json.dumps(child(args)))
        return 0
    if args.settings is None:
        args.settings = [st for st in SETTINGS if st != "mix-lm" or args.mix_lm]
    if "mix-lm" in args.settings and not args.mix_lm:
        ap.error("the mix-lm setting needs --mix-lm")
    from bench.bench_disambig import compile_tree

    compile_tree(REPO)  # the children import compiled modules, as an installed package does
    out: dict[str, list[dict[str, Any]]] = {}
    traced: dict[str, list[dict[str, Any]]] = {}
    for setting in args.settings:
        out[setting] = run_child(args, setting, trace=not args.no_tracemalloc and not args.doc)
        if args.doc:  # RSS from a plain run (tracemalloc's own tables inflate it), traced apart
            traced[setting] = run_child(args, setting, trace=True)
        print(f"## {setting}\n| phase | RSS MB | peak RSS MB | file pages MB | private MB | "
              "traced MB | traced peak in phase |\n|---|---|---|---|---|---|---|")
        for r in out[setting]:
            print(f"| {r['phase']} | {r['rss_mb']} | {r['peak_rss_mb']} | {r['file_mb']} | "
                  f"{r['private_mb']} | "
                  f"{r.get('traced_mb', '-')} | {r.get('traced_peak_in_phase_mb', '-')} |"
                  + (f" cache {r['dp_cache_mb']} MB" if "dp_cache_mb" in r else ""), flush=True)
    doc = markdown(out, traced, args) if args.doc else ""
    if args.baseline_tree is not None:
        compile_tree(args.baseline_tree)
        base = {st: run_child(args, st, False, args.baseline_tree) for st in args.settings}
        mine = {st: run_child(args, st, False) for st in args.settings}
        table = ab_markdown(base, mine, args.baseline_tree)
        print(table)
        doc += "\n\n" + table
    if args.doc:
        from bench.perf_doc import write_section

        write_section("disambig-memory", doc.strip())
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
