"""`arsdecode marginals`: posterior marginals of a lattice and the evidence ln Z, exact (by
forward-backward over the merged full-model states) or with 95% intervals from N exact samples
(see methods.marginals, methods.evidence); `--method` chooses, auto by a state budget.

Why a command of its own: a user who wants confidence per position (which word or tag, how
sure) should not have to post-process `sample --json`; the intervals are computed once, here,
with the same code `tag --sample` uses.
"""

from __future__ import annotations

import argparse

from arsdecode.cli import lattice_list, trees, word_lattice
from arsdecode.cli.options import (
    EXIT_OK,
    EXIT_STATUS_HELP,
    LATTICE_HELP,
    MARGINALS_METHODS,
    UNITS_HELP,
    add_engine_options,
    add_features_option,
    add_lm_strictness_options,
    add_lm_weight_option,
    add_memory_budget_option,
    add_mix_options,
    add_model_options,
    add_sampling_options,
    check_batch_fits,
    epilog,
    positive_int,
)
from arsdecode.cli.output import fixed, print_json
from arsdecode.cli.target import load_target, target_spec
from arsdecode.cli.word_lattice import add_word_lattice_options, is_word_lattice
from arsdecode.errors import OptionError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "marginals", help="posterior marginals (exact, or with 95%% intervals), and ln Z",
        description="Report, per position, each token's posterior probability, plus the "
                    "evidence ln Z: exact by forward-backward over the merged full-model "
                    "states (zero-width intervals, \"exact\": true), or from N exact samples "
                    "with 95% Wilson intervals and an interval on ln Z.",
        epilog=epilog(UNITS_HELP, LATTICE_HELP, EXIT_STATUS_HELP),
    )
    add_model_options(p, "ARPA, MAX-ARPA or maxarpa binary model")
    add_lm_weight_option(p, "--lm-scale")
    p.set_defaults(lmw=None)  # None: a word lattice's SLF lmscale=, else 1
    add_mix_options(p)
    add_features_option(p)
    p.add_argument("--lattice", default=None,
                   help="lattice file: a confusion network (JSON) or a word lattice (SLF, "
                        "OpenFst text, JSON DAG: every arc's exact posterior)")
    p.add_argument("-n", type=positive_int, default=1000,
                   help="number of exact samples, when sampling (default 1000)")
    p.add_argument("--method", choices=MARGINALS_METHODS, default="auto",
                   help="full: exact marginals and ln Z; sample: from N exact samples; auto "
                        "(default): exact when the merged full-model states fit a budget, "
                        "else sample")
    add_memory_budget_option(p)
    p.add_argument("--all-candidates", action="store_true",
                   help="list every candidate, also those never drawn (p = 0, upper bound)")
    p.add_argument("--top", type=positive_int, default=5,
                   help="tokens per position in text output")
    add_sampling_options(p, default_ar=0.2)
    add_engine_options(p)
    add_lm_strictness_options(p)
    add_word_lattice_options(p, posteriors=True)
    trees.add_trees_option(p)
    lattice_list.add_lattice_list_options(
        p.add_argument_group("many word lattices in one process (lattice-tool's lists)"),
        decode=False)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from arsdecode.api import marginals

    target_spec(args)  # refuses flags that do not combine, before any file is read
    if args.trees is not None:
        return trees.cmd_marginals(args)
    if lattice_list.wants_many(args):
        if args.method == "sample":
            raise OptionError("word lattices get exact posteriors only (--method auto or full)")
        return lattice_list.cmd_many(args, "marginals")
    if args.lattice is None:
        raise OptionError("give --lattice, or many with --in-lattice-list, --in-lattice-dir or "
                          "--in-kaldi-ark")
    if is_word_lattice(args):
        return word_lattice.cmd_marginals(args)

    lattice = word_lattice.read_confusion(args)
    check_batch_fits(args.batch, lattice)
    lm, _ = load_target(args, lattice)
    result = marginals(lm, lattice, args.n, args.seed, all_candidates=args.all_candidates,
                       method=args.method, batch=args.batch, target_ar=args.target_ar,
                       ar_window=args.ar_window, variant=args.variant)
    if args.json:
        print_json(result.to_json())
        return EXIT_OK
    r = result.draws
    for i, pos in enumerate(result.marginals):
        cells = "  ".join(f"{m.token} {m.p:.3f}" + ("" if result.exact else
                                                    f" [{m.lo:.3f}, {m.hi:.3f}]")
                          for m in pos[: args.top])
        print(f"{i}\t{cells}")
    if r is None:
        print(f"exact log_Z={fixed(result.log_Z, 4)} (ln) seconds={result.seconds:.3f}")
        return EXIT_OK
    print(f"samples={len(r.samples)} trials={r.trials} log_Z={fixed(r.log_Z, 4)} (ln) "
          f"[{fixed(r.log_Z_ci[0], 4)}, {fixed(r.log_Z_ci[1], 4)}] seconds={r.seconds:.3f}")
    return EXIT_OK
