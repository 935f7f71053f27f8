"""Issue 34's start-up goal, measured: one `arsdecode decode` process on one small lattice.

A script that runs one process per lattice (as `lattice-tool` users do) pays the interpreter,
the imports, the model map and the first query every time. The goal is at most 0.15 s for the
whole process with a binary model. Why a ratio: on a shared machine the absolute seconds move
with the load, while a `python -c "import numpy"` process measured in the same run, alternated
with the others, moves with it; numpy is the floor every run pays.

Each round runs every case once, in turn (alternating, so that a load spike hits all of them);
the table gives per case the median over the rounds of the wall seconds, the CPU seconds
(user + system, the rusage of GNU time's process) and the peak RSS (MB, time's %M), and the
CPU ratio to the numpy process.
Cases: `python -m arsdecode decode` on a 4-node SLF word lattice and on a 3-position JSON
confusion network, and the console script (`arsdecode` beside the interpreter) on the SLF,
with the embedded 5-gram converted once to a binary (.npz) model. `--tree DIR` adds the same
module cases run from another checkout (PYTHONPATH=DIR), for an A/B against it in one run.

Two kinds of process, named in the case: "dev" runs in this interpreter's environment, where
a developer install in strict editable mode (`pip install -e .`'s default) puts setuptools'
editable path finder in every process's start-up (site imports it and its pathlib,
importlib.util and fnmatch; scripts/install.sh installs in compat mode, which has none, and
the table says which this venv has); "installed" is what a user's `pip install` of a wheel
runs: a fresh venv with the two packages copied into its site-packages (the wheel's layout,
.pyc compiled as pip does), numpy and the other dependencies reached through a plain path
entry, no editable finder, and its working directory outside the checkout. Its numpy floor
is measured in that venv too.

Usage: python -m bench.bench_startup [--rounds 7] [--tree /path/to/other/checkout] [--json OUT]
           [--no-installed] [--doc]
           (--doc: write the table into docs/performance.md, `bench:startup` markers)
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import site
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

SLF = """VERSION=1.1
base=10
start=0 end=3
N=4 L=4
I=0 t=0.0
I=1 t=0.1
I=2 t=0.2
I=3 t=0.3
J=0 S=0 E=1 W=the a=-1
J=1 S=1 E=2 W=!NULL a=-2
J=2 S=1 E=2 W=united a=-2
J=3 S=2 E=3 W=states a=-3
"""
CONFUSION = {"positions": [[["the", -0.1], ["a", -2.3]], [["united", 0.0], ["unite", -1.0]],
                           [["states", 0.0], ["state", -0.5]]]}


PACKAGES = ("arsdecode", "maxarpa")


def timed(argv: list[str], root: Path | None, cwd: Path | None = None
          ) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MB) of one process run from
    `root` (its directory and PYTHONPATH: `-m` puts the working directory first on the path),
    as users run it: with .pyc files written (the first round writes them). `root` None: an
    installed venv's process, no PYTHONPATH, run in `cwd`. CPU is the rusage of GNU time's
    process, which counts the command it waited for, to the microsecond (time prints CPU to
    10 ms, a tenth of what is measured here); peak RSS is time's %M, the command's own (a
    child forked from this process would count this process's pages from before its exec)."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if root is not None:
        env["PYTHONPATH"] = str(root)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    proc = subprocess.Popen(["/usr/bin/time", "-f", "%M", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env,
                            cwd=root if root is not None else cwd)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {err}")
    return wall, usage.ru_utime + usage.ru_stime, float(err.strip().splitlines()[-1]) / 1024.0


def installed_venv(tree: Path, where: Path) -> Path:
    """A venv at `where` holding `tree`'s two packages as a wheel installs them (copied into
    site-packages, bytecode compiled), the dependencies through a plain path entry to this
    interpreter's site-packages (a .pth line naming a directory runs none of that directory's
    own .pth files, so the developer install's editable finder stays out). Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    py = where / "bin" / "python"
    target = Path(subprocess.run([str(py), "-c", "import sysconfig; "
                                  "print(sysconfig.get_paths()['purelib'])"], check=True,
                                 capture_output=True, text=True).stdout.strip())
    (target / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    for package in PACKAGES:
        shutil.copytree(tree / package, target / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.cpp", "*.c"))
        compileall.compile_dir(target / package, quiet=1)
    return py


Case = tuple[str, list[str], "Path | None", "Path | None"]
"""(name, argv, PYTHONPATH root or None for an installed venv, working directory)."""


def cases(model: Path, slf: Path, cn: Path, tree: Path | None,
          venvs: list[tuple[str, Path]], neutral: Path) -> list[Case]:
    """Every case; the first of each kind ("dev", "installed") is its numpy floor."""
    py = sys.executable
    script = Path(py).parent / "arsdecode"
    decode = ["decode", "--lm", str(model), "--lattice"]
    out: list[Case] = [("dev: python -c 'import numpy'", [py, "-c", "import numpy"], REPO, None)]
    trees = [("", REPO)] + ([(" [--tree]", tree.resolve())] if tree is not None else [])
    for tag, root in trees:
        out.append((f"dev: -m arsdecode, SLF{tag}", [py, "-m", "arsdecode", *decode, str(slf)],
                    root, None))
        out.append((f"dev: -m arsdecode, JSON CN{tag}",
                    [py, "-m", "arsdecode", *decode, str(cn)], root, None))
    if script.exists():
        out.append(("dev: console script, SLF", [str(script), *decode, str(slf)], REPO, None))
    for i, (tag, vpy) in enumerate(venvs):
        if i == 0:
            out.append(("installed: python -c 'import numpy'", [str(vpy), "-c", "import numpy"],
                        None, neutral))
        out.append((f"installed: -m arsdecode, SLF{tag}",
                    [str(vpy), "-m", "arsdecode", *decode, str(slf)], None, neutral))
        out.append((f"installed: -m arsdecode, JSON CN{tag}",
                    [str(vpy), "-m", "arsdecode", *decode, str(cn)], None, neutral))
    return out


def measure(rounds: int, tree: Path | None, installed: bool = True, log=print
            ) -> dict[str, Any]:
    from arsdecode.api import DEFAULT_LM
    from maxarpa.load import convert

    with tempfile.TemporaryDirectory() as tmp:
        model, slf, cn = Path(tmp) / "lm.npz", Path(tmp) / "one.slf", Path(tmp) / "cn.json"
        convert(DEFAULT_LM, model, binary=True)
        slf.write_text(SLF)
        cn.write_text(json.dumps(CONFUSION))
        venvs: list[tuple[str, Path]] = []
        if installed:
            trees = [("", REPO)] + ([(" [--tree]", tree.resolve())] if tree is not None else [])
            venvs = [(tag, installed_venv(root, Path(tmp) / f"venv{i}"))
                     for i, (tag, root) in enumerate(trees)]
        neutral = Path(tmp) / "cwd"
        neutral.mkdir()
        todo = cases(model, slf, cn, tree, venvs, neutral)
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name, *_ in todo}
        for r in range(rounds + 1):  # round 0 warms the caches (and writes .pyc): not counted
            for name, argv, root, cwd in todo:
                got = timed(argv, root, cwd)
                if r:
                    runs[name].append(got)
    rows = []
    floors = {kind: statistics.median(cpu for _, cpu, _ in runs[name])
              for name, *_ in todo if name.endswith("'import numpy'")
              for kind in [name.split(":")[0]]}
    for name, *_ in todo:
        wall, cpu, rss = (statistics.median(x[i] for x in runs[name]) for i in range(3))
        floor = floors.get(name.split(":")[0], 0.0)
        rows.append({"case": name, "wall_s": wall, "cpu_s": cpu, "peak_rss_mb": rss,
                     "cpu_vs_numpy": cpu / floor if floor > 0 else float("nan")})
    log(f"{'case':40s} {'wall s':>7s} {'CPU s':>7s} {'RSS MB':>7s} {'CPU/numpy':>9s}"
        f"   (median of {rounds} rounds)")
    for row in rows:
        log(f"{row['case']:40s} {row['wall_s']:7.3f} {row['cpu_s']:7.3f} "
            f"{row['peak_rss_mb']:7.1f} {row['cpu_vs_numpy']:9.2f}")
    finder = subprocess.run([sys.executable, "-c", "import sys; print(any('__editable__' in m "
                             "for m in sys.modules))"], check=True, capture_output=True,
                            text=True).stdout.strip() == "True"
    load = os.getloadavg()[0]
    log(f"load average (1 min) at the end: {load:.1f} on {os.cpu_count()} cores: wall "
        "seconds include waiting for a core, CPU seconds do not")
    return {"rounds": rounds, "tree": str(tree) if tree else None, "rows": rows, "load": load,
            "dev_editable_finder": finder}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--tree", type=Path, help="another checkout to A/B against, same run")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--no-installed", action="store_true",
                    help="leave out the installed-venv cases (no venv is built)")
    ap.add_argument("--doc", action="store_true", help="write docs/performance.md's section")
    args = ap.parse_args(argv)
    result = measure(args.rounds, args.tree, installed=not args.no_installed)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    if args.doc:
        from bench.perf_doc import write_section

        write_section("startup", markdown(result))
    return 0


GOAL_S = 0.15  # issue 34: the whole process, binary model
LATTICE_TOOL = "SRILM `lattice-tool` on the real lattices: 0.014-0.20 s, 16-30 MB (issue 34)"


def markdown(result: dict[str, Any]) -> str:
    """The table docs/performance.md shows."""
    import datetime

    finder = ("whose editable install (strict mode) adds setuptools' path finder to every "
              "process" if result.get("dev_editable_finder") else "with no editable finder")
    lines = [f"Generated by `python -m bench.bench_startup --doc` on "
             f"{datetime.date.today().isoformat()}: median of {result['rounds']} rounds, "
             f"cases alternated; the embedded 5-gram as a binary (.npz) model. Goal: at most "
             f"{GOAL_S} s for the whole process. Anchor (not installed here, quoted): "
             f"{LATTICE_TOOL}. \"dev\": the bench's own venv, {finder}; "
             f"\"installed\": a fresh venv holding the packages "
             f"as a wheel installs them (the module docstring says how); CPU / numpy's is "
             f"against `python -c 'import numpy'` in the same kind of venv. Load average at "
             f"the end: {result.get('load', float('nan')):.1f} on {os.cpu_count()} cores (wall "
             f"includes waiting for a core).", "",
             "| case | wall s | CPU s | peak RSS MB | CPU / numpy's |", "|---|---|---|---|---|"]
    for row in result["rows"]:
        if "[--tree]" in row["case"]:  # another checkout's A/B rows: not this tree's figures
            continue
        lines.append(f"| {row['case']} | {row['wall_s']:.3f} | {row['cpu_s']:.3f} | "
                     f"{row['peak_rss_mb']:.1f} | {row['cpu_vs_numpy']:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
