"""`arsdecode sms`: exact decoding and sampling of a noisy keypad message (the paper's 3.1).

Why a separate module from tasks/sms/keypad.py: keypad.py is the channel (a pure model of the
keypad); this is the front end that loads a language model, builds the lattice and prints the
paper's views (the decoded sentence, Table 2's Viterbi trace, Table 4's ranked samples). The
engine is imported by the handlers, so building the parser loads no decoder.
"""

from __future__ import annotations

import argparse
import sys
import time

from arsdecode.cli.options import (
    EXIT_OK,
    EXIT_STATUS_HELP,
    EXIT_UNCERTIFIED,
    UNITS_HELP,
    add_engine_options,
    add_lm_strictness_options,
    add_max_iterations,
    add_method_option,
    add_sampling_options,
    check_batch_fits,
    epilog,
    lm_config,
    non_negative_float,
    positive_int,
)
from arsdecode.cli.output import print_json, report_uncertified
from arsdecode.errors import OptionError


def channel_k(text: str) -> float:
    """--k: a finite number >= 0 whose channel table is finite too.

    Why the table is checked: a huge k (say 1e308) overflows k * distance, every weight of
    the channel becomes 0 and its log -inf; numpy would only warn and the decode would run on
    a channel that rules out every word.
    """
    import numpy as np

    from arsdecode.tasks.sms.keypad import log_channel_table

    k = non_negative_float(text)
    with np.errstate(all="ignore"):
        finite = bool(np.isfinite(log_channel_table(k)).all())
    if not finite:
        raise argparse.ArgumentTypeError(
            f"too large, the channel weights 1 / (k * distance + 1) underflow to 0, got {text}")
    return k


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sms", help="decode (or sample) words from noisy keypad digits",
                       description="Words from a noisy keypad message: each observed digit "
                                   "string is a lattice position whose candidates are the "
                                   "vocabulary words of that length.",
                       epilog=epilog(UNITS_HELP, EXIT_STATUS_HELP))
    p.add_argument("observation", help='digit strings separated by spaces, e.g. "3637 843 *"')
    p.add_argument("--lm", default=None,
                   help="ARPA, MAX-ARPA or binary model (default: the embedded State of the "
                        "Union 5-gram)")
    p.add_argument("--k", type=channel_k, default=64.0,
                   help="channel sharpness (paper: 64)")
    p.add_argument("--top-k", type=positive_int, default=None,
                   help="keep the K most likely words per position (default: all when "
                        "decoding, 100 when sampling, as in the paper)")
    p.add_argument("--sample", type=positive_int, default=None, metavar="N",
                   help="draw N exact samples and rank them (Table 4)")
    p.add_argument("--trace", type=positive_int, nargs="?", const=1, default=None,
                   metavar="EVERY", help="print the Viterbi path every EVERY iterations "
                                         "(Table 2; EVERY >= 1, default 1 when given)")
    add_max_iterations(p)
    add_sampling_options(p, default_ar=0.2)
    add_engine_options(p)
    add_method_option(p, needs_ars="--trace")
    add_lm_strictness_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from arsdecode.api import DEFAULT_LM, load_lm
    from arsdecode.tasks.sms.keypad import KeypadChannel, parse_observation

    parse_observation(args.observation)  # reject bad input before loading anything
    if args.trace and args.method == "full":
        raise OptionError("--trace shows the refinements of ARS: use --method ars (or auto)")
    start = time.perf_counter()
    lm = load_lm(args.lm or DEFAULT_LM, config=lm_config(args))
    load_seconds = time.perf_counter() - start
    channel = KeypadChannel.from_vocab(lm.vocab, k=args.k)
    if args.sample is not None:
        return run_sample(args, lm, channel, load_seconds)
    return run_decode(args, lm, channel, load_seconds)


def run_sample(args: argparse.Namespace, lm, channel, load_seconds: float) -> int:
    from arsdecode.api import sample

    top_k = args.top_k if args.top_k is not None else 100
    lattice = channel.build_lattice(args.observation, top_k=top_k)
    check_batch_fits(args.batch, lattice)
    r = sample(lm, lattice, args.sample, args.seed, batch=args.batch,
               target_ar=args.target_ar, ar_window=args.ar_window, variant=args.variant)
    ranked = r.ranked()
    if args.json:
        out = r.to_json()
        out["ranked"] = [{"tokens": t, "count": c, "log_p": lp} for t, c, lp in ranked]
        out["timing"]["load_seconds"] = load_seconds
        print_json(out)
        return EXIT_OK
    print(f"{'count':>6}  {'log_p':>10}  sentence")
    for toks, count, lp in ranked:
        print(f"{count:>6}  {lp:>10.3f}  {' '.join(toks)}")
    print(f"samples={len(r.samples)} trials={r.trials} acceptance_rate={r.acceptance_rate:.3f}"
          f" states={r.states} log_Z={r.log_Z:.3f} (ln) seconds={r.seconds:.3f}")
    return EXIT_OK


def run_decode(args: argparse.Namespace, lm, channel, load_seconds: float) -> int:
    from arsdecode.api import decode

    lattice = channel.build_lattice(args.observation, top_k=args.top_k)
    every = args.trace

    def show(iteration: int, tokens: list[str], log_q: float, log_p: float) -> None:
        if iteration == 1 or iteration % every == 0:
            print(f"{iteration:>5}  log_q={log_q:>10.3f}  log_p={log_p:>10.3f}  {' '.join(tokens)}")

    r = decode(lm, lattice, method=args.method, variant=args.variant,
               max_iterations=args.max_iterations,
               on_iteration=show if every else None)
    if args.json:
        out = r.to_json()
        out["timing"]["load_seconds"] = load_seconds
        print_json(out)
    else:
        print(" ".join(r.tokens))
        status = "certified" if r.certified else "UNCERTIFIED"
        print(f"log_p={r.log_p:.4f} ({status}, ln) method={r.method} "
              f"iterations={r.iterations} states={r.states} "
              f"seconds={r.seconds:.3f} (model load {load_seconds:.2f} s)")
    sys.stdout.flush()
    if not r.certified:
        report_uncertified(r.iterations, args.max_iterations)
        return EXIT_UNCERTIFIED
    return EXIT_OK

