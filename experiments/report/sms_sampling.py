"""The sampling and timing sections of the SMS page: Fig. 3a/3b, Table 3, Fig. 3c/3d, Targets.

Pure functions of the results JSON (see sms_markdown.py). The prose that describes how the
library works names the functions it describes; keep it in step with `arsdecode/methods/ars.py` and
`arsdecode/core/inference.py`.
"""

from __future__ import annotations

import math

import numpy as np

from experiments.report.sms_format import (
    PAPER_SECONDS,
    TARGETS,
    Facts,
    by_length_table,
    fmt,
    md_table,
    mean,
    median,
    pct,
    status,
    window_ar,
)


def final_q_estimate(f3: dict) -> dict | None:
    """Importance-sampling estimate of ln Z from the trials of the final q only (i.i.d. given
    q): Z = q(X) E_q[p/q], with a plain normal interval. None with fewer than two trials."""
    tail = np.asarray(f3["ratios"][f3["frozen_from"] :], dtype=float)
    if len(tail) < 2:
        return None
    lzq = f3["log_Z_q_final"]
    m, se = float(tail.mean()), float(tail.std(ddof=1) / math.sqrt(len(tail)))
    if m <= 0:
        return None
    low = lzq + math.log(m - 1.96 * se) if m > 1.96 * se else -math.inf
    return {"trials": len(tail), "log_Z": lzq + math.log(m),
            "log_Z_ci": [low, lzq + math.log(m + 1.96 * se)]}




def fig3ab(res: dict, f: Facts, image: str) -> list[str]:
    f3 = res["fig3ab"]
    adapted = f3["adapted_at_trial"]
    last = (f"its last refinement came after trial {f3['frozen_from']} ({f3['refinements']} "
            f"refinements, {f3['states']:,} states)")
    if adapted is None:
        when = f"{f.ar} was never reached, so q was refined throughout; {last}"
    else:
        then = (f"the frozen q then ran until {f3['samples']} samples were accepted"
                if adapted < f3["trials"] else
                f"the run had its {len([a for a in f3['accepted'] if a])} samples there")
        when = (f"{f.ar} held at the end of the batch ending at trial {adapted} "
                f"(AR-{f.window} = {window_ar(f3['accepted'], adapted, f.window):.2f}), so q "
                f"was frozen there; {last}, and {then}")
    out = ["## Fig. 3a/3b — one sampling run\n"]
    text = (f"Test sentence {f3['id']} (length {f3['length']}), {f3['order']}-gram, K = {f.k}, "
            f"B = {f3['batch']}, `arsdecode.methods.ars.sample(n={f3['samples']})`: every rejected "
            f"trial of a batch refines q until {f.ar} at the end of a batch. Here {when} "
            f"({f3['trials']} trials, {f3['seconds']:.2f} s in all). Estimated ln Z = "
            f"{f3['log_Z']:.3f} (95% CI {f3['log_Z_ci'][0]:.3f} … {f3['log_Z_ci'][1]:.3f}; the "
            f"library's estimator over all trials); exact (full forward algorithm) = "
            f"{f3['log_Z_exact']:.3f}.")
    out.append(text)
    est = final_q_estimate(f3)
    if est is not None:
        out.append(f"For comparison, the importance-sampling estimate q(X)·mean(p/q) over the "
                   f"{est['trials']} trials drawn from the final q alone "
                   f"(`SampleTrace.frozen_from` on) gives {est['log_Z']:.3f} (95% CI "
                   f"{est['log_Z_ci'][0]:.3f} … {est['log_Z_ci'][1]:.3f}).")
    out += ["", f"![Fig. 3a/3b]({image})\n",
            "Paper (Fig. 3a/3b, length-10 sentence, 5-gram): qualitative — the ratio p/q and "
            f"the acceptance rate rise as q is refined; the paper's run took {PAPER_SECONDS} s.\n"]
    return out


def table3(res: dict, f: Facts) -> list[str]:
    t3 = res["table3"]
    batches = f.cfg["batches"]
    out = [f"## Table 3 — batch size B: time and trials to {f.ar}\n",
           f"{len({r['id'] for r in t3})} length-{f.long} sentences, {f.top}-gram, K = {f.k}; "
           "sequential, in-process, clock from building q^(0) (lattice and model load "
           "excluded). Run by `arsdecode.methods.ars.adapt`, which checks the rate at the end "
           "of each batch, so trials are a multiple of B; *refining batches* = batches at whose "
           "end q was refined with their rejected trials (all but the last when the target is "
           "reached).\n"]
    rows = []
    for b in batches:
        rs = [r for r in t3 if r["batch"] == b]
        rows.append([b, fmt(mean([r["seconds"] for r in rs]), 3),
                     fmt(median([r["seconds"] for r in rs]), 3),
                     fmt(mean([r["trials"] for r in rs]), 0),
                     fmt(mean([r["refining_batches"] for r in rs]), 1),
                     fmt(mean([r["refinements"] for r in rs]), 0),
                     fmt(mean([r["states"] for r in rs]), 0),
                     f"{sum(r['reached'] for r in rs)}/{len(rs)}"])
    t3_mean = {b: mean([r["seconds"] for r in t3 if r["batch"] == b]) for b in batches}
    out += [md_table(["B", "mean s", "median s", "mean trials", "mean refining batches",
                      "mean refinements", "mean states", "reached"], rows), ""]
    out.append(
        "Paper (Table 3): the same measurement for the same B values — qualitative trend only "
        f"here (its digits are not quoted); the paper's sampling run for a length-10 5-gram "
        f"sentence took {PAPER_SECONDS} s. Here larger batches need more trials and bigger "
        "automata (every rejected trial of a batch refines q, including trials a smaller batch "
        "would never have drawn once q had improved), but far fewer batches, and every batch "
        "costs a sum-product backward pass over the whole automaton before its draws "
        "(`inference.sample_indices`), then weights for the states its refinements created "
        "(batched queries with the default variant): fastest B = "
        f"{min(t3_mean, key=t3_mean.__getitem__)}, slowest B = "
        f"{max(t3_mean, key=t3_mean.__getitem__)}.\n")
    return out


def fig3cd(res: dict, f: Facts, image: str) -> list[str]:
    rows_in = res["fig3cd"]
    per = f.opts["sample_per_length"]
    out = [f"## Fig. 3c/3d — trials and states to {f.ar} against length\n",
           (f"Up to {per} sentences per length" if per else "Every test sentence")
           + f", K = {f.k}, B = 100; n = {', '.join(map(str, f.orders))}.\n",
           f"![Fig. 3c/3d]({image})\n"]
    out += [by_length_table(rows_in, f.lengths, f.orders, ("trials", "states")), ""]
    unreached = sum(not r["reached"] for r in rows_in)
    out.append(f"All runs reached the target: {unreached == 0} ({unreached} did not). Paper "
               "(Fig. 3c/3d): qualitative — trials and states grow with length and order.\n")
    chk = res["full_check_top100"]
    out.append(
        f"Cross-check on the K = {f.k} lattices of {len(chk)} length-{f.long} sentences: ARS "
        f"decoding and the full model's Viterbi (`full_decode`) agree on "
        f"{sum(c['agree'] for c in chk)}/{len(chk)} (max |Δ ln p| = "
        f"{max(c['abs_diff'] for c in chk):.1e}); ARS builds "
        f"{fmt(mean([c['ars_states'] for c in chk]), 0)} states on average against "
        f"{fmt(mean([c['full_dp_states'] for c in chk]), 0)} for the merged full DP.\n")
    return out


def targets(res: dict, f: Facts) -> list[str]:
    td = res["timing_decode"]["seconds"]
    s_long = [r["seconds"] for r in res["fig3cd"]
              if r["order"] == f.top and r["length"] == f.long]
    emb, el = res["embedded_timings"], res["embedded_load_seconds"]
    T = TARGETS
    what = f"length {f.long}, {f.top}-gram"
    rows = [
        [f"decode, {what}, full lists — median s ({len(td)} sentences)",
         fmt(median(td), 3), f"≤ {T['decode_median']}", status(median(td), T["decode_median"])],
        ["decode, same — p95 s", fmt(pct(td, 95), 3), f"≤ {T['decode_p95']:g}",
         status(pct(td, 95), T["decode_p95"])],
        [f"sample to {f.ar}, {what}, K={f.k}, B=100 — median s ({len(s_long)})",
         fmt(median(s_long), 3), f"≤ {T['sample_median']}",
         status(median(s_long), T["sample_median"])],
        [f"load `{f.cfg['embedded']}` — median of {len(el)} s", fmt(median(el), 3),
         f"≤ {T['load_median']:g}", status(median(el), T["load_median"])],
        [f"*same decode with the embedded {emb['order']}-gram* — median s",
         fmt(median(emb["decode_seconds"]), 3), f"(≤ {T['decode_median']})",
         status(median(emb["decode_seconds"]), T["decode_median"])],
        ["*embedded model* — p95 s", fmt(pct(emb["decode_seconds"], 95), 3),
         f"(≤ {T['decode_p95']:g})", status(pct(emb["decode_seconds"], 95), T["decode_p95"])],
        ["*same sampling with the embedded model* — median s",
         fmt(median(emb["sample_seconds"]), 3), f"(≤ {T['sample_median']})",
         status(median(emb["sample_seconds"]), T["sample_median"])],
    ]
    out = ["## Targets (this machine, in-process, model load excluded)\n",
           md_table(["measure", "measured", "target", "status"], rows), ""]
    loads = {x["phase"]: x["loadavg_1min"] for x in res.get("loadavg", [])}
    if loads:
        out.append("1-minute load average when each timed phase started (anything above the "
                   f"{f.cfg['machine']['cpus']} cores means other jobs shared the machine and "
                   "the timings are pessimistic): "
                   + ", ".join(f"{k.split(' (')[0]} {v:.2f}" for k, v in loads.items()) + ".\n")
    out += cost(res, f)
    ml = res["model_load_seconds"]
    out.append("Model load of the experiment models (not a target): "
               + ", ".join(f"{k}-gram {v:.1f} s" for k, v in ml.items())
               + " (text files; `maxarpa convert --binary` writes a faster-loading `.npz`).\n")
    return out


def cost(res: dict, f: Facts) -> list[str]:
    """What one decode costs, as `methods.ars.decode` does it (keep in step with the code)."""
    dec = res["decoding"]
    td = res["timing_decode"]["seconds"]
    emb = res["embedded_timings"]
    widths = [w for r in dec if r["order"] == f.top and r["length"] == f.long
              for w in r["widths"]]
    emb_ok = (median(emb["decode_seconds"]) <= TARGETS["decode_median"]
              and pct(emb["decode_seconds"], 95) <= TARGETS["decode_p95"]
              and median(emb["sample_seconds"]) <= TARGETS["sample_median"])
    variant = f.cfg["variant"]
    if variant == "paper":
        bound = ("copies its suffix state's edges, and only the edge on the refined path gets "
                 "a new max-backoff bound")
    else:
        bound = ("gets new weights for every candidate of the next position in one batched "
                 "query: the max-backoff bound, or the exact probability once its context is "
                 "exact")
    out = [
        "**What a decode costs.** Decoding uses every vocabulary word of the observed length as "
        f"a candidate: with the {res['manifest']['vocab_size']:,}-word vocabulary that is a "
        f"median of {median(widths):,.0f} candidates per position on the length-{f.long} "
        f"sentences, against {emb['median_width']:,.0f} with the embedded "
        f"{emb['vocab']:,}-word model"
        + (", which meets every target on the same observations. " if emb_ok else ". ")
        + "Each iteration of `methods.ars.decode` finds the argmax of q by an incremental "
        "Viterbi pass (`inference.viterbi_indices`: of the dense states × candidates weight "
        "matrices, only the rows whose weights or targets changed, or whose successor states "
        "changed value, are recomputed; then one forward walk reads off the path), scores that "
        "path under p, and refines q along it (`QAutomaton.refine_indices`: at most one new "
        f"state per position); with the default `{variant}` variant a new state {bound}. The "
        "recomputed rows and the bound queries each cost ∝ the candidates of a position, and "
        "the number of iterations grows with the number of confusable candidates."]
    pr = res.get("profile_decode")
    if pr:
        names = {part: ", ".join(f"`{fn}`" for fn in fns)
                 for part, fns in pr["functions"].items()}
        parts = {"viterbi": ("the Viterbi pass", ""),
                 "refine": ("refinement", ", its bound queries included"),
                 "lm_queries": ("LM batch queries", ": bounds of new states and p of each "
                                "Viterbi path, overlapping refinement")}
        shares = ", ".join(f"{100 * share:.0f}% in {parts[part][0]} ({names[part]}"
                           f"{parts[part][1]})" for part, share in pr["shares"].items())
        out.append(f"A profile of one length-{f.long} {pr['order']}-gram decode ({pr['id']}: "
                   f"{pr['iterations']} iterations, {pr['states']:,} states, "
                   f"{pr['seconds_profiled']:.2f} s under cProfile) puts {shares}.")
    max_it = max((r["iterations"] for r in dec if r["order"] == f.top), default=0)
    out.append(f"Sequential decode times at length {f.long} range from {fmt(min(td), 3)} s to "
               f"{fmt(max(td), 3)} s (median {fmt(median(td), 3)} s); the most iterations any "
               f"{f.top}-gram decode of the sweep needed is {max_it}.\n")
    return out

