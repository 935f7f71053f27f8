"""`arsdecode marginals`: posterior marginals of a lattice with 95% intervals, from N exact
samples, plus the evidence ln Z and its interval (see arsdecode.marginals, arsdecode.evidence).
"""

from __future__ import annotations

import argparse
import json

from arsdecode.ars import sample


def add_parser(sub: argparse._SubParsersAction) -> None:
    from arsdecode.cli import add_engine_options, add_sampling_options

    p = sub.add_parser("marginals", help="posterior marginals with 95%% intervals")
    p.add_argument("--lm", required=True, help="ARPA or MAX-ARPA model")
    p.add_argument("--lattice", required=True, help="lattice JSON file")
    p.add_argument("-n", type=int, required=True, help="number of exact samples")
    p.add_argument("--all-candidates", action="store_true",
                   help="list every candidate, also those never drawn (p = 0, upper bound)")
    p.add_argument("--top", type=int, default=5, help="tokens per position in text output")
    add_sampling_options(p, default_ar=0.2)
    add_engine_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from arsdecode.cli import load_lm
    from arsdecode.lattice import Lattice
    from arsdecode.marginals import marginals_from_samples, marginals_json

    lattice = Lattice.from_json_file(args.lattice)
    if args.n < 1:
        raise ValueError("-n must be at least 1")
    lm = load_lm(args.lm)
    r = sample(lm, lattice, args.n, args.seed, batch=args.batch, target_ar=args.target_ar,
               ar_window=args.ar_window, variant=args.variant)
    marg = marginals_from_samples(r.samples, lattice if args.all_candidates else None)
    if args.json:
        print(json.dumps({"marginals": marginals_json(marg), "log_Z": r.log_Z,
                          "log_Z_ci": list(r.log_Z_ci), "samples": len(r.samples),
                          "trials": r.trials, "seconds": r.seconds}))
        return 0
    for i, pos in enumerate(marg):
        cells = "  ".join(f"{m.token} {m.p:.3f} [{m.lo:.3f}, {m.hi:.3f}]" for m in pos[: args.top])
        print(f"{i}\t{cells}")
    print(f"samples={len(r.samples)} trials={r.trials} log_Z={r.log_Z:.4f} "
          f"[{r.log_Z_ci[0]:.4f}, {r.log_Z_ci[1]:.4f}] seconds={r.seconds:.3f}")
    return 0
