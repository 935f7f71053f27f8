"""The shipped POS tagger (UD English Web Treebank): dev choices, test figures, TnT beside it.

Why: the tagger in arsdecode/data/pos is trained on EWT train (data_prep/ewt.py). Its settings
and default order were chosen on EWT dev; this script shows that choice (`--dev`) and then
scores every order 2..9 on EWT test and on WSJ section 20 (CoNLL-2000 test), next to NLTK's TnT
trained on the same EWT train in the same run. It writes work/ewt/{dev,test}.json and renders
the EWT section of docs/results-pos.md (between the `ewt` markers) from them alone.

    python -m data_prep.ewt --out work/ewt --ship arsdecode/data/pos
    python experiments/pos_ewt.py --dev          # settings grid + orders on dev
    python experiments/pos_ewt.py                # test sets, all orders, TnT; renders the doc
    python experiments/pos_ewt.py --render-only

Decoding is exact (`arsdecode.ars.decode`; every result must be certified). Times are CPU
seconds of one single-threaded process (`time.process_time`) for lattice + decode, so they
compare with TnT's (timed the same way) on a machine shared with other jobs.
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

from progress_log import progress, say  # noqa: E402

from arsdecode.ars import decode  # noqa: E402
from arsdecode.tasks.pos import TnTEmissions, read_tagged, score_tags  # noqa: E402
from data_prep.ewt import DEFAULT_ORDER, SETTINGS  # noqa: E402
from maxarpa.model import Model  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ORDERS = tuple(range(2, 10))
SETS = ("test", "wsj20")
# The dev grid (n = 3): each entry changes SETTINGS in one place.
GRID: dict[str, dict] = {
    "TnT theta": {"suffix_alpha": None},
    "alpha 10": {"suffix_alpha": 10.0},
    "alpha 30": {"suffix_alpha": 30.0},
    "alpha 50": {"suffix_alpha": 50.0},
    "alpha 100": {"suffix_alpha": 100.0},
    "alpha 300": {"suffix_alpha": 300.0},
    "rare <= 5": {"rare_max_count": 5},
    "rare <= 20": {"rare_max_count": 20},
    "suffixes <= 5": {"suffix_max_len": 5},
    "no sentence-initial rule": {"sentence_initial": False},
}
TOP_CONFUSIONS = 10
G: dict = {}  # worker state: forked workers share it copy-on-write


def tagger_settings(name: str) -> dict:
    return {**SETTINGS, **GRID[name]}


def load(ewt_dir: Path) -> None:
    G["dir"] = ewt_dir
    G["train"] = read_tagged(ewt_dir / "train.tsv")
    G["vocab"] = {w for s in G["train"] for w, _ in s}
    G["sets"] = {name: read_tagged(ewt_dir / f"{name}.tsv")
                 for name in ("dev", *SETS) if (ewt_dir / f"{name}.tsv").is_file()}
    G["em"] = TnTEmissions.load(ewt_dir / "emissions.json.gz")


def confusions(gold: list, preds: list, vocab: set) -> dict:
    """(gold, predicted) tag pairs of the errors, split by known/unknown word."""
    out = {"known": Counter(), "unknown": Counter()}
    for g, p in zip(gold, preds, strict=True):
        for (w, t), q in zip(g, p, strict=True):
            if t != q:
                out["known" if w in vocab else "unknown"][f"{t} {q}"] += 1
    return {k: dict(c.most_common()) for k, c in out.items()}


def tag_ars(em: TnTEmissions, order: int, sents: list) -> dict:
    """Exact decoding of `sents`; CPU seconds of lattice + decode."""
    lm = Model.load(G["dir"] / f"tags.{order}.maxarpa")
    preds, certified, iters = [], 0, 0
    c0 = time.process_time()
    for s in sents:
        r = decode(lm, em.lattice([w for w, _ in s]))
        preds.append(r.tokens)
        certified += bool(r.certified)
        iters += r.iterations
    cpu = time.process_time() - c0
    acc = score_tags(sents, preds, G["vocab"])
    return {**acc.as_dict(), "seconds": cpu, "tokens_per_second": acc.tokens / cpu,
            "certified": certified, "sentences": len(sents),
            "mean_iterations": iters / len(sents),
            "confusions": confusions(sents, preds, G["vocab"])}


def tag_tnt(capitalization: bool, sents: list) -> dict:
    """NLTK TnT (N=1000) trained on EWT train; CPU seconds of tagging."""
    from nltk.tag.tnt import TnT

    tagger = TnT(N=1000, C=capitalization)
    tagger.train(G["train"])
    c0 = time.process_time()
    preds = [[t for _, t in tagger.tag([w for w, _ in s])] for s in sents]
    cpu = time.process_time() - c0
    acc = score_tags(sents, preds, G["vocab"])
    return {**acc.as_dict(), "seconds": cpu, "tokens_per_second": acc.tokens / cpu,
            "confusions": confusions(sents, preds, G["vocab"])}


def run_job(job: tuple) -> dict:
    kind, name, arg = job
    t0 = time.perf_counter()
    if kind == "grid":
        em = TnTEmissions.train(G["train"], **tagger_settings(arg))
        res = tag_ars(em, DEFAULT_ORDER, G["sets"][name])
    elif kind == "ars":
        res = tag_ars(G["em"], arg, G["sets"][name])
    else:
        res = tag_tnt(arg, G["sets"][name])
    if kind == "grid":
        del res["confusions"]
    return {"kind": kind, "set": name, "arg": arg, **res,
            "wall_seconds": time.perf_counter() - t0}


def run_jobs(jobs: list[tuple], n_jobs: int, desc: str) -> list[dict]:
    # TnT first and alone, so that its timing is not disturbed by our own workers.
    tnt = [run_job(j) for j in jobs if j[0] == "tnt"]
    rest = [j for j in jobs if j[0] != "tnt"]
    rest.sort(key=lambda j: -(j[2] if j[0] == "ars" else 0))  # the slow high orders first
    if n_jobs <= 1:
        return tnt + [run_job(j) for j in progress(rest, desc)]
    with mp.get_context("fork").Pool(n_jobs, maxtasksperchild=1) as pool:
        return tnt + list(progress(pool.imap_unordered(run_job, rest), desc, total=len(rest)))


def machine(n_jobs: int) -> dict:
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "jobs": n_jobs,
            "load_before": os.getloadavg()[0]}


def dev_study(n_jobs: int) -> dict:
    jobs = [("grid", "dev", name) for name in GRID]
    jobs += [("ars", "dev", n) for n in ORDERS]
    jobs += [("tnt", "dev", c) for c in (False, True)]
    return {"machine": machine(n_jobs), "settings": SETTINGS, "default_order": DEFAULT_ORDER,
            "results": run_jobs(jobs, n_jobs, "dev")}


def test_run(n_jobs: int, orders: Sequence[int]) -> dict:
    sets = [s for s in SETS if s in G["sets"]]
    jobs = [("tnt", s, c) for s in sets for c in (False, True)]
    jobs += [("ars", s, n) for s in sets for n in orders]
    summary = json.loads((G["dir"] / "summary.json").read_text())
    return {"machine": machine(n_jobs), "settings": SETTINGS, "default_order": DEFAULT_ORDER,
            "summary": summary, "unknown_tokens": {
                s: sum(w not in G["vocab"] for x in G["sets"][s] for w, _ in x) for s in sets},
            "results": run_jobs(jobs, n_jobs, "test")}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ewt-dir", type=Path, default=REPO / "work" / "ewt")
    ap.add_argument("--orders", type=int, nargs="+", default=list(ORDERS))
    ap.add_argument("--jobs", type=int, default=2, help="worker processes")
    ap.add_argument("--dev", action="store_true", help="run the EWT dev study")
    ap.add_argument("--render-only", action="store_true", help="redo the doc from the JSON")
    ap.add_argument("--doc", type=Path, default=REPO / "docs" / "results-pos.md")
    args = ap.parse_args(argv)
    dev_raw, test_raw = args.ewt_dir / "dev.json", args.ewt_dir / "test.json"
    if not args.render_only:
        if not (args.ewt_dir / "summary.json").is_file():
            print(f"missing {args.ewt_dir}/summary.json; run python -m data_prep.ewt "
                  "--out work/ewt", file=sys.stderr)
            return 1
        load(args.ewt_dir)
        t0 = time.perf_counter()
        res = dev_study(args.jobs) if args.dev else test_run(args.jobs, args.orders)
        res["wall_seconds"] = time.perf_counter() - t0
        res["machine"]["load_after"] = os.getloadavg()[0]
        out = dev_raw if args.dev else test_raw
        out.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
        say(f"wrote {out} ({res['wall_seconds'] / 60:.1f} min)")
    if not (dev_raw.is_file() and test_raw.is_file()):
        say("render needs both work/ewt/dev.json (--dev) and work/ewt/test.json")
        return 0
    from pos_ewt_report import render_section, splice

    section = render_section(json.loads(dev_raw.read_text()), json.loads(test_raw.read_text()))
    splice(args.doc, "ewt", section)
    say(f"wrote the EWT section of {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
