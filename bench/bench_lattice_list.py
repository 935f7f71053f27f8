"""Issue 32's speed goal, measured: many lattices in one process against one process each.

A lattice-tool user runs `lattice-tool -in-lattice-list L` once; before issue 32 an arsdecode
user ran one `arsdecode decode --lattice X` per lattice, paying start-up and model loading each
time. For a list of N ASR-like lattices (`data_prep.asr_lattices`: words x arcs per position,
written as SLF) and each order (the embedded 5-gram, and its truncation, as binaries written
once), in the same run:

  - `arsdecode decode --in-lattice-list L --lm M`: one process, CPU seconds (user + system)
    and peak RSS by GNU time;
  - `arsdecode decode --lattice X --lm M` once per lattice: the summed CPU seconds and the
    largest peak RSS (the first `--per-process` lattices, scaled to N);
  - SRILM `lattice-tool -read-htk -in-lattice-list L -lm ARPA -order N -viterbi-decode`, when
    `lattice-tool` is on the PATH (the anchor of the issue's goal: list CPU <= 0.5x, memory
    <= 1x); otherwise the column says it is not installed;

and checks that the list run's best paths are the per-process ones. Ratios are what to read.

Usage: python -m bench.bench_lattice_list [--n 100] [--words 20] [--arcs 10]
           [--orders 3 5] [--per-process 10] [--json OUT] [--doc docs/results-lattice.md]
`--doc` writes the table into that page, between its `lattice-list` markers (the rest of the
page is `experiments/lattice_rescoring.py`'s).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def timed(argv: list[str]) -> tuple[float, float, str]:
    """CPU seconds (user + system), peak RSS (MB) and stdout of one command, by GNU time."""
    proc = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", *argv], check=True,
                          capture_output=True, text=True)
    user, system, kb = proc.stderr.strip().splitlines()[-1].split()
    return float(user) + float(system), float(kb) / 1024.0, proc.stdout


def measure(n: int, words: int, arcs: int, orders: list[int], per_process: int,
            log=print) -> dict[str, Any]:
    import maxarpa
    from arsdecode.api import DEFAULT_LM
    from data_prep.asr_lattices import Confuser, generate, heldout_sentences, write_slf_files
    from maxarpa.binary_write import write_binary

    full = maxarpa.load(Path(DEFAULT_LM))
    held = heldout_sentences(("state_union",), 0)
    lattices = generate(Confuser.from_model(full), held, words, arcs, n, 0)
    lattice_tool = shutil.which("lattice-tool")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_slf_files(lattices, Path(tmp) / "slf")
        listing = Path(tmp) / "list.txt"
        listing.write_text("\n".join(map(str, paths)) + "\n")
        for order in orders:
            lm = full if order == full.order else maxarpa.truncate(full, order)
            lm_file = Path(tmp) / f"lm{order}.npz"
            write_binary(lm, lm_file)
            cmd = [sys.executable, "-m", "arsdecode", "decode", "--lm", str(lm_file)]
            list_cpu, list_mb, out = timed([*cmd, "--in-lattice-list", str(listing), "--json"])
            best = [json.loads(line)["tokens"] for line in out.splitlines()]
            each_cpu, each_mb = 0.0, 0.0
            for k, path in enumerate(paths[:per_process]):
                cpu, mb, one = timed([*cmd, "--lattice", str(path), "--json"])
                each_cpu, each_mb = each_cpu + cpu, max(each_mb, mb)
                if json.loads(one)["tokens"] != best[k]:
                    raise AssertionError(f"{path}: the list run's best path differs")
            each_cpu *= len(paths) / min(per_process, len(paths))
            row: dict[str, Any] = {
                "order": order, "lattices": len(paths), "list_cpu_s": list_cpu,
                "list_peak_mb": list_mb, "per_process_cpu_s": each_cpu,
                "per_process_peak_mb": each_mb, "list_over_per_process": list_cpu / each_cpu}
            if lattice_tool:
                # the ARPA file itself: lattice-tool's -order N truncates it as maxarpa does
                lt_cpu, lt_mb, _ = timed([lattice_tool, "-read-htk", "-htk-logbase",
                                          "2.718281828", "-in-lattice-list", str(listing),
                                          "-lm", str(DEFAULT_LM), "-order", str(order),
                                          "-viterbi-decode"])
                row.update(lattice_tool_cpu_s=lt_cpu, lattice_tool_peak_mb=lt_mb,
                           list_over_lattice_tool_cpu=list_cpu / lt_cpu,
                           list_over_lattice_tool_mb=list_mb / lt_mb)
            log(f"order {order}: list {list_cpu:.2f} CPU-s {list_mb:.0f} MB; one process per "
                f"lattice {each_cpu:.2f} CPU-s (x{each_cpu / list_cpu:.1f}) {each_mb:.0f} MB"
                + ("" if lattice_tool else "; lattice-tool not installed"))
            rows.append(row)
    return {"n": n, "words": words, "arcs": arcs, "rows": rows,
            "lattice_tool": lattice_tool or "not installed (SRILM is not on this machine)"}


BEGIN, END = "<!-- lattice-list:begin -->", "<!-- lattice-list:end -->"


def markdown(result: dict[str, Any]) -> str:
    """The section of docs/results-lattice.md: one row per order."""
    lines = [BEGIN, "## Many lattices in one process (issue 32)", "",
             f"Generated by `python -m bench.bench_lattice_list --doc docs/results-lattice.md`: "
             f"{result['n']} ASR-like lattices ({result['words']} words x {result['arcs']} arcs "
             "a position, SLF), the embedded 5-gram and its truncations as binary models, CPU "
             "seconds (user + system) and peak RSS by GNU time, in one run. lattice-tool: "
             f"{result['lattice_tool']}.", "",
             "| order | `--in-lattice-list`: CPU s | peak MB | one process per lattice: CPU s "
             "| peak MB | list / per-process CPU | lattice-tool CPU s | list / lattice-tool |",
             "|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lt = r.get("lattice_tool_cpu_s")
        vs_lt = r.get("list_over_lattice_tool_cpu")
        lines.append(f"| {r['order']} | {r['list_cpu_s']:.2f} | {r['list_peak_mb']:.0f} | "
                     f"{r['per_process_cpu_s']:.2f} | {r['per_process_peak_mb']:.0f} | "
                     f"{r['list_over_per_process']:.3f} | "
                     f"{'-' if lt is None else format(lt, '.2f')} | "
                     f"{'-' if vs_lt is None else format(vs_lt, '.2f')} |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def write_doc(path: Path, section: str) -> None:
    """Replace the marked section of `path` (appended when the page has none yet)."""
    text = path.read_text(encoding="utf-8")
    if BEGIN in text and END in text:
        head, _, rest = text.partition(BEGIN)
        _, _, tail = rest.partition(END)
        text = head + section.rstrip("\n") + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--words", type=int, default=20)
    ap.add_argument("--arcs", type=int, default=10)
    ap.add_argument("--orders", type=int, nargs="+", default=[3, 5])
    ap.add_argument("--per-process", type=int, default=10)
    ap.add_argument("--json", type=Path, default=REPO / "work" / "bench" /
                    "bench_lattice_list.json")
    ap.add_argument("--doc", type=Path, default=None,
                    help="write the table into this page (docs/results-lattice.md)")
    args = ap.parse_args()
    result = measure(args.n, args.words, args.arcs, args.orders, args.per_process)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.json}")
    if args.doc is not None:
        write_doc(args.doc, markdown(result))
        print(f"wrote {args.doc}")


if __name__ == "__main__":
    main()
