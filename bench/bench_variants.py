"""Compare the refinement variants of Algorithm 2 (QAutomaton variant=...), same run.

"paper": a new state copies its suffix state's outgoing edges; only the path's edge is lowered.
"all-edges": a new state's whole row of outgoing edges gets max-backoff weights at the new context.
For exact decoding (full candidate lists) and sampling (top-100, B=100, to AR-100 >= 20%)
on length-10 SMS sentences with the 5-gram, it prints mean iterations, states and seconds per
variant and the ratio paper/all-edges.

Every time is CPU seconds (`time.process_time`), the median of --repeats calls of the same
work (`bench_ars.cpu_seconds`; the calls are deterministic, seeded): a single wall-clock call
of 80-200 ms swung by tens of percent on a loaded machine, far above the 5% an A/B must see.

Usage: python -m bench.bench_variants [--models work/sms] [--sentences 10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
from functools import partial
from pathlib import Path

from bench.bench_ars import cpu_seconds
from bench.record import Record

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    import maxarpa
    from arsdecode.methods.ars import decode, sample
    from arsdecode.tasks.sms.keypad import KeypadChannel

    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=Path, default=REPO / "work" / "sms")
    ap.add_argument("--sentences", type=int, default=10)
    ap.add_argument("--order", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="one sentence (bench.ab)")
    ap.add_argument("--repeats", type=int, default=3, help="calls per timing (the median)")
    args = ap.parse_args()
    reps = max(1, args.repeats)
    if args.quick:
        args.sentences = 1
    lm = maxarpa.load(args.models / f"lm.{args.order}.maxarpa")
    channel = KeypadChannel.from_vocab(lm.vocab)
    recs = [json.loads(x) for x in open(args.models / "test.jsonl", encoding="utf-8")]
    recs = [r for r in recs if len(r["words"]) == 10][: args.sentences]
    table: dict[str, dict[str, float]] = {}
    for variant in ("all-edges", "paper"):
        dec, smp = [], []
        for r in recs:
            lat = channel.build_lattice(r["observation"])
            seconds, d = cpu_seconds(partial(decode, lm, lat, variant=variant), reps)
            dec.append((d.iterations, d.states, seconds))
            lat100 = channel.build_lattice(r["observation"], top_k=100)
            seconds, s = cpu_seconds(partial(
                sample, lm, lat100, 1, seed=0, batch=100, target_ar=0.2, variant=variant,
                stop_when_adapted=True), reps)
            smp.append((s.trials, s.states, seconds))
        table[variant] = {
            "decode_iterations": statistics.mean(x[0] for x in dec),
            "decode_states": statistics.mean(x[1] for x in dec),
            "decode_s": statistics.mean(x[2] for x in dec),
            "sample_trials": statistics.mean(x[0] for x in smp),
            "sample_states": statistics.mean(x[1] for x in smp),
            "sample_s": statistics.mean(x[2] for x in smp),
        }
    print(f"{len(recs)} length-10 sentences, {args.order}-gram")
    print(f"{'':22}{'all-edges':>10}{'paper':>10}{'paper/all-edges':>17}")
    for key in table["all-edges"]:
        a, b = table["all-edges"][key], table["paper"][key]
        print(f"{key:22}{a:>10.3f}{b:>10.3f}{b / a:>13.2f}")
    figs = Record("bench_variants", quick=args.quick)
    for key in table["all-edges"]:
        figs.ratio(f"paper/all-edges.{key}", table["paper"][key] / table["all-edges"][key])
    for variant, row in table.items():
        for key, value in row.items():
            figs.add(f"{variant}.{key}", value, "time" if key.endswith("_s") else "count")
    figs.save()
    out = REPO / "work" / "bench" / "bench_variants.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
