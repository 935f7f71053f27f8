"""The before/after module-size table of issue 30 ("files with one job"), in markdown.

    python -m scripts.module_sizes                  # against 199a3de, before issue 30's work
    python -m scripts.module_sizes --before REV     # against any other revision
    python -m scripts.module_sizes --over 400       # only modules above 400 lines

Prints one row per module (`.py`, and the compiled core's `.pyx`/`.pxi`) of the two packages
and the runners beside them (bench, experiments, data_prep, scripts: the issue's count of 18
modules over 400 lines covers these six folders; tests are not counted) that has more than
`--over` lines (default 300) at REV or now: its path, its lines at
REV (`git show REV:path`; "-" where it did not exist) and its lines now, in the work tree ("-"
where it is gone, e.g. split under new names). Then a count of the modules over 400 lines on
each side.

Why a script: the closing note of issue 30 needs the table, and a table typed by hand goes
stale with the next commit; this one is made again from git. Lines are counted as the layout
test counts them (`str.splitlines`), so the two agree.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("arsdecode", "maxarpa", "bench", "experiments", "data_prep", "scripts")
SUFFIXES = (".py", ".pyx", ".pxi")
BEFORE = "199a3de"
LIMIT = 400  # issue 30: modules of about 400 lines or fewer


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, encoding="utf-8").stdout


def lines_at(rev: str, repo: Path = REPO, roots: tuple[str, ...] = ROOTS) -> dict[str, int]:
    """path -> line count of every module under `roots` at revision `rev`."""
    paths = _git(repo, "ls-tree", "-r", "--name-only", rev, "--", *roots).splitlines()
    return {p: len(_git(repo, "show", f"{rev}:{p}").splitlines())
            for p in paths if p.endswith(SUFFIXES)}


def lines_now(repo: Path = REPO, roots: tuple[str, ...] = ROOTS) -> dict[str, int]:
    """path -> line count of every module under `roots` in the work tree (tracked or not,
    build output left out)."""
    out = {}
    for root in roots:
        for path in sorted((repo / root).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and "__pycache__" not in path.parts:
                out[path.relative_to(repo).as_posix()] = len(
                    path.read_text(encoding="utf-8").splitlines())
    return out


def size_table(before: dict[str, int], now: dict[str, int], over: int, rev: str) -> str:
    """The markdown table (module docstring): largest first, by the larger of both sides."""
    rows = sorted((p for p in before.keys() | now.keys()
                   if max(before.get(p, 0), now.get(p, 0)) > over),
                  key=lambda p: (-max(before.get(p, 0), now.get(p, 0)), p))
    out = [f"| module | lines at {rev} | lines now |", "| --- | ---: | ---: |"]
    for p in rows:
        out.append(f"| `{p}` | {before.get(p, '-')} | {now.get(p, '-')} |")
    big_before = sum(n > LIMIT for n in before.values())
    big_now = sum(n > LIMIT for n in now.values())
    out.append("")
    out.append(f"Modules over {LIMIT} lines: {big_before} at {rev}, {big_now} now "
               f"(of {len(before)} and {len(now)} modules).")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default=BEFORE, metavar="REV",
                    help=f"the revision of the 'before' column (default {BEFORE})")
    ap.add_argument("--over", type=int, default=300, metavar="N",
                    help="list modules with more than N lines on either side (default 300)")
    args = ap.parse_args(argv)
    try:
        before = lines_at(args.before)
    except subprocess.CalledProcessError as err:
        said = (err.stderr or "").strip().splitlines()
        print(f"module_sizes: git cannot read revision {args.before!r}"
              + (f": {said[-1]}" if said else ""), file=sys.stderr)
        return 2
    print(size_table(before, lines_now(), args.over, args.before))
    return 0


if __name__ == "__main__":
    sys.exit(main())
