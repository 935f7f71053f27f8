"""Issue 21's lattice rescoring, measured: exact decoding of ASR-like word lattices.

The lattices (`data_prep/asr_lattices.py`): held-out text of `data_prep.prepare_sms`'s split,
per setting (words x arcs per position) N lattices, the same lattices at every order. Per
setting and order (orders below the model's are `maxarpa.truncate` of it, what lattice-tool
-order N does with a higher-order LM):

  - the exact expansion as `arsdecode.decode(lm, lattice)` runs it (compiled: Viterbi over the
    merged (node, context) states, `fast_full.run_dag`) and the numpy reference
    (`arsdecode.methods.expansion_dp.dag_decode`), checked equal (ln p 1e-9, states): CPU
    seconds per lattice (in process, model loaded and warmed up, mean over the N lattices),
    its states and transitions (the expanded lattice's size)
    against the lattice's nodes and arcs, and the peak memory of one decode (tracemalloc, the
    largest lattice of the setting);
  - ARS on DAGs (`arsdecode.methods.ars.dag_ars_decode`, if this checkout has it): CPU
    seconds, states, iterations, and its best ln p checked equal to the expansion's (1e-9);
  - the whole process: `arsdecode decode --lm M --lattice X.slf --method full` on the first
    lattice written as SLF, CPU seconds (user + system) and peak RSS by GNU time, best of 3,
    LM loading included (a binary model per order, written once); if this checkout's CLI
    cannot read an SLF lattice, the column is left empty ("-") with the reason;
  - word error rate against the reference text, of the exact decode and of the acoustic
    scores alone (a sanity check that the lattices need the LM).

Beside them: SRILM lattice-tool 1.7.3's figures from the issue (order 5, the embedded model;
CPU per lattice, whole process; SRILM is not installed here) and the goal, exact decode at most
the expansion-plus-Viterbi time: <= 0.03 s per 40 x 50 lattice at order 5.

Usage: python -m bench.bench_lattice [--n 10] [--orders 2 3 4 5] [--words 10 20 40 60]
           [--arcs 5 15 50] [--model PATH --corpora C ...] [--no-process] [--json OUT]
The default model is the embedded state_union 5-gram (`arsdecode.api.DEFAULT_LM`), with the
held-out text of `--corpora state_union`; a model trained by
`python -m data_prep.prepare_sms --corpora state_union brown abc webtext` takes
`--corpora state_union brown abc webtext` (its own held-out split).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.record import Record

REPO = Path(__file__).resolve().parents[1]

# SRILM lattice-tool 1.7.3, order 5, embedded state_union 5-gram (issue 21's table): CPU per
# lattice, whole process. (words, arcs) -> figures.
LATTICE_TOOL: dict[tuple[int, int], dict[str, Any]] = {
    (10, 50): {"nodes": 30, "arcs": 507, "viterbi_decode": "1.35 s, 265 MB",
               "expand_viterbi_s": 0.009, "expanded": "478 / 2,140"},
    (40, 15): {"nodes": 84, "arcs": 622, "viterbi_decode": "1.30 s, 218 MB",
               "expand_viterbi_s": 0.008, "expanded": "637 / 2,381"},
    (40, 50): {"nodes": 125, "arcs": 2028, "viterbi_decode": "8.93 s, 870 MB",
               "expand_viterbi_s": 0.033, "expanded": "2,074 / 9,040"},
    (60, 50): {"nodes": 185, "arcs": 3040, "viterbi_decode": "12.2 s, 1.2 GB",
               "expand_viterbi_s": 0.068, "expanded": "3,134 / 13,695"},
}
GOAL_SECONDS = {(5, 40, 50): 0.03}
GOAL = "exact decode <= lattice-tool's expansion + Viterbi: <= 0.03 s per 40 x 50 at order 5"


def cpu() -> float:
    return time.process_time()


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ars_decoder() -> tuple[Callable[..., Any] | None, str]:
    """ARS on DAGs if this checkout has it: (its decode function, or None; why not)."""
    import importlib

    for name in ("arsdecode.methods.ars", "arsdecode.methods.dag_ars"):  # since issue 30; before
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        fn = getattr(module, "dag_ars_decode", None)
        if fn is not None:
            return fn, name
    return None, "ARS on word lattices (dag_ars_decode) is not in this checkout"


def whole_process(lm_path: Path, slf: Path, runs: int = 3) -> tuple[float, float]:
    """CPU seconds (user + system) and peak RSS (MB) of `arsdecode decode` on one SLF lattice,
    the fastest of `runs` (others share the machine), measured by GNU time.

    Raises subprocess.CalledProcessError when the command fails (no SLF support)."""
    best = (math.inf, math.inf)
    for _ in range(runs):
        proc = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", sys.executable, "-m",
                               "arsdecode", "decode", "--lm", str(lm_path), "--lattice",
                               str(slf), "--method", "full", "--json"], check=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        user, system, kb = proc.stderr.strip().splitlines()[-1].split()
        best = min(best, (float(user) + float(system), float(kb) / 1024.0))
    return best


def process_support(lm_path: Path, slf: Path) -> str | None:
    """None when `arsdecode decode --lattice X.slf` works here, else the reason it does not."""
    proc = subprocess.run([sys.executable, "-m", "arsdecode", "decode", "--lm", str(lm_path),
                           "--lattice", str(slf), "--method", "full", "--json"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode == 0:
        return None
    lines = proc.stderr.strip().replace(str(slf), "X.slf").splitlines()
    return (f"not measured: `arsdecode decode --lattice X.slf` fails in this checkout "
            f"({lines[-1] if lines else 'no message'})")


def measure_setting(lm, order: int, lattices: list, *, ars: Callable[..., Any] | None,
                    process: tuple[Path, Path] | None) -> dict[str, Any]:
    """One (order, words, arcs) row: see the module docstring."""
    from arsdecode.api import decode
    try:  # the module's name since issue 30, and before (bench.ab runs both sides)
        from arsdecode.methods.expansion_dp import dag_decode
    except ImportError:
        from arsdecode.methods.dag_full import dag_decode  # type: ignore[no-redef]
    from data_prep.asr_lattices import acoustic_best, word_errors

    wls = [a.lattice for a in lattices]
    decode(lm, wls[0])  # warm up: the model's tables are built on first use
    dag_decode(lm, wls[0])
    t0 = cpu()
    results = [decode(lm, wl, method="full") for wl in wls]  # the compiled expansion
    expand_s = (cpu() - t0) / len(wls)
    t0 = cpu()
    reference = [dag_decode(lm, wl) for wl in wls]  # the numpy reference
    reference_s = (cpu() - t0) / len(wls)
    if not all(abs(a.log_p - b.log_p) <= 1e-9 * (1 + abs(b.log_p)) and a.states == b.states
               for a, b in zip(results, reference, strict=True)):
        raise AssertionError("the compiled expansion disagrees with the numpy reference")
    big = max(range(len(wls)), key=lambda i: wls[i].n_arcs)
    tracemalloc.start()
    dag_decode(lm, wls[big])
    peak_mb = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    refs = [a.truth for a in lattices]
    n_ref = sum(len(r) for r in refs)
    row: dict[str, Any] = {
        "order": order, "words": len(lattices[0].truth),
        "arcs": lattices[0].arcs_per_position, "n": len(wls),
        "nodes": _mean([wl.n_nodes for wl in wls]), "lattice_arcs": _mean([wl.n_arcs
                                                                          for wl in wls]),
        "expand_seconds": expand_s,
        "reference_seconds": reference_s,
        "states": _mean([r.states for r in results]),
        "transitions": _mean([r.transitions for r in results]),
        "expand_peak_mb": peak_mb,
        "wer": sum(word_errors(r.words, ref) for r, ref in zip(results, refs,
                                                               strict=True)) / n_ref,
        "wer_acoustic": sum(word_errors(acoustic_best(wl), ref)
                            for wl, ref in zip(wls, refs, strict=True)) / n_ref,
        "process_seconds": None, "process_mb": None,
        "ars_seconds": None, "ars_states": None, "ars_iterations": None, "ars_agrees": None,
    }
    if ars is not None:
        ars(lm, wls[0])
        t0 = cpu()
        ars_res = [ars(lm, wl) for wl in wls]
        row["ars_seconds"] = (cpu() - t0) / len(wls)
        row["ars_states"] = _mean([getattr(r, "states", math.nan) for r in ars_res])
        row["ars_iterations"] = _mean([getattr(r, "iterations", math.nan) for r in ars_res])
        row["ars_agrees"] = all(abs(a.log_p - b.log_p) <= 1e-9 and getattr(a, "certified", True)
                                for a, b in zip(ars_res, results, strict=True))
    if process is not None:
        row["process_seconds"], row["process_mb"] = whole_process(*process)
    return row


def _mean(xs: Sequence[float]) -> float:
    return float(sum(xs) / len(xs)) if xs else math.nan


def run(*, model: Path | None, corpora: Sequence[str], n: int, orders: Sequence[int],
        words: Sequence[int], arcs: Sequence[int], seed: int = 0, processes: bool = True,
        log: Callable[[str], None] = say) -> dict[str, Any]:
    """Every setting's row (`measure_setting`) and what the page needs to say about them."""
    import maxarpa
    from arsdecode.api import DEFAULT_LM
    from data_prep.asr_lattices import Confuser, generate, heldout_sentences, write_slf_files
    from maxarpa.binary_write import write_binary

    model_path = Path(model) if model is not None else Path(DEFAULT_LM)
    t0 = time.perf_counter()
    full = maxarpa.load(model_path)
    log(f"model {model_path}: order {full.order}, {sum(full.counts):,} n-grams, "
        f"{len(full.vocab):,} words, loaded in {time.perf_counter() - t0:.1f} s")
    held = heldout_sentences(corpora, seed)
    confuser = Confuser.from_model(full)
    lattices = {(w, k): generate(confuser, held, w, k, n, seed) for w in words for k in arcs}
    ars, ars_note = ars_decoder()
    log(f"ARS on DAGs: {ars_note if ars is None else 'measured'}")
    rows = []
    process_note: str | None = "not measured (--no-process)"
    with tempfile.TemporaryDirectory() as tmp:
        slf = {key: write_slf_files(lats[:1], Path(tmp) / "slf")[0]
               for key, lats in lattices.items()}
        if processes:
            process_note = process_support(model_path, next(iter(slf.values())))
            log(f"whole process: {process_note or 'measured'}")
        for order in sorted(orders, reverse=True):
            if order > full.order:
                log(f"order {order} > the model's {full.order}: skipped")
                continue
            lm = full if order == full.order else maxarpa.truncate(full, order)
            lm_file: Path | None = None
            if processes and process_note is None:
                lm_file = Path(tmp) / f"lm.{order}.npz"
                write_binary(lm, lm_file)
            for (w, k), lats in lattices.items():
                proc = ((lm_file, slf[(w, k)]) if lm_file is not None and process_note is None
                        else None)
                row = measure_setting(lm, order, lats, ars=ars, process=proc)
                rows.append(row)
                log(format_row(row))
            del lm
    shown = model_path.resolve()
    if shown.is_relative_to(REPO):
        shown = shown.relative_to(REPO)
    return {"model": str(shown), "model_order": full.order,
            "model_ngrams": sum(full.counts), "model_words": len(full.vocab),
            "corpora": list(corpora), "n": n, "seed": seed, "rows": rows,
            "ars": None if ars is None else ars_note, "ars_note": ars_note,
            "process_note": process_note,
            "lattice_tool": {f"{w}x{k}": v for (w, k), v in LATTICE_TOOL.items()},
            "goal": GOAL}


def format_row(r: dict[str, Any]) -> str:
    """One printed line per row."""
    lt = LATTICE_TOOL.get((r["words"], r["arcs"])) if r["order"] == 5 else None
    goal = GOAL_SECONDS.get((r["order"], r["words"], r["arcs"]))
    cells = [f"n={r['order']} {r['words']:2d}x{r['arcs']:<2d}",
             f"lattice {r['nodes']:6.1f}/{r['lattice_arcs']:7.1f}",
             f"expansion {r['expand_seconds']:.4f} s {r['states']:7.0f}/{r['transitions']:8.0f}"
             f" {r['expand_peak_mb']:5.1f} MB",
             f"WER {100 * r['wer']:4.1f}% (acoustic {100 * r['wer_acoustic']:4.1f}%)"]
    if r["process_seconds"] is not None:
        cells.append(f"process {r['process_seconds']:.2f} s {r['process_mb']:.0f} MB")
    if r["ars_seconds"] is not None:
        cells.append(f"ARS {r['ars_seconds']:.4f} s {r['ars_states']:.0f} states "
                     f"agree {r['ars_agrees']}")
    if lt is not None:
        cells.append(f"lattice-tool: {lt['nodes']}/{lt['arcs']}, expand+Viterbi "
                     f"{lt['expand_viterbi_s']} s, {lt['expanded']}, -viterbi-decode "
                     f"{lt['viterbi_decode']}")
    if goal is not None:
        met = r["expand_seconds"] <= goal
        cells.append(f"goal <= {goal} s: expansion {'met' if met else 'missed'}")
    return " | ".join(cells)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10, help="lattices per setting (default 10)")
    ap.add_argument("--orders", type=int, nargs="+", default=[2, 3, 4, 5])
    ap.add_argument("--words", type=int, nargs="+", default=[10, 20, 40, 60])
    ap.add_argument("--arcs", type=int, nargs="+", default=[5, 15, 50])
    ap.add_argument("--model", type=Path, default=None,
                    help="ARPA, MAX-ARPA or binary model (default: the embedded 5-gram)")
    ap.add_argument("--corpora", nargs="+", default=["state_union"],
                    help="the corpora the model was trained on: its held-out split is the text")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-process", action="store_true",
                    help="skip the whole-process runs of the arsdecode command")
    ap.add_argument("--json", type=Path, default=None, help="save the results here")
    ap.add_argument("--quick", action="store_true",
                    help="10 lattices, orders 3 and 5, 10 and 40 words, 15 and 50 arcs, "
                         "no whole-process runs (bench.ab)")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.orders, args.words, args.arcs = 10, [3, 5], [10, 40], [15, 50]
        args.no_process = True
    res = run(model=args.model, corpora=args.corpora, n=args.n, orders=args.orders,
              words=args.words, arcs=args.arcs, seed=args.seed, processes=not args.no_process)
    res["command"] = shlex.join(["python", "-m", "bench.bench_lattice",
                                 *(sys.argv[1:] if argv is None else argv)])
    print(f"model {res['model']} ({res['model_ngrams']:,} n-grams), {args.n} lattices per "
          f"setting; whole process: {res['process_note'] or 'measured'}; ARS: {res['ars_note']}")
    for row in res["rows"]:
        print(format_row(row))
    print(f"goal: {GOAL}")
    figs = Record("bench_lattice", quick=args.quick, argv=list(argv) if argv is not None else None)
    for row in res["rows"]:
        name = f"n{row['order']}.{row['words']}x{row['arcs']}"
        figs.ratio(f"{name}.reference/expand", row["reference_seconds"] / row["expand_seconds"])
        if row["ars_seconds"] is not None:
            figs.ratio(f"{name}.ars/expand", row["ars_seconds"] / row["expand_seconds"])
        figs.time(f"{name}.expand_s", row["expand_seconds"])
        if row["process_seconds"] is not None:
            figs.time(f"{name}.process_s", row["process_seconds"])
        figs.count(f"{name}.states", row["states"])
    figs.save()
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(res, indent=1) + "\n")
    return 0 if all(r["ars_agrees"] is not False for r in res["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
