"""`arsdecode marginals`: posterior marginals of a lattice with 95% intervals, from N exact
samples, plus the evidence ln Z and its interval (see methods.marginals, methods.evidence).

Why a command of its own: a user who wants confidence per position (which word or tag, how
sure) should not have to post-process `sample --json`; the intervals are computed once, here,
with the same code `tag --sample` uses.
"""

from __future__ import annotations

import argparse

from arsdecode.cli.options import (
    EXIT_OK,
    EXIT_STATUS_HELP,
    LATTICE_HELP,
    UNITS_HELP,
    add_engine_options,
    add_lm_strictness_options,
    add_sampling_options,
    check_batch_fits,
    epilog,
    lm_config,
    positive_int,
)
from arsdecode.cli.output import fixed, print_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "marginals", help="posterior marginals with 95%% intervals, and ln Z",
        description="Draw N exact samples of a lattice's paths and report, per position, each "
                    "token's posterior probability with a 95% Wilson interval, plus the "
                    "evidence ln Z with its interval.",
        epilog=epilog(UNITS_HELP, LATTICE_HELP, EXIT_STATUS_HELP),
    )
    p.add_argument("--lm", required=True, help="ARPA, MAX-ARPA or maxarpa binary model")
    p.add_argument("--lattice", required=True, help="lattice JSON file")
    p.add_argument("-n", type=positive_int, required=True, help="number of exact samples")
    p.add_argument("--all-candidates", action="store_true",
                   help="list every candidate, also those never drawn (p = 0, upper bound)")
    p.add_argument("--top", type=positive_int, default=5,
                   help="tokens per position in text output")
    add_sampling_options(p, default_ar=0.2)
    add_engine_options(p)
    add_lm_strictness_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from arsdecode.api import load_lm, marginals
    from arsdecode.lattice import Lattice

    lattice = Lattice.from_json_file(args.lattice)
    check_batch_fits(args.batch, lattice)
    lm = load_lm(args.lm, config=lm_config(args))
    result = marginals(lm, lattice, args.n, args.seed, all_candidates=args.all_candidates,
                       batch=args.batch, target_ar=args.target_ar, ar_window=args.ar_window,
                       variant=args.variant)
    if args.json:
        print_json(result.to_json())
        return EXIT_OK
    r = result.draws
    for i, pos in enumerate(result.marginals):
        cells = "  ".join(f"{m.token} {m.p:.3f} [{m.lo:.3f}, {m.hi:.3f}]" for m in pos[: args.top])
        print(f"{i}\t{cells}")
    print(f"samples={len(r.samples)} trials={r.trials} log_Z={fixed(r.log_Z, 4)} (ln) "
          f"[{fixed(r.log_Z_ci[0], 4)}, {fixed(r.log_Z_ci[1], 4)}] seconds={r.seconds:.3f}")
    return EXIT_OK
