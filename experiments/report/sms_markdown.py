"""The SMS results page (docs/results-sms*.md), rendered from the results JSON alone.

Why separate from the runner: the page is a pure function of the JSON, the image paths and the
Reproduce commands, so `--render-only` regenerates it byte for byte, and every number and every
sentence that depends on the run (which order, which length, whether a target is met) is
computed here from the results, never typed in. Prose about how the library works names the
functions it describes; keep it in step with `methods/ars.py` and `core/inference.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

from experiments.report.sms_format import (
    PAPER_SECONDS,
    TARGETS,
    Facts,
    by_length_table,
    fmt,
    group,
    md_table,
    mean,
    median,
    model_error,
    pct,
    sci,
    words_and,
)
from experiments.report.sms_sampling import fig3ab, fig3cd, table3, targets


# ----- sections ------------------------------------------------------------------------------
def summary(res: dict, f: Facts) -> list[str]:
    """The headline numbers, computed from the results (so a rerun keeps them true)."""
    dec = res["decoding"]
    top_long = [r for r in dec if r["order"] == f.top and r["length"] == f.long]
    acc = {n: sum(r["correct_words"] for r in dec if r["order"] == n)
           / sum(r["length"] for r in dec if r["order"] == n) for n in f.orders}
    chk = res["full_check_top100"]
    s_long = [r for r in res["fig3cd"] if r["order"] == f.top and r["length"] == f.long]
    t3 = res["table3"]
    best_b = min(f.cfg["batches"], key=lambda b: mean([r["seconds"] for r in t3
                                                       if r["batch"] == b]))
    td = res["timing_decode"]["seconds"]
    f3 = res["fig3ab"]
    it = {n: mean([r["iterations"] for r in dec if r["order"] == n]) for n in f.orders}
    present = sorted({r["length"] for r in dec})  # the three shortest against the three longest
    short = mean([r["iterations"] for r in dec if r["length"] in present[:3]])
    long_ = mean([r["iterations"] for r in dec if r["length"] in present[-3:]])
    if len(f.orders) == 1:
        trend = ("Effort grows with length, as in the paper." if long_ > short else
                 "Unlike the paper, effort does not grow with length here.")
    elif long_ > short and it[max(f.orders)] > it[min(f.orders)]:
        trend = "Effort grows with length and with the order, as in the paper."
    else:
        trend = "Unlike the paper, effort does not grow with both length and order here."
    spread = 100 * (max(acc.values()) - min(acc.values()))
    acc_note = (": on this training set the higher orders barely change the output."
                if len(f.orders) > 1 and spread < 1 else ".")
    emb = res["embedded_timings"]
    emb_ok = (median(emb["decode_seconds"]) <= TARGETS["decode_median"]
              and pct(emb["decode_seconds"], 95) <= TARGETS["decode_p95"])
    meets = median(td) <= TARGETS["decode_median"] and pct(td, 95) <= TARGETS["decode_p95"]
    return [
        "## Summary\n",
        f"- **Exact, and certified**: {sum(r['certified'] for r in dec)}/{len(dec)} decodes "
        f"certified, {sum(r['search_error'] for r in dec)} search errors (no true sentence "
        f"ever outscores the output); on K = {f.k} lattices ARS and the full model's Viterbi "
        f"agree on {sum(c['agree'] for c in chk)}/{len(chk)} sentences; sampling's ln Z "
        f"estimate {f3['log_Z']:.2f} against the exact {f3['log_Z_exact']:.2f} (Fig. 3a/3b).",
        f"- **Decoding effort (Fig. 2)**: at length {f.long} with the {f.top}-gram and full "
        f"candidate lists, {mean([r['iterations'] for r in top_long]):.0f} iterations and "
        f"{mean([r['states'] for r in top_long]):,.0f} states on average, against "
        f"{sci(mean([r['full_states'] for r in top_long]))} states in the full model. {trend}",
        f"- **Accuracy**: word accuracy {', '.join(f'{100 * acc[n]:.1f}%' for n in f.orders)} "
        f"for n = {', '.join(map(str, f.orders))} (unigram × channel: "
        f"{100 * res['baselines']['unigram']['word_acc']:.1f}%){acc_note}",
        f"- **Sampling (Fig. 3c/3d, Table 3)**: length {f.long}, {f.top}-gram, K = {f.k}, "
        f"B = 100 reaches {f.ar} after {mean([r['trials'] for r in s_long]):.0f} trials and "
        f"{median([r['seconds'] for r in s_long]):.2f} s (median) — the paper's run took "
        f"{PAPER_SECONDS} s. The fastest batch size here is B = {best_b}.",
        f"- **Targets**: decoding with the {res['manifest']['vocab_size']:,}-word {f.top}-gram "
        f"{'meets' if meets else 'misses'} them (median {median(td):.2f} s vs "
        f"{TARGETS['decode_median']} s; p95 {pct(td, 95):.2f} s vs {TARGETS['decode_p95']:g} s); "
        f"the same decodes with the embedded model {'meet' if emb_ok else 'do not all meet'} "
        "them — see Targets for numbers and the cause.\n",
    ]


def header(res: dict, f: Facts, json_path: str, reproduce: Sequence[str]) -> list[str]:
    cfg, man = res["config"], res["manifest"]
    machine = cfg["machine"]
    return [
        f"# SMS retrieval: the paper's experiments on {words_and(man['corpora'])}\n",
        "Carter, Dymetman & Bouchard (2012), *Exact Sampling and Decoding in High-Order HMMs*, "
        "section 3.1, rerun with this project's engine (`arsdecode`, default refinement variant "
        f"`{cfg['variant']}`) and data. Generated by `{cfg['script']}` (seed "
        f"{f.opts['seed']}; total run {res['total_seconds'] / 60:.1f} min on {machine['cpus']} "
        f"cores, Python {machine['python']}, numpy {machine['numpy']}); raw results in "
        f"`{json_path}`. All log values are natural log.\n",
        "Reproduce (from the repository root):\n",
        "```bash\n" + reproduce[0] + "\n"
        + reproduce[1] + "   # runs everything: this file, its plots and the JSON\n"
        + reproduce[2] + "   # redoes this file and its plots from the JSON\n```\n",
    ]


def setup(res: dict, f: Facts) -> list[str]:
    man, dec = res["manifest"], res["decoding"]
    n_dec = len({r["id"] for r in dec})
    model = man["models"].get(str(f.top), {})
    ng = model.get("ngrams", {})
    orders = sorted(int(k) for k in man["models"])
    per = f.opts["decode_per_length"]
    tl = man["test_set"]["per_length"]
    cp = man["channel"]["candidates_per_position"]
    return [
        "## Set-up\n",
        f"- Corpora: {', '.join(man['corpora'])}, {man['sentences']:,} sentences, "
        f"{man['heldout_sentences']:,} held out at random (seeded); models trained on the other "
        f"{man['train_sentences']:,} sentences ({man['train_tokens']:,} tokens): modified "
        f"Kneser-Ney {words_and([f'{o}-' for o in orders[:-1]] + [f'{orders[-1]}-grams'])} "
        f"(KenLM `lmplz`, no pruning), vocabulary {man['vocab_size']:,} words"
        + (f"; the {f.top}-gram has " + ", ".join(f"{int(v):,} {k}-grams" for k, v in ng.items())
           if ng else "") + ".",
        f"- Test set: {man['test_set']['total']} held-out sentences "
        f"({', '.join(f'{v} of length {k}' for k, v in tl.items())}), each typed through the "
        f"keypad channel with k = {man['k']:g}; {man['test_set']['with_oov']} contain a word "
        "outside the model vocabulary (which no decoder can recover).",
        f"- Candidates: every vocabulary word of the observed length (median {cp['median']:,}, "
        f"mean {cp['mean']:,}, max {cp['max']:,} per position) for decoding; the top K = "
        f"{f.k} by channel probability for sampling, as in the paper.",
        f"- Decoding sweep: {n_dec} sentences"
        + (f" (the first {per} of each length in test.jsonl, a random draw already)" if per
           else " (the whole test set)")
        + f", {f.opts['jobs']} worker process(es). Sampling: B = 100 unless stated, "
        f"AR-{f.window} = acceptance rate over the last {f.window} trials, target "
        f"{100 * f.target:.0f}%.\n",
    ]


def fig2(res: dict, f: Facts, image: str) -> list[str]:
    cfg, dec = res["config"], res["decoding"]
    out = ["## Fig. 2 — exact decoding: iterations and states against length\n",
           f"![Fig. 2]({image})\n"]
    out += [by_length_table(dec, f.lengths, f.orders, ("iterations", "states")), ""]
    g = group(dec, "order", "length")
    out.append("Paper (Fig. 2): qualitative trend — iterations and states grow with sentence "
               "length and with the model order, while the states stay a tiny fraction of the "
               f"full model's. Timings here come from the sweep, which ran {f.opts['jobs']} "
               f"worker(s) on {cfg['machine']['cpus']} cores; see Targets for a sequential "
               "measurement.\n")
    out.append("### Accuracy against the true sentence, certificates, search errors\n")
    rows = []
    for n in f.orders:
        rs = [r for r in dec if r["order"] == n]
        clean = [r for r in rs if r["oov"] == 0]
        rows.append([
            f"{n}-gram ARS (exact)",
            fmt(100 * sum(r["correct_words"] for r in rs) / sum(r["length"] for r in rs), 1),
            fmt(100 * mean([r["exact_match"] for r in rs]), 1),
            fmt(100 * sum(r["correct_words"] for r in clean)
                / max(1, sum(r["length"] for r in clean)), 1),
            f"{sum(r['certified'] for r in rs)}/{len(rs)}",
            f"{sum(r['search_error'] for r in rs)}",
            f"{sum(model_error(r) for r in rs)}",
        ])
    for name, b in res["baselines"].items():
        label = "channel only (no LM)" if name == "channel" else "unigram LM × channel"
        rows.append([label, fmt(100 * b["word_acc"], 1), fmt(100 * b["sent_acc"], 1),
                     "", "", "", ""])
    out += [md_table(["decoder", "word acc. %", "sentence acc. %", "word acc. % (no OOV)",
                      "certified", "search errors", "model errors"], rows), ""]
    rows = []
    for length in f.lengths:
        row = [length]
        for n in f.orders:
            rs = g.get((n, length), [])
            words = sum(r["length"] for r in rs)
            row += [fmt(100 * sum(r["correct_words"] for r in rs) / words, 1) if rs else "–",
                    fmt(100 * mean([r["exact_match"] for r in rs]), 1)]
        rows.append(row)
    out += [md_table(["length"] + [f"{h} n={n}" for n in f.orders
                                   for h in ("word %", "sentence %")], rows), ""]
    out.append("*Search error*: the true sentence is in the lattice and scores higher than the "
               "decoded one (impossible for an exact decoder). *Model error*: the decoded "
               "sentence differs from the truth and scores strictly higher — the model, not the "
               "search, is wrong. The baselines pick each position's best candidate on its own; "
               "ties (e.g. *good*/*home*, both 4663) go to the first in the channel's sorted "
               "order. Paper: no accuracy figure is quoted here (the paper evaluates search "
               "effort, not retrieval accuracy).\n")
    return out


def table1(res: dict, f: Facts, json_path: str) -> list[str]:
    t1 = res["table1"]
    fl, tk = t1["full_lists"], t1["top100"]
    ok = sum(a == b for a, b in zip(fl["tokens"], t1["words"]))
    out = [f"## Table 1 — n-grams in the final q against the full model (one length-{f.long} "
           "sentence)\n",
           f"Test sentence {t1['id']} (its text and observation stay in `{json_path}`: the "
           "test set is drawn from the NLTK corpora, whose text is not reproduced here); "
           f"{t1['order']}-gram. The decoded sentence matches the truth on {ok}/"
           f"{len(t1['words'])} words ({fl['iterations']} iterations, {fl['states']} states). "
           f"Candidates per position: {fl['widths']} (full lists).\n"]
    rows = []
    for k in sorted(set(fl["full_ngrams_by_order"]) | set(fl["ngrams_by_order"]), key=int):
        rows.append([k, sci(fl["ngrams_by_order"].get(k, 0)),
                     sci(fl["full_ngrams_by_order"].get(k, 0)),
                     sci(tk["ngrams_by_order"].get(k, 0)),
                     sci(tk["full_ngrams_by_order"].get(k, 0))])
    tot = [sum(e[key].values()) for e in (fl, tk)
           for key in ("ngrams_by_order", "full_ngrams_by_order")]
    rows.append(["**all orders**", *(sci(x) for x in tot)])
    rows.append(["**states**", sci(fl["states"]), sci(fl["full_states"]),
                 sci(tk["states"]), sci(tk["full_states"])])
    out += [md_table(["n-gram order", "q (full lists)", "full model (full lists)",
                      f"q (K={f.k})", f"full model (K={f.k})"], rows), ""]
    out.append(
        "What is counted. *q*: `QAutomaton.ngrams_by_order()` — every edge weight of the final "
        "automaton, i.e. one (context, word) pair per state and candidate of the next position, "
        "grouped by n-gram order = context length + 1 (`<s>` counts as a context word). *Full "
        "model*: `methods.full.full_ngrams_by_order` — the same (context, word) pairs for the "
        "full n-gram HMM, whose context is the last n − 1 tokens of `<s> x_1..x_{i-1}`: the word "
        "at position i (i = L+1 is `</s>`) has order min(n, i+1) and there are (product of the "
        "last min(n−1, i−1) widths) × (width of position i) such pairs. *States*: "
        "`QAutomaton.num_states()` against `methods.full.full_state_count` (literal contexts, "
        f"no merging). On the K = {f.k} lattice the merged full dynamic program (`full_decode`, "
        "which cuts contexts to their longest useful suffix) expands "
        f"{sci(tk['full_dp_states'])} states and agrees with ARS: {tk['full_decode_agrees']}.\n")
    out.append("Paper (Table 1): qualitative — the variable-order q holds mostly low-order "
               "n-grams and only a tiny fraction of the full model's; exact digits are not "
               "quoted here.\n")
    return out


def tables_2_4(res: dict, f: Facts) -> list[str]:
    ex = res["paper_example"]
    d, s = ex["decode"], ex["sample"]
    out = ["## Table 2 — the paper's example: Viterbi path of q during decoding\n",
           f"Observation `{ex['observation']}` (the paper's example; the intended message is "
           f"*{ex['truth']}*), {ex['order']}-gram, full candidate lists {ex['widths']}. "
           f"{d['iterations']} iterations, {d['states']} states, {d['seconds']:.3f} s, "
           f"certified: {d['certified']}. Rows: the first iteration, every iteration where the "
           "Viterbi path changed, and the last.\n"]
    rows = []
    prev = None
    tr = d["trace"]
    for i, step in enumerate(tr):
        if i == 0 or step["tokens"] != prev or i == len(tr) - 1:
            rows.append([step["iteration"], " ".join(step["tokens"]), fmt(step["log_q"], 3),
                         fmt(step["log_p"], 3)])
        prev = step["tokens"]
    if len(rows) > 25:
        rows = rows[:12] + [["…", "…", "…", "…"]] + rows[-12:]
    out += [md_table(["iteration", "argmax of q", "ln q", "ln p"], rows), ""]
    out.append("Paper (Table 2): the same kind of trace for this observation — the Viterbi path "
               "of q changes as q is refined, and ln q decreases towards ln p until they meet; "
               "exact digits are not quoted here.\n")
    out.append("## Table 4 — the paper's example: ranked exact samples\n")
    out.append(
        f"{s['n']} exact samples ({ex['order']}-gram, K = {f.k}, B = 100): {s['trials']} "
        f"trials, acceptance rate {s['acceptance_rate']:.3f}, {s['states']} states, "
        f"{s['seconds']:.2f} s; {s['distinct']} distinct sentences, ranked by count, then ln p "
        f"(`SampleResult.ranked`). Estimated ln Z = {s['log_Z']:.3f} (95% CI "
        f"{s['log_Z_ci'][0]:.3f} … {s['log_Z_ci'][1]:.3f}); exact ln Z by the full forward "
        f"algorithm = {s['log_Z_exact']:.3f}.\n")
    out += [md_table(["count", "ln p", "sentence"],
                     [[r["count"], fmt(r["log_p"], 3), " ".join(r["tokens"])]
                      for r in s["ranked"]]), ""]
    out.append("Paper (Table 4): qualitative — samples concentrate on a few plausible readings "
               "with frequencies following p; exact counts are not quoted here.\n")
    return out


def markdown(res: dict, *, images: dict[str, str], json_path: str,
             reproduce: Sequence[str]) -> str:
    """The whole page. `images`: figure key -> path relative to the page; `reproduce`: the
    data-prep, run and re-render commands, in that order."""
    f = Facts(res)
    lines: list[str] = []
    lines += header(res, f, json_path, reproduce)
    lines += summary(res, f)
    lines += setup(res, f)
    lines += fig2(res, f, images["fig2"])
    lines += table1(res, f, json_path)
    lines += tables_2_4(res, f)
    lines += fig3ab(res, f, images["fig3ab"])
    lines += table3(res, f)
    lines += fig3cd(res, f, images["fig3cd"])
    lines += targets(res, f)
    return "\n".join(lines) + "\n"
