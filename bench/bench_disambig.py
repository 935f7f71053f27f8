"""SRILM disambig's task on this project's methods (issues 23 and 34): time and peak memory.

The lattices of issue 23: the last 100 sentences of state_union, keypad noise at k=64 and seed
0, once with full candidate lists and once with the top 100 per token, written as disambig's
inputs (a text of observed tokens and a map of log10 p(observed | hidden), one line per
distinct token). These sentences are in the embedded model's training text: this bench
measures speed and memory, not accuracy.

Default run (issue 34's table; `--doc` writes it into docs/performance.md between the
`bench:disambig` markers): the whole `arsdecode disambig` process on the top-100 lattices at
order 5, CPU seconds (user + system) and peak RSS by GNU time, best of `--runs`, at disambig's
settings: 1-best, `-nbest 10` (first 20 lattices), `-fb -posteriors -totals` and `-mix-lm`
(the embedded model mixed with `--general`, lambda 0.6); beside them the floor every Python
process of ours pays, `python -c "import numpy"`, measured in the same run. SRILM is not
installed here (no registry has it): its figures are issue 34's, measured by an earlier
session on this kind of machine, quoted as such, so the ratios compare runs made apart.

`--in-process` adds issue 23's section: per input kind and order, `decode_many` with methods
ars, full and auto (every best path checked equal in ln p, 1e-9, across methods), 10-best of
auto against ARS's k-best (K scores equal, 1e-9), and the exact posteriors (`marginals`).

With `--baseline-tree DIR` every setting is also run from the checkout DIR (A), its runs
alternated with this checkout's (B), each process with its own tree first on the path; the
A/B table follows the main one (issue 34: "measure ours A against B in the same run").

Usage: python -m bench.bench_disambig [--runs 3] [--general M] [--doc] [--in-process]
           [--baseline-tree DIR]
  --general: the 54k-word general 5-gram of state_union + brown + abc + webtext, made by
  `python -m data_prep.prepare_sms --out work/sms_all --corpora state_union brown abc webtext
  --orders 5` (its lm.5.maxarpa, or that converted with `maxarpa convert --binary`);
  default work/sms_all/lm.5.npz or .maxarpa when there; without it the -mix-lm row is skipped.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Literal

import numpy as np

REPO = Path(__file__).resolve().parents[1]

# SRILM disambig 1.7.3 on the same task (issue 23's table): CPU seconds of the whole process.
DISAMBIG = {("full", 5): "434 s, 60 MB", ("full", 3): "395 s", ("top100", 5): "3.17 s, 19 MB",
            ("top100", 3): "3.12 s, 18 MB", ("10best", 5): "1.08 s"}
GOALS = {("full", 5): "auto <= 12.6 s, <= 200 MB", ("top100", 5): "auto <= 1.6 s, <= 100 MB",
         ("top100", 3): "auto <= 1.6 s, <= 100 MB", ("10best", 5): "<= 1.0 s",
         ("posteriors", 5): "<= 6 s"}


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def write_inputs(out: Path, channel, sentences: list[list[str]], top_k: int | None,
                 seed: int = 0) -> tuple[Path, Path]:
    """disambig's --text and --map (log10) for `sentences` under keypad noise."""
    from arsdecode.tasks.sms.keypad import sample_sentence

    rng = np.random.default_rng(seed)
    observed = [sample_sentence(words, rng, k=64.0) for words in sentences]
    text = out / f"obs.{top_k or 'all'}.txt"
    text.write_text("".join(o + "\n" for o in observed))
    tokens = sorted({t for o in observed for t in o.split()})
    lines = []
    for token in tokens:
        lat = channel.build_lattice(token, top_k=top_k)
        cands = " ".join(f"{w} {e / math.log(10)!r}"
                         for w, e in zip(lat.tokens[0], lat.log_emissions[0].tolist(),
                                         strict=True) if e > -math.inf)
        lines.append(f"{token} {cands}\n")
    mp = out / f"map.{top_k or 'all'}.txt"
    mp.write_text("".join(lines))
    return text, mp


def whole_process(text: Path, mp: Path, lm: Path, *extra: str,
                  runs: int = 3, tree: Path = REPO) -> tuple[float, float]:
    """CPU seconds (user + system) and peak RSS (MB) of an `arsdecode disambig` child run from
    the checkout `tree` (its own code first on the path), the fastest of `runs` (others share
    the machine), measured by GNU time (`ru_maxrss` of RUSAGE_CHILDREN is the largest over
    every child so far, not this one's)."""
    best = (math.inf, math.inf)
    for _ in range(runs):
        best = min(best, _one_process(text, mp, lm, extra, tree))
    return best


PYCACHE = Path(tempfile.gettempdir()) / "bench_disambig_pycache"
"""Where the children's bytecode goes (PYTHONPYCACHEPREFIX): compiled once per checkout by
`compile_tree`, outside both checkouts. Why: with PYTHONDONTWRITEBYTECODE set, a checkout
without its own __pycache__ recompiled ~120 modules in every process (0.1-0.25 CPU-s), which
an A/B of whole processes would charge to whichever side lacked one."""


def tree_env(tree: Path) -> dict[str, str]:
    """The environment of a child run from `tree`: its code first, bytecode under PYCACHE."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": str(PYCACHE)}


def compile_tree(tree: Path) -> None:
    """Compile `tree`'s packages into PYCACHE (not into the checkout)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "arsdecode", "maxarpa"],
                   check=True, cwd=tree, env=tree_env(tree), stdout=subprocess.DEVNULL)


def _one_process(text: Path, mp: Path, lm: Path, extra: tuple[str, ...],
                 tree: Path) -> tuple[float, float]:
    env = tree_env(tree)
    proc = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", sys.executable, "-m",
                           "arsdecode", "disambig", "--text", str(text), "--map", str(mp),
                           "--lm", str(lm), "--logmap", *extra], check=True, cwd=tree, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    user, system, kb = proc.stderr.strip().splitlines()[-1].split()
    return float(user) + float(system), float(kb) / 1024.0


def ab_processes(text: Path, mp: Path, lm: Path, *extra: str, runs: int,
                 baseline: Path) -> tuple[tuple[float, float], tuple[float, float]]:
    """`whole_process` of the checkout `baseline` (A) and of this one (B), their runs
    alternated so that both see the same load; each the fastest of `runs`."""
    best_a = best_b = (math.inf, math.inf)
    for _ in range(runs):
        best_a = min(best_a, _one_process(text, mp, lm, extra, baseline))
        best_b = min(best_b, _one_process(text, mp, lm, extra, REPO))
    return best_a, best_b


def in_process(sentences: list[list[str]], runs: int) -> bool:
    """Issue 23's section (module docstring); True when every method agreed."""
    import maxarpa
    from arsdecode.api import DEFAULT_LM, decode, decode_many, marginals
    from arsdecode.lattice.disambig_map import DisambigMap, text_lattices
    from arsdecode.tasks.sms.keypad import KeypadChannel

    models = {5: Path(DEFAULT_LM), 3: Path(DEFAULT_LM)}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for order, lm_path in sorted(models.items(), reverse=True):
            lm = maxarpa.truncate(maxarpa.load(lm_path), order)
            order_flag = () if order == lm.order == 5 else ("--order", str(order))
            channel = KeypadChannel.from_vocab(lm.vocab, k=64.0)
            for kind, top_k in (("top100", 100), ("full", None)):
                text, mp = write_inputs(Path(tmp), channel, sentences, top_k)
                proc_s, rss = whole_process(text, mp, lm_path, *order_flag, runs=runs)
                lattices = [lat for lat in text_lattices(DisambigMap.read(mp, logmap=True), text)
                            if lat is not None]
                timings, scores = {}, {}
                for method in ("ars", "full", "auto"):
                    t0 = cpu()
                    res = decode_many(lm, lattices, method=method)
                    timings[method] = cpu() - t0
                    scores[method] = np.array([r.log_p for r in res])
                    if method == "auto":
                        auto_methods = {m: sum(r.method == m for r in res)
                                        for m in ("full", "ars")}
                ref = scores["ars"]
                agree = all(np.allclose(s, ref, rtol=0, atol=1e-9) for s in scores.values())
                print(f"{kind:7} n={order}: disambig command {proc_s:7.2f} s CPU, {rss:6.0f} MB"
                      f" | in process " + ", ".join(f"{m} {t:.2f} s" for m, t in
                                                    timings.items() if "best" not in m)
                      + f" | methods agree: {agree} | SRILM: {DISAMBIG.get((kind, order), '-')}"
                      f" | goal: {GOALS.get((kind, order), '-')}", flush=True)
                print(f"{'':7}      auto ran: {auto_methods}", flush=True)
                if kind == "top100" and order == 5:
                    first20 = Path(tmp) / "obs.first20.txt"
                    first20.write_text("".join(text.read_text().splitlines(True)[:20]))
                    for what, extra, txt in (("10-best, first 20", ("--nbest", "10"), first20),
                                             ("posteriors + totals", ("--posteriors", "--totals"),
                                              text)):
                        secs, mb = whole_process(txt, mp, lm_path, *extra, runs=runs)
                        print(f"disambig command, {what}: {secs:.2f} s CPU, {mb:.0f} MB",
                              flush=True)
                    kbest_rows = {}
                    kmethods: tuple[Literal["auto", "ars"], ...] = ("auto", "ars")
                    for kmethod in kmethods:
                        t0 = cpu()
                        kbest_rows[kmethod] = [decode(lm, lat, k=10, method=kmethod)
                                               for lat in lattices[:20]]
                        timings[f"10best-{kmethod}"] = cpu() - t0
                    same = all(np.allclose([p.log_p for p in a.paths], [p.log_p for p in b.paths],
                                           rtol=0, atol=1e-9)
                               for a, b in zip(*kbest_rows.values(), strict=True))
                    picked = {r.method for r in kbest_rows["auto"]}
                    print(f"10-best, first 20 top-100 lattices: auto ({'/'.join(sorted(picked))})"
                          f" {timings['10best-auto']:.2f} s, ars {timings['10best-ars']:.2f} s, "
                          f"agree: {same} | SRILM: {DISAMBIG[('10best', 5)]} | "
                          f"goal: {GOALS[('10best', 5)]}", flush=True)
                    agree = agree and same
                    t0 = cpu()
                    exact = [marginals(lm, lat, method="auto") for lat in lattices]
                    print(f"posteriors + ln Z, {len(lattices)} top-100 lattices: "
                          f"{cpu() - t0:.2f} s, exact on {sum(m.exact for m in exact)} | "
                          f"goal: {GOALS[('posteriors', 5)]}", flush=True)
                rows.append((kind, order, proc_s, rss, timings, agree))
    return all(r[5] for r in rows)


# Issue 34's table: SRILM disambig 1.7.3's figures there (CPU s, peak MB), and the goals.
SRILM_34 = {"1-best": (2.80, 18.0), "-nbest 10 (first 20)": (1.04, 20.0),
            "-fb -posteriors -totals": (4.84, 19.0), "-mix-lm": (28.5, 180.0)}
ISSUE_34 = {"1-best": (0.91, 85.0), "-nbest 10 (first 20)": (0.41, 79.0),
            "-fb -posteriors -totals": (4.45, 111.0), "-mix-lm": (5.3, 943.0)}
"""Ours as issue 34 measured it (CPU s, MB), to show what moved since."""
POSTERIORS_CPU_GOAL = 0.5  # x disambig's CPU (issue 34, "Posteriors")


def numpy_floor(runs: int) -> tuple[float, float]:
    """CPU seconds and peak RSS (MB) of `python -c "import numpy"`, the fastest of `runs`: the
    floor below which no process of ours goes."""
    best = (math.inf, math.inf)
    for _ in range(runs):
        proc = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", sys.executable, "-c",
                               "import numpy"], check=True, capture_output=True, text=True)
        user, system, kb = proc.stderr.strip().splitlines()[-1].split()
        best = min(best, (float(user) + float(system), float(kb) / 1024.0))
    return best


def general_model(given: Path | None) -> Path | None:
    """The -mix-lm general model: `given`, else work/sms_all's binary or MAX-ARPA, else None."""
    if given is not None:
        return given.resolve()  # the children run from their own checkout
    for name in ("lm.5.npz", "lm.5.maxarpa"):
        if (REPO / "work" / "sms_all" / name).exists():
            return REPO / "work" / "sms_all" / name
    return None


def settings_table(sentences: list[list[str]], runs: int, general: Path | None,
                   lam: float, baseline: Path | None = None
                   ) -> tuple[list[dict], tuple[float, float]]:
    """Issue 34's rows (module docstring): per setting, ours (CPU s, MB) and SRILM's; with
    `baseline`, that checkout's too (A), run alternately with ours (B)."""
    import maxarpa
    from arsdecode.api import DEFAULT_LM
    from arsdecode.tasks.sms.keypad import KeypadChannel

    lm_path = Path(DEFAULT_LM)
    channel = KeypadChannel.from_vocab(maxarpa.load(lm_path).vocab, k=64.0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        text, mp = write_inputs(Path(tmp), channel, sentences, 100)
        first20 = Path(tmp) / "obs.first20.txt"
        first20.write_text("".join(text.read_text().splitlines(True)[:20]))
        todo: list[tuple[str, Path, tuple[str, ...]]] = [
            ("1-best", text, ()), ("-nbest 10 (first 20)", first20, ("--nbest", "10")),
            ("-fb -posteriors -totals", text, ("--fb", "--posteriors", "--totals"))]
        if general is not None:
            todo.append(("-mix-lm", text, ("--mix-lm", str(general), "--lambda", str(lam))))
        floor = numpy_floor(runs)
        for tree in (REPO,) if baseline is None else (baseline, REPO):
            compile_tree(tree)
        for name, txt, extra in todo:
            row: dict = {"setting": name, "srilm": SRILM_34[name], "issue": ISSUE_34[name]}
            if baseline is not None:
                (row["a_cpu_s"], row["a_rss_mb"]), (secs, mb) = ab_processes(
                    txt, mp, lm_path, *extra, runs=runs, baseline=baseline)
            else:
                secs, mb = whole_process(txt, mp, lm_path, *extra, runs=runs)
            row.update(cpu_s=secs, rss_mb=mb)
            rows.append(row)
            print(f"{name:24s} {secs:6.2f} s CPU {mb:6.0f} MB"
                  + (f" | A: {row['a_cpu_s']:.2f} s, {row['a_rss_mb']:.1f} MB, B: {mb:.1f} MB"
                     if baseline is not None else "")
                  + f" | SRILM (issue 34): {SRILM_34[name][0]} s, {SRILM_34[name][1]:.0f} MB",
                  flush=True)
    return rows, floor


def markdown(rows: list[dict], floor: tuple[float, float], runs: int,
             general: Path | None, baseline: Path | None = None) -> str:
    """The table docs/performance.md shows (written by --doc); with `baseline`, a second
    table of A (that checkout) against B (this one), measured alternately in this run."""
    import datetime

    out = [f"Generated by `python -m bench.bench_disambig --doc` on "
           f"{datetime.date.today().isoformat()} (best of {runs} runs per row; the machine is "
           f"shared, so CPU seconds move with its load, RSS does not). The 100 top-100 keypad "
           f"lattices at order 5, whole `arsdecode disambig` process. SRILM `disambig` 1.7.3 "
           f"is not installed here: its figures are quoted from issue 34 (measured by an "
           f"earlier session on this kind of machine), not re-measured in this run. The floor "
           f"is `python -c \"import numpy\"` in this run: {floor[0]:.2f} s, {floor[1]:.1f} MB.",
           "",
           "| setting | `disambig` (issue 34) | ours: CPU s, peak RSS | CPU vs disambig | "
           "RSS vs disambig | RSS above the numpy floor, vs disambig's | ours in issue 34 |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        s_cpu, s_mb = r["srilm"]
        above = r["rss_mb"] - floor[1]
        out.append(f"| {r['setting']} | {s_cpu} s, {s_mb:.0f} MB | **{r['cpu_s']:.2f} s, "
                   f"{r['rss_mb']:.0f} MB** | {r['cpu_s'] / s_cpu:.2f}x | "
                   f"{r['rss_mb'] / s_mb:.1f}x | {above:.0f} MB, {above / s_mb:.1f}x | "
                   f"{r['issue'][0]} s, {r['issue'][1]:.0f} MB |")
    if general is None:
        out.append("| -mix-lm | 28.5 s, 180 MB | not run: no general model (see the bench's "
                   "docstring) | | | | 5.3 s, 943 MB |")
    if baseline is not None:
        out += ["", f"A/B in the same run (runs alternated, best of {runs} each): A is the "
                f"checkout `{baseline}`, B this one; peak RSS to 0.1 MB (GNU time).", "",
                "| setting | A: CPU s, peak RSS | B: CPU s, peak RSS | B/A CPU | B - A RSS |",
                "|---|---|---|---|---|"]
        for r in rows:
            out.append(f"| {r['setting']} | {r['a_cpu_s']:.2f} s, {r['a_rss_mb']:.1f} MB | "
                       f"{r['cpu_s']:.2f} s, {r['rss_mb']:.1f} MB | "
                       f"{r['cpu_s'] / r['a_cpu_s']:.2f}x | "
                       f"{r['rss_mb'] - r['a_rss_mb']:+.1f} MB |")
    post = [r for r in rows if r["setting"].startswith("-fb")]
    if post:
        ratio = post[0]["cpu_s"] / post[0]["srilm"][0]
        out += ["", f"Posteriors: {ratio:.2f}x `disambig`'s CPU (goal <= "
                f"{POSTERIORS_CPU_GOAL}x). Memory goal: <= 1x `disambig`'s peak at every "
                f"setting, which the numpy floor alone ({floor[1]:.0f} MB) is above for "
                f"the first three."]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--general", type=Path, default=None)
    ap.add_argument("--lambda", dest="lam", type=float, default=0.6)
    ap.add_argument("--doc", action="store_true", help="write docs/performance.md's section")
    ap.add_argument("--in-process", action="store_true", help="issue 23's in-process section")
    ap.add_argument("--quick", action="store_true", help="one run per row")
    ap.add_argument("--baseline-tree", type=Path, default=None, metavar="DIR",
                    help="also run each setting from the checkout DIR (A), alternated with "
                         "this one (B), and print both")
    args = ap.parse_args(argv)
    from bench.record import Record
    from data_prep.corpus import load_sentences

    runs = 1 if args.quick else args.runs
    sentences = load_sentences(["state_union"])[-args.sentences:]
    general = general_model(args.general)
    rows, floor = settings_table(sentences, runs, general, args.lam, args.baseline_tree)
    rec = Record("bench_disambig", quick=args.quick, argv=argv)
    rec.add("numpy_floor.rss_mb", floor[1], "rss_mb")
    for r in rows:
        key = r["setting"].strip("-").split()[0].replace("-", "_")
        rec.time(f"{key}.cpu_s", r["cpu_s"])
        rec.add(f"{key}.rss_mb", r["rss_mb"], "rss_mb")
        rec.ratio(f"{key}.cpu_vs_srilm", r["cpu_s"] / r["srilm"][0])
        if "a_rss_mb" in r:
            rec.ratio(f"{key}.rss_vs_baseline", r["rss_mb"] / r["a_rss_mb"])
            rec.ratio(f"{key}.cpu_vs_baseline", r["cpu_s"] / r["a_cpu_s"])
    rec.save()
    table = markdown(rows, floor, runs, general, args.baseline_tree)
    print(table)
    if args.doc:
        from bench.perf_doc import write_section

        write_section("disambig", table)
    ok = in_process(sentences, runs) if args.in_process else True
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
