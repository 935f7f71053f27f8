"""The `arsdecode` command: exact decoding and sampling of lattices, and the two task demos.

Why errors stop here: the library raises `ArsDecodeError` (and maxarpa `MaxArpaError`) for bad
input; this front end turns exactly those, and OSError on files, into one line on stderr and
exit status 2, with no traceback. Anything else is a bug and keeps its traceback. Results go
to stdout as text for people or, with --json, as JSON for scripts (natural-log fields).
Every command is registered in the one table `COMMANDS`; task modules never import this one.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

import arsdecode._one_blas_thread  # noqa: F401 (first: before numpy loads)
from arsdecode import __version__, batch_cli, corpus, marginals_cli
from arsdecode.api import DEFAULT_LM as DEFAULT_LM  # re-exported for older callers
from arsdecode.api import load_lm
from arsdecode.ars import sample
from arsdecode.cli_options import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_STATUS_HELP,
    EXIT_UNCERTIFIED,
    LATTICE_HELP,
    UNITS_HELP,
    Parser,
    add_engine_options,
    add_max_iterations,
    add_method_option,
    add_sampling_options,
    check_writable,
    epilog,
    oov_report,
    positive_int,
    print_json,
    progress_bar,
    report_uncertified,
    warn_oov,
    write_atomic,
    write_line,
)
from arsdecode.errors import ArsDecodeError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.tasks import pos_cli, sms_cli
from maxarpa.errors import MaxArpaError

EPILOG = epilog(UNITS_HELP, LATTICE_HELP, EXIT_STATUS_HELP)


def add_decode_parser(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("decode", help="exact best path of a lattice",
                       description="The exact most probable path of a lattice under an n-gram "
                                   "LM, with a certificate.", epilog=EPILOG)
    d.add_argument("--lm", required=True, help="ARPA, MAX-ARPA or maxarpa binary model (log10)")
    d.add_argument("--lattice", required=True, help="lattice JSON file (format below)")
    add_max_iterations(d)
    d.add_argument("--fst", default=None, metavar="OUT",
                   help="also write the final q-automaton as an OpenFst file (log64 arcs, "
                        "weight = -ln q)")
    d.add_argument("--graphml", default=None, metavar="OUT",
                   help="also write the final q-automaton as GraphML (networkx, ln weights)")
    d.add_argument("--nbest", type=positive_int, default=None, metavar="K",
                   help="also find the K best distinct paths, each certified exact (ARS with "
                        "k-best Viterbi on q); the JSON gains \"nbest\": [{tokens, log_p}], best "
                        "first, ties by ln p then candidate order")
    add_engine_options(d)
    add_method_option(d)
    d.set_defaults(handler=cmd_decode)


def print_nbest(args: argparse.Namespace, lm, lattice: Lattice, oov: dict) -> int:
    """`decode --nbest K`: the single best stays in tokens/log_p; the K best go in "nbest"."""
    from arsdecode.kbest import decode_kbest, nbest_json

    kb = decode_kbest(lm, lattice, args.nbest, variant=args.variant,
                      max_iterations=args.max_iterations)
    best = kb.paths[0]
    if args.json:
        print_json({"tokens": best.tokens, "log_p": best.log_p, "certified": kb.certified,
                    "method": "ars", "iterations": kb.iterations, "states": kb.states,
                    "nbest": nbest_json(kb), "oov": oov, "timing": {"seconds": kb.seconds}})
    else:
        for rank, p in enumerate(kb.paths, start=1):
            print(f"{rank}\t{p.log_p:.6f}\t{' '.join(p.tokens)}")
        status = "certified" if kb.certified else "UNCERTIFIED"
        print(f"({status}, ln) iterations={kb.iterations} states={kb.states} "
              f"seconds={kb.seconds:.3f}", flush=True)
    if not kb.certified:
        report_uncertified(kb.iterations)
        return EXIT_UNCERTIFIED
    return EXIT_OK


def add_sample_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("sample", help="exact i.i.d. samples of a lattice's paths",
                       description="Exact independent samples of the lattice's paths under "
                                   "p, by adaptive rejection, and an estimate of ln Z.",
                       epilog=EPILOG)
    s.add_argument("--lm", required=True, help="ARPA, MAX-ARPA or maxarpa binary model (log10)")
    s.add_argument("--lattice", required=True, help="lattice JSON file (format below)")
    s.add_argument("-n", type=positive_int, required=True, help="number of samples (>= 1)")
    s.add_argument("--jsonl", action="store_true",
                   help='stream one JSON object per sample, {"tokens": [...], "log_p": ln}, '
                        "flushed as each is accepted (an interrupt keeps what was drawn); the "
                        "summary goes to stderr")
    add_sampling_options(s, default_ar=0.2)
    add_engine_options(s)
    s.set_defaults(handler=cmd_sample)


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    add_decode_parser,
    add_sample_parser,
    sms_cli.add_parser,
    pos_cli.add_parser,
    marginals_cli.add_parser,
    batch_cli.add_parser,
)
"""Every sub-command: each adds its parser and sets `handler` (args -> exit status)."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="arsdecode",
        description="Exact decoding and sampling in high-order HMMs whose hidden layer is an "
                    "n-gram LM (Carter, Dymetman & Bouchard 2012).",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"arsdecode {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    return parser


def load_lattice_and_lm(args: argparse.Namespace):
    lattice = Lattice.from_json_file(args.lattice)
    lm = load_lm(args.lm)
    oov = oov_report(lattice, lm.word_to_id)
    warn_oov(oov)
    return lattice, lm, oov


def cmd_decode(args: argparse.Namespace) -> int:
    outputs = [p for p in (args.fst, args.graphml) if p]
    for path in outputs:  # before the work: a bad path must not cost a decode
        check_writable(path)
    lattice, lm, oov = load_lattice_and_lm(args)
    if args.nbest is not None:
        return print_nbest(args, lm, lattice, oov)
    r = corpus.decode(lm, lattice, method=args.method, variant=args.variant,
                      max_iterations=args.max_iterations, keep_automaton=bool(outputs))
    # The result is printed before the files are written, so a failed write never loses it.
    if args.json:
        print_json({**r.to_json(), "oov": oov})
    else:
        print(" ".join(r.tokens))
        status = "certified" if r.certified else "UNCERTIFIED"
        print(f"log_p={r.log_p:.6f} ({status}, ln) method={r.method} iterations={r.iterations} "
              f"states={r.states} seconds={r.seconds:.3f}", flush=True)
    qa = r.automaton
    if outputs and qa is None:  # keep_automaton=True above whenever a file is asked for
        raise AssertionError("decode did not keep the automaton")
    if args.fst and qa is not None:
        write_atomic(args.fst, qa.write_fst)
    if args.graphml and qa is not None:
        import networkx as nx

        graph = qa.to_networkx()
        write_atomic(args.graphml, lambda tmp: nx.write_graphml(graph, tmp))
    if not r.certified:
        report_uncertified(r.iterations)
        return EXIT_UNCERTIFIED
    return EXIT_OK


def cmd_sample(args: argparse.Namespace) -> int:
    if args.json and args.jsonl:
        raise OptionError("--json and --jsonl exclude each other")
    lattice, lm, oov = load_lattice_and_lm(args)
    bar = progress_bar(args.n, "sample", leave=False)

    def on_sample(tokens: list[str], log_p: float) -> None:
        bar.update(1)
        if args.jsonl:
            print_json({"tokens": tokens, "log_p": log_p})
        elif not args.json:
            write_line(f"{log_p:.4f}\t{' '.join(tokens)}")

    try:
        r = sample(lm, lattice, args.n, args.seed, batch=args.batch, target_ar=args.target_ar,
                   ar_window=args.ar_window, variant=args.variant, on_sample=on_sample)
    finally:
        bar.close()
    if args.json:
        print_json({**r.to_json(), "oov": oov})
        return EXIT_OK
    print(f"trials={r.trials} acceptance_rate={r.acceptance_rate:.3f} log_Z={r.log_Z:.4f} (ln) "
          f"states={r.states} seconds={r.seconds:.2f}", file=sys.stderr)
    return EXIT_OK


def _first_line(err: BaseException) -> str:
    text = str(err)
    return text.splitlines()[0] if text else type(err).__name__


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (ArsDecodeError, MaxArpaError) as err:  # bad input; anything else is a bug
        print(f"arsdecode: {_first_line(err)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # `arsdecode ... | head -1`: the reader has all it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush is silent
        return EXIT_OK
    except OSError as err:
        name = f"{err.filename}: " if err.filename else ""
        print(f"arsdecode: {name}{err.strerror or err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("arsdecode: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
