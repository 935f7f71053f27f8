"""Issue 31's speed question: ARS over the bounding tree automaton against the full
intersection (Bar-Hillel with the target's merged states), on CKY charts over SMS keypad
lattices scored by the embedded state_union 5-gram, measured in the same run.

Data: one sentence (`--sentence`, default a State of the Union-like sentence of 15 words);
its first L words are typed on the noisy keypad (`keypad.sample_observation`, seed
`--seed`) and the lattice keeps the `--top-k` most likely words per position; the chart is
`trees.convert.cky_chart` with binary rule weights from a symmetric Dirichlet(`--gamma`) per
span (Teichmann et al.'s G), leaves weighted by their ln emissions.

Per (K, L): CPU seconds (`time.process_time`) of `trees.api.decode` with method "ars" and
"full" (the intersection pruned by q^(0)'s bounds, `intersect.Pruning`), their ratio full/ARS
(> 1: ARS is faster), the forest nodes each built (ARS: its last q; full: the pruned
intersection), ARS's iterations, the unpruned full intersection's seconds and nodes (what
ln Z, samples and posteriors need), and both answers' ln p (they must agree: the run stops
on a disagreement). With `--samples N`, the same for N exact samples (ARS's
adaptive rejection against sampling the exact forest). Run as a module from the root:

    python -m bench.bench_trees --top-k 5 10 20 --lengths 5 8 11 15 --samples 100
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import maxarpa
from arsdecode.tasks.sms.keypad import KeypadChannel, default_model_path, sample_observation
from arsdecode.trees import api
from arsdecode.trees.convert import cky_chart

REPO = Path(__file__).resolve().parents[1]
SENTENCE = ("we have a great opportunity to build a better future for all of our people "
            "tonight")


def _timed(fn, *args, **kwargs):
    t0 = time.process_time()
    out = fn(*args, **kwargs)
    return out, time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top-k", type=int, nargs="+", default=[5, 10])
    ap.add_argument("--lengths", type=int, nargs="+", default=[5, 8, 11])
    ap.add_argument("--gamma", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--samples", type=int, default=0)
    ap.add_argument("--sentence", default=SENTENCE)
    args = ap.parse_args()
    lm = maxarpa.load(default_model_path())
    channel = KeypadChannel.from_vocab(lm.vocab)
    words = args.sentence.split()
    rows = []
    print(" K   L |  ars_s  full_s  full/ars  iters  ars_nodes  full_nodes  unpr_s unpr_nodes | "
          "ars_smp_s full_smp_s full/ars")
    for k in args.top_k:
        for length in args.lengths:
            rng = np.random.default_rng(args.seed + length)
            obs = " ".join(sample_observation(w, rng) for w in words[:length])
            chart = cky_chart(channel.build_lattice(obs, top_k=k),
                              np.random.default_rng(args.seed), args.gamma)
            ars, t_ars = _timed(api.decode, lm, chart, method="ars")
            full, t_full = _timed(api.decode, lm, chart, method="full")
            whole, t_whole = _timed(api.full_forest, lm, chart)
            if not (ars.certified and abs(ars.log_p - full.log_p) <= 1e-9):
                raise SystemExit(f"K={k} L={length}: ars {ars.log_p} != full {full.log_p}")
            row = {"top_k": k, "length": length, "ars_s": t_ars, "full_s": t_full,
                   "iterations": ars.iterations, "ars_nodes": ars.states,
                   "full_nodes": full.states, "unpruned_s": t_whole,
                   "unpruned_nodes": whole.num_nodes, "log_p": full.log_p}
            line = (f"{k:>2} {length:>3} | {t_ars:>6.3f} {t_full:>7.3f} {t_full / t_ars:>9.2f} "
                    f"{ars.iterations:>6} {ars.states:>10} {full.states:>11} "
                    f"{t_whole:>7.3f} {whole.num_nodes:>9} |")
            if args.samples:
                _, s_ars = _timed(api.sample, lm, chart, args.samples, seed=1, method="ars")
                _, s_full = _timed(api.sample, lm, chart, args.samples, seed=1, method="full")
                row.update(ars_sample_s=s_ars, full_sample_s=s_full)
                line += f" {s_ars:>9.3f} {s_full:>10.3f} {s_full / s_ars:>8.2f}"
            rows.append(row)
            print(line, flush=True)
    out = REPO / "work" / "bench" / "bench_trees.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))
    print(f"raw results: {out}")


if __name__ == "__main__":
    main()
