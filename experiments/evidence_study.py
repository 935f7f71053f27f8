"""How good are ARS's estimates of the evidence ln Z? Bias, 95% CI coverage and CI width per
second of work, for every estimator of arsdecode.methods.evidence, against exact ln Z.

Protocol: for each case (a model and a fixed lattice, exact ln Z by brute force when the lattice
is enumerable, else by the full-model DP arsdecode.methods.full.full_log_partition), run
`arsdecode.methods.ars.sample(n)` with seeds 0..S-1 and evaluate every estimator on the same trials.
- bias: mean of (ln Z_hat - ln Z) and of (Z_hat / Z - 1), with its standard error;
- coverage: fraction of seeds whose 95% interval holds the exact ln Z;
- width: mean CI width (nats); width x sqrt(seconds) is the width one second of sampling would
  give (width shrinks as 1 / sqrt(work)), so estimators and cases compare at equal cost. All
  estimators share the trials, so their cost is the same sampling run.

    python -m experiments.evidence_study [--seeds 100] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np

import maxarpa
from arsdecode.lattice import Lattice
from arsdecode.methods import evidence
from arsdecode.methods.ars import sample
from arsdecode.methods.full import full_log_partition
from arsdecode.testing.brute import brute_model
from arsdecode.testing.random_arpa import random_arpa_text
from experiments.report.evidence import markdown
from maxarpa.model import Model

REPO = Path(__file__).resolve().parents[1]

# (name, model seed, order, vocabulary, positive-backoff fraction, lattice length, width, n)
CASES = [
    ("o3 L4 n=20", 13, 3, 5, 0.5, 4, 3, 20),
    ("o3 L4 n=200", 13, 3, 5, 0.5, 4, 3, 200),
    ("o4 L5 n=100", 15, 4, 4, 0.5, 5, 3, 100),
    ("o5 L5 n=100", 17, 5, 4, 0.5, 5, 3, 100),
    ("o3 L40 n=100", 13, 3, 5, 0.5, 40, 3, 100),
    ("o3 L4 n=2000", 13, 3, 5, 0.5, 4, 3, 2000),
]


def random_model(seed: int, order: int, vocab: int, frac: float, directory: Path) -> Model:
    path = directory / f"evidence_r{seed}_o{order}.arpa"
    path.write_text(random_arpa_text(random.Random(seed), order, vocab, frac, False, density=0.8))
    return maxarpa.load(path)


def make_lattice(lm: Model, length: int, width: int, seed: int) -> Lattice:
    rng = random.Random(seed)
    words = [w for w in lm.vocab if w not in ("<s>", "</s>")]
    return Lattice.from_lists([[(w, round(rng.uniform(-3, 0), 6))
                                for w in rng.sample(words, min(width, len(words)))]
                               for _ in range(length)])


def run_case(lm: Model, lattice: Lattice, n: int, seeds: int) -> dict:
    if lattice.num_paths() <= 5000:
        exact, ref = brute_model(lm, lattice).log_Z, "brute force"
    else:
        exact, ref = full_log_partition(lm, lattice), "full DP"
    rows: dict[str, list] = {name: [] for name in ("importance", "rejection",
                                                   "importance_empirical",
                                                   "importance_plain", "combined")}
    seconds = []
    for seed in range(seeds):
        t0 = time.process_time()
        r = sample(lm, lattice, n, seed)
        seconds.append(time.process_time() - t0)
        t = r.trace
        est = evidence.all_estimates(t.log_Z_q, t.accepted, np.subtract(t.log_p, t.log_q))
        for name, e in est.items():
            rows[name].append((e.log_Z, e.ci[0], e.ci[1]))
    sec = float(np.mean(seconds))
    out = {"reference": ref, "log_Z": exact, "seconds_per_run": sec, "estimators": {}}
    for name, vals in rows.items():
        a = np.asarray(vals)
        err = a[:, 0] - exact
        ratio = np.exp(err)
        width = a[:, 2] - a[:, 1]
        out["estimators"][name] = {
            "bias_log": float(err.mean()),
            "bias_log_se": float(err.std(ddof=1) / math.sqrt(len(err))),
            "rel_bias_Z": float(ratio.mean() - 1.0),
            "rmse_log": float(math.sqrt((err**2).mean())),
            "coverage": float(np.mean((a[:, 1] <= exact) & (exact <= a[:, 2]))),
            "width": float(width.mean()),
            "width_1s": float(width.mean() * math.sqrt(sec)),
            "rmse_1s": float(math.sqrt((err**2).mean()) * math.sqrt(sec)),
        }
    return out


def study(seeds: int, directory: Path) -> dict:
    directory.mkdir(parents=True, exist_ok=True)
    results = {"seeds": seeds, "cases": {}}
    for name, mseed, order, vocab, frac, length, width, n in CASES:
        lm = random_model(mseed, order, vocab, frac, directory)
        lattice = make_lattice(lm, length, width, seed=mseed + length)
        t0 = time.perf_counter()
        results["cases"][name] = run_case(lm, lattice, n, seeds)
        print(f"{name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return results


def pick_default(results: dict) -> str:
    """The estimator with the smallest error at equal work: mean over cases of RMSE(ln Z) x
    sqrt(seconds). Measured error, not the estimator's own interval: "combined" has the
    narrowest interval only because it ignores the correlation of its two parts."""
    names = next(iter(results["cases"].values()))["estimators"].keys()
    return min(names, key=lambda m: np.mean([c["estimators"][m]["rmse_1s"]
                                              for c in results["cases"].values()]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--work", type=Path, default=REPO / "work" / "evidence")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    results = study(args.seeds, args.work)
    results["default"] = pick_default(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(markdown(results))
    print(f"\nsmallest RMSE at equal work: {results['default']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
