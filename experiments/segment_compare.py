"""Exact word segmentation against the segmenters people use (issues 21, 33); writes
docs/results-segment.md and its plots (docs/img/segment/).

By default (issue 33) the shipped general-English model against the three tools as shipped on
the test sets of `data_prep.segment_devsets` (hashtags, URLs, held-out sentences), speed in
process and whole process, the reliability of the boundary posteriors, and with --tune the
dev-set grids that chose the settings (`experiments/segment_english.py` measures,
`experiments/segment_report.py` renders):

    python -m data_prep.segment_devsets --out work/segment/sets
    python -m experiments.segment_compare --sets work/segment/sets --tune

With --sms, issue 21's comparison on the SMS held-out text (below) instead, into --doc.

Test text: the SMS held-out sentences of data_prep.prepare_sms (state_union split, never seen
by lm.N.arpa), spaces and punctuation removed, lower-cased; the reference segmentation is the
sentence's own words (surface forms: "don't" is "dont"). The last `--dev-sentences` held-out
sentences are a development set, used only by `--tune` (the unknown-word penalty grid) and
never scored in the comparison.

Segmenters: `wordsegment` (bigram), `wordninja` (unigram), `symspellpy` (word_segmentation),
(a) as shipped and (b) fed the counts of the LMs' training text (experiments/segment_tools.py);
ours: the segmentation lattice (arsdecode.tasks.segment) decoded exactly with lm.3/4/5 (as
maxarpa binary models, written once beside the text ones) by `arsdecode.decode`, the compiled
merged expansion; with --check every sentence's ln score is also checked equal to the numpy
reference (`expansion_dp.dag_decode`) and to the reference Viterbi of segment_tools. Its whole
process is the `arsdecode segment --file` command. Metrics: boundary precision, recall, F1,
exact sentences. Speed: characters per second, in-process (segmenting only: the model or
dictionary is loaded before the clock starts) and whole process (a fresh interpreter started on
the text file, loading included), measured in the same run.

    python -m experiments.segment_compare --sms --data work/sms --doc OUT.md [--sentences 200]
    python -m experiments.segment_compare --data work/sms --tune
    python -m experiments.segment_compare --render-only
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import maxarpa
from arsdecode.tasks.segment.evaluation import score_segmentations
from arsdecode.tasks.segment.lattice import (
    DEFAULT_UNKNOWN_MAX_LENGTH,
    DEFAULT_UNKNOWN_PENALTY_PER_CHAR,
    SurfaceIndex,
    segmentation_lattice,
    segmentation_words,
)
from experiments import segment_tools

REPO = Path(__file__).resolve().parents[1]

DOC = REPO / "docs" / "results-segment.md"
IMG = REPO / "docs" / "img" / "segment"
RESULTS = REPO / "work" / "segment" / "results.json"
ORDERS = (3, 4, 5)
DEV_SENTENCES = 200
PENALTY_GRID = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0)


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ----- data -----------------------------------------------------------------------------------
def read_sentences(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text(encoding="utf-8").splitlines()]


def split_heldout(data: Path, dev: int) -> tuple[list[list[str]], list[list[str]]]:
    """(test, dev) reference segmentations (surface words) of the held-out sentences: the
    last `dev` sentences are the development set. Sentences with no word are dropped."""
    held = segment_tools.surface_sentences(read_sentences(data / "heldout.txt"))
    return held[:-dev] if dev else held, held[-dev:] if dev else []


# ----- our segmenter --------------------------------------------------------------------------
def exact_decoder() -> tuple[str, Callable]:
    """("arsdecode.decode", a function (lm, lattice) -> (words, ln score)): the front door,
    which runs the compiled merged expansion on a word lattice (`fast_full.run_dag`)."""
    decode = importlib.import_module("arsdecode.api").decode

    def run(lm, wl):
        result = decode(lm, wl)
        return list(result.words), float(result.log_p)
    return "arsdecode.decode", run


def ours(lm: maxarpa.Model, penalty: float, unknown_max_length: int,
         check: bool = False) -> Callable[[str], list[str]]:
    """Our segmenter on one model: lattice, exact decode, words back to substrings. With
    `check`, the reference Viterbi decodes too and the ln scores must agree."""
    index = SurfaceIndex.of_model(lm)
    _, decode = exact_decoder()

    def segment(text: str) -> list[str]:
        if not text:
            return []
        wl = segmentation_lattice(text, index, unknown_penalty_per_char=penalty,
                                  unknown_max_length=unknown_max_length)
        words, score = decode(lm, wl)
        if check:  # the numpy reference and the experiment's own Viterbi agree
            from arsdecode.methods.expansion_dp import dag_decode

            numpy_ref = dag_decode(lm, wl).log_p
            _, ref = segment_tools.reference_dag_decode(lm, wl)
            if not (math.isclose(score, ref, rel_tol=0, abs_tol=1e-6)
                    and math.isclose(score, numpy_ref, rel_tol=0, abs_tol=1e-9)):
                raise AssertionError(f"{text[:40]}: ln {score} != references {numpy_ref}, "
                                     f"{ref}")
        return segmentation_words(words, text)

    segment("warmup")  # the model's DP tables are built on first use: part of loading it
    return segment


def model_file(data: Path, variant: str) -> Path:
    """lm.N as a maxarpa binary model (written once beside the text one): the format a user
    who segments often keeps, and the one that loads in a fraction of the time."""
    binary = data / f"{variant}.npz"
    if not binary.exists():
        from maxarpa.binary_write import write_binary

        write_binary(maxarpa.load(data / f"{variant}.maxarpa"), binary)
    return binary


def build(tool: str, variant: str, data: Path, penalty: float, unknown_max_length: int,
          check: bool = False) -> Callable[[str], list[str]]:
    """A segmenter by name: a pip tool ("shipped" or "trained") or "ours" (variant "lm.N")."""
    if tool == "ours":
        lm = maxarpa.load(model_file(data, variant))
        return ours(lm, penalty, unknown_max_length, check)
    if variant == "shipped":
        return segment_tools.shipped(tool)
    train = segment_tools.surface_sentences(read_sentences(data / "train.txt"))
    return segment_tools.trained(tool, train)


# ----- measuring ------------------------------------------------------------------------------
def measure(name: str, segment: Callable[[str], list[str]], refs: list[list[str]]) -> dict:
    texts = ["".join(r) for r in refs]
    t0 = time.perf_counter()
    out = [segment(t) for t in texts]
    seconds = time.perf_counter() - t0
    score = score_segmentations(out, refs).to_json()
    chars = sum(map(len, texts))
    score.update(seconds=seconds, chars=chars, chars_per_second=chars / seconds)
    say(f"  {name}: F1 {score['f1']:.4f} exact {score['exact']:.3f} "
        f"{score['chars_per_second']:.0f} chars/s in-process")
    return {"score": score, "output": [" ".join(o) for o in out]}


def whole_process(tool: str, variant: str, args: argparse.Namespace, text_file: Path,
                  expected: list[str]) -> dict:
    """Wall seconds of a fresh interpreter segmenting the file (imports and loading included);
    its output must equal the in-process one."""
    out_file = text_file.with_name(f"out.{tool}.{variant}.txt")
    if tool == "ours":  # the installed command, as a user runs it
        cmd = [sys.executable, "-m", "arsdecode", "segment", "--file", str(text_file),
               "--lm", str(model_file(args.data, variant)), "--unknown-penalty",
               repr(args.penalty), "--max-unknown-length", str(args.unknown_max_length)]
    else:
        cmd = [sys.executable, "-m", "experiments.segment_compare", "--run-tool", tool,
               "--variant", variant, "--data", str(args.data), "--in", str(text_file),
               "--out", str(out_file), "--penalty", repr(args.penalty),
               "--unknown-max-length", str(args.unknown_max_length)]
    t0 = time.perf_counter()
    # from the repository root, as modules: this checkout's arsdecode and experiments
    proc = subprocess.run(cmd, check=True, cwd=REPO, env={"PATH": "/usr/bin:/bin"},
                          stdout=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t0
    if tool == "ours":
        out_file.write_text(proc.stdout, encoding="utf-8")
    got = out_file.read_text(encoding="utf-8").splitlines()
    if got != expected:
        raise AssertionError(f"{tool} {variant}: the whole-process output differs from the "
                             "in-process one")
    chars = sum(len(line.replace(" ", "")) for line in expected)
    return {"seconds": seconds, "chars_per_second": chars / seconds}


def run_tool(args: argparse.Namespace) -> int:
    """--run-tool: segment --in to --out, one text per line (the whole-process measurement)."""
    segment = build(args.run_tool, args.variant, args.data, args.penalty,
                    args.unknown_max_length)
    texts = Path(args.in_file).read_text(encoding="utf-8").splitlines()
    Path(args.out).write_text("".join(" ".join(segment(t)) + "\n" for t in texts),
                              encoding="utf-8")
    return 0


def tune(args: argparse.Namespace, dev: list[list[str]]) -> dict:
    """F1 and exact sentences on the development set for each penalty of the grid (order 5)."""
    lm = maxarpa.load(args.data / "lm.5.maxarpa")
    grid = {}
    for penalty in PENALTY_GRID:
        say(f"penalty {penalty}")
        grid[repr(penalty)] = measure(f"penalty {penalty}",
                                      ours(lm, penalty, args.unknown_max_length),
                                      dev)["score"]
    return {"order": 5, "sentences": len(dev), "unknown_max_length": args.unknown_max_length,
            "grid": grid}


def compare(args: argparse.Namespace, test: list[list[str]]) -> dict:
    decoder, _ = exact_decoder()
    res: dict = {"sentences": len(test), "chars": sum(len("".join(r)) for r in test),
                 "words": sum(map(len, test)), "decoder": decoder, "penalty": args.penalty,
                 "unknown_max_length": args.unknown_max_length, "rows": []}
    work = Path(tempfile.mkdtemp(prefix="segment_compare_"))
    text_file = work / "texts.txt"
    text_file.write_text("".join("".join(r) + "\n" for r in test), encoding="utf-8")
    runs: list[tuple[str, str]] = []
    for tool in segment_tools.TOOLS:
        if segment_tools.available(tool):
            runs += [(tool, "shipped"), (tool, "trained")]
        else:
            say(f"{tool} is not installed: skipped")
    runs += [("ours", f"lm.{n}") for n in args.orders]
    for tool, variant in runs:
        say(f"{tool} {variant}")
        t0 = time.perf_counter()
        segment = build(tool, variant, args.data, args.penalty, args.unknown_max_length,
                        check=args.check and tool == "ours")
        load = time.perf_counter() - t0
        m = measure(f"{tool} {variant}", segment, test)
        row = {"tool": tool, "variant": variant, "load_seconds": load, **m["score"]}
        if not args.no_process:
            row["process"] = whole_process(tool, variant, args, text_file, m["output"])
            say(f"    whole process {row['process']['chars_per_second']:.0f} chars/s")
        res["rows"].append(row)
    return res


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO / "work" / "sms",
                    help="data_prep.prepare_sms output (heldout.txt, train.txt, lm.N.maxarpa)")
    ap.add_argument("--sentences", type=int, default=0, help="first N test sentences (0: all)")
    ap.add_argument("--dev-sentences", type=int, default=DEV_SENTENCES)
    ap.add_argument("--orders", type=int, nargs="+", default=list(ORDERS))
    ap.add_argument("--penalty", type=float, default=DEFAULT_UNKNOWN_PENALTY_PER_CHAR)
    ap.add_argument("--unknown-max-length", type=int, default=DEFAULT_UNKNOWN_MAX_LENGTH)
    ap.add_argument("--tune", action="store_true", help="also run the penalty grid on dev")
    ap.add_argument("--no-process", action="store_true", help="skip whole-process timing")
    ap.add_argument("--check", action="store_true",
                    help="check dag_decode's ln scores against the reference Viterbi")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--doc", type=Path, default=DOC)
    ap.add_argument("--img", type=Path, default=IMG)
    ap.add_argument("--render-only", action="store_true")
    ap.add_argument("--sms", action="store_true", help="issue 21's SMS held-out comparison")
    ap.add_argument("--sets", type=Path, default=REPO / "work" / "segment" / "sets",
                    help="data_prep.segment_devsets output (dev.* and test.* JSON lines)")
    ap.add_argument("--limit", type=int, default=0, help="first N items of each test set")
    ap.add_argument("--run-tool", help=argparse.SUPPRESS)
    ap.add_argument("--variant", help=argparse.SUPPRESS)
    ap.add_argument("--in", dest="in_file", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.run_tool:
        return run_tool(args)
    if not args.sms:
        return english(args, argv)
    from experiments.report.segment import render

    if args.render_only:
        res = json.loads(args.results.read_text(encoding="utf-8"))
    else:
        test, dev = split_heldout(args.data, args.dev_sentences)
        if args.sentences:
            test = test[:args.sentences]
        res = {"command": "python -m experiments.segment_compare "
                          + shlex.join(argv if argv is not None else sys.argv[1:])}
        if args.tune:
            res["tuning"] = tune(args, dev)
        res["compare"] = compare(args, test)
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    args.doc.write_text(render(res, args.img, "img/segment"), encoding="utf-8")
    say(f"wrote {args.doc}")
    return 0


def english(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """Issue 33's page: measure (unless --render-only) and render."""
    from experiments import segment_english
    from experiments.segment_report import render

    results = args.results.with_name("results-english.json")
    if args.render_only:
        res = json.loads(results.read_text(encoding="utf-8"))
    else:
        res = {"command": "python -m experiments.segment_compare "
                          + shlex.join(argv if argv is not None else sys.argv[1:]),
               "english": segment_english.run(args.sets, tune=args.tune,
                                              process=not args.no_process, limit=args.limit)}
        results.parent.mkdir(parents=True, exist_ok=True)
        results.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    args.doc.write_text(render(res, args.img, "img/segment"), encoding="utf-8")
    say(f"wrote {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
