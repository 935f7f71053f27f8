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
"""

from __future__ import annotations

import argparse
import json
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


def run(argv: list[str], timeout: float, cap_mb: int | None) -> dict:
    """One process: wall seconds, peak RSS (MB), exit status, last stderr line."""
    def limit() -> None:
        if cap_mb is not None:
            resource.setrlimit(resource.RLIMIT_AS, (cap_mb << 20, cap_mb << 20))

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env,
                                preexec_fn=limit)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                status = -1
                break
            time.sleep(0.05)
        proc.returncode = 0  # reaped by wait4
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
    code = "timeout" if status == -1 else os.waitstatus_to_exitcode(status)
    return {"seconds": round(time.perf_counter() - start, 1),
            "peak_mb": usage.ru_maxrss // 1024, "exit": code,
            "traceback": any(line.startswith("Traceback") for line in lines),
            "stderr": lines[-1][:160] if lines else ""}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--width", type=int, default=100)
    p.add_argument("--budgets", nargs="+", default=["none", "64"])
    p.add_argument("--cap-mb", type=int, default=None)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--commands", nargs="+", default=list(COMMANDS), choices=list(COMMANDS))
    args = p.parse_args()
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
                print(f"{name}\t{budget}\t{r['seconds']}\t{r['peak_mb']}\t{r['exit']}\t"
                      f"{r['traceback']}\t{r['stderr']}", flush=True)


if __name__ == "__main__":
    main()
