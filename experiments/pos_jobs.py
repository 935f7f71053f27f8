"""The POS experiment's worker jobs (experiments/pos_experiments.py runs them).

Why a module of its own: the runner decides what runs and assembles the results; the jobs are
what one forked worker does for one (decoder, n) pair, timed by CPU time inside that process.
They read the shared context (emissions, test sentences, lattices, tag LMs) from the module
global G, filled once by the parent before the fork, so that every worker shares it
copy-on-write instead of reloading it (issue 30: the runner was over 400 lines).
"""

from __future__ import annotations

import math
import multiprocessing as mp
import time
from pathlib import Path

import numpy as np

import maxarpa
from arsdecode.lattice import Lattice
from arsdecode.methods.ars import decode, sample
from arsdecode.methods.full import full_decode
from arsdecode.tasks.pos.emissions import TnTEmissions
from arsdecode.tasks.pos.evaluation import read_tagged, score_tags
from experiments.pos_protocol import (
    AR_WINDOW,
    BATCH,
    BUDGET_S,
    LITERAL_MAX_LAYER_PAIRS,
    MAX_TRIALS,
    SEED,
    TARGET_AR,
)
from experiments.progress_log import progress
from maxarpa.model import Model


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
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]  # untyped in typeshed
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
