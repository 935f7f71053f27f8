"""The paper's SMS-retrieval experiments (Carter, Dymetman & Bouchard 2012, sec. 3.1), our data.

Why one runner: every table and figure of a results page comes from one seeded run over the same
models and test set, so the numbers agree with each other. This script only runs the library
and writes what it measured to a JSON file (under work/, gitignored: it holds test sentences
drawn from the NLTK corpora); `experiments/report/sms_markdown.py` and `sms_plots.py` render the
page and the plots from that JSON alone, so `--render-only RESULTS.json` redoes them without
rerunning. The page's title and "Reproduce" block are rendered from the options recorded in the
JSON, so they always name the command that produced the page.

    python -m data_prep.prepare_sms --out work/sms_all \
        --corpora state_union brown abc webtext
    python experiments/sms_experiments.py                       # ~15 min on 2 cores
    python experiments/sms_experiments.py --render-only work/sms_experiments/results.json

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
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from progress_log import progress, say  # noqa: I001
from report.sms_markdown import markdown
from report.sms_plots import write_plots

from arsdecode.ars import adapt, decode, sample
from arsdecode.full import full_decode, full_log_partition, full_ngrams_by_order, full_state_count
from arsdecode.lattice import Lattice
from arsdecode.target import Target, TargetError
from arsdecode.tasks.sms import KeypadChannel
from maxarpa.constants import LN10
from maxarpa.model import Model

REPO = Path(__file__).resolve().parents[1]
SCRIPT = "experiments/sms_experiments.py"
PYTHON = ".venv/bin/python"
EMBEDDED = REPO / "arsdecode" / "data" / "state_union.5gram.maxarpa.gz"  # the demo model
PAPER_EXAMPLE = "3637 843 66639 39478 *"
PAPER_EXAMPLE_TRUTH = "does the money exist ."
BATCHES = (1, 10, 20, 30, 40, 50, 100)
TARGET_AR = 0.2
AR_WINDOW = 100
TOP_K = 100
MAX_TRIALS = 200_000
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


def subset(records: Sequence[dict], per_length: int) -> list[dict]:
    """The first `per_length` records of each length (0: all; test.jsonl is a random draw)."""
    taken: Counter = Counter()
    out = []
    for rec in records:
        n = len(rec["words"])
        if per_length == 0 or taken[n] < per_length:
            taken[n] += 1
            out.append(rec)
    return out


def rng_for(seed: int, *parts: int) -> np.random.Generator:
    return np.random.default_rng([seed, *parts])


def shown(path: Path) -> str:
    """A path as the Reproduce block prints it: relative to the repository when inside it."""
    path = path.resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def default_variant() -> str:
    """The refinement variant `decode` and `sample` use when not told (named in the page)."""
    return inspect.signature(decode).parameters["variant"].default


# ----- the models (module globals so forked workers share them copy-on-write) ----------------
MODELS: dict[int, Model] = {}
CHANNELS: dict[int, KeypadChannel] = {}


def model_file(data: Path, n: int) -> Path:
    """lm.N.maxarpa as data_prep writes it, else the plain lm.N.arpa (bounds computed on load)."""
    maxarpa = data / f"lm.{n}.maxarpa"
    return maxarpa if maxarpa.exists() else data / f"lm.{n}.arpa"


def load_models(data: Path, orders: Sequence[int]) -> dict[str, float]:
    seconds = {}
    for n in progress(orders, "loading models"):
        t0 = time.perf_counter()
        MODELS[n] = Model.load(model_file(data, n))
        seconds[str(n)] = time.perf_counter() - t0
        CHANNELS[n] = KeypadChannel.from_vocab(MODELS[n].vocab)
        say(f"loaded {model_file(data, n).name} in {seconds[str(n)]:.1f} s")
    return seconds


def oracle_log_p(lm: Model, lattice: Lattice, words: Sequence[str]) -> float | None:
    """ln p of the true sentence, or None when a true word is not a candidate (OOV)."""
    try:
        return Target(lm, lattice).log_p(list(words))
    except TargetError:
        return None


# ----- Fig. 2: exact decoding ----------------------------------------------------------------
def decode_one(task: tuple[int, dict]) -> dict:
    """Decode one test sentence with the full candidate lists (runs in a worker)."""
    n, rec = task
    lm, channel = MODELS[n], CHANNELS[n]
    t0 = time.perf_counter()
    lattice = channel.build_lattice(rec["observation"])
    lattice_s = time.perf_counter() - t0
    r = decode(lm, lattice)
    words = rec["words"]
    oracle = oracle_log_p(lm, lattice, words)
    return {
        "order": n, "id": rec["id"], "length": len(words), "oov": rec["oov"],
        "widths": lattice.widths, "tokens": r.tokens,
        "correct_words": sum(a == b for a, b in zip(r.tokens, words)),
        "exact_match": r.tokens == list(words),
        "log_p": r.log_p, "log_q": r.log_q, "oracle_log_p": oracle,
        "search_error": oracle is not None and oracle > r.log_p + 1e-6,
        "iterations": r.iterations, "states": r.states,
        "ngrams_by_order": {str(k): v for k, v in r.ngrams_by_order.items()},
        "certified": r.certified, "seconds": r.seconds, "lattice_seconds": lattice_s,
        "full_states": full_state_count(lm, lattice),
    }


def baselines(records: Sequence[dict], n: int) -> dict:
    """Accuracy without the n-gram context: channel only, and unigram LM x channel (exact)."""
    lm, channel = MODELS[n], CHANNELS[n]
    out = {}
    for name in ("channel", "unigram"):
        words_ok = words_all = sents_ok = 0
        for rec in records:
            lattice = channel.build_lattice(rec["observation"])
            guess = []
            for toks, emis in zip(lattice.tokens, lattice.log_emissions):
                score = np.asarray(emis, dtype=float).copy()
                if name == "unigram":
                    ids = lm.ids(list(toks)).astype(np.int64)
                    ctx = np.full((len(ids), lm.order - 1), -1, dtype=np.int64)
                    score += LN10 * lm.log10p_batch(ctx, ids)
                guess.append(toks[int(np.argmax(score))])
            ok = sum(a == b for a, b in zip(guess, rec["words"]))
            words_ok += ok
            words_all += len(rec["words"])
            sents_ok += ok == len(rec["words"])
        out[name] = {"word_acc": words_ok / words_all, "sent_acc": sents_ok / len(records)}
    return out


def run_decoding(records: Sequence[dict], orders: Sequence[int], jobs: int) -> list[dict]:
    """Every (order, sentence), longest and highest order first so the pool stays balanced."""
    tasks = [(n, rec) for n in orders for rec in records]
    tasks.sort(key=lambda t: (-len(t[1]["words"]) * t[0], t[1]["id"]))
    if jobs > 1:
        with mp.get_context("fork").Pool(jobs) as pool:
            results = list(progress(pool.imap_unordered(decode_one, tasks), "decoding",
                                    len(tasks)))
    else:
        results = [decode_one(task) for task in progress(tasks, "decoding")]
    results.sort(key=lambda r: (r["order"], r["id"]))
    return results


# ----- Table 1 -------------------------------------------------------------------------------
def table1(rec: dict, n: int) -> dict:
    """ARS's final q for one sentence against the full model, full lists and K = 100."""
    lm, channel = MODELS[n], CHANNELS[n]
    out = {"id": rec["id"], "words": rec["words"], "order": n}
    for name, k in (("full_lists", None), ("top100", TOP_K)):
        lattice = channel.build_lattice(rec["observation"], top_k=k)
        r = decode(lm, lattice)
        entry = {
            "widths": lattice.widths, "tokens": r.tokens, "iterations": r.iterations,
            "states": r.states,
            "ngrams_by_order": {str(o): v for o, v in r.ngrams_by_order.items()},
            "full_ngrams_by_order": {str(o): v for o, v in
                                     full_ngrams_by_order(lm, lattice).items()},
            "full_states": full_state_count(lm, lattice),
        }
        if k is not None:  # the merged full DP is affordable on the pruned lattice only
            t0 = time.perf_counter()
            f = full_decode(lm, lattice)
            entry["full_dp_states"] = f.dp_states
            entry["full_decode_seconds"] = time.perf_counter() - t0
            entry["full_decode_agrees"] = f.tokens == r.tokens and abs(f.log_p - r.log_p) < 1e-6
        out[name] = entry
    return out


# ----- Tables 2 and 4: the paper's example ---------------------------------------------------
def paper_example(n: int, seed: int, samples: int) -> dict:
    lm, channel = MODELS[n], CHANNELS[n]
    lattice = channel.build_lattice(PAPER_EXAMPLE)
    trace: list[dict] = []

    def keep(it: int, tokens: list[str], log_q: float, log_p: float) -> None:
        trace.append({"iteration": it, "tokens": tokens, "log_q": log_q, "log_p": log_p})

    r = decode(lm, lattice, on_iteration=keep)
    lat100 = channel.build_lattice(PAPER_EXAMPLE, top_k=TOP_K)
    s = sample(lm, lat100, samples, batch=100, rng=rng_for(seed, 4, n), max_trials=MAX_TRIALS)
    ranked = s.ranked()
    return {
        "order": n, "observation": PAPER_EXAMPLE, "truth": PAPER_EXAMPLE_TRUTH,
        "widths": lattice.widths,
        "decode": {"tokens": r.tokens, "log_p": r.log_p, "iterations": r.iterations,
                   "states": r.states, "seconds": r.seconds, "certified": r.certified,
                   "trace": trace},
        "sample": {
            "n": samples, "trials": s.trials, "acceptance_rate": s.acceptance_rate,
            "states": s.states, "seconds": s.seconds, "log_Z": s.log_Z,
            "log_Z_ci": list(s.log_Z_ci), "log_Z_exact": full_log_partition(lm, lat100),
            "ranked": [{"tokens": t, "count": c, "log_p": lp} for t, c, lp in ranked[:12]],
            "distinct": len(ranked),
        },
    }


# ----- Fig. 3a/3b: one sampling run ----------------------------------------------------------
def fig3ab(rec: dict, n: int, seed: int, samples: int) -> dict:
    lm, channel = MODELS[n], CHANNELS[n]
    lattice = channel.build_lattice(rec["observation"], top_k=TOP_K)
    s = sample(lm, lattice, samples, batch=100, target_ar=TARGET_AR, ar_window=AR_WINDOW,
               rng=rng_for(seed, 3, n), max_trials=MAX_TRIALS)
    t = s.trace
    return {
        "id": rec["id"], "length": len(rec["words"]), "order": n, "batch": 100,
        "samples": samples, "trials": s.trials, "seconds": s.seconds, "states": s.states,
        "refinements": s.refinements, "acceptance_rate": s.acceptance_rate,
        "adapted_at_trial": s.adapted_at_trial, "frozen_from": t.frozen_from,
        "log_Z": s.log_Z, "log_Z_ci": list(s.log_Z_ci),
        "log_Z_exact": full_log_partition(lm, lattice),
        "log_Z_q_final": t.log_Z_q[-1],
        "ratios": t.ratios, "accepted": [bool(a) for a in t.accepted], "trace_states": t.states,
    }


# ----- Table 3 and Fig. 3c/3d: time to AR-100 >= 20% -----------------------------------------
def adapt_run(lm: Model, lattice: Lattice, batch: int, rng: np.random.Generator) -> dict:
    """`adapt` until AR-100 >= 20% at the end of a batch; the clock (`seconds`) covers q^(0)
    and the target, not the lattice or the model load."""
    r = adapt(lm, lattice, batch=batch, target_ar=TARGET_AR, ar_window=AR_WINDOW,
              max_trials=MAX_TRIALS, rng=rng)
    reached = r.adapted_at_trial is not None
    batches = math.ceil(r.trials / batch)
    return {
        "trials": r.trials, "accepted": len(r.samples), "reached": reached,
        "states": r.states, "refinements": r.refinements, "seconds": r.seconds,
        # every batch but the last (the one that met the target) ended with a refinement
        "refining_batches": batches - 1 if reached else batches,
    }


def adapt_task(task: tuple[int, int, dict, int, int]) -> dict:
    n, batch, rec, seed, index = task
    lattice = CHANNELS[n].build_lattice(rec["observation"], top_k=TOP_K)
    res = adapt_run(MODELS[n], lattice, batch, rng_for(seed, 5, n, batch, index))
    return {"order": n, "batch": batch, "id": rec["id"], "length": len(rec["words"]), **res}


def run_adapt(tasks: list, desc: str) -> list[dict]:
    """Sequential on purpose: these runs are timed."""
    return [adapt_task(t) for t in progress(tasks, desc)]


# ----- targets -------------------------------------------------------------------------------
def embedded_load(repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        Model.load(EMBEDDED)
        times.append(time.perf_counter() - t0)
    return times


def timed_decodes(records: Sequence[dict], n: int) -> list[float]:
    """Sequential decoding times (the sweep may run two workers on two cores)."""
    return [decode(MODELS[n], CHANNELS[n].build_lattice(rec["observation"])).seconds
            for rec in progress(records, f"timing decode n={n}")]


def embedded_timings(records: Sequence[dict], seed: int) -> dict:
    """The same long observations decoded and sampled with the embedded state_union model:
    the targets' second reading, for the demo configuration."""
    lm = Model.load(EMBEDDED)
    channel = KeypadChannel.from_vocab(lm.vocab)
    dec, smp, widths = [], [], []
    for i, rec in enumerate(progress(records, "embedded model")):
        lattice = channel.build_lattice(rec["observation"])
        widths.append(statistics.median(lattice.widths))
        dec.append(decode(lm, lattice).seconds)
        lat100 = channel.build_lattice(rec["observation"], top_k=TOP_K)
        smp.append(adapt_run(lm, lat100, 100, rng_for(seed, 6, i))["seconds"])
    return {"decode_seconds": dec, "sample_seconds": smp, "median_width": statistics.median(widths),
            "vocab": len(lm.vocab), "order": lm.order}


PROFILED = {  # share of one decode's time, by library function (cumulative, may overlap)
    "viterbi": ("viterbi_indices",),
    "refine": ("refine_indices",),
    "lm_queries": ("log10p_batch", "max_log10p_batch"),
}


def profile_decode(rec: dict, n: int) -> dict:
    """Where one full-list decode spends its time (cProfile; the shares, not the total, matter).

    Raises if a profiled function was never called: a renamed library function must not show
    up as a 0% share on the page.
    """
    import cProfile
    import pstats

    lattice = CHANNELS[n].build_lattice(rec["observation"])
    prof = cProfile.Profile()
    prof.enable()
    r = decode(MODELS[n], lattice)
    prof.disable()
    stats = pstats.Stats(prof).stats  # (file, line, name) -> (cc, nc, tt, ct, callers)

    def cum(name: str) -> float:
        hits = [v[3] for k, v in stats.items() if k[2] == name]
        if not hits:
            raise RuntimeError(f"profile: {name} was never called; update PROFILED")
        return sum(hits)

    total = cum("decode")
    shares = {part: sum(cum(f) for f in funcs) / total for part, funcs in PROFILED.items()
              if part != "refine" or r.iterations > 1}
    return {"id": rec["id"], "order": n, "iterations": r.iterations, "states": r.states,
            "seconds_profiled": total, "functions": {k: list(v) for k, v in PROFILED.items()},
            "shares": shares}


# ----- the run -------------------------------------------------------------------------------
def run(opts: dict, data: Path) -> dict:
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
            "options": opts, "script": SCRIPT, "top_k": TOP_K, "target_ar": TARGET_AR,
            "ar_window": AR_WINDOW, "batches": list(BATCHES), "variant": default_variant(),
            "main_order": top, "long_length": long_len, "embedded": EMBEDDED.name,
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                        "numpy": np.__version__, "platform": platform.platform()},
        },
        "manifest": manifest,
        "test_lengths": {str(k): len(v) for k, v in sorted(by_len.items())},
    }

    phase("embedded model load time")
    out["embedded_load_seconds"] = embedded_load(opts["load_repeats"])
    out["model_load_seconds"] = load_models(data, orders)

    phase("paper example (Tables 2 and 4)")
    out["paper_example"] = paper_example(top, seed, opts["example_samples"])

    phase("Table 1")
    out["table1"] = table1(long[0], top)

    phase("Fig. 3a/3b")
    out["fig3ab"] = fig3ab(long[0], top, seed, opts["fig3_samples"])

    phase("targets: sequential decode timing")
    timing_recs = long[: opts["timing_sentences"]]
    out["timing_decode"] = {"ids": [r["id"] for r in timing_recs],
                            "seconds": timed_decodes(timing_recs, top)}
    out["profile_decode"] = profile_decode(long[min(1, len(long) - 1)], top)

    phase("Table 3 (batch sizes)")
    t3 = [(top, b, rec, seed, i) for b in BATCHES
          for i, rec in enumerate(long[: opts["table3_sentences"]])]
    out["table3"] = run_adapt(t3, "Table 3")

    phase("Fig. 3c/3d (time to AR-100 >= 20% by length)")
    chosen = subset(records, opts["sample_per_length"])
    out["fig3cd"] = run_adapt([(n, 100, rec, seed, i) for n in orders
                               for i, rec in enumerate(chosen)], "Fig. 3c/3d")
    # The K = 100 lattices are small enough for the full model: check decoding there too.
    checks = []
    for rec in progress(long[: opts["table3_sentences"]], "full-model check"):
        lattice = CHANNELS[top].build_lattice(rec["observation"], top_k=TOP_K)
        a, f = decode(MODELS[top], lattice), full_decode(MODELS[top], lattice)
        checks.append({"id": rec["id"], "agree": a.tokens == f.tokens,
                       "abs_diff": abs(a.log_p - f.log_p),
                       "ars_states": a.states, "full_dp_states": f.dp_states})
    out["full_check_top100"] = checks

    phase("targets: embedded model on the same long observations")
    out["embedded_timings"] = embedded_timings(timing_recs, seed)

    phase("Fig. 2 (decoding sweep)")
    dec_recs = subset(records, opts["decode_per_length"])
    out["decoding"] = run_decoding(dec_recs, orders, opts["jobs"])
    out["baselines"] = baselines(dec_recs, min(orders))

    phase("done")
    out["loadavg"] = LOADAVG
    out["total_seconds"] = time.perf_counter() - started
    return out


# ----- command line --------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"python {SCRIPT}", description=__doc__.split("\n\n")[0])
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
    words = [PYTHON, SCRIPT]
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
