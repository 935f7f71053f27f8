"""Benchmark ARS exact decoding and sampling against the full-model reference (paper's "F").

For n = 3, 4, 5 and SMS lattices of growing length (4, 6, 8, 10) and width (top-10, top-100
candidates per position), it runs, in the same process and run:
  - ARS decode vs `full_decode` (the full model with KenLM-style state merging, a *stronger*
    baseline than the paper's literal F),
  - ARS sampling of 100 exact samples vs `full_sample` of 100 samples,
and prints seconds, the speed-up ratio, ARS iterations and states, and the fraction of the
literal full state space (all (n-1)-token contexts) that ARS built.

Usage: python -m bench.bench_ars [--models DIR] [--sentences K]
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
from pathlib import Path

import numpy as np

from bench.record import Record

REPO = Path(__file__).resolve().parent.parent


LITERAL_CAP = 300_000  # literal full-model states above which "F" is not run (reported nan)


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
    args = ap.parse_args()
    orders, lengths = ((3, 5), (6, 10)) if args.quick else ((3, 4, 5), (4, 6, 8, 10))
    figs = Record("bench_ars", quick=args.quick)
    ensure_models(args.models)
    records = [json.loads(x) for x in open(args.models / "test.jsonl", encoding="utf-8")]
    by_len: dict[int, list[dict]] = {}
    for r in records:
        by_len.setdefault(len(r["words"]), []).append(r)
    rows = []
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
                    t0 = time.perf_counter()
                    r = decode(lm, lat)
                    t_ars = time.perf_counter() - t0
                    t0 = time.perf_counter()
                    f = full_decode(lm, lat)
                    t_full = time.perf_counter() - t0
                    assert abs(f.log_p - r.log_p) < 1e-6, (f.log_p, r.log_p)
                    rng = np.random.default_rng(0)
                    t0 = time.perf_counter()
                    sample(lm, lat, 100, seed=0, batch=100, target_ar=0.2)
                    s_ars = time.perf_counter() - t0
                    t0 = time.perf_counter()
                    full_sample(lm, lat, 100, rng)
                    s_full = time.perf_counter() - t0
                    literal = full_state_count(lm, lat)
                    frac = r.states / literal
                    t_lit = float("nan")
                    if literal <= (0 if args.quick else LITERAL_CAP):  # quick: not run
                        t0 = time.perf_counter()
                        full_decode(lm, lat, minimize=False)
                        t_lit = time.perf_counter() - t0
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
