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
work/ewt/caps.json; the block `ewtcaps` of docs/results-pos.md is rendered from it.

    python -m data_prep.ewt --out work/ewt
    python experiments/pos_ewt_caps.py [--jobs 2] [--orders 2 3 4 5 6 7 8 9] [--render-only]
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

import pos_ewt  # noqa: E402
from pos_cap import build_plain_lms  # noqa: E402
from pos_ewt_report import SET_NAMES, pct, splice  # noqa: E402
from progress_log import progress, say  # noqa: E402

from arsdecode.tasks.pos.cap import CapEmissions  # noqa: E402
from arsdecode.tasks.pos.emissions import TnTEmissions  # noqa: E402
from data_prep.ewt import DEFAULT_ORDER, SETTINGS  # noqa: E402

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


def render(res: dict) -> str:
    """The `ewtcaps` block: per set, accuracy (all / known / unknown) of every variant."""
    sets, orders = res["sets"], res["orders"]
    rows = {(r["variant"], r["set"], r["order"]): r for r in res["results"]}
    tnt = {(r["set"], r["arg"]): r for r in res["tnt"]}
    checked = sum(r["checked"] for r in res["results"])
    agree = sum(r["check_agree"] for r in res["results"])
    L = ["## Issue 19: the shipped tagger gets TnT's capitalisation feature\n",
         "The shipped EWT tagger now decodes over capitalised states (TnT's C=True: the "
         "hidden state is the tag and whether the word starts with a capital, "
         "`arsdecode.tasks.pos.cap`, tag LM over those states), and its suffix model leaves "
         "out rare case variants of frequent words (\"Which\", \"Each\") and closed-class "
         "tags (`arsdecode.tasks.pos.emissions.PENN_CLOSED_TAGS`), so that no unknown word gets a "
         "function-word tag (tests/test_pos_closed_class.py). Before, \"He visited Munich "
         "yesterday .\" gave Munich/DT (n = 3, 4, 5) and \"The company Zürich Insurance rose "
         ".\" Zürich/WDT; both are NNP now at every shipped order. The variants add one "
         "change each (`experiments/pos_ewt_caps.py`): *plain* is the previous shipped "
         "model, *caps* adds the capitalisation feature alone, *no case variants* adds "
         "`skip_case_variants`, *shipped* adds `closed_tags`. Accuracy %, all / known / "
         "unknown (unknown = unseen in EWT train); bold: the best variant of the row. NLTK "
         "TnT (N = 1000) is trained on the same EWT train. CPU s: lattices + exact decoding of "
         "the whole set in one process (the ARS cross-check not timed). The EWT section "
         "above is the plain-state model (the *plain* column here), but for its "
         "capitalised-states table, which is the *shipped* column.\n"]
    for s in sets:
        n_unk = res["unknown_tokens"][s]
        L.append(f"### {SET_NAMES[s]} ({n_unk:,} unknown tokens)\n")
        L.append("| n | " + " | ".join(VARIANTS) + " | CPU s, plain / shipped |")
        L.append("|---" * (2 + len(VARIANTS)) + "|")
        for n in orders:
            cells = [rows.get((v, s, n)) for v in VARIANTS]
            if any(c is None for c in cells):
                continue
            best = max(c["accuracy"] for c in cells)

            def fmt(c: dict, best: float = best) -> str:
                a = pct(c["accuracy"])
                a = f"**{a}**" if c["accuracy"] == best else a
                return f"{a} / {pct(c['known_accuracy'])} / {pct(c['unknown_accuracy'])}"

            label = f"{n} (default)" if n == res["default_order"] else str(n)
            L.append(f"| {label} | " + " | ".join(fmt(c) for c in cells)
                     + f" | {cells[0]['seconds']:.2f} / {cells[-1]['seconds']:.2f} |")
        for c in (False, True):
            t = tnt[(s, c)]
            L.append(f"| NLTK TnT (C={c}) | {pct(t['accuracy'])} / {pct(t['known_accuracy'])}"
                     f" / {pct(t['unknown_accuracy'])} | | | | {t['seconds']:.2f} (TnT) |")
        wins = {c: sum(rows[("shipped", s, n)]["accuracy"] > tnt[(s, c)]["accuracy"]
                       for n in orders if ("shipped", s, n) in rows) for c in (False, True)}
        done = sum(("shipped", s, n) in rows for n in orders)
        L.append(f"\nShipped model above NLTK TnT at {wins[False]} of {done} orders "
                 f"(C=True: {wins[True]} of {done}).\n")
    L.append(f"Exactness: ARS re-decoded {agree:,} of {checked:,} checked sentences (50 per "
             "job) to the same ln p as the full-model DP. Run: "
             f"{res['wall_seconds'] / 60:.1f} min on {res['machine']['jobs']} worker "
             f"processes, Python {res['machine']['python']}, load average "
             f"{res['machine']['load_before']:.1f} at the start.\n")
    L.append("Reproduce:\n\n```\npython -m data_prep.ewt --out work/ewt\n"
             "python experiments/pos_ewt_caps.py --jobs 2\n```\n")
    return "\n".join(L)


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
    splice(args.doc, "ewtcaps", render(json.loads(raw.read_text())),
           script="experiments/pos_ewt_caps.py")
    say(f"wrote the ewtcaps block of {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
