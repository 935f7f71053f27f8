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

The worker jobs (one per decoder and n, and the dev grid's runs) are experiments/pos_jobs.py;
this module decides what runs, times TnT, checks ARS against the full decoders and writes.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import multiprocessing as mp  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from arsdecode.tasks.pos.evaluation import read_tagged, score_tags  # noqa: E402
from experiments.pos_jobs import G, dev_eval, load_context, run_jobs  # noqa: E402
from experiments.pos_protocol import (  # noqa: E402
    ORDERS,
    SAMPLE_SENTENCES,
    SEED,
)
from experiments.progress_log import progress, say  # noqa: E402
from experiments.report.pos_ewt import keep_block  # noqa: E402
from experiments.report.pos_markdown import markdown  # noqa: E402
from experiments.report.pos_plots import write_plots  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def run_tnt(pos_dir: Path, capitalization: bool) -> dict:
    """NLTK's TnT (N=1000) trained on train.tsv, tagging test.tsv; CPU and wall time."""
    import nltk  # type: ignore[import-untyped]
    from nltk.tag.tnt import TnT  # type: ignore[import-untyped]

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
    dev_res: dict | None = json.loads(dev_raw.read_text()) if dev_raw.is_file() else None
    imgs = write_plots(res, args.img)
    args.doc.parent.mkdir(parents=True, exist_ok=True)
    # The EWT section and what follows it belong to pos_ewt.py and pos_ewt_caps.py; keep them.
    args.doc.write_text(keep_block(args.doc, markdown(res, dev_res, imgs), "ewt"), encoding="utf-8")
    say(f"wrote {args.doc} and {', '.join(p.name for p in imgs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
