"""What the SMS experiments measure, one function per table or figure (natural log throughout).

Why a module apart from the runner: these functions only call the library and collect what it
returns into JSON-ready dicts; the runner (`sms_experiments.py`) sequences them and writes the
results, and `report/` renders them. The models are module globals so that forked workers of
the decoding sweep share them copy-on-write.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

import maxarpa
from arsdecode.core.target import Target, TargetError
from arsdecode.lattice import Lattice
from arsdecode.methods.ars import adapt, decode, sample
from arsdecode.methods.full import (
    full_decode,
    full_log_partition,
    full_ngrams_by_order,
    full_state_count,
)
from arsdecode.model import as_target_model
from arsdecode.tasks.sms.keypad import KeypadChannel
from experiments.progress_log import progress, say
from maxarpa.constants import LN10
from maxarpa.model import Model

REPO = Path(__file__).resolve().parents[1]

EMBEDDED = REPO / "arsdecode" / "data" / "state_union.5gram.maxarpa.gz"  # the demo model
PAPER_EXAMPLE = "3637 843 66639 39478 *"
PAPER_EXAMPLE_TRUTH = "does the money exist ."
BATCHES = (1, 10, 20, 30, 40, 50, 100)
TARGET_AR = 0.2
AR_WINDOW = 100
TOP_K = 100
MAX_TRIALS = 200_000


# ----- helpers -------------------------------------------------------------------------------
def rng_for(seed: int, *parts: int) -> np.random.Generator:
    return np.random.default_rng([seed, *parts])


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
        MODELS[n] = maxarpa.load(model_file(data, n))
        seconds[str(n)] = time.perf_counter() - t0
        CHANNELS[n] = KeypadChannel.from_vocab(MODELS[n].vocab)
        say(f"loaded {model_file(data, n).name} in {seconds[str(n)]:.1f} s")
    return seconds


def oracle_log_p(lm: Model, lattice: Lattice, words: Sequence[str]) -> float | None:
    """ln p of the true sentence, or None when a true word is not a candidate (OOV)."""
    try:
        return Target(as_target_model(lm), lattice).log_p(list(words))
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
        maxarpa.load(EMBEDDED)
        times.append(time.perf_counter() - t0)
    return times


def timed_decodes(records: Sequence[dict], n: int) -> list[float]:
    """Sequential decoding times (the sweep may run two workers on two cores)."""
    return [decode(MODELS[n], CHANNELS[n].build_lattice(rec["observation"])).seconds
            for rec in progress(records, f"timing decode n={n}")]


def embedded_timings(records: Sequence[dict], seed: int) -> dict:
    """The same long observations decoded and sampled with the embedded state_union model:
    the targets' second reading, for the demo configuration."""
    lm = maxarpa.load(EMBEDDED)
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
    "refine": ("_refine_steps",),  # Algorithm 2 with its fill (core.automaton)
    "lm_queries": ("log_prob", "log_bound"),  # MaxArpaLM: the compiled n-gram walk
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
        hits = [v[3] for k, v in stats.items()
                if k[2] == name and ("arsdecode" in k[0] or "maxarpa" in k[0])]
        if not hits:
            raise RuntimeError(f"profile: {name} was never called; update PROFILED")
        return sum(hits)

    total = cum("decode")
    shares = {part: sum(cum(f) for f in funcs) / total for part, funcs in PROFILED.items()
              if part != "refine" or r.iterations > 1}
    return {"id": rec["id"], "order": n, "iterations": r.iterations, "states": r.states,
            "seconds_profiled": total, "functions": {k: list(v) for k, v in PROFILED.items()},
            "shares": shares}


def full_check(records: Sequence[dict], n: int) -> list[dict]:
    """ARS decoding against the full model's Viterbi on K = 100 lattices (small enough)."""
    checks = []
    for rec in progress(records, "full-model check"):
        lattice = CHANNELS[n].build_lattice(rec["observation"], top_k=TOP_K)
        a, f = decode(MODELS[n], lattice), full_decode(MODELS[n], lattice)
        checks.append({"id": rec["id"], "agree": a.tokens == f.tokens,
                       "abs_diff": abs(a.log_p - f.log_p),
                       "ars_states": a.states, "full_dp_states": f.dp_states})
    return checks
