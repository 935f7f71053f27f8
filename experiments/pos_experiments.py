"""The paper's POS-tagging experiments (Carter, Dymetman & Bouchard 2012, sec. 3.2), our data.

Why one script: every table and figure of docs/results-pos.md comes from one seeded run over the
same models and test set, so the numbers agree with each other and can be regenerated. Raw
results go to JSON under work/pos/ (gitignored: derived from the treebank and CoNLL-2000), and
the Markdown report and the PNGs are rendered from that JSON alone (`--render-only`).

    python -m data_prep.pos_data --out work/pos            # models, ~1.5 min
    python -m experiments.pos_experiments                   # ~15 min on 2 cores
    python -m experiments.pos_experiments --dev-study       # the model choices, ~15 min
    python -m experiments.pos_experiments --render-only     # redo doc + PNGs from the JSON

What is run (natural log throughout, like the library):
- Fig. 4a: exact decoding (`methods.ars.decode`, every result must be certified) of the whole
  CoNLL-2000 test set for n = 2..9: accuracy (all / known / unknown words) and tokens/s, beside
  NLTK's TnT trained and tested on the same split (its default C=False is the baseline; C=True,
  TnT's capitalisation flag, is shown too).
- Fig. 4b: time to decode the whole test set with ARS and with two full-model decoders
  (`methods.full.full_decode`): the literal n-gram HMM the paper compares with (one state per
  (n-1)-tag history, `minimize=False`) and the same dynamic program with KenLM-style context
  merging (`minimize=True`, a stronger baseline than the paper's). A full decoder is stopped and
  reported infeasible, with a projection, once its projected time exceeds the budget (600 s)
  or one layer of one sentence would exceed LITERAL_MAX_LAYER_PAIRS (memory).
- Fig. 4c/4d: trials, refinements and states when sampling until the acceptance rate over the
  last 100 trials reaches 60% (the paper's protocol: `sample(..., stop_when_adapted=True)`,
  B = 10), on 50 test sentences drawn with a fixed seed.
- A test-set ablation of the two modelling changes (tag LM estimator, suffix smoothing) at
  n = 3, run once after they were fixed on the development split.
- `--dev-study`: the development-split grid the choices were made on (see data_prep/pos_data.py).

Timing: decoders run in `--jobs` worker processes (default 2 = one per core of the machine the
doc was made on), each (decoder, n) job sequentially inside one process, numpy single-threaded.
Every time reported is the CPU time of that single-threaded process (`time.process_time`), so
that other work on a shared machine does not inflate it; wall-clock time is recorded beside it.
TnT is timed the same way, before the workers start. Decode times exclude model loading and
lattice construction (shared by ARS and the full decoders; reported separately); tokens/s is
given both for decoding alone and end to end (lattice + decode), the latter comparable with TnT.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import multiprocessing as mp  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import maxarpa  # noqa: E402
from arsdecode.lattice import Lattice  # noqa: E402
from arsdecode.methods.ars import decode, sample  # noqa: E402
from arsdecode.methods.full import full_decode  # noqa: E402
from arsdecode.tasks.pos.emissions import TnTEmissions  # noqa: E402
from arsdecode.tasks.pos.evaluation import read_tagged, score_tags  # noqa: E402
from experiments.pos_protocol import (  # noqa: E402
    AR_WINDOW,
    BATCH,
    BUDGET_S,
    LITERAL_MAX_LAYER_PAIRS,
    MAX_TRIALS,
    ORDERS,
    SAMPLE_SENTENCES,
    SEED,
    TARGET_AR,
)
from experiments.progress_log import progress, say  # noqa: E402
from experiments.report.pos_ewt import keep_block  # noqa: E402
from experiments.report.pos_markdown import markdown  # noqa: E402
from experiments.report.pos_plots import write_plots  # noqa: E402
from maxarpa.model import Model  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


# ----- helpers -------------------------------------------------------------------------------
def layer_pairs(lattice: Lattice, order: int) -> list[int]:
    """(state, candidate) pairs per position of the literal full model: states before position i
    are the distinct (n-1)-tag histories, i.e. the product of the last n-1 candidate counts."""
    w = order - 1
    d = [len(t) for t in lattice.tokens]
    states = [1] + [math.prod(d[max(0, i - w) : i]) for i in range(1, len(d))]
    return [s * k for s, k in zip(states, d, strict=True)]


def literal_states(lattice: Lattice, order: int) -> int:
    """States of the literal full model (start state + every layer), as full_state_count."""
    w = order - 1
    d = [len(t) for t in lattice.tokens]
    return 1 + sum(math.prod(d[max(0, i - w) : i]) for i in range(1, len(d) + 1))


def run_tnt(pos_dir: Path, capitalization: bool) -> dict:
    """NLTK's TnT (N=1000) trained on train.tsv, tagging test.tsv; CPU and wall time."""
    import nltk
    from nltk.tag.tnt import TnT

    train = read_tagged(pos_dir / "train.tsv")
    test = read_tagged(pos_dir / "test.tsv")
    tagger = TnT(N=1000, C=capitalization)
    tagger.train(train)
    c0, t0 = time.process_time(), time.perf_counter()
    preds = [[t for _, t in tagger.tag([w for w, _ in s])] for s in progress(test, "TnT")]
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    acc = score_tags(test, preds, {w for s in train for w, _ in s})
    return {"nltk_version": nltk.__version__, "beam_N": 1000, "capitalization": capitalization,
            **acc.as_dict(), "tag_seconds": cpu, "tag_wall_seconds": wall,
            "tokens_per_second": acc.tokens / cpu}


# ----- worker state (module globals: forked workers share them copy-on-write) ----------------
G: dict = {}


def load_context(pos_dir: Path) -> None:
    """Emissions, test sentences and their lattices (timed once: lattice construction)."""
    em = TnTEmissions.load(pos_dir / "emissions.json.gz")
    test = read_tagged(pos_dir / "test.tsv")
    t0 = time.perf_counter()
    c0 = time.process_time()
    lattices = [em.lattice([w for w, _ in s]) for s in test]
    G.update(pos_dir=pos_dir, em=em, test=test, lattices=lattices,
             lattice_seconds=time.process_time() - c0,
             lattice_wall_seconds=time.perf_counter() - t0)


def lm_for(order: int, sub: str = "") -> Model:
    key = (order, sub)
    if key not in G.setdefault("lms", {}):
        d = G["pos_dir"] / sub if sub else G["pos_dir"]
        path = next(p for p in (d / f"tags.{order}.maxarpa", d / f"tags.{order}.arpa")
                    if p.is_file())
        G["lms"][key] = maxarpa.load(path)
    return G["lms"][key]


def accuracy(preds: list[list[str]], sents: list | None = None, em=None) -> dict:
    sents = sents if sents is not None else G["test"]
    em = em if em is not None else G["em"]
    return score_tags(sents, preds, em.vocabulary).as_dict()


# ----- jobs ------------------------------------------------------------------------------------
def job_ars(order: int) -> dict:
    lm = lm_for(order)
    preds, log_p, iters, states, secs = [], [], [], [], []
    certified = 0
    wall = 0.0
    for lat in G["lattices"]:
        c0 = time.process_time()
        r = decode(lm, lat)
        secs.append(time.process_time() - c0)
        wall += r.seconds
        preds.append(r.tokens)
        log_p.append(r.log_p)
        iters.append(r.iterations)
        states.append(r.states)
        certified += bool(r.certified)
    return {
        "kind": "ars", "order": order, "seconds": math.fsum(secs), "wall_decode_seconds": wall,
        "certified": certified,
        "sentences": len(preds), "log_p": log_p, "tags": preds, **accuracy(preds),
        "mean_iterations": float(np.mean(iters)), "mean_states": float(np.mean(states)),
        "max_iterations": int(max(iters)), "max_states": int(max(states)),
    }


def job_merged(order: int) -> dict:
    """The full model with KenLM-style context merging: exact, feasible for every n here."""
    lm = lm_for(order)
    preds, log_p, dp_states, secs = [], [], [], []
    n = len(G["lattices"])
    wall = 0.0
    for k, lat in enumerate(G["lattices"]):
        c0 = time.process_time()
        r = full_decode(lm, lat, minimize=True)
        secs.append(time.process_time() - c0)
        wall += r.seconds
        preds.append(r.tokens)
        log_p.append(r.log_p)
        dp_states.append(r.dp_states)
        elapsed = math.fsum(secs)
        if elapsed > 30 and elapsed / (k + 1) * n > BUDGET_S:
            return {"kind": "merged", "order": order, "feasible": False, "done": k + 1,
                    "seconds_measured": elapsed, "projected_seconds": elapsed / (k + 1) * n}
    return {
        "kind": "merged", "order": order, "feasible": True, "seconds": math.fsum(secs),
        "wall_decode_seconds": wall,
        "log_p": log_p, "tags": preds, **accuracy(preds),
        "mean_dp_states": float(np.mean(dp_states)),
    }


def job_literal(order: int) -> dict:
    """The literal full HMM (the paper's baseline), stopped when projected beyond the budget.

    Its cost is proportional to the (state, candidate) pairs it scores, known in advance, so
    the projection is elapsed / pairs done * total pairs.
    """
    lm = lm_for(order)
    pairs = [layer_pairs(lat, order) for lat in G["lattices"]]
    total_pairs = sum(map(sum, pairs))
    states = sum(literal_states(lat, order) for lat in G["lattices"])
    out = {"kind": "literal", "order": order, "total_pairs": total_pairs, "states": states,
           "max_layer_pairs": max(max(p) for p in pairs)}
    done_pairs = 0
    elapsed = 0.0
    log_p = []
    for k, lat in enumerate(G["lattices"]):
        if max(pairs[k]) > LITERAL_MAX_LAYER_PAIRS:
            out.update(feasible=False, reason="memory", done=k)
            break
        c0 = time.process_time()
        r = full_decode(lm, lat, minimize=False)
        elapsed += time.process_time() - c0
        done_pairs += sum(pairs[k])
        log_p.append(r.log_p)
        if elapsed > 20 and elapsed / done_pairs * total_pairs > BUDGET_S:
            out.update(feasible=False, reason="time", done=k + 1)
            break
    else:
        out.update(feasible=True, seconds=elapsed, done=len(G["lattices"]), log_p=log_p)
        return out
    out.update(seconds_measured=elapsed, pairs_measured=done_pairs,
               seconds_per_pair=elapsed / done_pairs if done_pairs else None)
    if done_pairs:
        out["projected_seconds"] = elapsed / done_pairs * total_pairs
    out["log_p"] = log_p
    return out


def job_sample(order: int, picks: list[int]) -> dict:
    lm = lm_for(order)
    rows = []
    for k in picks:
        lat = G["lattices"][k]
        rng = np.random.default_rng([SEED, order, k])
        c0 = time.process_time()
        r = sample(lm, lat, 10**9, batch=BATCH, target_ar=TARGET_AR, ar_window=AR_WINDOW,
                   max_trials=MAX_TRIALS, stop_when_adapted=True, rng=rng)
        cpu = time.process_time() - c0
        acc = r.trace.accepted
        reached = len(acc) >= AR_WINDOW and sum(acc[-AR_WINDOW:]) / AR_WINDOW >= TARGET_AR
        rows.append({"sentence": k, "length": len(lat), "trials": r.trials,
                     "refinements": r.refinements, "states": r.states, "reached": reached,
                     "seconds": cpu, "wall_seconds": r.seconds,
                     "literal_states": literal_states(lat, order)})
    return {"kind": "sample", "order": order, "rows": rows}


def job_ablation(config: str) -> dict:
    """n = 3 on the test set with one of the four (LM estimator, suffix smoothing) pairs."""
    from arsdecode.tasks.pos.suffix import SUFFIX_ALPHA

    estimator, smoothing = config.split("+")
    em = G["em"] if smoothing == "alpha" else G.setdefault("em_tnt", TnTEmissions.train(
        read_tagged(G["pos_dir"] / "train.tsv"), suffix_alpha=None))
    lm = lm_for(3, "kn" if estimator == "kn" else "")
    preds = [decode(lm, em.lattice([w for w, _ in s])).tokens for s in G["test"]]
    return {"kind": "ablation", "config": config, "alpha": SUFFIX_ALPHA, **accuracy(preds, em=em)}


PROFILED = {
    "maxarpa n-gram queries (Model._walk)": ("maxarpa/model.py", "_walk"),
    "q edge weights for new states (QAutomaton.fill)": ("arsdecode/core/q_weights.py", "fill"),
    "refinement (QAutomaton._refine_steps, incl. fill)": ("arsdecode/core/automaton.py",
                                                          "_refine_steps"),
    "Viterbi over q (viterbi_indices)": ("arsdecode/core/inference.py", "viterbi_indices"),
    "exact score of the path (Target.log_p_indices)": ("arsdecode/core/target.py", "log_p_indices"),
}


def job_profile(order: int, sentences: int = 200) -> dict:
    """cProfile of ARS decoding of the first test sentences: where the time goes."""
    import cProfile
    import pstats

    lm = lm_for(order)
    prof = cProfile.Profile()
    prof.enable()
    for lat in G["lattices"][:sentences]:
        decode(lm, lat)
    prof.disable()
    stats = pstats.Stats(prof).stats
    total = sum(v[2] for v in stats.values())  # total internal time
    rows = {}
    for label, (path, func) in PROFILED.items():
        hits = [(v[1], v[3]) for (f, _, name), v in stats.items()
                if f.endswith(path) and name == func]
        calls = sum(h[0] for h in hits)
        cum = sum(h[1] for h in hits)
        rows[label] = {"calls": calls, "cumulative_seconds": cum, "share": cum / total}
    # Per-call overhead of the LM query: the same random queries in small and large batches.
    rng = np.random.default_rng(SEED)
    ids = lm.ids(list(G["em"].tags))
    per_query = {}
    for size, reps in ((30, 2000), (30_000, 20)):
        ctx = rng.choice(ids, size=(size, order - 1))
        words = rng.choice(ids, size=size)
        c0 = time.process_time()
        for _ in range(reps):
            lm.max_log10p_batch(ctx, words)
        per_query[size] = (time.process_time() - c0) / reps / size
    return {"kind": "profile", "order": order, "sentences": sentences,
            "profiled_seconds": total, "rows": rows, "seconds_per_query": per_query}


def run_job(job: tuple) -> dict:
    kind, arg = job[0], job[1]
    t0 = time.perf_counter()
    if kind == "ars":
        res = job_ars(arg)
    elif kind == "merged":
        res = job_merged(arg)
    elif kind == "literal":
        res = job_literal(arg)
    elif kind == "sample":
        res = job_sample(arg, job[2])
    elif kind == "profile":
        res = job_profile(arg)
    else:
        res = job_ablation(arg)
    res["wall_seconds"] = time.perf_counter() - t0
    return res


def run_jobs(jobs: list[tuple], n_jobs: int, desc: str) -> list[dict]:
    if n_jobs <= 1:
        return [run_job(j) for j in progress(jobs, desc)]
    with mp.get_context("fork").Pool(n_jobs, maxtasksperchild=1) as pool:
        return list(progress(pool.imap_unordered(run_job, jobs), desc, total=len(jobs)))


# ----- the main run ----------------------------------------------------------------------------
def experiment(pos_dir: Path, orders: Sequence[int], n_jobs: int) -> dict:
    from data_prep.pos_data import default_data_dir, prepare

    summary = json.loads((pos_dir / "summary.json").read_text())
    if summary.get("estimator") != "di":
        raise SystemExit(f"{pos_dir} was not built with the default tag LM estimator; "
                         "rerun python -m data_prep.pos_data --out work/pos")
    if not (pos_dir / "kn" / "tags.3.arpa").is_file():
        say("building the Kneser-Ney trigram for the ablation (work/pos/kn)")
        prepare(pos_dir / "kn", default_data_dir(), orders=[3], estimator="kn")
    say("NLTK TnT (timed alone)")
    load_before = os.getloadavg()
    tnt = {c: run_tnt(pos_dir, c) for c in (False, True)}
    load_context(pos_dir)
    test = G["test"]
    picks = sorted(np.random.default_rng(SEED).choice(len(test), SAMPLE_SENTENCES,
                                                       replace=False).tolist())
    # Longest jobs first so the two workers finish together.
    jobs: list[tuple] = [("merged", n) for n in sorted(orders, reverse=True)]
    jobs += [("ars", n) for n in sorted(orders, reverse=True)]
    jobs += [("literal", n) for n in sorted(orders)]
    jobs += [("sample", n, picks) for n in orders]
    jobs += [("ablation", c) for c in ("kn+tnt", "kn+alpha", "di+tnt", "di+alpha")]
    jobs += [("profile", 5 if 5 in orders else max(orders))]
    say(f"{len(jobs)} jobs on {n_jobs} workers")
    t0 = time.perf_counter()
    results = run_jobs(jobs, n_jobs, "jobs")
    wall = time.perf_counter() - t0
    by = {(r["kind"], r.get("order", r.get("config"))): r for r in results}
    checks = {}
    for n in orders:
        a, m, lit = by[("ars", n)], by[("merged", n)], by[("literal", n)]
        if m.get("feasible"):
            diff = np.abs(np.array(a["log_p"]) - np.array(m["log_p"]))
            same = sum(x == y for x, y in zip(a["tags"], m["tags"], strict=True))
            checks[n] = {"max_abs_log_p_diff_merged": float(diff.max()), "same_tags": same}
            m.pop("tags")
        k = len(lit.get("log_p", []))
        if k:
            d = np.abs(np.array(a["log_p"][:k]) - np.array(lit["log_p"]))
            checks.setdefault(n, {})["max_abs_log_p_diff_literal"] = float(d.max())
        for r in (a, m, lit):
            r.pop("log_p", None)
        a.pop("tags")
    # Projections for literal orders that never ran a sentence: the last measured rate.
    rate = None
    for n in sorted(orders):
        lit = by[("literal", n)]
        if lit.get("seconds_per_pair") or lit.get("feasible"):
            rate = lit.get("seconds_per_pair") or lit["seconds"] / lit["total_pairs"]
        if not lit.get("feasible") and "projected_seconds" not in lit and rate:
            lit["projected_seconds"] = rate * lit["total_pairs"]
            lit["projected_from_rate_of_lower_order"] = True
    return {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform(), "jobs": n_jobs,
                    "loadavg_before": load_before, "loadavg_after": os.getloadavg()},
        "summary": {k: summary[k] for k in ("train", "test", "estimator")},
        "lambdas": {n: summary["lms"][str(n)].get("lambdas") for n in orders},
        "lattice_seconds": G["lattice_seconds"],
        "lattice_wall_seconds": G["lattice_wall_seconds"],
        "test_tokens": sum(map(len, test)),
        "test_sentences": len(test),
        "tnt": {"C=False": tnt[False], "C=True": tnt[True]},
        "ars": {n: by[("ars", n)] for n in orders},
        "merged": {n: by[("merged", n)] for n in orders},
        "literal": {n: by[("literal", n)] for n in orders},
        "sampling": {n: by[("sample", n)] for n in orders},
        "ablation": {c: by[("ablation", c)] for c in ("kn+tnt", "kn+alpha", "di+tnt", "di+alpha")},
        "checks": checks,
        "profile": next(r for r in results if r["kind"] == "profile"),
        "sample_sentences": picks,
        "wall_seconds": wall,
    }


# ----- development study -----------------------------------------------------------------------
def dev_eval(task: tuple) -> dict:
    """Exact ARS decoding of the dev split with one emission setting and one tag LM."""
    name, order, lm_dir, settings = task
    train = G["dev_train"]
    em = TnTEmissions.train(train, **settings)
    lm = maxarpa.load(Path(lm_dir) / f"tags.{order}.maxarpa")
    preds = []
    for s in G["dev_test"]:
        r = decode(lm, em.lattice([w for w, _ in s]))
        assert r.certified
        preds.append(r.tokens)
    return {"name": name, "order": order, **accuracy(preds, G["dev_test"], em),
            "settings": settings}


def dev_study(pos_dir: Path, n_jobs: int) -> dict:
    from data_prep.pos_data import default_data_dir, prepare

    data = default_data_dir()
    dirs = {e: pos_dir / f"dev_{e}" for e in ("di", "kn")}
    for est, d in dirs.items():
        if not (d / "tags.9.maxarpa").is_file():
            say(f"building dev-split models ({est})")
            prepare(d, data, orders=list(ORDERS), estimator=est, split="dev",
                    all_tags_for_unknown=True)  # the grid was run on plain TnT
    G["dev_train"] = read_tagged(dirs["di"] / "train.tsv")
    G["dev_test"] = read_tagged(dirs["di"] / "test.tsv")
    tasks: list[tuple] = []
    for est, d in dirs.items():
        for n in ORDERS:
            tasks.append((f"{est} LM, alpha 50", n, str(d), {}))
    tnt_theta = {"suffix_alpha": None}
    tasks.append(("di LM, TnT theta", 3, str(dirs["di"]), tnt_theta))
    tasks.append(("kn LM, TnT theta", 3, str(dirs["kn"]), tnt_theta))
    for sl in (2, 3, 5):
        tasks.append((f"di LM, TnT theta, suffixes <= {sl}", 3, str(dirs["di"]),
                      {"suffix_alpha": None, "suffix_max_len": sl}))
    for alpha in (1, 3, 10, 30, 100, 300, 1000):
        tasks.append((f"di LM, alpha {alpha}", 3, str(dirs["di"]), {"suffix_alpha": alpha}))
    for rare in (5, 20):
        tasks.append((f"di LM, alpha 50, rare <= {rare}", 3, str(dirs["di"]),
                      {"rare_max_count": rare}))
    tasks.append(("di LM, alpha 50, no sentence-initial rule", 3, str(dirs["di"]),
                  {"sentence_initial": False}))
    tasks.sort(key=lambda t: -t[1])
    say(f"dev study: {len(tasks)} runs on {n_jobs} workers")
    if n_jobs <= 1:
        rows = [dev_eval(t) for t in progress(tasks, "dev")]
    else:
        with mp.get_context("fork").Pool(n_jobs) as pool:
            rows = list(progress(pool.imap_unordered(dev_eval, tasks), "dev", total=len(tasks)))
    say("NLTK TnT on the dev split")
    tnt = {f"C={c}": run_tnt(dirs["di"], c) for c in (False, True)}
    dsum = json.loads((dirs["di"] / "summary.json").read_text())
    return {"rows": rows, "tnt": tnt, "train": dsum["train"], "test": dsum["test"]}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pos-dir", type=Path, default=REPO / "work" / "pos")
    ap.add_argument("--orders", type=int, nargs="+", default=list(ORDERS))
    ap.add_argument("--jobs", type=int, default=2, help="worker processes")
    ap.add_argument("--dev-study", action="store_true", help="run the development-split grid")
    ap.add_argument("--render-only", action="store_true", help="redo doc + PNGs from JSON")
    ap.add_argument("--doc", type=Path, default=REPO / "docs" / "results-pos.md")
    ap.add_argument("--img", type=Path, default=REPO / "docs" / "img")
    args = ap.parse_args(argv)
    raw = args.pos_dir / "experiments.json"
    dev_raw = args.pos_dir / "dev_study.json"
    if args.dev_study:
        t0 = time.perf_counter()
        dev = dev_study(args.pos_dir, args.jobs)
        dev["wall_seconds"] = time.perf_counter() - t0
        dev_raw.write_text(json.dumps(dev, indent=1) + "\n", encoding="utf-8")
        say(f"wrote {dev_raw} ({dev['wall_seconds'] / 60:.1f} min)")
    elif not args.render_only:
        if not (args.pos_dir / "summary.json").is_file():
            print(f"missing {args.pos_dir}/summary.json; run python -m data_prep.pos_data "
                  "--out work/pos", file=sys.stderr)
            return 1
        t0 = time.perf_counter()
        res = experiment(args.pos_dir, args.orders, args.jobs)
        res["total_seconds"] = time.perf_counter() - t0
        raw.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
        say(f"wrote {raw} ({res['total_seconds'] / 60:.1f} min)")
    if not raw.is_file():
        say(f"no {raw} yet: run without --render-only/--dev-study first")
        return 0
    res = json.loads(raw.read_text())
    dev = json.loads(dev_raw.read_text()) if dev_raw.is_file() else None
    imgs = write_plots(res, args.img)
    args.doc.parent.mkdir(parents=True, exist_ok=True)
    # The EWT section and what follows it belong to pos_ewt.py and pos_ewt_caps.py; keep them.
    args.doc.write_text(keep_block(args.doc, markdown(res, dev, imgs), "ewt"), encoding="utf-8")
    say(f"wrote {args.doc} and {', '.join(p.name for p in imgs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
