"""The model layer: what the engine asks of the hidden layer's language model.

`interface` defines `TargetModel` (any target implements it) and the optional capability
`HasNgramTables` (`ngram_tables(model)`: the backoff n-gram the compiled core runs on, or None);
`maxarpa_lm` adapts a `maxarpa.Model` to it, once, at the door (`as_target_model`);
`weighted` scores a backoff n-gram as SRILM disambig does (`WeightedLM`: an LM weight, optional
`<s>` and `</s>`); `interpolated` mixes k backoff n-grams linearly (`InterpolatedLM`, SRILM's
`ngram -mix-lm`);
`loglinear` combines n-gram models and n-gram indicator features log-linearly (`LogLinearLM`,
the random-field form), read from files by `feature_file`;
`vpylm` is a variable-order Pitman-Yor LM (`VpylmLM`), trained by `vpylm_train`'s Gibbs sampler;
`target_spec` builds any of them from files (`TargetSpec`, `build_target`: the command line,
batch and library share it).
"""

from arsdecode.model.interface import (
    HasNgramTables,
    ModelLike,
    NgramScoring,
    TargetModel,
    context_rows,
    ngram_scoring,
    ngram_tables,
)
from arsdecode.model.interpolated import InterpolatedLM
from arsdecode.model.loglinear import LogLinearLM
from arsdecode.model.maxarpa_lm import MaxArpaLM, as_target_model
from arsdecode.model.target_spec import Target, TargetSpec, build_target
from arsdecode.model.vpylm import VpylmLM, load_vpylm
from arsdecode.model.vpylm_train import train_vpylm
from arsdecode.model.weighted import WeightedLM

__all__ = [
    "HasNgramTables",
    "InterpolatedLM",
    "LogLinearLM",
    "MaxArpaLM",
    "ModelLike",
    "NgramScoring",
    "Target",
    "TargetModel",
    "TargetSpec",
    "VpylmLM",
    "WeightedLM",
    "as_target_model",
    "build_target",
    "context_rows",
    "ngram_scoring",
    "ngram_tables",
    "load_vpylm",
    "train_vpylm",
]
