"""The approximate tools against exact ARS, on the same models and lattices; writes
docs/results-approx.md and its plots (docs/img/approx/).

Sections: (1) beam search against exact decoding on SMS and POS: search errors (the beam's
path scores below the certified optimum), accuracy and time against beam width; (2) samplers:
total variation to the exact distribution on enumerable lattices against time (exact ARS vs
Gibbs); marginal error against time on real POS lattices, exact-sample marginals as reference;
(3) ln Z: randomized forward DP against ARS's importance estimator, full DP as reference;
(4) the evidence-estimator study (experiments/evidence_study.py). Times are process CPU
seconds of one core, model loading and lattice construction excluded.

    python -m experiments.approx_vs_exact --sms work/sms --pos work/pos
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

import maxarpa
from arsdecode.core.tolerances import CERTIFICATE_TOL
from arsdecode.methods.approx import beam_search, gibbs, randomized_log_partition
from arsdecode.methods.ars import decode, sample
from arsdecode.methods.full import full_log_partition
from arsdecode.methods.marginals import marginals_from_samples
from arsdecode.tasks.pos.emissions import TnTEmissions
from arsdecode.tasks.pos.evaluation import read_tagged
from arsdecode.tasks.sms.keypad import KeypadChannel
from arsdecode.testing.brute import brute_model
from experiments import evidence_study
from experiments.report.approx import render
from maxarpa.model import Model

REPO = Path(__file__).resolve().parents[1]

WIDTHS = [1, 2, 4, 8, 16, 64]
IMG = REPO / "docs" / "img" / "approx"
DOC = REPO / "docs" / "results-approx.md"


def cpu() -> float:
    return time.process_time()


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ----- (1) beam search vs exact ------------------------------------------------------------
def beam_study(lm: Model, lattices: list, gold: list[list[str]]) -> dict:
    """Per width: search-error rate, accuracy, CPU seconds; and the same for exact ARS."""
    exact_lp, exact_pred, t_exact = [], [], 0.0
    for lat in lattices:
        t0 = cpu()
        d = decode(lm, lat)
        t_exact += cpu() - t0
        assert d.certified
        exact_lp.append(d.log_p)
        exact_pred.append(d.tokens)
    out = {"n": len(lattices), "tokens": sum(map(len, gold)),
           "exact": {"seconds": t_exact, "accuracy": accuracy(exact_pred, gold)}, "beam": {}}
    for w in WIDTHS:
        errs, preds, secs, gap = 0, [], 0.0, []
        for lat, best in zip(lattices, exact_lp):
            t0 = cpu()
            b = beam_search(lm, lat, w)
            secs += cpu() - t0
            preds.append(b.tokens)
            errs += b.log_p < best - CERTIFICATE_TOL  # a search error: below the optimum
            gap.append(best - b.log_p)
        out["beam"][w] = {"search_error_rate": errs / len(lattices), "seconds": secs,
                          "accuracy": accuracy(preds, gold), "mean_gap": float(np.mean(gap))}
        say(f"  width {w}: errors {errs}/{len(lattices)} seconds {secs:.1f}")
    return out


def accuracy(pred: list[list[str]], gold: list[list[str]]) -> float:
    ok = sum(p == g for ps, gs in zip(pred, gold) for p, g in zip(ps, gs))
    return ok / sum(map(len, gold))


def sms_setup(sms: Path, n: int, top_k: int):
    lm = maxarpa.load(next(p for p in (sms / "lm.5.maxarpa", sms / "lm.5.arpa") if p.is_file()))
    channel = KeypadChannel.from_vocab(lm.vocab)
    recs = [json.loads(line) for line in (sms / "test.jsonl").read_text().splitlines()][:n]
    return lm, [channel.build_lattice(r["observation"], top_k=top_k) for r in recs], \
        [r["words"] for r in recs]


def pos_setup(pos: Path, n: int | None):
    lm = maxarpa.load(next(p for p in (pos / "tags.5.maxarpa", pos / "tags.5.arpa") if p.is_file()))
    em = TnTEmissions.load(pos / "emissions.json.gz")
    test = read_tagged(pos / "test.tsv")
    test = test if n is None else test[:n]
    return lm, [em.lattice([w for w, _ in s]) for s in test], [[t for _, t in s] for s in test]


# ----- (2) samplers --------------------------------------------------------------------------
SAMPLE_NS = [10, 30, 100, 300, 1000, 3000]
SWEEPS = [10, 30, 100, 300, 1000]


def tv_study(lm: Model, lattices: list) -> dict:
    """TV(empirical, exact) against CPU time for ARS (n samples) and Gibbs (sweeps)."""
    res = {"ars": [], "gibbs": []}
    for k, lat in enumerate(lattices):
        dist = brute_model(lm, lat).distribution()
        for n in SAMPLE_NS:
            t0 = cpu()
            r = sample(lm, lat, n, seed=k)
            res["ars"].append((k, n, cpu() - t0, tv_paths(r.samples, dist)))
        for s in SWEEPS:
            t0 = cpu()
            g = gibbs(lm, lat, s, np.random.default_rng(k))
            paths = [[lat.tokens[i][j] for i, j in enumerate(x)] for x in g.samples]
            res["gibbs"].append((k, s, cpu() - t0, tv_paths(paths, dist)))
    return res


def tv_paths(samples, dist) -> float:
    counts = Counter(tuple(s) for s in samples)
    n = len(samples)
    keys = set(dist) | set(counts)
    return 0.5 * sum(abs(counts.get(p, 0) / n - dist.get(p, 0.0)) for p in keys)


def marginal_study(lm: Model, lattices: list, ref_n: int) -> dict:
    """Mean per-position TV between estimated and reference marginals, against CPU time."""
    res = {"ars": [], "gibbs": [], "ref_n": ref_n}
    for k, lat in enumerate(lattices):
        ref = marginals_from_samples(sample(lm, lat, ref_n, seed=10_000 + k).samples, lat)
        ref_d = [{m.token: m.p for m in pos} for pos in ref]
        for n in SAMPLE_NS[:4]:
            t0 = cpu()
            r = sample(lm, lat, n, seed=k)
            res["ars"].append((k, n, cpu() - t0, marg_err(r.samples, lat, ref_d)))
        for s in SWEEPS[:5]:
            t0 = cpu()
            g = gibbs(lm, lat, s, np.random.default_rng(k))
            paths = [[lat.tokens[i][j] for i, j in enumerate(x)] for x in g.samples]
            res["gibbs"].append((k, s, cpu() - t0, marg_err(paths, lat, ref_d)))
    return res


def marg_err(samples, lat, ref_d) -> float:
    est = marginals_from_samples(samples, lat)
    return float(np.mean([0.5 * sum(abs(m.p - r[m.token]) for m in pos)
                          for pos, r in zip(est, ref_d)]))


def logz_study(lm: Model, lattices: list, seeds: int) -> dict:
    """RMSE of ln Z against CPU time: randomized DP (top = sampled = K) and ARS (n)."""
    res = {"rdp": [], "ars": []}
    for lat in lattices:
        exact = full_log_partition(lm, lat)
        for kk in (1, 4, 16, 64):
            errs, t0 = [], cpu()
            for s in range(seeds):
                errs.append(randomized_log_partition(lm, lat, kk, kk,
                                                     np.random.default_rng(s)) - exact)
            res["rdp"].append((kk, (cpu() - t0) / seeds, errs))
        for n in (10, 100):
            errs, t0 = [], cpu()
            for s in range(seeds):
                errs.append(sample(lm, lat, n, seed=s).log_Z - exact)
            res["ars"].append((n, (cpu() - t0) / seeds, errs))
    return res


def pick(lattices: list, lo_paths: int, hi_paths: int, count: int, min_len: int = 1) -> list:
    out = [lat for lat in lattices if lo_paths <= lat.num_paths() <= hi_paths
           and len(lat) >= min_len]
    return out[:count]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sms", type=Path, default=REPO / "work" / "sms")
    ap.add_argument("--pos", type=Path, default=REPO / "work" / "pos")
    ap.add_argument("--sms-n", type=int, default=200)
    ap.add_argument("--sms-top-k", type=int, default=100)
    ap.add_argument("--pos-n", type=int, default=None, help="default: whole test set")
    ap.add_argument("--evidence-seeds", type=int, default=100)
    ap.add_argument("--json", type=Path, default=REPO / "work" / "approx_vs_exact.json")
    ap.add_argument("--render-only", action="store_true",
                    help="rewrite the page and plots from --json without measuring")
    args = ap.parse_args()
    cmd = ("python -m experiments.approx_vs_exact --sms work/sms --pos work/pos"
           f" --sms-n {args.sms_n} --sms-top-k {args.sms_top_k}"
           + (f" --pos-n {args.pos_n}" if args.pos_n else "")
           + f" --evidence-seeds {args.evidence_seeds}")
    if args.render_only:
        res = json.loads(args.json.read_text())
        write_page(render(res, res.get("command", cmd), IMG, SAMPLE_NS, SWEEPS))
        return 0
    res: dict = {"config": {}, "command": cmd}
    say("SMS beam study")
    lm, lats, gold = sms_setup(args.sms, args.sms_n, args.sms_top_k)
    res["config"]["sms"] = (f"state_union 5-gram (data_prep.prepare_sms), the first {len(lats)} "
                            f"sentences of test.jsonl, lattices of the top {args.sms_top_k} "
                            "words per position (the same lattice for beam and ARS).")
    res["sms"] = beam_study(lm, lats, gold)
    del lm, lats
    say("POS beam study")
    lm, lats, gold = pos_setup(args.pos, args.pos_n)
    res["config"]["pos"] = (f"WSJ tag 5-gram and TnT emissions (data_prep.pos_data), "
                            f"{len(lats)} test sentences"
                            + (" (whole test set)." if args.pos_n is None else " (a prefix)."))
    res["pos"] = beam_study(lm, lats, gold)
    say("samplers")
    small = pick(lats, 40, 400, 3, min_len=4)
    res["config"]["tv"] = (f"{len(small)} POS test lattices with 40-400 paths "
                           f"(lengths {[len(x) for x in small]})")
    res["tv"] = tv_study(lm, small)
    real = [lat for lat in lats if 12 <= len(lat) <= 20][:3]
    res["config"]["marg"] = f"{len(real)} POS test lattices of length {[len(x) for x in real]}"
    res["marg"] = marginal_study(lm, real, 3000)
    res["config"]["logz"] = res["config"]["marg"] + ", 20 seeds per setting"
    res["logz"] = logz_study(lm, real, 20)
    say("evidence study")
    res["evidence"] = evidence_study.study(args.evidence_seeds, REPO / "work" / "evidence")
    res["evidence"]["default"] = evidence_study.pick_default(res["evidence"])
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(res, default=str))
    write_page(render(res, cmd, IMG, SAMPLE_NS, SWEEPS))
    return 0


def write_page(text: str) -> None:
    tmp = DOC.with_suffix(".md.tmp")
    tmp.write_text(text)
    tmp.replace(DOC)
    say(f"wrote {DOC}")


if __name__ == "__main__":
    raise SystemExit(main())
