"""The approximate tools against exact ARS, on the same models and lattices; writes
docs/results-approx.md and its plots (docs/img/approx/).

Sections: (1) beam search against exact decoding on SMS and POS: search errors (the beam's
path scores below the certified optimum), accuracy and time against beam width; (2) samplers:
total variation to the exact distribution on enumerable lattices against time (exact ARS vs
Gibbs); marginal error against time on real POS lattices, exact-sample marginals as reference;
(3) ln Z: randomized forward DP against ARS's importance estimator, full DP as reference;
(4) the evidence-estimator study (experiments/evidence_study.py). Times are process CPU
seconds of one core, model loading and lattice construction excluded.

    PYTHONPATH=$PWD python experiments/approx_vs_exact.py --sms work/sms --pos work/pos
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "experiments"))
sys.path.insert(0, str(REPO / "tests"))

import evidence_study  # noqa: E402
from report.render import line_plot, table  # noqa: E402

import maxarpa  # noqa: E402
from arsdecode.methods.approx import beam_search, gibbs, randomized_log_partition  # noqa: E402
from arsdecode.methods.ars import decode, sample  # noqa: E402
from arsdecode.methods.full import full_log_partition  # noqa: E402
from arsdecode.methods.marginals import marginals_from_samples  # noqa: E402
from arsdecode.tasks.pos.emissions import TnTEmissions, read_tagged  # noqa: E402
from arsdecode.tasks.sms.keypad import KeypadChannel  # noqa: E402
from brute import brute_model  # noqa: E402
from maxarpa.model import Model  # noqa: E402

WIDTHS = [1, 2, 4, 8, 16, 64]
IMG = REPO / "docs" / "img" / "approx"
DOC = REPO / "docs" / "results-approx.md"
SEARCH_TOL = 1e-9


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
            errs += b.log_p < best - SEARCH_TOL
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


def curve(rows, key_idx=1, t_idx=2, v_idx=3):
    """Average time and value per setting (over lattices)."""
    keys = sorted({r[key_idx] for r in rows})
    return ([float(np.mean([r[t_idx] for r in rows if r[key_idx] == k])) for k in keys],
            [float(np.mean([r[v_idx] for r in rows if r[key_idx] == k])) for k in keys], keys)


def pick(lattices: list, lo_paths: int, hi_paths: int, count: int, min_len: int = 1) -> list:
    out = [lat for lat in lattices if lo_paths <= lat.num_paths() <= hi_paths
           and len(lat) >= min_len]
    return out[:count]


# ----- the page --------------------------------------------------------------------------------
def render(res: dict, cmd: str) -> str:
    img = "img/approx"
    plots = {}
    for task in ("sms", "pos"):
        b = res.get(task)
        if not b:
            continue
        ws = sorted(b["beam"], key=int)
        plots[f"{task}_err"] = line_plot(
            IMG / f"{task}_search_errors.png",
            {"beam": ([int(w) for w in ws], [b["beam"][w]["search_error_rate"] for w in ws])},
            title=f"{task.upper()}: search errors of beam search (exact ARS: 0)",
            xlabel="beam width", ylabel="fraction of sentences", logx=True)
        plots[f"{task}_acc"] = line_plot(
            IMG / f"{task}_accuracy_time.png",
            {"beam": ([b["beam"][w]["seconds"] for w in ws],
                      [b["beam"][w]["accuracy"] for w in ws]),
             "exact ARS": ([b["exact"]["seconds"]], [b["exact"]["accuracy"]])},
            title=f"{task.upper()}: accuracy against CPU time (beam widths {ws[0]}..{ws[-1]})",
            xlabel="CPU seconds, whole set", ylabel="token accuracy", logx=True)
    tv, mg, lz = res["tv"], res["marg"], res["logz"]
    a_t, a_v, _ = curve(tv["ars"])
    g_t, g_v, _ = curve(tv["gibbs"])
    line_plot(IMG / "tv_time.png", {"exact ARS (n samples)": (a_t, a_v),
                                    "Gibbs (sweeps)": (g_t, g_v)},
              title="TV distance to the exact distribution (enumerable POS lattices)",
              xlabel="CPU seconds", ylabel="total variation", logx=True, logy=True)
    ma_t, ma_v, _ = curve(mg["ars"])
    mg_t, mg_v, _ = curve(mg["gibbs"])
    line_plot(IMG / "marginal_time.png", {"exact ARS (n samples)": (ma_t, ma_v),
                                          "Gibbs (sweeps)": (mg_t, mg_v)},
              title="Marginal error against time (real POS lattices)",
              xlabel="CPU seconds", ylabel="mean per-position TV of marginals",
              logx=True, logy=True)
    rd = _lz_curve(lz["rdp"])
    ar = _lz_curve(lz["ars"])
    line_plot(IMG / "logz_time.png", {"randomized DP (K kept + K sampled)": rd[:2],
                                      "ARS importance estimate (n samples)": ar[:2]},
              title="ln Z error against time (POS lattices, full DP reference)",
              xlabel="CPU seconds per estimate", ylabel="RMSE of ln Z", logx=True, logy=True)

    ev = res["evidence"]
    lines = ["# Exact ARS against the approximate tools (beam, Gibbs, randomized DP)", "",
             "Generated by `experiments/approx_vs_exact.py`; do not edit by hand. Reproduce:", "",
             f"    {cmd}", "", "## Headline figures", ""]
    for task in ("sms", "pos"):
        b = res.get(task)
        if not b:
            continue
        cells = ", ".join(f"width {w}: {100 * b['beam'][w]['search_error_rate']:.1f}%"
                          for w in sorted(b["beam"], key=int))
        ratio = {w: b["beam"][w]["seconds"] / b["exact"]["seconds"] for w in b["beam"]}
        rcells = ", ".join(f"width {w}: {ratio[w]:.2f}x" for w in sorted(ratio, key=int))
        lines += [f"- **{task.upper()}** ({b['n']} sentences, {b['tokens']} tokens): beam "
                  f"search-error rate {cells}. Beam CPU time / exact ARS time: {rcells}. "
                  f"Exact ARS accuracy {b['exact']['accuracy']:.4f} in "
                  f"{b['exact']['seconds']:.1f} s."]
    imp = [c["estimators"]["importance"] for c in ev["cases"].values()]
    rej = [c["estimators"]["rejection"] for c in ev["cases"].values()]
    lines += [
        f"- **Evidence ln Z** ({ev['seeds']} seeds per case, {len(imp)} cases): 95% CI "
        f"coverage of the importance estimator (default) "
        f"{min(e['coverage'] for e in imp):.2f}-{max(e['coverage'] for e in imp):.2f}, of the "
        f"rejection estimator {min(e['coverage'] for e in rej):.2f}-"
        f"{max(e['coverage'] for e in rej):.2f}; RMSE ratio importance / rejection "
        f"{np.mean([a['rmse_log'] / b['rmse_log'] for a, b in zip(imp, rej)]):.2f} "
        f"(same trials, same cost). Smallest error at equal work: `{ev['default']}`.",
        f"- **Samplers**: at the largest budget, exact ARS reaches TV {a_v[-1]:.3f} in "
        f"{a_t[-1]:.2f} s, Gibbs {g_v[-1]:.3f} in {g_t[-1]:.2f} s; marginal error ARS "
        f"{ma_v[-1]:.4f} in {ma_t[-1]:.2f} s, Gibbs {mg_v[-1]:.4f} in {mg_t[-1]:.2f} s.",
        "", "At a glance:", ""] + glance(res, (a_t, a_v, g_t, g_v), rd, ar) + [
        "", "## Setup", "",
        f"- Machine: {platform.machine()}, Python {platform.python_version()}, CPU times of "
        "one process (`time.process_time`) on a shared 2-core machine; model loading and "
        "lattice construction excluded.",
        f"- SMS: {res['config']['sms']}", f"- POS: {res['config']['pos']}",
        "- Search error: the beam's path has ln p below the certified optimum by more than "
        "1e-9. Beam search keeps the best `width` LM states (last n-1 words) per position "
        "after recombination (`arsdecode.methods.approx.beam_search`).", ""]
    for task in ("sms", "pos"):
        b = res.get(task)
        if not b:
            continue
        rows = [[w, f"{b['beam'][w]['search_error_rate']:.3f}", f"{b['beam'][w]['mean_gap']:.3f}",
                 f"{b['beam'][w]['accuracy']:.4f}", f"{b['beam'][w]['seconds']:.2f}"]
                for w in sorted(b["beam"], key=int)]
        rows.append(["exact ARS", "0 (certified)", "0", f"{b['exact']['accuracy']:.4f}",
                     f"{b['exact']['seconds']:.2f}"])
        lines += [f"## {task.upper()}: beam search against exact decoding", "",
                  table(["width", "search-error rate", "mean ln p gap", "accuracy",
                         "CPU s (set)"], rows), "",
                  f"![search errors]({img}/{task}_search_errors.png)",
                  f"![accuracy and time]({img}/{task}_accuracy_time.png)", ""]
    lines += ["## Samplers", "",
              f"TV to the exact distribution on {res['config']['tv']}; exact ARS with n = "
              f"{SAMPLE_NS} samples, Gibbs (systematic scan, no burn-in, one sample per sweep) "
              f"with {SWEEPS} sweeps; averages over the lattices. Both are numpy code in this "
              "repository; Gibbs pays one batched LM query per position per sweep, so its "
              "time depends on the implementation, while the setting columns compare equal "
              "numbers of (exact or correlated) samples.", "",
              table(["method", "setting", "CPU s", "TV"],
                    [["ARS", n, f"{t:.3f}", f"{v:.4f}"] for t, v, n in zip(*curve(tv["ars"]))]
                    + [["Gibbs", n, f"{t:.3f}", f"{v:.4f}"]
                       for t, v, n in zip(*curve(tv["gibbs"]))]), "",
              f"![TV against time]({img}/tv_time.png)", "",
              f"Marginal error on {res['config']['marg']}: mean over positions of the TV "
              f"between estimated and reference marginals; reference = {mg['ref_n']} exact "
              "samples (an independent run).", "",
              table(["method", "setting", "CPU s", "marginal error"],
                    [["ARS", n, f"{t:.3f}", f"{v:.4f}"] for t, v, n in zip(*curve(mg["ars"]))]
                    + [["Gibbs", n, f"{t:.3f}", f"{v:.4f}"]
                       for t, v, n in zip(*curve(mg["gibbs"]))]), "",
              f"![marginal error against time]({img}/marginal_time.png)", "",
              "## ln Z: randomized forward DP against ARS", "",
              f"On {res['config']['logz']}; reference: the full-model DP. Randomized DP "
              "(Fu et al.) keeps K states exactly and samples K more per position; its Z is "
              "unbiased, ln Z is not.", "",
              table(["method", "setting", "CPU s per estimate", "RMSE ln Z", "mean error"],
                    [["randomized DP", f"K={k}", f"{t:.3f}", f"{e:.4f}", f"{m:+.4f}"]
                     for t, e, k, m in zip(*rd)]
                    + [["ARS importance", f"n={k}", f"{t:.3f}", f"{e:.4f}", f"{m:+.4f}"]
                       for t, e, k, m in zip(*ar)]), "",
              f"![ln Z error against time]({img}/logz_time.png)", "",
              "## Evidence estimators (arsdecode.methods.evidence)", "",
              "`SampleResult.log_Z` is the importance estimate that uses every trial, "
              "Z = sum_t r_t / sum_t 1/Q_t with r_t = p(x_t)/q_t(x_t) and Q_t = q_t(X) "
              "(Teichmann, Wansing & Koller's importance weights p/q_t * Q_t, combined with "
              "predictable weights 1/Q_t). `SampleResult.log_Z_rejection` is the earlier "
              "estimate from accepted trials only, sum_t 1[acc_t] / sum_t 1/Q_t; the importance "
              "estimate is its Rao-Blackwellisation (E[1[acc] | x_t] = r_t). "
              "`importance_plain` is the plain mean of the weights; `combined` an inverse-"
              "variance mix that ignores the correlation of its parts (its interval is too "
              "narrow). All are computed in log space.", "",
              evidence_study.markdown(ev), "",
              "With 20 samples every interval under-covers (the normal approximation with an "
              "estimated variance); read them as approximate below about a hundred samples.",
              ""]
    return "\n".join(lines)


def glance(res: dict, tv: tuple, rd: tuple, ar: tuple) -> list[str]:
    """Where exact ARS is better and faster, and where it is not, from the measurements."""
    out = []
    for task in ("sms", "pos"):
        b = res.get(task)
        if not b:
            continue
        ws = sorted(b["beam"], key=int)
        clean = [w for w in ws if b["beam"][w]["search_error_rate"] == 0]
        ex = b["exact"]["seconds"]
        if clean:
            w = clean[0]
            faster = b["beam"][w]["seconds"] < ex
            out.append(
                f"- {task.upper()} decoding: the narrowest beam without search errors on this "
                f"set is width {w}, at {b['beam'][w]['seconds'] / ex:.2f}x the time of exact "
                f"ARS ({'faster' if faster else 'slower'}, and without a certificate); "
                f"narrower beams are faster but wrong on up to "
                f"{100 * b['beam'][ws[0]]['search_error_rate']:.0f}% of sentences.")
    a_t, a_v, g_t, g_v = tv
    target = g_v[-1]
    reach = next((t for t, v in zip(a_t, a_v) if v <= target), None)
    if reach is not None:
        out.append(f"- Sampling: exact ARS reaches Gibbs' best TV ({target:.4f}, after "
                   f"{g_t[-1]:.1f} s) in {reach:.2f} s, {g_t[-1] / reach:.0f}x faster, and its "
                   "samples are independent and exact.")
    out.append(f"- ln Z on POS lattices (few LM states): randomized DP with K = {rd[2][2]} "
               f"has RMSE {rd[1][2]:.4f} in {rd[0][2]:.3f} s, ARS's estimate from "
               f"n = {ar[2][-1]} samples {ar[1][-1]:.4f} in {ar[0][-1]:.3f} s: there the "
               "randomized DP (or the exact full DP) is the better tool for the evidence.")
    return out


def _lz_curve(rows):
    keys = sorted({r[0] for r in rows})
    t = [float(np.mean([r[1] for r in rows if r[0] == k])) for k in keys]
    errs = {k: np.concatenate([r[2] for r in rows if r[0] == k]) for k in keys}
    return (t, [float(math.sqrt(np.mean(errs[k] ** 2))) for k in keys], keys,
            [float(np.mean(errs[k])) for k in keys])


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
    cmd = ("PYTHONPATH=$PWD python experiments/approx_vs_exact.py --sms work/sms --pos work/pos"
           f" --sms-n {args.sms_n} --sms-top-k {args.sms_top_k}"
           + (f" --pos-n {args.pos_n}" if args.pos_n else "")
           + f" --evidence-seeds {args.evidence_seeds}")
    if args.render_only:
        res = json.loads(args.json.read_text())
        write_page(render(res, res.get("command", cmd)))
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
    write_page(render(res, cmd))
    return 0


def write_page(text: str) -> None:
    tmp = DOC.with_suffix(".md.tmp")
    tmp.write_text(text)
    tmp.replace(DOC)
    say(f"wrote {DOC}")


if __name__ == "__main__":
    raise SystemExit(main())
