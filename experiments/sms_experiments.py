"""The paper's SMS-retrieval experiments (Carter, Dymetman & Bouchard 2012, sec. 3.1), our data.

Why one runner: every table and figure of a results page comes from one seeded run over the same
models and test set, so the numbers agree with each other. This script sequences the
measurements of `sms_measure.py` (which only call the library) and writes them to a JSON file
(under work/, gitignored: it holds test sentences drawn from the NLTK corpora);
`report/sms_markdown.py` and `report/sms_plots.py` render the page and the plots from that JSON
alone, so `--render-only RESULTS.json` redoes them without rerunning. The page's title and
"Reproduce" block are rendered from the options recorded in the JSON, so they always name the
command that produced the page.

    .venv/bin/python -m data_prep.prepare_sms --out work/sms_all \
        --corpora state_union brown abc webtext
    .venv/bin/python -m experiments.sms_experiments               # about 7 min on 2 cores
    .venv/bin/python -m experiments.sms_experiments --render-only work/sms_experiments/results.json

What is run (natural log throughout, like the library); "long" sentences are those of the
test set's greatest length (10), N is the highest order (5):
- Fig. 2: exact decoding (`decode`, full candidate lists) of test sentences for every order.
- Table 1: n-grams by order in the final q of one long sentence (`QAutomaton.ngrams_by_order`)
  against the full model (`full_ngrams_by_order`, `full_state_count`).
- Tables 2 and 4: the paper's example observation, decode trace and ranked samples.
- Fig. 3a/3b: one sampling run (`sample`, K = 100, B = 100) on a long sentence.
- Table 3 and Fig. 3c/3d: trials, states and time until the acceptance rate over the last 100
  trials reaches 20% (`adapt`, the paper's protocol).
- Targets: decoding and sampling latency, embedded-model load time, a profile of one decode.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from arsdecode.methods.ars import decode
from data_prep.prepare_sms import subset
from experiments import sms_measure as M
from experiments.progress_log import say
from experiments.report.sms_markdown import markdown
from experiments.report.sms_plots import write_plots

REPO = Path(__file__).resolve().parents[1]

SCRIPT = "experiments.sms_experiments"  # run as a module from the repository root
PYTHON = ".venv/bin/python"
# Options that define the run (recorded in the JSON and shown in the page's Reproduce block);
# the other options only say where files go.
RUN_OPTIONS = ("data", "orders", "seed", "jobs", "decode_per_length", "sample_per_length",
               "table3_sentences", "timing_sentences", "load_repeats", "example_samples",
               "fig3_samples")
OUTPUT_OPTIONS = ("json", "doc", "img")


# ----- helpers -------------------------------------------------------------------------------
LOADAVG: list[dict] = []


def phase(name: str) -> None:
    """Announce a phase and record the machine's load average (other jobs skew timings)."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan
    LOADAVG.append({"phase": name, "loadavg_1min": load})
    say(f"{name} (load average {load:.2f})")


def shown(path: Path) -> str:
    """A path as the Reproduce block prints it: relative to the repository when inside it."""
    path = path.resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def default_variant() -> str:
    """The refinement variant `decode` and `sample` use when not told (named in the page)."""
    return inspect.signature(decode).parameters["variant"].default


# ----- the run -------------------------------------------------------------------------------
def run(opts: dict, data: Path) -> dict:
    """Every measurement of the page, in a fixed order, as one JSON-ready dict."""
    manifest = json.loads((data / "manifest.json").read_text())
    records = [json.loads(line) for line in (data / "test.jsonl").read_text().splitlines()]
    orders, seed = opts["orders"], opts["seed"]
    top = max(orders)
    by_len: dict[int, list[dict]] = {}
    for rec in records:
        by_len.setdefault(len(rec["words"]), []).append(rec)
    long_len = max(by_len)
    long = by_len[long_len]
    started = time.perf_counter()
    out: dict = {
        "config": {
            "options": opts, "script": SCRIPT, "top_k": M.TOP_K, "target_ar": M.TARGET_AR,
            "ar_window": M.AR_WINDOW, "batches": list(M.BATCHES), "variant": default_variant(),
            "main_order": top, "long_length": long_len, "embedded": M.EMBEDDED.name,
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                        "numpy": np.__version__, "platform": platform.platform()},
        },
        "manifest": manifest,
        "test_lengths": {str(k): len(v) for k, v in sorted(by_len.items())},
    }

    phase("embedded model load time")
    out["embedded_load_seconds"] = M.embedded_load(opts["load_repeats"])
    out["model_load_seconds"] = M.load_models(data, orders)

    phase("paper example (Tables 2 and 4)")
    out["paper_example"] = M.paper_example(top, seed, opts["example_samples"])

    phase("Table 1")
    out["table1"] = M.table1(long[0], top)

    phase("Fig. 3a/3b")
    out["fig3ab"] = M.fig3ab(long[0], top, seed, opts["fig3_samples"])

    phase("targets: sequential decode timing")
    timing_recs = long[: opts["timing_sentences"]]
    out["timing_decode"] = {"ids": [r["id"] for r in timing_recs],
                            "seconds": M.timed_decodes(timing_recs, top)}
    out["profile_decode"] = M.profile_decode(long[min(1, len(long) - 1)], top)

    phase("Table 3 (batch sizes)")
    t3 = [(top, b, rec, seed, i) for b in M.BATCHES
          for i, rec in enumerate(long[: opts["table3_sentences"]])]
    out["table3"] = M.run_adapt(t3, "Table 3")

    phase("Fig. 3c/3d (time to AR-100 >= 20% by length)")
    chosen = subset(records, opts["sample_per_length"])
    out["fig3cd"] = M.run_adapt([(n, 100, rec, seed, i) for n in orders
                                 for i, rec in enumerate(chosen)], "Fig. 3c/3d")
    out["full_check_top100"] = M.full_check(long[: opts["table3_sentences"]], top)

    phase("targets: embedded model on the same long observations")
    out["embedded_timings"] = M.embedded_timings(timing_recs, seed)

    phase("Fig. 2 (decoding sweep)")
    dec_recs = subset(records, opts["decode_per_length"])
    out["decoding"] = M.run_decoding(dec_recs, orders, opts["jobs"])
    out["baselines"] = M.baselines(dec_recs, min(orders))

    phase("done")
    out["loadavg"] = LOADAVG
    out["total_seconds"] = time.perf_counter() - started
    return out


# ----- command line --------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"python -m {SCRIPT}", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO / "work" / "sms_all",
                    help="data_prep.prepare_sms output: manifest.json, test.jsonl, lm.N.maxarpa")
    ap.add_argument("--orders", type=int, nargs="+", default=[3, 4, 5])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes for the decoding sweep")
    ap.add_argument("--decode-per-length", type=int, default=20,
                    help="sentences per length for Fig. 2 (0 = the whole test set)")
    ap.add_argument("--sample-per-length", type=int, default=20, help="for Fig. 3c/3d (0 = all)")
    ap.add_argument("--table3-sentences", type=int, default=20)
    ap.add_argument("--timing-sentences", type=int, default=30)
    ap.add_argument("--load-repeats", type=int, default=5)
    ap.add_argument("--example-samples", type=int, default=1000)
    ap.add_argument("--fig3-samples", type=int, default=300)
    ap.add_argument("--json", type=Path, default=REPO / "work" / "sms_experiments" / "results.json")
    ap.add_argument("--doc", type=Path, default=REPO / "docs" / "results-sms.md")
    ap.add_argument("--img", type=Path, default=REPO / "docs" / "img")
    ap.add_argument("--render-only", type=Path, metavar="RESULTS.json",
                    help="redo the page and plots from this results file, without running")
    return ap


def _arg_text(value: object) -> str:
    if isinstance(value, list):
        return " ".join(_arg_text(v) for v in value)
    return shown(value) if isinstance(value, Path) else str(value)


def command(values: dict[str, object]) -> str:
    """The canonical command line for these option values: every option that differs from its
    default, in the parser's order, paths relative to the repository."""
    words = [PYTHON, "-m", SCRIPT]
    for action in parser()._actions:
        if action.dest in values and values[action.dest] is not None:
            text = _arg_text(values[action.dest])
            if text != _arg_text(action.default):
                words += [action.option_strings[0], text]
    return " ".join(words)


def data_prep_command(manifest: dict, data: str) -> str:
    """The data_prep command that made `data` (a manifest may name its own, e.g. in tests)."""
    if "command" in manifest:
        return manifest["command"]
    words = [PYTHON, "-m", "data_prep.prepare_sms", "--out", data]
    if manifest["corpora"] != ["state_union"]:
        words += ["--corpora", *manifest["corpora"]]
    orders = sorted(int(k) for k in manifest["models"])
    if orders != [3, 4, 5]:
        words += ["--orders", *map(str, orders)]
    if manifest.get("seed", 0) != 0:
        words += ["--seed", str(manifest["seed"])]
    return " ".join(words)


def reproduce(res: dict, paths: dict[str, Path]) -> list[str]:
    """Commands that regenerate the page: prepare the data, run, or re-render from the JSON."""
    opts = dict(res["config"]["options"])
    opts["data"] = Path(opts["data"]) if Path(opts["data"]).is_absolute() else REPO / opts["data"]
    outputs = {k: paths[k] for k in OUTPUT_OPTIONS}
    return [
        data_prep_command(res["manifest"], _arg_text(opts["data"])),
        command({**opts, **outputs}),
        command({"render_only": paths["json"], "doc": paths["doc"], "img": paths["img"]}),
    ]


def write_text(path: Path, text: str) -> None:
    """Write through a temporary file and rename, so a failed run leaves no half file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def render(res: dict, paths: dict[str, Path]) -> None:
    files = write_plots(res, paths["img"])
    rel = os.path.relpath(paths["img"].resolve(), paths["doc"].resolve().parent)
    text = markdown(res, images={k: f"{rel}/{v}" for k, v in files.items()},
                    json_path=shown(paths["json"]), reproduce=reproduce(res, paths))
    write_text(paths["doc"], text)


def _jsonable(x: object) -> object:
    """numpy scalars (bools, ints, floats) that slipped into the results."""
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    paths = {"json": args.json, "doc": args.doc, "img": args.img}
    if args.render_only is not None:
        changed = [o for o in RUN_OPTIONS + ("json",)
                   if getattr(args, o) != ap.get_default(o)]
        if changed:
            ap.error(f"--render-only takes the run's options from the JSON; drop --{changed[0]}")
        try:
            res = json.loads(args.render_only.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            print(f"error: {args.render_only}: {err}", file=sys.stderr)
            return 2
        paths["json"] = args.render_only
    else:
        if not (args.data / "manifest.json").exists():
            ap.error(f"{args.data}: run data_prep.prepare_sms first (see the module docstring)")
        opts = {o: getattr(args, o) for o in RUN_OPTIONS}
        opts["data"] = shown(args.data)
        res = run(opts, args.data)
        write_text(args.json, json.dumps(res, default=_jsonable) + "\n")
        say(f"wrote {args.json}")
    render(res, paths)
    say(f"wrote {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
