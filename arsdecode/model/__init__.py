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

Why the names are imported on first use (PEP 562, as `arsdecode` itself does): a decode of one
small lattice imports `arsdecode.model.limits` (through the lattice readers) and the n-gram
adapter, not the VPYLM trainer, the feature-file parser or the mixtures; importing them all
here was a measurable share of a one-lattice process's start-up (issue 34).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from arsdecode.lazy_names import lazy_names

_EXPORTS = {
    **{name: "arsdecode.model.interface" for name in (
        "HasNgramTables", "ModelLike", "NgramScoring", "TargetModel", "context_rows",
        "ngram_scoring", "ngram_tables")},
    "InterpolatedLM": "arsdecode.model.interpolated",
    "LogLinearLM": "arsdecode.model.loglinear",
    "MaxArpaLM": "arsdecode.model.maxarpa_lm",
    "as_target_model": "arsdecode.model.maxarpa_lm",
    **{name: "arsdecode.model.target_spec" for name in ("Target", "TargetSpec", "build_target")},
    "VpylmLM": "arsdecode.model.vpylm",
    "load_vpylm": "arsdecode.model.vpylm",
    "train_vpylm": "arsdecode.model.vpylm_train",
    "WeightedLM": "arsdecode.model.weighted",
}
"""Public name -> the module that defines it."""

if TYPE_CHECKING:
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


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)

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
