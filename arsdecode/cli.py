"""The `arsdecode` command: exact decoding and sampling of lattices, and the two demos.

Why errors stop here: the library raises precise ValueError subclasses; this front end turns
any of them into one line on stderr and exit status 2, with no traceback. Results go to stdout
as text for people or, with --json, as one JSON object for scripts (natural-log fields).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from arsdecode.ars import decode, sample
from arsdecode.automaton import VARIANTS
from arsdecode.lattice import Lattice

EXIT_BAD_INPUT = 2
DATA_DIR = Path(__file__).resolve().parent / "data"
DEFAULT_LM = DATA_DIR / "state_union.5gram.maxarpa.gz"


def load_lm(path: str | Path):
    """Load an ARPA or MAX-ARPA model (maxarpa detects which)."""
    from maxarpa.model import Model

    return Model.load(path)


def add_engine_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--variant", choices=VARIANTS, default="fresh", help="refinement variant")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_sampling_options(p: argparse.ArgumentParser, default_ar: float) -> None:
    p.add_argument("--seed", type=int, default=0, help="random seed (fixed seed, same output)")
    p.add_argument("--batch", type=int, default=100, help="trials per refinement pass (B)")
    p.add_argument("--target-ar", type=float, default=default_ar, help="acceptance-rate target")
    p.add_argument("--ar-window", type=int, default=100, help="trials in the AR window")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arsdecode",
        description="Exact decoding and sampling in high-order HMMs (natural-log results).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("decode", help="exact best path of a lattice")
    d.add_argument("--lm", required=True, help="ARPA or MAX-ARPA model")
    d.add_argument("--lattice", required=True, help='JSON {"positions": [[["tok", ln_w], ...]]}')
    d.add_argument("--max-iterations", type=int, default=None)
    d.add_argument("--fst", default=None, metavar="OUT",
                   help="write the final q-automaton as an OpenFst file (log64 arcs)")
    d.add_argument("--graphml", default=None, metavar="OUT",
                   help="write the final q-automaton as GraphML (networkx)")
    add_engine_options(d)
    s = sub.add_parser("sample", help="exact i.i.d. samples of a lattice's paths")
    s.add_argument("--lm", required=True, help="ARPA or MAX-ARPA model")
    s.add_argument("--lattice", required=True, help="lattice JSON file")
    s.add_argument("-n", type=int, required=True, help="number of samples")
    add_sampling_options(s, default_ar=0.2)
    add_engine_options(s)
    from arsdecode import batch_cli
    from arsdecode.tasks import pos_cli, sms_cli

    sms_cli.add_parser(sub)
    pos_cli.add_parser(sub)
    batch_cli.add_parser(sub)
    return parser


def cmd_decode(args: argparse.Namespace) -> int:
    lattice = Lattice.from_json_file(args.lattice)
    lm = load_lm(args.lm)
    r = decode(lm, lattice, variant=args.variant, max_iterations=args.max_iterations,
               keep_automaton=bool(args.fst or args.graphml))
    if args.fst:
        r.automaton.write_fst(args.fst)
    if args.graphml:
        import networkx as nx

        nx.write_graphml(r.automaton.to_networkx(), args.graphml)
    if args.json:
        print(json.dumps(decode_json(r)))
    else:
        print(" ".join(r.tokens))
        print(f"log_p={r.log_p:.6f} iterations={r.iterations} states={r.states} "
              f"seconds={r.seconds:.3f}")
    return 0


def decode_json(r) -> dict:
    return {
        "tokens": r.tokens,
        "log_p": r.log_p,
        "log_q": r.log_q,
        "iterations": r.iterations,
        "states": r.states,
        "ngrams_by_order": {str(k): v for k, v in r.ngrams_by_order.items()},
        "certified": r.certified,
        "seconds": r.seconds,
        "trace": [{"log_q": q, "log_p": p} for q, p in r.trace],
    }


def sample_json(r) -> dict:
    return {
        "samples": r.samples,
        "log_p": r.log_p,
        "trials": r.trials,
        "acceptance_rate": r.acceptance_rate,
        "log_Z": r.log_Z,
        "log_Z_ci": list(r.log_Z_ci),
        "log_Z_unweighted": r.log_Z_unweighted,
        "states": r.states,
        "refinements": r.refinements,
        "seconds": r.seconds,
    }


def cmd_sample(args: argparse.Namespace) -> int:
    lattice = Lattice.from_json_file(args.lattice)
    if args.n < 1:
        raise ValueError("-n must be at least 1")
    lm = load_lm(args.lm)
    start = time.perf_counter()
    r = sample(
        lm, lattice, args.n, args.seed, batch=args.batch, target_ar=args.target_ar,
        ar_window=args.ar_window, variant=args.variant,
    )
    if args.json:
        print(json.dumps(sample_json(r)))
        return 0
    for toks, lp in zip(r.samples, r.log_p):
        print(f"{lp:.4f}\t{' '.join(toks)}")
    print(f"trials={r.trials} acceptance_rate={r.acceptance_rate:.3f} log_Z={r.log_Z:.4f} "
          f"states={r.states} seconds={time.perf_counter() - start:.2f}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handlers = {"decode": cmd_decode, "sample": cmd_sample}
    try:
        handler = handlers.get(args.command) or args.handler
        return handler(args)
    except ValueError as err:  # every input error of lattice, maxarpa, tasks subclasses it
        print(f"arsdecode: {str(err).splitlines()[0] if str(err) else type(err).__name__}",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as err:
        print(f"arsdecode: {err.filename or ''}: {err.strerror or err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("arsdecode: interrupted", file=sys.stderr)
        return 130
