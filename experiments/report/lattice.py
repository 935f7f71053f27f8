"""The lattice-rescoring page (docs/results-lattice.md) and its plots, from the results JSON.

Why separate from the runner (experiments/lattice_rescoring.py): `--render-only` redoes the page
and its plots from the JSON without measuring again. The JSON holds one `bench_lattice.run`
result per model ("models": a list, the embedded 5-gram first).
"""

from __future__ import annotations

import math
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.report.render import line_plot, table

GOAL_KEY = (5, 40, 50)
GOAL_S = 0.03
PROCESS = ("`arsdecode decode --lattice X.slf --method full` on the setting's first lattice, "
           "CPU s and peak RSS by GNU time, best of 3, LM loading (a binary model) included")


def _rows(res: dict[str, Any], order: int | None = None) -> list[dict[str, Any]]:
    return [r for r in res["rows"] if order is None or r["order"] == order]


def _find(res: dict[str, Any], order: int, words: int, arcs: int) -> dict[str, Any] | None:
    return next((r for r in res["rows"] if (r["order"], r["words"], r["arcs"])
                 == (order, words, arcs)), None)


def _s(x: float | None, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _tag(res: dict[str, Any], k: int) -> str:
    return "embedded" if k == 0 else f"model{k}"


def plots(res: dict[str, Any], img_dir: Path, tag: str) -> list[str]:
    """Per order, time against words (a line per arcs setting); states against lattice arcs
    (a line per order). Returns the file names written."""
    names = []
    orders = sorted({r["order"] for r in res["rows"]})
    arcs = sorted({r["arcs"] for r in res["rows"]})
    lt = res["lattice_tool"]
    for order in orders:
        series: dict[str, tuple[Sequence[float], Sequence[float]]] = {}
        for k in arcs:
            rows = sorted((r for r in _rows(res, order) if r["arcs"] == k),
                          key=lambda r: r["words"])
            series[f"{k} arcs per position"] = ([r["words"] for r in rows],
                                                [r["expand_seconds"] for r in rows])
            ars_rows = [r for r in rows if r["ars_seconds"] is not None]
            if ars_rows:
                series[f"{k} arcs, ARS"] = ([r["words"] for r in ars_rows],
                                            [r["ars_seconds"] for r in ars_rows])
        hlines = {}
        if order == 5 and tag == "embedded":
            for k in arcs:
                pts = sorted((int(key.split("x")[0]), v["expand_viterbi_s"])
                             for key, v in lt.items() if int(key.split("x")[1]) == k)
                if pts:
                    series[f"lattice-tool expand + Viterbi, {k} arcs"] = (
                        [w for w, _ in pts], [t for _, t in pts])
            hlines[f"goal: {GOAL_S} s per 40 x 50 lattice"] = GOAL_S
        name = f"{tag}_time_order{order}.png"
        line_plot(img_dir / name, series, hlines=hlines,
                  title=f"Exact expansion + Viterbi, order {order}: CPU s per lattice",
                  xlabel="words per lattice", ylabel="CPU seconds per lattice", logy=True)
        names.append(name)
    series = {}
    for order in orders:
        rows = sorted(_rows(res, order), key=lambda r: r["lattice_arcs"])
        series[f"order {order}"] = ([r["lattice_arcs"] for r in rows],
                                    [r["states"] for r in rows])
    if tag == "embedded":
        series["lattice-tool order 5 (expanded nodes)"] = (
            [v["arcs"] for v in lt.values()],
            [int(v["expanded"].split("/")[0].replace(",", "")) for v in lt.values()])
    name = f"{tag}_states_vs_size.png"
    line_plot(img_dir / name, series, title="States of the merged expansion against lattice size",
              xlabel="lattice arcs", ylabel="expansion states", logx=True, logy=True)
    names.append(name)
    return names


def model_section(res: dict[str, Any], img: str, names: list[str], title: str) -> list[str]:
    """One model's table and plots."""
    ars = res.get("ars") is not None
    head = ["order", "words x arcs", "lattice nodes / arcs", "expansion CPU s / lattice",
            "numpy reference s",
            "states / transitions", "states per node", "peak MB (one decode)",
            "whole process s, MB", "WER exact (acoustic only)"]
    if ars:
        head += ["ARS CPU s / lattice", "ARS states", "ARS iterations", "ARS = expansion"]
    body = []
    for r in sorted(res["rows"], key=lambda r: (r["order"], r["words"], r["arcs"])):
        cells = [r["order"], f"{r['words']} x {r['arcs']}",
                 f"{r['nodes']:.0f} / {r['lattice_arcs']:.0f}", _s(r["expand_seconds"]),
                 _s(r.get("reference_seconds", math.nan)),
                 f"{r['states']:,.0f} / {r['transitions']:,.0f}",
                 f"{r['states'] / r['nodes']:.1f}", f"{r['expand_peak_mb']:.1f}",
                 "-" if r["process_seconds"] is None
                 else f"{r['process_seconds']:.2f}, {r['process_mb']:.0f}",
                 f"{100 * r['wer']:.1f}% ({100 * r['wer_acoustic']:.1f}%)"]
        if ars:
            cells += [_s(r["ars_seconds"]), f"{r['ars_states']:,.0f}",
                      f"{r['ars_iterations']:.1f}", str(r["ars_agrees"])]
        body.append(cells)
    lines = [f"## {title}", "",
             f"Model `{res['model']}`: order {res['model_order']}, {res['model_ngrams']:,} "
             f"n-grams, {res['model_words']:,} words; reference text: the held-out split of "
             f"{', '.join(res['corpora'])} (seed {res['seed']}); {res['n']} lattices per "
             "setting, the same lattices at every order. Means per lattice.", "",
             table(head, body), ""]
    lines += [f"![{n}]({img}/{n})" for n in names]
    lines += ["", crossover(res), ""]
    return lines


def crossover(res: dict[str, Any]) -> str:
    """Where ARS starts to beat the expansion, or why that is not measured."""
    if res.get("ars") is None:
        return (f"ARS on DAGs: not measured ({res['ars_note']}); the crossover against the "
                "expansion is left to the run that has it.")
    faster = [r for r in res["rows"] if r["ars_seconds"] is not None
              and r["ars_seconds"] < r["expand_seconds"]]
    if not faster:
        return "ARS on DAGs was slower than the expansion at every setting measured."
    cells = ", ".join(f"order {r['order']} {r['words']} x {r['arcs']} "
                      f"({r['ars_seconds']:.4f} s against {r['expand_seconds']:.4f} s)"
                      for r in sorted(faster, key=lambda r: (r["order"], r["words"], r["arcs"])))
    return f"ARS on DAGs beat the expansion at: {cells}."


def headline(res: dict[str, Any]) -> list[str]:
    """The issue's comparison: order 5, the lattice-tool settings, and the goal."""
    rows = []
    for key, lt in res["lattice_tool"].items():
        w, k = (int(x) for x in key.split("x"))
        r = _find(res, 5, w, k)
        if r is None:
            continue
        rows.append([f"{w} x {k}", f"{r['nodes']:.0f} / {r['lattice_arcs']:.0f}",
                     f"{lt['nodes']} / {lt['arcs']}", _s(r["expand_seconds"]),
                     f"{lt['expand_viterbi_s']}",
                     f"{r['expand_seconds'] / lt['expand_viterbi_s']:.2f}x",
                     f"{r['states']:,.0f} / {r['transitions']:,.0f}", lt["expanded"],
                     f"{r['expand_peak_mb']:.1f}",
                     "-" if r["process_seconds"] is None
                     else f"{r['process_seconds']:.2f} s, {r['process_mb']:.0f} MB",
                     lt["viterbi_decode"]])
    out = [table(["order 5, words x arcs", "lattice nodes / arcs", "lattice-tool's lattice",
                  "exact expansion + Viterbi, CPU s", "lattice-tool expand + Viterbi, s",
                  "ratio", "expansion states / transitions",
                  "lattice-tool expanded nodes / arcs", "peak MB (one decode)",
                  "`arsdecode decode` whole process", "lattice-tool -viterbi-decode"], rows), ""]
    g = _find(res, *GOAL_KEY)
    if g is not None:
        met = g["expand_seconds"] <= GOAL_S
        out.append(f"**Goal** ({res['goal']}): the exact expansion takes "
                   f"{g['expand_seconds']:.4f} s per 40 x 50 lattice at order 5: "
                   f"**{'met' if met else 'missed'}**"
                   + ("" if met else f" by {g['expand_seconds'] / GOAL_S:.2f}x") + ".")
        if g.get("ars_seconds") is not None:
            out.append(f"ARS on DAGs: {g['ars_seconds']:.4f} s "
                       f"({'met' if g['ars_seconds'] <= GOAL_S else 'missed'}).")
        worst = [r for r in res["rows"]
                 if (lt := res["lattice_tool"].get(f"{r['words']}x{r['arcs']}"))
                 and r["order"] == 5 and r["expand_seconds"] > lt["expand_viterbi_s"]]
        slower = ", ".join(f"{r['words']} x {r['arcs']}" for r in worst) or "none"
        out.append(f"Order-5 settings slower than lattice-tool's expansion + Viterbi: {slower}.")
    return out


def render(results: dict[str, Any], cmd: str, img_dir: Path) -> str:
    """The page; writes its plots to `img_dir` (linked as img/lattice/)."""
    img = "img/lattice"
    models = results["models"]
    base = models[0]
    lines = ["# Lattice rescoring: exact decoding of ASR-like word lattices (issue 21)", "",
             "Generated by `experiments/lattice_rescoring.py`; do not edit by hand. Reproduce:",
             "", f"    {cmd}", "",
             "## Against SRILM lattice-tool 1.7.3 (order 5, the embedded state_union 5-gram)",
             "", *headline(base), "",
             "lattice-tool's figures are the issue's (CPU per lattice, whole process; SRILM is "
             "not installed here), on lattices made by an earlier generator: compare sizes "
             "before times. The expansion's transitions are arcs between (node, context) "
             "states with the words on the arcs; lattice-tool's expanded lattice has words on "
             "nodes, so its arc count is not the same measure (its node count is).", "",
             "## Setup", "",
             f"- Machine: {platform.machine()}, Python {platform.python_version()}; CPU seconds "
             "of one process (`time.process_time`) on a shared 2-core machine, model loaded and "
             "warmed up (its context tables built), lattice generation excluded.",
             "- Lattices: `data_prep/asr_lattices.py` (its docstring says how: competing "
             "arcs for the true word and its most confusable vocabulary words by spelling, "
             "length and frequency; random acoustic ln scores, the truth not always best; "
             "two-position spans; epsilon deletions; insertions through an extra node).",
             "- Exact expansion: `arsdecode.decode(lm, lattice)`, the compiled Viterbi over the "
             "merged (node, minimal context) states (`fast_full.run_dag`); beside it the numpy "
             "reference `arsdecode.methods.expansion_dp.dag_decode` (the same states, checked "
             "equal); peak memory by tracemalloc during one numpy decode of the setting's "
             "largest lattice.",
             f"- Whole process: {base['process_note'] or PROCESS}.",
             f"- ARS on DAGs: {base['ars_note']}.",
             "- WER: word error rate of the exact best path against the reference text, and "
             "(in brackets) of the acoustic scores alone: the LM matters on these lattices.", ""]
    for k, res in enumerate(models):
        tag = _tag(res, k)
        names = plots(res, img_dir, tag)
        title = ("The embedded state_union 5-gram" if k == 0 else
                 f"`{res['model']}` ({res['model_ngrams']:,} n-grams, "
                 f"{res['model_words']:,} words)")
        lines += model_section(res, img, names, title)
    if len(models) > 1:
        lines += growth(base, models[1])
    if results.get("profile"):
        lines += profile_section(results["profile"])
    return "\n".join(lines) + "\n"


def growth(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """How the expansion grows from the first model to the second, same settings."""
    rows = []
    for r in sorted(b["rows"], key=lambda r: (r["order"], r["words"], r["arcs"])):
        q = _find(a, r["order"], r["words"], r["arcs"])
        if q is None or r["order"] != 5:
            continue
        rows.append([f"{r['words']} x {r['arcs']}", f"{q['states']:,.0f}", f"{r['states']:,.0f}",
                     f"{r['states'] / q['states']:.2f}x", _s(q["expand_seconds"]),
                     _s(r["expand_seconds"]), f"{q['expand_peak_mb']:.1f}",
                     f"{r['expand_peak_mb']:.1f}"])
    if not rows:
        return []
    return ["## How the expansion grows with the model (order 5)", "",
            "Different models read different reference text (each its own held-out split), so "
            "the lattices differ; the settings are the same.", "",
            table(["words x arcs", "states, embedded", "states, larger model", "ratio",
                   "CPU s, embedded", "CPU s, larger model", "peak MB, embedded",
                   "peak MB, larger model"], rows), ""]


def profile_section(prof: dict[str, Any]) -> list[str]:
    """Where the expansion's time goes (cProfile, so slower than unprofiled)."""
    rows = [[what, f"{sec:.3f}", f"{100 * sec / prof['total']:.0f}%"]
            for what, sec in sorted(prof["parts"].items(), key=lambda kv: -kv[1])]
    rows.append(["total under the profiler", f"{prof['total']:.3f}", "100%"])
    return ["## Where the expansion's time goes", "",
            f"cProfile of `dag_decode` on {prof['n']} lattices of {prof['setting']} (the "
            "goal's setting, embedded model, warmed up); cumulative seconds, so nested parts "
            "are counted once each, and the rest is the expansion's own numpy bookkeeping.",
            "", table(["part", "seconds", "share"], rows), ""]
