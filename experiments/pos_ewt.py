"""The shipped POS tagger (UD English Web Treebank): dev choices, test figures, TnT beside it.

Why: the tagger in arsdecode/data/pos is trained on EWT train (data_prep/ewt.py). Its settings
and default order are chosen on EWT dev; this script shows that choice (a grid of emission
settings at the default order, and every order on dev), then scores every order on EWT test
and on WSJ section 20 (CoNLL-2000 test), next to NLTK's TnT trained on the same EWT train in
the same run. Raw results go to work/ewt/results.json (rewritten after every job, so a run cut
short still renders), and the EWT section of docs/results-pos.md (between the `ewt` markers)
is rendered from that JSON alone (experiments/report/pos_ewt.py).

    python -m data_prep.ewt --out work/ewt --ship arsdecode/data/pos
    python -m experiments.pos_ewt [--jobs 2] [--orders 2 3 4 5 6 7 8 9]
    python -m experiments.pos_ewt --render-only

Decoding is exact: `tasks.pos.tag_many.tag_many(..., method="full")`, the full-model Viterbi
of every sentence of a set in one compiled call. Exactness stays checked in every job: on
CHECK_SENTENCES evenly spaced sentences, `methods.ars.decode` (an independent algorithm) must
certify its path and reach the same ln p. Times are CPU seconds of one single-threaded process
(`time.process_time`) for lattice + decode (the ARS check is not timed), so they compare with
TnT's (timed the same way, before the workers start) on a shared machine.

Capitalised states (kind "cap"): TnT's C=True feature for our tagger (arsdecode.tasks.pos.cap),
tried because n = 2 lost to TnT on EWT dev on known words; since issue 19 it is the shipped
model (data_prep.ewt.SETTINGS, LMs in work/ewt as data_prep.ewt builds them). The plain-state
kinds ("grid", "ars") use plain tag LMs under work/ewt/plain (experiments/pos_cap.py). The
comparison of the capitalisation variants is experiments/pos_ewt_caps.py.
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
from collections import Counter  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

import maxarpa  # noqa: E402
from arsdecode.core.tolerances import FLOAT_NOISE  # noqa: E402
from arsdecode.methods.ars import decode  # noqa: E402
from arsdecode.tasks.pos.cap import CapEmissions  # noqa: E402
from arsdecode.tasks.pos.emissions import TnTEmissions  # noqa: E402
from arsdecode.tasks.pos.evaluation import read_tagged, score_tags  # noqa: E402
from arsdecode.tasks.pos.tag_many import tag_many  # noqa: E402
from data_prep.ewt import DEFAULT_ORDER, SETTINGS  # noqa: E402
from experiments.pos_cap import build_plain_lms  # noqa: E402
from experiments.progress_log import progress, say  # noqa: E402
from experiments.report.pos_ewt import render_section, splice  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

ORDERS = tuple(range(2, 10))
SETS = ("test", "wsj20")
GRID_ORDER = 3
# The dev grid (n = GRID_ORDER): the settings chosen on the WSJ development split
# (docs/results-pos.md), and each entry changes one of them. The best on EWT dev is used for
# everything after it, and is what data_prep.ewt.SETTINGS must hold (the run warns if not).
WSJ_SETTINGS = {"rare_max_count": 10, "suffix_max_len": 10, "suffix_alpha": 50.0,
                "sentence_initial": True}
GRID: dict[str, dict] = {
    "as on WSJ dev (alpha 50)": {},
    "TnT theta (no Dirichlet weighting)": {"suffix_alpha": None},
    "alpha 10": {"suffix_alpha": 10.0},
    "alpha 20": {"suffix_alpha": 20.0},
    "alpha 200": {"suffix_alpha": 200.0},
    "rare <= 5": {"rare_max_count": 5},
    "no sentence-initial rule": {"sentence_initial": False},
}
TOP_CONFUSIONS = 10
CHECK_SENTENCES = 50  # per job, decoded again by ARS to verify exactness
G: dict = {}  # worker state: forked workers share it copy-on-write


def tagger_settings(name: str) -> dict:
    return {**WSJ_SETTINGS, **GRID[name]}


def load(ewt_dir: Path) -> None:
    G["dir"] = ewt_dir
    G["train"] = read_tagged(ewt_dir / "train.tsv")
    G["vocab"] = {w for s in G["train"] for w, _ in s}
    G["sets"] = {name: read_tagged(ewt_dir / f"{name}.tsv")
                 for name in ("dev", *SETS) if (ewt_dir / f"{name}.tsv").is_file()}


def confusions(gold: list, preds: list, vocab: set) -> dict:
    """(gold, predicted) tag pairs of the errors, split by known/unknown word."""
    out = {"known": Counter(), "unknown": Counter()}
    for g, p in zip(gold, preds, strict=True):
        for (w, t), q in zip(g, p, strict=True):
            if t != q:
                out["known" if w in vocab else "unknown"][f"{t} {q}"] += 1
    return {k: dict(c.most_common()) for k, c in out.items()}


def tag_exact(em, order: int, sents: list, lm_dir: Path) -> dict:
    """Exact decoding of `sents` (full-model DP in one call); CPU seconds of lattice + decode.

    Then CHECK_SENTENCES evenly spaced sentences are decoded again by ARS, which must certify
    a path of the same ln p (within FLOAT_NOISE: two orders of summation): "check_agree" of
    "checked" counts them.
    """
    lm = maxarpa.load(lm_dir / f"tags.{order}.maxarpa")
    words = [[w for w, _ in s] for s in sents]
    c0 = time.process_time()
    res = tag_many(lm, em, words, method="full")
    cpu = time.process_time() - c0
    preds = [em.penn_tags(t) for t in res.tags]  # states -> tags (capitalised states)
    step = max(1, len(sents) // CHECK_SENTENCES)
    sample = list(range(0, len(sents), step))[:CHECK_SENTENCES]
    agree, iters, worst = 0, 0, 0.0
    for i in sample:
        r = decode(lm, em.lattice(words[i]))
        diff = abs(r.log_p - float(res.log_p[i]))
        worst = max(worst, diff)
        agree += bool(r.certified) and diff <= FLOAT_NOISE
        iters += r.iterations
    if agree < len(sample):
        say(f"n={order}: ARS disagrees with the full DP on {len(sample) - agree} of "
            f"{len(sample)} sentences (max |d ln p| {worst:.3g})")
    acc = score_tags(sents, preds, G["vocab"])
    return {**acc.as_dict(), "seconds": cpu, "tokens_per_second": acc.tokens / cpu,
            "method": res.method, "sentences": len(sents), "checked": len(sample),
            "check_agree": agree, "check_max_log_p_diff": worst,
            "check_mean_ars_iterations": iters / len(sample),
            "confusions": confusions(sents, preds, G["vocab"])}


def tag_tnt(capitalization: bool) -> list[dict]:
    """NLTK TnT (N=1000) trained once on EWT train, tagging every set; CPU s of tagging."""
    from nltk.tag.tnt import TnT

    tagger = TnT(N=1000, C=capitalization)
    tagger.train(G["train"])
    out = []
    for name, sents in G["sets"].items():
        c0 = time.process_time()
        preds = [[t for _, t in tagger.tag([w for w, _ in s])] for s in sents]
        cpu = time.process_time() - c0
        acc = score_tags(sents, preds, G["vocab"])
        out.append({"kind": "tnt", "set": name, "arg": capitalization, **acc.as_dict(),
                    "seconds": cpu, "tokens_per_second": acc.tokens / cpu,
                    "confusions": confusions(sents, preds, G["vocab"])})
    return out


def run_job(job: tuple) -> list[dict]:
    kind, name, arg = job
    t0 = time.perf_counter()
    if kind == "tnt":
        return tag_tnt(arg)
    if kind == "grid":
        settings = tagger_settings(arg)
        res = tag_exact(TnTEmissions.train(G["train"], **settings), GRID_ORDER, G["sets"][name],
                        G["dir"] / "plain")
    elif kind == "cap":
        settings = dict(SETTINGS)
        res = tag_exact(CapEmissions(TnTEmissions.train(G["train"], **settings)), arg,
                        G["sets"][name], G["dir"])
    else:
        settings = G["settings"]
        res = tag_exact(G["em"], arg, G["sets"][name], G["dir"] / "plain")
    return [{"kind": kind, "set": name, "arg": arg, "settings": settings, **res,
             "wall_seconds": time.perf_counter() - t0}]


def test_jobs(orders: Sequence[int]) -> list[tuple]:
    """Per group of orders (the shipped 2..5 first, then 6..9) dev before the test sets, so
    that a run cut short by the clock still has complete low orders."""
    jobs: list[tuple] = []
    for group in ([n for n in orders if n <= 5], [n for n in orders if n > 5]):
        jobs += [("ars", "dev", n) for n in group]
        jobs += [("ars", s, n) for n in group for s in SETS if s in G["sets"]]
    return jobs


def _key(row: dict) -> str:
    return json.dumps([row["kind"], row["set"], row["arg"], row.get("settings")])


def run(n_jobs: int, orders: Sequence[int], out: Path, resume: bool) -> dict:
    """Phase 1: TnT, then the dev grid, whose best entry fixes the settings; phase 2: every
    order on dev and the test sets with them. The JSON is rewritten after each job, so a
    cut-short run still renders, and `resume` reuses its finished jobs."""
    summary = json.loads((G["dir"] / "summary.json").read_text())
    old = json.loads(out.read_text()) if resume and out.is_file() else {"results": []}
    done = {_key(r): r for r in old["results"]}
    res = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                       "jobs": n_jobs, "load_before": os.getloadavg()[0]},
           "grid_order": GRID_ORDER, "shipped_settings": SETTINGS,
           "default_order": DEFAULT_ORDER, "orders": list(orders), "summary": summary,
           "results": [], "unknown_tokens": {
               s: sum(w not in G["vocab"] for x in sents for w, _ in x)
               for s, sents in G["sets"].items()}}
    t0 = time.perf_counter()

    def save(rows: list[dict]) -> None:
        res["results"].extend(rows)
        res["wall_seconds"] = time.perf_counter() - t0 + old.get("wall_seconds", 0.0)
        res["machine"]["load_after"] = os.getloadavg()[0]
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
        tmp.replace(out)

    def run_all(jobs: list[tuple], settings: dict | None) -> None:
        todo = []
        for j in jobs:
            key = json.dumps([*j, tagger_settings(j[2]) if j[0] == "grid" else settings])
            if key in done:
                save([done[key]])
            else:
                todo.append(j)
        if n_jobs <= 1:
            for j in progress(todo, "ewt"):
                save(run_job(j))
            return
        with mp.get_context("fork").Pool(n_jobs, maxtasksperchild=1) as pool:
            for rows in progress(pool.imap(run_job, todo), "ewt", total=len(todo)):
                save(rows)

    build_plain_lms(G["train"], G["dir"] / "plain", orders)
    # TnT first and alone, so that its timing is not disturbed by our own workers.
    for c in (False, True):
        rows = [r for r in old["results"] if r["kind"] == "tnt" and r["arg"] == c]
        save(rows if len(rows) == len(G["sets"]) else run_job(("tnt", "", c)))
    run_all([("grid", "dev", name) for name in GRID], None)
    grid = [r for r in res["results"] if r["kind"] == "grid"]
    best = max(grid, key=lambda r: r["accuracy"])
    G["settings"] = res["settings"] = best["settings"]
    if best["settings"] != {k: SETTINGS[k] for k in WSJ_SETTINGS}:
        say(f"dev chose {best['settings']}, but data_prep.ewt.SETTINGS ships {SETTINGS}")
    G["em"] = TnTEmissions.train(G["train"], **G["settings"])
    run_all(test_jobs(orders), G["settings"])
    # The capitalised-state model (the shipped one) at every order, dev before the test sets.
    run_all([("cap", s, n) for s in ("dev", *SETS) if s in G["sets"] for n in orders],
            G["settings"])
    res["complete"] = True
    save([])
    return res


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ewt-dir", type=Path, default=REPO / "work" / "ewt")
    ap.add_argument("--orders", type=int, nargs="+", default=list(ORDERS))
    ap.add_argument("--jobs", type=int, default=2, help="worker processes")
    ap.add_argument("--render-only", action="store_true", help="redo the doc from the JSON")
    ap.add_argument("--resume", action="store_true",
                    help="reuse the finished jobs of work/ewt/results.json")
    ap.add_argument("--doc", type=Path, default=REPO / "docs" / "results-pos.md")
    args = ap.parse_args(argv)
    raw = args.ewt_dir / "results.json"
    if not args.render_only:
        if not (args.ewt_dir / "summary.json").is_file():
            print(f"missing {args.ewt_dir}/summary.json; run python -m data_prep.ewt "
                  "--out work/ewt", file=sys.stderr)
            return 1
        load(args.ewt_dir)
        res = run(args.jobs, args.orders, raw, args.resume)
        say(f"wrote {raw} ({res['wall_seconds'] / 60:.1f} min)")
    if not raw.is_file():
        say(f"no {raw}: run without --render-only first")
        return 0
    splice(args.doc, "ewt", render_section(json.loads(raw.read_text())))
    say(f"wrote the EWT section of {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
