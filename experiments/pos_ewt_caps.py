"""Issue 19 F: the shipped tagger with TnT's capitalisation feature, against plain states and TnT.

Why: the shipped EWT tagger used plain tag states, and capitalised unknown words came out with
closed-class tags ("He visited Munich yesterday ." gave Munich/DT). The fix has three parts,
each a setting of `tasks.pos.emissions.TnTEmissions` (data_prep.ewt.SETTINGS ships all three);
this script scores them one by one, so that each is seen to pay its way on EWT dev:

* plain: the previous shipped model (tag states; capitalisation, case variants, closed tags off);
* caps: + TnT's capitalisation feature (states "tag^class", arsdecode.tasks.pos.cap);
* caps, no case variants: + rare case variants of frequent words ("Which") out of the suffix
  model (`skip_case_variants`);
* shipped: + closed-class tags out of the suffix model (`closed_tags`).

Every variant at every order on EWT dev, EWT test and WSJ section 20 (when work/ewt has it),
exact decoding (`tag_many(..., method="full")`, with the ARS cross-check of pos_ewt.tag_exact),
next to NLTK TnT (C=False and C=True) trained on the same EWT train. Raw results go to
work/ewt/caps.json; the block `ewtcaps` of docs/results-pos.md is rendered from it
(experiments/report/pos_ewt_caps.py).

    python -m data_prep.ewt --out work/ewt
    python -m experiments.pos_ewt_caps [--jobs 2] [--orders 2 3 4 5 6 7 8 9] [--render-only]
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

from arsdecode.tasks.pos.cap import CapEmissions  # noqa: E402
from arsdecode.tasks.pos.emissions import TnTEmissions  # noqa: E402
from data_prep.ewt import DEFAULT_ORDER, SETTINGS  # noqa: E402
from experiments import pos_ewt  # noqa: E402
from experiments.pos_cap import build_plain_lms  # noqa: E402
from experiments.progress_log import progress, say  # noqa: E402
from experiments.report.pos_ewt import splice  # noqa: E402
from experiments.report.pos_ewt_caps import markdown  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

OFF = {"capitalisation": False, "skip_case_variants": False, "closed_tags": ()}
VARIANTS: dict[str, dict] = {
    "plain": {**SETTINGS, **OFF},
    "caps": {**SETTINGS, **OFF, "capitalisation": True},
    "caps, no case variants": {**SETTINGS, **OFF, "capitalisation": True,
                               "skip_case_variants": True},
    "shipped": dict(SETTINGS),
}
G = pos_ewt.G  # worker state (pos_ewt.load fills it); forked workers share it


def run_job(job: tuple[str, str, int]) -> dict:
    """One variant on one set at one order."""
    variant, name, order = job
    settings = VARIANTS[variant]
    em = TnTEmissions.train(G["train"], **settings)
    lm_dir = G["dir"] if settings["capitalisation"] else G["dir"] / "plain"
    res = pos_ewt.tag_exact(CapEmissions(em) if em.capitalisation else em, order,
                            G["sets"][name], lm_dir)
    res.pop("confusions")
    return {"variant": variant, "set": name, "order": order, **res}


def run(n_jobs: int, orders: Sequence[int], out: Path) -> dict:
    build_plain_lms(G["train"], G["dir"] / "plain", orders)
    sets = list(G["sets"])
    res: dict = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                             "jobs": n_jobs, "load_before": os.getloadavg()[0]},
                 "orders": list(orders), "sets": sets, "default_order": DEFAULT_ORDER,
                 "variants": {k: {**v, "closed_tags": list(v["closed_tags"])}
                              for k, v in VARIANTS.items()},
                 "unknown_tokens": {s: sum(w not in G["vocab"] for x in G["sets"][s]
                                           for w, _ in x) for s in sets},
                 "tnt": [], "results": []}
    t0 = time.perf_counter()
    for c in (False, True):  # alone, before our workers, as pos_ewt does
        res["tnt"].extend(pos_ewt.tag_tnt(c))
    jobs = [(v, s, n) for n in orders for s in sets for v in VARIANTS]
    with mp.get_context("fork").Pool(n_jobs, maxtasksperchild=4) as pool:
        for row in progress(pool.imap(run_job, jobs), "caps", total=len(jobs)):
            res["results"].append(row)
    res["wall_seconds"] = time.perf_counter() - t0
    res["machine"]["load_after"] = os.getloadavg()[0]
    for r in res["tnt"]:
        r.pop("confusions", None)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    tmp.replace(out)
    return res


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ewt-dir", type=Path, default=REPO / "work" / "ewt")
    ap.add_argument("--orders", type=int, nargs="+", default=list(pos_ewt.ORDERS))
    ap.add_argument("--jobs", type=int, default=2, help="worker processes")
    ap.add_argument("--render-only", action="store_true", help="redo the doc from the JSON")
    ap.add_argument("--doc", type=Path, default=REPO / "docs" / "results-pos.md")
    args = ap.parse_args(argv)
    raw = args.ewt_dir / "caps.json"
    if not args.render_only:
        if not (args.ewt_dir / "summary.json").is_file():
            print(f"missing {args.ewt_dir}/summary.json; run python -m data_prep.ewt "
                  "--out work/ewt", file=sys.stderr)
            return 1
        pos_ewt.load(args.ewt_dir)
        res = run(args.jobs, args.orders, raw)
        say(f"wrote {raw} ({res['wall_seconds'] / 60:.1f} min)")
    if not raw.is_file():
        say(f"no {raw}: run without --render-only first")
        return 1
    splice(args.doc, "ewtcaps", markdown(json.loads(raw.read_text())),
           script="experiments/pos_ewt_caps.py")
    say(f"wrote the ewtcaps block of {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
