"""`arsdecode decode` and `arsdecode sample`: exact best path and exact samples of a lattice.

Why its own module: `arsdecode.cli` imports a command's module only when that command runs, so
`arsdecode tag` does not load the lattice front end (nor this one the tagger's).
"""

from __future__ import annotations

import argparse
import sys

from arsdecode import corpus
from arsdecode.api import load_lm
from arsdecode.ars import sample
from arsdecode.cli_options import (
    EXIT_OK,
    EXIT_STATUS_HELP,
    EXIT_UNCERTIFIED,
    LATTICE_HELP,
    UNITS_HELP,
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
from arsdecode.errors import OptionError
from arsdecode.lattice import Lattice

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


def load_lattice_and_lm(args: argparse.Namespace):
    lattice = Lattice.from_json_file(args.lattice)
    lm = load_lm(args.lm)
    oov = oov_report(lattice, lm.word_to_id)
    warn_oov(oov)
    return lattice, lm, oov


def cmd_decode(args: argparse.Namespace) -> int:
    if args.nbest is not None and args.method == "full":  # k-best runs on the q-automaton
        raise OptionError("--nbest needs --method ars or auto (the K best paths come from "
                          "ARS's q-automaton; the full DP finds only the best one)")
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
