"""The target constructors of the front door: `weighted`, `interpolate`, `loglinear` and
`fixed_length_lattice` (re-exported by `arsdecode.api`, where users find them).

Why a module of their own: they build a target (or the lattice a target is normalised on) and
run nothing, so they need none of the methods `arsdecode.api` dispatches to; apart, api stays
one screenful of entry points (issue 30, modules of about 400 lines). Arguments are checked
as everywhere in the front door (`@v.checked`, `arsdecode.validate`): a refusal is an
ArgumentError naming the function and the argument, before any work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import arsdecode.validate as v
from arsdecode.errors import ModelError
from arsdecode.lattice import Lattice
from arsdecode.model import InterpolatedLM, ModelLike
from arsdecode.model.interpolated import MISSING, Missing
from arsdecode.model.loglinear import LogLinearLM
from arsdecode.model.target_spec import weighted_target
from maxarpa.model import Model

__all__ = ["fixed_length_lattice", "interpolate", "loglinear", "weighted"]

# What each constructor accepts, per argument (arsdecode.validate says why).
LM = v.target
MODELS = v.sequence_of(v.target, "a list of models")
WEIGHTS = v.sequence_of(v.real(0), "a list of numbers")
FEATURES = v.optional(v.either(v.path, v.mapping_of(
    v.text, v.real(), "a {n-gram: ln weight} mapping")))
LENGTH_PRIOR = v.optional(v.mapping_of(
    v.positive, v.real(minus_inf=True), "a {length: ln prior} mapping"))


@v.checked(lm=LM, lm_weight=v.real(0, above=True), sentence_start=v.flag,
           sentence_end=v.flag)
def weighted(lm: ModelLike, *, lm_weight: float = 1.0, sentence_start: bool = True,
             sentence_end: bool = True) -> ModelLike:
    """`lm` scored as SRILM disambig scores it: every LM ln probability times `lm_weight`
    (> 0; disambig's -lmw), the first word after `<s>` or, with `sentence_start=False`, after
    nothing (-no-sos), and a final `</s>` factor unless `sentence_end=False` (-no-eos).

    Returns a `WeightedLM` (`arsdecode.model.weighted`), which every function here takes as
    `lm`, every method included; with the defaults, `lm` itself (nothing to change). Raises
    OptionError for a weight that is not a finite number > 0.
    """
    return weighted_target(lm, lm_weight=lm_weight, sentence_start=sentence_start,
                           sentence_end=sentence_end)  # the builder's own (model.target_spec)


@v.checked(models=v.sequence_of(v.ngram, "a list of n-gram models"), weights=WEIGHTS,
           missing=v.one_of(MISSING))
def interpolate(models: Sequence[Model], weights: Sequence[float], *,
                missing: Missing = "unk") -> InterpolatedLM:
    """The linear interpolation sum_i weights[i] p_i(w | h) of n-gram models of any orders
    (SRILM's `ngram -lm A -mix-lm B -lambda 0.6` is `interpolate([a, b], [0.6, 0.4])`).

    `weights`: one per model, finite, >= 0, summing to 1. The vocabulary is the union of the
    models'; `missing` says what a model gives a word it lacks: "unk", its `<unk>`
    probability (as scoring each model on its own, KenLM's way), or "zero", probability
    zero (SRILM's behaviour). Returns an `InterpolatedLM` (`arsdecode.model.interpolated`),
    which every function here takes as `lm`; it has no single n-gram table, so "auto" runs
    ARS and "full" the numpy full DP. Raises OptionError for bad weights or fewer than two
    models.
    """
    return InterpolatedLM(models, weights, missing=missing)


@v.checked(models=MODELS, alphas=v.optional(v.sequence_of(v.real(0, above=True),
                                                        "a list of numbers")),
           features=FEATURES, length_prior=LENGTH_PRIOR)
def loglinear(models: Sequence[ModelLike], alphas: Sequence[float] | None = None, *,
              features: str | Path | Mapping[str, float] | None = None,
              length_prior: Mapping[int, float] | None = None) -> LogLinearLM:
    """The unnormalised log-linear target sum_i alphas[i] ln p_i(x) + sum_f lambda_f f(x):
    `models` are n-gram models (alphas default 1 each, every one > 0), `features` n-gram
    indicator weights (ln), from a file of `ngram<TAB>weight` lines or a {"w1 * w3": weight}
    mapping, `*` a skipped word (`arsdecode.model.loglinear`). Every function here takes it
    as `lm`: decoding is exact, samples follow the normalised score, and the sampler's ln Z is
    the normaliser over the lattice (at a fixed length: `fixed_length_lattice`). Raises
    OptionError for a bad alpha and ModelError naming the file and line for a bad feature file,
    or the file when it cannot be read (as `load_lm` names a model file it cannot open).
    """
    try:
        return LogLinearLM(models, alphas, features=features, length_prior=length_prior)
    except OSError as err:  # the only file read here: a feature file
        raise ModelError(f"{features}: cannot read the feature file: "
                         f"{err.strerror or err}") from None


@v.checked(vocab=v.sequence_of(v.text, "a list of str"), length=v.positive)
def fixed_length_lattice(vocab: Sequence[str], length: int) -> Lattice:
    """A lattice of `length` positions, each holding every word of `vocab` with emission 0
    (`Lattice.fixed_length`): its paths are all sentences of that length over `vocab`, so a
    target's samples on it follow the target normalised at that length, and ln Z is that
    length's normaliser (for a `LogLinearLM`, `vocab` is usually `lm.vocabulary()`). Raises
    OptionError for length < 1 and LatticeError for an empty vocabulary or a sentence marker
    in it."""
    return Lattice.fixed_length(vocab, length)
