"""The options that say what the hidden layer is: --lm or --vpylm, their strictness, --lmw,
--features, and the interpolation flags (SRILM ngram's -mix-lm, -lambda, -mix-lm2..).

Why a module of its own: these describe the target model, which `cli.target` builds from
them, apart from how a command decodes (engine, method, sampling: `options`). Like
`options`, it imports no engine module: `--help` must not load the decoder. Every name is
still importable from `arsdecode.cli.options`.
"""

from __future__ import annotations

import argparse
from typing import Any

from arsdecode.cli.option_types import positive_float, weight_fraction
from arsdecode.errors import OptionError
from maxarpa.cli_config import add_config_options, config_from_args
from maxarpa.config import Config


def add_lm_weight_option(p: Any, *flags: str) -> None:
    """--lmw W: every LM ln probability times W, as SRILM disambig's -lmw (the target is
    `arsdecode.api.weighted(lm, lm_weight=W)`, so posteriors, ln Z and samples follow the
    weighted p, not only the best path). `flags` adds other spellings (e.g. "-lmw")."""
    p.add_argument("--lmw", *flags, type=positive_float, default=1.0, metavar="W",
                   help="LM weight, a finite number > 0: the score of a path is W * ln p_LM "
                        "+ its emissions (SRILM's -lmw; default 1)")


def add_features_option(p: Any) -> None:
    """--features FILE: n-gram feature weights on top of the LM (issue 22, target 2); the
    target becomes `arsdecode.api.loglinear([lm], [W], features=FILE)` with W the --lmw
    (built by `arsdecode.cli.target`)."""
    p.add_argument("--features", default=None, metavar="FILE",
                   help="n-gram feature weights, lines 'ngram<TAB>weight' (ln; words separated "
                        "by spaces, '*' a skipped word): the score of a path is W * ln p_LM + "
                        "the weights of every feature it contains + its emissions, "
                        "unnormalised (a random-field LM)")


def add_lm_strictness_options(p: argparse.ArgumentParser) -> None:
    """The strictness flags of the model given with --lm, one per `maxarpa.Config` field and
    named as on `maxarpa convert/info/query` (`--sentence-marker-missing accept`, ...)."""
    add_config_options(p)


def lm_config(args: argparse.Namespace) -> Config:
    """The `maxarpa.Config` the strictness flags ask for, for `load_lm(..., config=...)`."""
    return config_from_args(args)


# ---- interpolation with more models: SRILM ngram's -mix-lm, -lambda, -mix-lm2.. -------------

MIX_SLOTS: tuple[int, ...] = tuple(range(2, 10))
"""The numbered extra models, as SRILM's ngram: --mix-lm2 .. --mix-lm9."""
MIX_MISSING: tuple[str, ...] = ("unk", "zero")
"""`--mix-missing` choices: `arsdecode.model.interpolated.MISSING`."""


def add_mix_options(p: Any, srilm: bool = False) -> None:
    """--mix-lm B --lambda L [--mix-lm2 C --mix-lambda2 L2 ...]: the hidden layer is the
    linear interpolation of --lm with more models, spelled as SRILM's `ngram` (-lambda is the
    weight of the main --lm, default 0.5; --mix-lmK's weight is --mix-lambdaK; --mix-lm gets
    1 minus the others). `srilm` also accepts the single-dash spellings (-mix-lm, -lambda)."""
    def also(name: str) -> tuple[str, ...]:
        return (name,) if srilm else ()

    g = p.add_argument_group("interpolation with more models (SRILM ngram's -mix-lm)")
    g.add_argument("--mix-lm", *also("-mix-lm"), default=None, metavar="B",
                   help="a second model (ARPA, MAX-ARPA or binary, any order): the score of a "
                        "word is lambda p_lm + (1 - lambda - mix-lambda2 - ...) p_B + "
                        "mix-lambda2 p_mix-lm2 + ... (dynamic interpolation, as SRILM's ngram "
                        "-mix-lm; exact decoding runs ARS, or the numpy full DP)")
    g.add_argument("--lambda", *also("-lambda"), dest="mix_lambda", type=weight_fraction,
                   default=None, metavar="L",
                   help="weight of the main --lm when interpolating, in [0, 1] (default 0.5)")
    for k in MIX_SLOTS:
        shown = k == 2
        g.add_argument(f"--mix-lm{k}", *also(f"-mix-lm{k}"), dest=f"mix_lm{k}", default=None,
                       metavar="C",
                       help="another model to interpolate, up to --mix-lm9" if shown
                       else argparse.SUPPRESS)
        g.add_argument(f"--mix-lambda{k}", *also(f"-mix-lambda{k}"), dest=f"mix_lambda{k}",
                       type=weight_fraction, default=None, metavar="L",
                       help="the weight of --mix-lm2 (and so on, up to --mix-lambda9)"
                       if shown else argparse.SUPPRESS)
    g.add_argument("--mix-missing", choices=MIX_MISSING, default="unk",
                   help="what a model gives a word of another model's vocabulary that it "
                        "lacks: 'unk', its <unk> probability (each model scored on its own, "
                        "as KenLM does), or 'zero' (SRILM's behaviour)")


def mix_models(args: argparse.Namespace) -> tuple[float, list[tuple[str, float]]]:
    """(weight of --lm, [(model path, weight), ...]) of the interpolation flags; an empty list
    without --mix-lm. Raises OptionError for a flag without its partner or weights above 1."""
    extra = [(k, getattr(args, f"mix_lm{k}"), getattr(args, f"mix_lambda{k}"))
             for k in MIX_SLOTS]
    if args.mix_lm is None:
        if (args.mix_lambda is not None or args.mix_missing != "unk"
                or any(path is not None or w is not None for _, path, w in extra)):
            raise OptionError("--lambda, --mix-lm2.., --mix-lambda2.. and --mix-missing need "
                              "--mix-lm")
        return 1.0, []
    main = 0.5 if args.mix_lambda is None else args.mix_lambda
    rest: list[tuple[str, float]] = []
    for k, path, w in extra:
        if (path is None) != (w is None):
            raise OptionError(f"--mix-lm{k} and --mix-lambda{k} go together")
        if path is not None and w is not None:
            rest.append((path, w))
    second = 1.0 - main - sum(w for _, w in rest)
    if second < -1e-9:
        raise OptionError(f"interpolation weights sum to {1.0 - second:.6g} > 1: --lambda "
                          f"{main:g} and the --mix-lambdaK leave no weight for --mix-lm "
                          "(its weight is 1 minus the others)")
    return main, [(args.mix_lm, max(second, 0.0)), *rest]


# ---- a VPYLM instead of --lm (issue 22, target 4) ------------------------------------------


def add_model_options(p: Any, lm_help: str) -> None:
    """--lm MODEL or --vpylm MODEL, exactly one, checked by `cli.target.target_spec` at run time
    (not by an argparse group: one OptionError can say which is missing or doubled, and
    `--lm` keeps its help text and place)."""
    p.add_argument("--lm", default=None, help=f"{lm_help}; or --vpylm")
    p.add_argument("--vpylm", default=None, metavar="MODEL",
                   help="a variable-order Pitman-Yor LM (.npz from `arsdecode train-vpylm`) as "
                        "the hidden layer instead of --lm (exact decoding runs ARS, or the numpy "
                        "full DP)")
