"""Benchmark ARS exact decoding and sampling against the full-model reference (paper's "F").

For n = 3, 4, 5 and SMS lattices of growing length (4, 6, 8, 10) and width (top-10, top-100
candidates per position), it runs, in the same process and run:
  - ARS decode vs `full_decode` (the full model with KenLM-style state merging, a *stronger*
    baseline than the paper's literal F),
  - ARS sampling of 100 exact samples vs `full_sample` of 100 samples,
and prints seconds, the speed-up ratio, ARS iterations and states, and the fraction of the
literal full state space (all (n-1)-token contexts) that ARS built.

Every time is CPU seconds (`time.process_time`), the median of --repeats calls of the same
work, after one warm-up of each of the four on the first lattice. Why: one call is 5-60 ms,
and its wall time, taken once, swung +-30% between runs on a shared machine, above the 5%
that an A/B of two revisions (`bench.ab`) must resolve; CPU time leaves out the time other
processes hold the core, and the median of repeats the rest of the jitter.

Usage: python -m bench.bench_ars [--models DIR] [--sentences K] [--repeats R]
  DIR holds lm.{3,4,5}.maxarpa and test.jsonl from `python -m data_prep.prepare_sms`
  (default work/sms; built on first use from state_union).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from bench.record import Record

REPO = Path(__file__).resolve().parent.parent


LITERAL_CAP = 300_000  # literal full-model states above which "F" is not run (reported nan)


def cpu_seconds(work: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """The median CPU seconds of `repeats` calls of `work`, and the first call's result."""
    times, first = [], None
    for k in range(repeats):
        t0 = time.process_time()
        out = work()
        times.append(time.process_time() - t0)
        if k == 0:
            first = out
    return statistics.median(times), first


def seeded(full_sample: Callable[..., Any], lm: Any, lat: Any) -> Any:
    """100 full-model samples from a fresh generator (every repeat draws the same ones)."""
    return full_sample(lm, lat, 100, np.random.default_rng(0))


def ensure_models(d: Path) -> None:
    if all((d / f"lm.{n}.maxarpa").exists() for n in (3, 4, 5)) and (d / "test.jsonl").exists():
        return
    subprocess.run([sys.executable, "-m", "data_prep.prepare_sms", "--out", str(d)], check=True,
                   cwd=REPO)


def main() -> None:
    import maxarpa
    from arsdecode.methods.ars import decode, sample
    from arsdecode.methods.full import full_decode, full_sample, full_state_count
    from arsdecode.tasks.sms.keypad import KeypadChannel

    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=Path, default=REPO / "work" / "sms")
    ap.add_argument("--sentences", type=int, default=3, help="sentences per (length) cell")
    ap.add_argument("--quick", action="store_true",
                    help="n 3 and 5, lengths 6 and 10, no literal F (bench.ab)")
    ap.add_argument("--repeats", type=int, default=5,
                    help="calls per timed figure, the median of their CPU seconds")
    args = ap.parse_args()
    reps = max(1, args.repeats)
    orders, lengths = ((3, 5), (6, 10)) if args.quick else ((3, 4, 5), (4, 6, 8, 10))
    figs = Record("bench_ars", quick=args.quick)
    ensure_models(args.models)
    records = [json.loads(x) for x in open(args.models / "test.jsonl", encoding="utf-8")]
    by_len: dict[int, list[dict]] = {}
    for r in records:
        by_len.setdefault(len(r["words"]), []).append(r)
    rows = []
    warm = False
    print(f"{'n':>2} {'len':>4} {'width':>6} | {'ARS dec s':>9} {'full dec s':>10} {'ratio':>7} "
          f"{'iters':>6} {'states':>7} {'frac of full':>12} | {'ARS smp s':>9} "
          f"{'full smp s':>10} {'ratio':>7} | {'lit F s':>9} {'ratio':>7} {'lit states':>10}")
    for n in orders:
        lm = maxarpa.load(args.models / f"lm.{n}.maxarpa")
        channel = KeypadChannel.from_vocab(lm.vocab)
        for length in lengths:
            for width in (10, 100):
                cell = []
                for rec in by_len.get(length, [])[: args.sentences]:
                    lat = channel.build_lattice(rec["observation"], top_k=width)
                    work = (partial(decode, lm, lat), partial(full_decode, lm, lat),
                            partial(sample, lm, lat, 100, seed=0, batch=100, target_ar=0.2),
                            partial(seeded, full_sample, lm, lat))
                    if not warm:  # imports and first-use set-up out of the first cell
                        for w in work:
                            w()
                        warm = True
                    t_ars, r = cpu_seconds(work[0], reps)
                    t_full, f = cpu_seconds(work[1], reps)
                    assert abs(f.log_p - r.log_p) < 1e-6, (f.log_p, r.log_p)
                    s_ars, _ = cpu_seconds(work[2], reps)
                    s_full, _ = cpu_seconds(work[3], reps)
                    literal = full_state_count(lm, lat)
                    frac = r.states / literal
                    t_lit = float("nan")
                    if literal <= (0 if args.quick else LITERAL_CAP):  # quick: not run
                        t_lit, _ = cpu_seconds(partial(full_decode, lm, lat, minimize=False), 1)
                    cell.append((t_ars, t_full, r.iterations, r.states, frac, s_ars, s_full,
                                 t_lit, literal))
                if not cell:
                    continue
                m = [statistics.mean(c[i] for c in cell) for i in range(9)]
                rows.append({"n": n, "length": length, "width": width, "ars_decode_s": m[0],
                             "full_decode_s": m[1], "iterations": m[2], "states": m[3],
                             "fraction_of_full": m[4], "ars_sample_s": m[5],
                             "full_sample_s": m[6], "literal_full_decode_s": m[7],
                             "literal_full_states": m[8], "sentences": len(cell)})
                print(f"{n:>2} {length:>4} {width:>6} | {m[0]:>9.3f} {m[1]:>10.3f} "
                      f"{m[1] / m[0]:>7.1f} {m[2]:>6.1f} {m[3]:>7.0f} {m[4]:>12.2e} | "
                      f"{m[5]:>9.3f} {m[6]:>10.3f} {m[6] / m[5]:>7.1f} | "
                      f"{m[7]:>9.3f} {m[7] / m[0]:>7.1f} {m[8]:>10.2e}", flush=True)
                cell_name = f"n{n}.len{length}.w{width}"
                figs.ratio(f"{cell_name}.full/ars_decode", m[1] / m[0])
                figs.ratio(f"{cell_name}.full/ars_sample", m[6] / m[5])
                figs.time(f"{cell_name}.ars_decode_s", m[0])
                figs.time(f"{cell_name}.ars_sample_s", m[5])
                figs.count(f"{cell_name}.iterations", m[2])
                figs.count(f"{cell_name}.states", m[3])
    out = REPO / "work" / "bench" / "bench_ars.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))
    print(f"raw results: {out}")
    figs.save()


if __name__ == "__main__":
    main()
