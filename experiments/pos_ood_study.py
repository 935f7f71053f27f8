"""Issue 29 G: choose the shipped tagger's suffix-model switches on EWT dev AND out-of-domain dev.

Why: issue 19's capitalisation states, case-variant and closed-class suffix rules were chosen
on EWT dev alone, and the shipped tagger then fell behind NLTK TnT on a hidden out-of-domain
set. This grid scores every combination of those three switches (and the Dirichlet suffix
weight alpha, also chosen on EWT dev alone) at the shipped order on the development sets of
experiments/pos_ood.py (EWT dev, Brown dev, Brown dev in title case, WSJ dev), next to TnT
trained on the same EWT train, and picks the configuration whose *smallest* margin over TnT
(C=False) across the sets is largest (ties: the higher mean accuracy): a tagger must beat TnT
on each set, not on their average. No test set is read. data_prep.ewt.SETTINGS must hold the
choice (the run says so if it does not). Writes work/ewt/ood_study.json and the block
`ewtoodchoice` of docs/results-pos.md.

    python -m experiments.pos_ood_study [--jobs 1] [--render-only]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import multiprocessing as mp  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

import maxarpa  # noqa: E402
from arsdecode.tasks.pos.cap import CapEmissions, cap_sequences  # noqa: E402
from arsdecode.tasks.pos.emissions import PENN_CLOSED_TAGS, TnTEmissions  # noqa: E402
from data_prep.ewt import DEFAULT_ORDER, SETTINGS  # noqa: E402
from data_prep.pos_data import DataError, convert_maxarpa, deleted_interpolation_arpa  # noqa: E402
from experiments import pos_ood  # noqa: E402
from experiments.progress_log import progress, say  # noqa: E402

ALPHAS = (10.0, 30.0)
G: dict = {}  # worker state: forked workers share it copy-on-write


def configs() -> list[dict]:
    """Every combination of the three issue-19 switches and the suffix weights ALPHAS."""
    out = []
    for caps, variants, closed, alpha in itertools.product(
            (False, True), (False, True), (False, True), ALPHAS):
        out.append({**SETTINGS, "capitalisation": caps, "skip_case_variants": variants,
                    "closed_tags": PENN_CLOSED_TAGS if closed else (), "suffix_alpha": alpha})
    return out


def label(settings: dict) -> str:
    """A short name: which switches are on, and alpha."""
    on = [name for name, key in (("caps", "capitalisation"), ("no case variants",
                                                              "skip_case_variants"),
                                 ("closed", "closed_tags")) if settings[key]]
    return f"{' + '.join(on) or 'plain'}, alpha {settings['suffix_alpha']:g}"


def tag_lm(out: Path, caps: bool, order: int) -> Path:
    """The deleted-interpolation tag LM over tags or capitalised states, built if missing."""
    path = out / ("cap" if caps else "plain") / f"tags.{order}.maxarpa"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        train = G["data"].train
        seqs = cap_sequences(train) if caps else [[t for _, t in s] for s in train]
        arpa, _ = deleted_interpolation_arpa(seqs, order, path.with_suffix(".arpa"))
        if not convert_maxarpa(arpa, path):
            raise DataError(f"cannot convert {arpa} to MAX-ARPA")
    return path


def run_job(settings: dict) -> dict:
    em = TnTEmissions.train(G["data"].train, **settings)
    lm = maxarpa.load(G["lms"][bool(settings["capitalisation"])])
    ours = pos_ood.tag_ours(G["data"], lm, CapEmissions(em) if em.capitalisation else em)
    return {"label": label(settings), "settings": {**settings,
                                                  "closed_tags": list(settings["closed_tags"])},
            "ours": ours}


def choose(res: dict) -> dict:
    """Add margins over TnT (C=False) to every row and return the chosen row."""
    for row in res["rows"]:
        row["margins"] = {s: row["ours"][s]["accuracy"] - res["tnt"][s]["accuracy"]
                          for s in pos_ood.SETS}
        row["min_margin"] = min(row["margins"].values())
        row["mean"] = sum(row["ours"][s]["accuracy"] for s in pos_ood.SETS) / len(pos_ood.SETS)
    return max(res["rows"], key=lambda r: (round(r["min_margin"], 6), r["mean"]))


def run(n_jobs: int, out: Path, order: int) -> dict:
    t0 = time.perf_counter()
    G["lms"] = {c: tag_lm(out.parent / "ood_lms", c, order) for c in (False, True)}
    res: dict = {"order": order, "tnt": pos_ood.tag_tnt(G["data"], False),
                 "tnt_c": pos_ood.tag_tnt(G["data"], True), "rows": []}
    jobs = configs()
    with mp.get_context("fork").Pool(n_jobs) as pool:
        for row in progress(pool.imap(run_job, jobs), "ood", total=len(jobs)):
            res["rows"].append(row)
    best = choose(res)
    res["chosen"] = best["label"]
    res["shipped"] = label(SETTINGS)
    res["wall_seconds"] = time.perf_counter() - t0
    res["load_after"] = os.getloadavg()[0]
    out.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    return res


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--order", type=int, default=DEFAULT_ORDER)
    ap.add_argument("--ewt", type=Path, default=None, help="dir with en_ewt-ud-*.conllu.gz")
    ap.add_argument("--nltk-dir", type=Path, default=None, help="dir with the NLTK zips")
    ap.add_argument("--json", type=Path, default=REPO / "work" / "ewt" / "ood_study.json")
    ap.add_argument("--doc", type=Path, default=REPO / "docs" / "results-pos.md")
    ap.add_argument("--render-only", action="store_true", help="redo the doc from the JSON")
    args = ap.parse_args(argv)
    from experiments.report.pos_ewt import splice
    from experiments.report.pos_ood import study_markdown

    if not args.render_only:
        try:
            G["data"] = pos_ood.DevData(*pos_ood.find_data(args.ewt, args.nltk_dir))
            args.json.parent.mkdir(parents=True, exist_ok=True)
            res = run(args.jobs, args.json, args.order)
        except (DataError, OSError) as err:
            print(f"pos_ood_study: {err}", file=sys.stderr)
            return 2
        say(f"wrote {args.json} ({res['wall_seconds'] / 60:.1f} min); chosen: {res['chosen']}")
        if res["chosen"] != res["shipped"]:
            say(f"data_prep.ewt.SETTINGS ships {res['shipped']}: update it and rebuild")
    if not args.json.is_file():
        print(f"pos_ood_study: no {args.json}: run without --render-only first", file=sys.stderr)
        return 2
    splice(args.doc, "ewtoodchoice", study_markdown(json.loads(args.json.read_text())),
           script="experiments/pos_ood_study.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
