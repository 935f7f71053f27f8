"""Issue 29 B, measured: time and peak memory of the word-lattice commands on a large JSON DAG.

The DAG (`make_dag`): N nodes in a chain; from every node, W arcs to the next node with W
distinct words drawn uniformly from the embedded model's vocabulary, and one arc with a word
to the node after next (1,000 nodes, W = 100: 100,898 arcs), arc ln weights uniform in
[-3, 0], the last node final. With the embedded 5-gram its merged expansion has about 43k
states and 4.3M transitions.

Each command runs as its own process (`python -m arsdecode ...`, the model loading included):
wall seconds, peak RSS (`os.wait4`'s ru_maxrss), exit status and the last line of stderr;
optionally under an address-space cap (RLIMIT_AS, `--cap-mb`), to check that a run past its
memory gives one line and exit 2, never a traceback.

Usage: python -m bench.bench_dag_memory [--nodes 1000] [--width 100] [--budgets none 64 256]
           [--cap-mb 2560] [--timeout 300] [--commands decode nbest unique marginals ars]

`--real DIR` (issue 34): instead, the real ASR lattices of DIR (`../shared/data/lattices`: the
8 AMI and the Switchboard SLF files, and each of them written once as OpenFst text with its
symbol table), one process per lattice and per command a lattice-tool user runs (REAL_COMMANDS:
-viterbi-decode, -nbest-decode, -posteriors, -write-mesh, rescoring written out as a lattice),
the embedded 5-gram upper-cased as the lattices' words are (a binary model, written once). With
`--baseline TREE` each run is made twice in the same round, A = TREE's engine (its path first
on PYTHONPATH, e.g. a worktree of main) and B = this checkout's, alternating which goes first;
peak RSS and CPU seconds per run (`os.wait4`), the median over `--rounds`, B/A, and B against
lattice-tool's anchor (16-30 MB on these lattices, issue 34; SRILM is not installed here).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]  # the commands run with it on PYTHONPATH

COMMANDS = {
    "decode": ["decode"],
    "nbest": ["decode", "--nbest", "10"],
    "unique": ["decode", "--nbest", "10", "--unique"],
    "marginals": ["marginals"],
    "ars": ["decode", "--method", "ars"],
}


def make_dag(path: Path, nodes: int = 1000, width: int = 100, seed: int = 0) -> int:
    """Write the benchmark's JSON DAG (module docstring) to `path`; returns its arc count."""
    from arsdecode.api import DEFAULT_LM, load_lm

    vocab = sorted(w for w in load_lm(str(DEFAULT_LM)).word_to_id if not w.startswith("<"))
    rng = random.Random(seed)
    arcs: list[list] = []
    for u in range(nodes - 1):
        arcs += [[u, u + 1, w, round(rng.uniform(-3, 0), 4)] for w in rng.sample(vocab, width)]
        if u + 2 < nodes:
            arcs.append([u, u + 2, rng.choice(vocab), round(rng.uniform(-3, 0), 4)])
    path.write_text(json.dumps({"start": 0, "finals": {str(nodes - 1): 0.0}, "arcs": arcs}))
    return len(arcs)


def run(argv: list[str], timeout: float, cap_mb: int | None, tree: Path = REPO) -> dict:
    """One process (`tree` first on its PYTHONPATH): wall and CPU seconds, peak RSS (MB),
    exit status, last stderr line.

    The peak and CPU are GNU time's (`-o` a file of their own), not `os.wait4`'s: a child
    forked from this process starts with its pages (copy-on-write), so its ru_maxrss is at
    least this process's size, which once the model and the DAG are built here hid a 46 MB
    run behind a 51 MB floor."""
    def limit() -> None:
        if cap_mb is not None:
            resource.setrlimit(resource.RLIMIT_AS, (cap_mb << 20, cap_mb << 20))

    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as timed:
        # cwd: `python -m` puts the working directory first on sys.path, before PYTHONPATH
        proc = subprocess.Popen(["/usr/bin/time", "-f", "%M %U %S", "-o", timed.name, *argv],
                                stdout=subprocess.DEVNULL, stderr=err, env=env,
                                preexec_fn=limit, cwd=tree)
        try:
            code: int | str = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = "timeout"
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
        figures = timed.read().split()[-3:]
    kb, user, system = (float(x) for x in figures) if len(figures) == 3 else (0, 0, 0)
    return {"seconds": round(time.perf_counter() - start, 1), "cpu_s": user + system,
            "peak_mb": kb / 1024, "exit": code,
            "traceback": any(line.startswith("Traceback") for line in lines),
            "stderr": lines[-1][:160] if lines else ""}


REAL_COMMANDS = {
    "viterbi": ["decode", "--json"],
    "nbest": ["decode", "--nbest", "10", "--unique", "--json"],
    "posteriors": ["marginals", "--json"],
    "mesh": ["decode", "--write-mesh", "{out}/mesh.txt"],
    "rescore": ["decode", "--write-lattice", "{out}/rescored.slf"],
}
"""lattice-tool's -viterbi-decode, -nbest-decode 10, -posteriors, -write-mesh and -lm with
-write-htk (the expanded, rescored lattice), as `arsdecode` runs them on one lattice."""
LATTICE_TOOL_MB = (16.0, 30.0)  # issue 34: SRILM lattice-tool on these lattices, per process


def real_inputs(folder: Path, tmp: Path) -> tuple[Path, list[tuple[str, Path, list[str]]]]:
    """The upper-cased embedded 5-gram as a binary model, and every real lattice: (name, path,
    extra flags), each SLF file also written once as OpenFst text with its symbol table."""
    import gzip
    import re

    import maxarpa
    from arsdecode.lattice.fst_text import symbol_table, write_symbol_table
    from arsdecode.lattice.lattice_files import read_word_lattice, write_word_lattice

    keep = {"<S>": "<s>", "</S>": "</s>", "<UNK>": "<unk>"}
    with gzip.open(REPO / "arsdecode" / "data" / "state_union.5gram.arpa.gz", "rt",
                   encoding="utf-8") as fh:
        text = "".join(line if line.startswith(("\\", "ngram ")) or not line.strip() else
                       re.sub(r"\S+", lambda m: keep.get(m[0].upper(), m[0].upper()), line)
                       for line in fh)
    (tmp / "upper.arpa").write_text(text, encoding="utf-8")
    model = tmp / "upper.npz"
    maxarpa.convert(tmp / "upper.arpa", model, binary=True)
    slf = sorted((folder / "ami").glob("*.lat.gz")) + sorted((folder / "clp").glob("*.lat"))
    inputs: list[tuple[str, Path, list[str]]] = []
    for path in slf:
        name = path.name.split(".")[0]
        inputs.append((name, path, []))
    for path in slf:
        name = path.name.split(".")[0]
        wl = read_word_lattice(path)
        table = symbol_table(wl)
        fst, syms = tmp / f"{name}.fst.txt", tmp / f"{name}.syms"
        write_word_lattice(wl, fst, symbols=table)
        with open(syms, "w", encoding="utf-8") as out:
            write_symbol_table(table, out)
        inputs.append((name + ".fst", fst, ["--symbols", str(syms)]))
    return model, inputs


def measure_real(folder: Path, baseline: Path | None, rounds: int, commands: list[str] | None,
                 timeout: float) -> None:
    """`--real`: the table of the module docstring, one row per lattice and command; then the
    nine SLF lattices as one `--in-lattice-list` run, and the synthetic DAG (`make_dag`, 100k
    arcs) written as SLF, where the reader's own memory is the largest share."""
    from bench.record import Record

    rec = Record("bench_dag_memory_real", quick=rounds < 3)
    names = commands or list(REAL_COMMANDS)
    sides = [("A", baseline), ("B", REPO)] if baseline is not None else [("B", REPO)]
    lo, hi = LATTICE_TOOL_MB
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        model, inputs = real_inputs(folder, tmp)
        print(f"# real lattices: {len(inputs)} inputs x {len(names)} commands, {rounds} rounds; "
              f"A = {baseline or '-'}, B = {REPO}; lattice-tool: {lo:.0f}-{hi:.0f} MB",
              flush=True)
        print("lattice\tcommand\tA_MB\tB_MB\tB/A\tB/lattice-tool(30..16)\tA_cpu_s\tB_cpu_s",
              flush=True)
        rows: list[tuple[str, str, list[str]]] = []
        for name, path, extra in inputs:
            for command in names:
                if command in ("nbest", "mesh", "rescore") and name.endswith(".fst"):
                    continue  # the same lattice as its SLF row: reading is what differs
                rows.append((name, command, [*(a.format(out=tmp) for a in REAL_COMMANDS[command]),
                                             "--lattice", str(path), *extra]))
        listing = tmp / "list.txt"
        listing.write_text("".join(f"{p}\n" for n, p, _ in inputs if not n.endswith(".fst")))
        rows.append(("all 9 SLF, one process", "viterbi",
                     ["decode", "--json", "--in-lattice-list", str(listing)]))
        from arsdecode.lattice.lattice_files import read_word_lattice, write_word_lattice

        make_dag(tmp / "dag.json")
        write_word_lattice(read_word_lattice(tmp / "dag.json"), tmp / "dag.slf.gz")
        rows.append(("synthetic 100k-arc SLF", "viterbi",
                     ["decode", "--json", "--lattice", str(tmp / "dag.slf.gz"), "--lm",
                      str(REPO / "arsdecode" / "data" / "state_union.5gram.arpa.gz")]))
        for name, command, flags in rows:
            argv = [sys.executable, "-m", "arsdecode", *flags]
            if "--lm" not in flags:
                argv += ["--lm", str(model)]
            got: dict[str, list[dict]] = {side: [] for side, _ in sides}
            for k in range(rounds):
                for side, tree in (sides if k % 2 == 0 else sides[::-1]):
                    r = run(argv, timeout, None, tree or REPO)
                    if r["exit"] != 0:
                        raise SystemExit(f"{side} {name} {command}: exit {r['exit']}: "
                                         f"{r['stderr']}")
                    got[side].append(r)
            a, b = _median(got, "A", "peak_mb"), _median(got, "B", "peak_mb")
            print(f"{name}\t{command}\t{a:.1f}\t{b:.1f}\t{b / a:.3f}\t"
                  f"{b / hi:.2f}..{b / lo:.2f}\t{_median(got, 'A', 'cpu_s'):.2f}\t"
                  f"{_median(got, 'B', 'cpu_s'):.2f}", flush=True)
            key = f"{name.replace(' ', '_')}.{command}"
            rec.add(f"{key}.peak_mb", b, "rss_mb")
            rec.ratio(f"{key}.over_lattice_tool_30mb", b / hi)
            if baseline is not None:
                rec.ratio(f"{key}.peak_b_over_a", b / a)
    print(f"wrote {rec.save()}")


def _median(runs: dict[str, list[dict]], side: str, key: str) -> float:
    """The median of one figure over a side's runs (NaN for a side not measured)."""
    import statistics

    return statistics.median(r[key] for r in runs[side]) if runs.get(side) else math.nan


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--width", type=int, default=100)
    p.add_argument("--budgets", nargs="+", default=["none", "64"])
    p.add_argument("--cap-mb", type=int, default=None)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--commands", nargs="+", default=None)
    p.add_argument("--real", type=Path, default=None, metavar="DIR",
                   help="the real lattices' folder (../shared/data/lattices): see above")
    p.add_argument("--baseline", type=Path, default=None, metavar="TREE",
                   help="--real: the A side, a checkout whose engine is measured beside this one")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    if args.real is not None:
        measure_real(args.real, args.baseline, args.rounds, args.commands, args.timeout)
        return
    args.commands = args.commands or list(COMMANDS)
    from arsdecode.api import DEFAULT_LM

    with tempfile.TemporaryDirectory() as tmp:
        dag = Path(tmp) / "dag.json"
        n_arcs = make_dag(dag, args.nodes, args.width)
        print(f"# DAG: {args.nodes} nodes, {n_arcs} arcs; cap: {args.cap_mb or '-'} MB",
              flush=True)
        print("command\tbudget\tseconds\tpeak_MB\texit\ttraceback\tstderr", flush=True)
        for name in args.commands:
            for budget in args.budgets:
                argv = [sys.executable, "-m", "arsdecode", *COMMANDS[name], "--lm",
                        str(DEFAULT_LM), "--lattice", str(dag)]
                if budget != "none":
                    argv += ["--memory-budget", budget]
                r = run(argv, args.timeout, args.cap_mb)
                print(f"{name}\t{budget}\t{r['seconds']}\t{r['peak_mb']:.0f}\t{r['exit']}\t"
                      f"{r['traceback']}\t{r['stderr']}", flush=True)


if __name__ == "__main__":
    main()
