"""Issue 33's speed goals for `arsdecode segment`, against wordninja and wordsegment as shipped,
in one run: characters per second in process (after loading) and whole process (a fresh
Python process segmenting a file, imports and loading included), with peak RSS.

Why ratios: on a shared machine the absolute speeds move with the load; each round runs every
tool once, in turn, so a load spike hits them all, and the record keeps ours / wordninja
(the issue's goal: whole process at least wordninja's, in process at least 150k chars/s).
Each speed is given by wall time and by CPU time (user + system): on a loaded machine the
wall time counts the other processes' turns, the CPU time much less so.

Test text: the test sets of `data_prep.segment_devsets` (hashtags, URLs, held-out sentences;
built into --sets if missing). In process, each tool runs in a child process of its own
(`--child TOOL`: its RSS is its own), over every set; wordsegment, about 300 chars/s on
sentences, gets the first --slow-chars characters of each set. Whole process: each tool's
command on the sentences file (ours: `python -m arsdecode segment --file`, with the model's
binary cache already built; wordsegment on its first --slow-chars characters). --tree DIR
adds our whole-process command run from another checkout (an A/B against it, e.g. main).
--lines N adds one whole-process run of ours on N lines (the sentences repeated): a
million-line file is streamed in batches, so its peak RSS is about a small file's.

Usage: python -m bench.bench_segment [--rounds 3] [--tree /work/main] [--lines N] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.record import Record

REPO = Path(__file__).resolve().parent.parent
SETS = ("hashtags", "urls", "sentences")
TOOLS = ("ours", "wordninja", "wordsegment")
SLOW = {"wordsegment"}

WHOLE = {
    "wordninja": "import sys, wordninja\n"
                 "for line in open(sys.argv[1]):\n"
                 "    print(' '.join(wordninja.split(line.strip())))\n",
    "wordsegment": "import sys, wordsegment\nwordsegment.load()\n"
                   "for line in open(sys.argv[1]):\n"
                   "    print(' '.join(wordsegment.segment(line.strip())))\n",
}


def read_sets(folder: Path) -> dict[str, list[str]]:
    """The raw test inputs of each kind (building the sets first if missing)."""
    if not (folder / "test.sentences.jsonl").is_file():
        subprocess.run([sys.executable, "-m", "data_prep.segment_devsets", "--out", str(folder)],
                       check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    return {kind: [json.loads(line)["input"] for line in
                   (folder / f"test.{kind}.jsonl").read_text().splitlines() if line.strip()]
            for kind in SETS}


def prefix(texts: list[str], chars: int) -> list[str]:
    """The first texts holding about `chars` characters (all of them if chars <= 0)."""
    if chars <= 0:
        return texts
    out, n = [], 0
    for t in texts:
        if n >= chars:
            break
        out.append(t)
        n += len(t)
    return out


def child(tool: str, folder: Path, slow_chars: int) -> dict[str, Any]:
    """In-process speed of one tool over every set (run in a child process of its own)."""
    start = time.perf_counter()
    if tool == "ours":
        from arsdecode.tasks.segment.segmenter import default_segmenter

        seg = default_segmenter()

        def run(texts: list[str]) -> None:
            seg.segment_many(texts)
    elif tool == "wordninja":
        import wordninja  # type: ignore[import-untyped]

        def run(texts: list[str]) -> None:
            for t in texts:
                wordninja.split(t)
    else:
        import wordsegment  # type: ignore[import-untyped]

        wordsegment.load()

        def run(texts: list[str]) -> None:
            for t in texts:
                wordsegment.segment(t)
    load_s = time.perf_counter() - start
    sets = read_sets(folder)
    run(sets["hashtags"][:20])  # warm-up
    out: dict[str, Any] = {"load_s": load_s}
    for kind in SETS:
        texts = prefix(sets[kind], slow_chars if tool in SLOW else 0)
        t0, c0 = time.perf_counter(), time.process_time()
        run(texts)
        chars = sum(map(len, texts))
        out[kind] = chars / (time.perf_counter() - t0)
        out[f"{kind}.cpu"] = chars / (time.process_time() - c0)
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return out


def timed(argv: list[str], root: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MB) of one process run from
    `root`, by GNU time."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", *argv], check=True, cwd=root,
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall, user, system, kb = proc.stderr.strip().splitlines()[-1].split()
    return float(wall), float(user) + float(system), float(kb) / 1024.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", type=Path, default=REPO / "work" / "segment" / "sets")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--slow-chars", type=int, default=4000,
                    help="characters of each set given to wordsegment")
    ap.add_argument("--tree", type=Path, default=None, help="another checkout: A/B of ours")
    ap.add_argument("--lines", type=int, default=0, help="also ours on a file of N lines")
    ap.add_argument("--quick", action="store_true", help="one round, no wordsegment whole")
    ap.add_argument("--child", choices=TOOLS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.sets, args.slow_chars)))
        return 0
    rounds = 1 if args.quick else args.rounds
    sets = read_sets(args.sets)
    py = sys.executable
    rec = Record("bench_segment", quick=args.quick)
    with tempfile.TemporaryDirectory(prefix="bench_segment_") as tmp:
        sent = Path(tmp) / "sentences.txt"
        sent.write_text("\n".join(sets["sentences"]) + "\n")
        slow = Path(tmp) / "sentences.slow.txt"
        slow.write_text("\n".join(prefix(sets["sentences"], args.slow_chars)) + "\n")
        scripts = {}
        for tool, code in WHOLE.items():
            scripts[tool] = Path(tmp) / f"run_{tool}.py"  # not {tool}.py: it would import itself
            scripts[tool].write_text(code)
        ours_cmd = [py, "-m", "arsdecode", "segment", "--file", str(sent)]
        subprocess.run(ours_cmd, check=True, cwd=REPO, stdout=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": str(REPO)})  # builds the cache
        whole_cases: dict[str, tuple[list[str], Path, Path]] = {
            "ours": (ours_cmd, REPO, sent),
            "wordninja": ([py, str(scripts["wordninja"]), str(sent)], REPO, sent)}
        if not args.quick:
            whole_cases["wordsegment"] = ([py, str(scripts["wordsegment"]), str(slow)], REPO,
                                          slow)
        if args.tree is not None:
            whole_cases["ours [--tree]"] = (ours_cmd, args.tree.resolve(), sent)
        inproc: dict[str, list[dict[str, Any]]] = {t: [] for t in TOOLS}
        whole: dict[str, list[tuple[float, float, float]]] = {c: [] for c in whole_cases}
        for _ in range(rounds):
            for tool in TOOLS:
                out = subprocess.run([py, "-m", "bench.bench_segment", "--child", tool,
                                      "--sets", str(args.sets), "--slow-chars",
                                      str(args.slow_chars)], check=True, cwd=REPO,
                                     capture_output=True, text=True)
                inproc[tool].append(json.loads(out.stdout.strip().splitlines()[-1]))
            for name, (cmd, root, _) in whole_cases.items():
                whole[name].append(timed(cmd, root))
        for tool in TOOLS:
            for key in (*SETS, *(f"{k}.cpu" for k in SETS), "load_s", "rss_mb"):
                value = statistics.median(r[key] for r in inproc[tool])
                if key == "load_s":
                    rec.time(f"inproc.{tool}.load_s", value)
                elif key == "rss_mb":
                    rec.add(f"inproc.{tool}.peak_rss_mb", value, "rss_mb")
                else:
                    rec.add(f"inproc.{tool}.{key}.chars_per_s", value, "count")
        for kind in (*SETS, *(f"{k}.cpu" for k in SETS)):
            rec.ratio(f"inproc.{kind}.ours/wordninja", statistics.median(
                a[kind] / b[kind] for a, b in zip(inproc["ours"], inproc["wordninja"],
                                                  strict=True)))
        for name, (_, _, text_file) in whole_cases.items():
            chars = sum(len(line) for line in text_file.read_text().splitlines())
            wall = statistics.median(w for w, _, _ in whole[name])
            cpu = statistics.median(c for _, c, _ in whole[name])
            rec.time(f"whole.{name}.s", wall)
            rec.time(f"whole.{name}.cpu_s", cpu)
            rec.add(f"whole.{name}.chars_per_s", chars / wall, "count")
            rec.add(f"whole.{name}.cpu_chars_per_s", chars / cpu, "count")
            rec.add(f"whole.{name}.peak_rss_mb", max(m for _, _, m in whole[name]), "rss_mb")
        pairs = [("ours/wordninja", "wordninja")] + (
            [("ours/tree", "ours [--tree]")] if args.tree is not None else [])
        for label, other in pairs:  # speed ratios: the other's seconds over ours
            for k, unit in ((0, "wall"), (1, "cpu")):
                rec.ratio(f"whole.sentences.{unit}.{label}", statistics.median(
                    b[k] / a[k] for a, b in zip(whole["ours"], whole[other], strict=True)))
        if args.lines:
            big = Path(tmp) / "big.txt"
            lines = sets["sentences"]
            with big.open("w") as fh:
                for k in range(args.lines):
                    fh.write(lines[k % len(lines)] + "\n")
            chars = sum(len(lines[k % len(lines)]) for k in range(args.lines))
            wall, cpu, rss = timed([py, "-m", "arsdecode", "segment", "--file", str(big)], REPO)
            rec.time(f"whole.ours.{args.lines}_lines.s", wall)
            rec.add(f"whole.ours.{args.lines}_lines.chars_per_s", chars / wall, "count")
            rec.add(f"whole.ours.{args.lines}_lines.cpu_chars_per_s", chars / cpu, "count")
            rec.add(f"whole.ours.{args.lines}_lines.peak_rss_mb", rss, "rss_mb")
    for name, fig in rec.figures.items():
        print(f"{name:45s} {fig['value']:14,.2f}  ({fig['kind']})")
    rec.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
