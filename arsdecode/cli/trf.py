"""`arsdecode train-trf`: train a random-field LM's n-gram feature weights (issue 22, target 3).

Why a command: the weights it writes are the `ngram<TAB>weight` file that `decode` and `sample
--features` read, so a user goes from training text to exact decoding and sampling under a
random-field LM with two commands. Training is the stochastic approximation of Wang, Ou and
Tan (`arsdecode.tasks.trf.train`) over the base model's whole vocabulary, with model samples
drawn exactly per length by ARS (`--sampler ars`) or by their trans-dimensional MCMC
(`--sampler mcmc`). The file also carries ln Z per length (the sampler's estimate for the
written weights) as `# lnZ length=L value` comment lines, which the feature reader skips.
"""

from __future__ import annotations

import argparse

from arsdecode.cli.options import (
    EXIT_OK,
    EXIT_STATUS_HELP,
    add_lm_strictness_options,
    epilog,
    lm_config,
    non_negative_float,
    positive_float,
    positive_int,
    seed_int,
)
from arsdecode.cli.output import print_json, progress_bar
from arsdecode.cli.training_text import read_sentences
from arsdecode.errors import ModelError, OptionError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train-trf", help="train random-field LM feature weights (exact or MCMC samples)",
        description="Train the n-gram feature weights lambda of a random-field LM "
                    "p(l, x) = pi_l exp(ln p_LM(x) + lambda . f(x)) / Z_l on a text, by "
                    "stochastic approximation (Wang, Ou & Tan). Features: n-grams of order "
                    "1..3 and skip-bigrams 'a * c' of the text. Writes 'ngram<TAB>weight' "
                    "lines (natural log) for decode/sample --features, and '# lnZ length=L "
                    "value' comment lines.",
        epilog=epilog(EXIT_STATUS_HELP))
    p.add_argument("--lm", required=True, help="the base n-gram model (ARPA, MAX-ARPA or "
                   "maxarpa binary); its vocabulary is the sentences' (other words: <unk>)")
    p.add_argument("--text", required=True,
                   help="training text, one whitespace-tokenised sentence a line (gzip, "
                        "bzip2 or xz allowed; - for stdin)")
    p.add_argument("--out", required=True, help="the feature file to write")
    p.add_argument("--sampler", choices=("ars", "mcmc"), default="ars",
                   help="exact samples per length by adaptive rejection, or the "
                        "trans-dimensional MCMC (default ars)")
    p.add_argument("--iterations", type=positive_int, default=50, metavar="N",
                   help="SA iterations (default 50)")
    p.add_argument("--budget", type=positive_float, default=None, metavar="S",
                   help="stop after S seconds of training as well")
    p.add_argument("--max-length", type=positive_int, default=None, metavar="L",
                   help="longest sentence modelled (default: the text's longest); longer "
                        "lines are skipped")
    p.add_argument("--min-count", type=positive_int, default=2, metavar="C",
                   help="keep features seen at least C times (default 2)")
    p.add_argument("--samples", type=positive_int, default=100, metavar="K",
                   help="model samples per iteration (default 100)")
    p.add_argument("--minibatch", type=positive_int, default=100, metavar="B",
                   help="training sentences per iteration (default 100)")
    p.add_argument("--min-length", type=positive_int, default=1, metavar="L",
                   help="shortest sentence modelled (default 1); shorter lines are skipped")
    p.add_argument("--step", type=positive_float, default=1.0, metavar="G",
                   help="initial SA step gamma_0 (default 1; each gradient component is "
                        "clipped to +-1 first)")
    p.add_argument("--l2", type=non_negative_float, default=1e-3, help="L2 penalty")
    p.add_argument("--seed", type=seed_int, default=0)
    p.add_argument("--json", action="store_true", help="a JSON summary on stdout")
    add_lm_strictness_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from arsdecode.api import load_lm
    from arsdecode.tasks.trf.features import select_features, write_feature_file
    from arsdecode.tasks.trf.train import Problem, TrainConfig, train

    lm = load_lm(args.lm, config=lm_config(args))
    sentences = read_sentences(args.text)
    known = set(lm.vocab)
    unk = "<unk>" if "<unk>" in known else None
    for number, words in enumerate(sentences, 1):
        for i, w in enumerate(words):
            if w not in known:
                if unk is None:
                    raise ModelError(f"{args.text}: word {w!r} (sentence {number}) is not in "
                                     f"{args.lm}, which has no <unk>")
                words[i] = unk
    max_length = args.max_length or max(len(s) for s in sentences)
    kept = [s for s in sentences if args.min_length <= len(s) <= max_length]
    if not kept:
        raise OptionError(f"{args.text}: no sentence of {args.min_length} .. {max_length} "
                          "words")
    features = select_features(kept, min_count=args.min_count)
    if not len(features):
        raise OptionError(f"{args.text}: no feature seen {args.min_count} times")
    problem = Problem(lm, features, kept, max_length, min_length=args.min_length)
    config = TrainConfig(iterations=args.iterations, budget=args.budget,
                         minibatch=min(args.minibatch, len(kept)), samples=args.samples,
                         gamma0=args.step, l2=args.l2, seed=args.seed)
    with progress_bar(args.iterations, "it", leave=False, desc=f"SA ({args.sampler})") as bar:
        result = train(problem, args.sampler, config, on_iteration=lambda _: bar.update(1))
    header = [f"arsdecode train-trf --sampler {args.sampler}: {result.iterations} iterations, "
              f"{result.samples} samples, {result.seconds:.1f} s; base {args.lm}, alpha 1"]
    write_feature_file(args.out, features, result.weights, result.log_z, header=header)
    nonzero = int(np.count_nonzero(result.weights))
    if args.json:
        print_json({"out": args.out, "sampler": args.sampler, "features": nonzero,
                    "iterations": result.iterations, "samples": result.samples,
                    "sentences": len(kept), "skipped": len(sentences) - len(kept),
                    "log_Z": {str(k): v for k, v in sorted(result.log_z.items())},
                    "timing": {"seconds": result.seconds}})
    else:
        print(f"{args.out}: {nonzero} feature weights, {result.iterations} iterations, "
              f"{result.samples} samples ({args.sampler}), {result.seconds:.1f} s")
    return EXIT_OK
