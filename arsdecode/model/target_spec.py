"""One target from a plain spec: the n-gram model or the VPYLM, the models mixed with it, the
feature file, the LM weight, the order and the strictness (issue 30, "one target builder").

Why one place: `decode`, `sample` and `marginals` on both lattice kinds, `disambig`, the
workers of `batch` and library users each composed the target themselves, and the copies
drifted (batch had no --features; the refusal of a VPYLM on a word lattice was written twice;
the command line refused --mix-lm and --features on word lattices that the engine serves).
Here a `TargetSpec` says what to build and `build_target` builds it, in one order:

    n-gram model (truncated to `order`) --mix--> interpolation --features--> log-linear
                                                                --else-----> weighted

or a VPYLM, weighted. Every refusal of a combination is written once, in
`TargetSpec.__post_init__`, with its reason, so a spec that exists can be built. Nothing here
depends on the lattice: every target runs on confusion networks and word lattices alike
(tests/test_conformance.py checks each against brute force on both).

The fields are named after the command-line flags, and the messages name the flags (the
command line and batch are the callers that read files; a library user composing models
already in memory uses `arsdecode.api.weighted`, `interpolate` and `loglinear`).
Models are loaded through the caller's loaders: the command line's says "give it with
--vpylm" for a VPYLM passed as --lm, a batch worker's memory-maps and keeps its models.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from arsdecode.errors import OptionError
from arsdecode.model.interpolated import MISSING, InterpolatedLM
from arsdecode.model.weighted import WeightedLM
from maxarpa.config import DEFAULT_CONFIG, Config
from maxarpa.model import Model

# The log-linear and VPYLM targets are imported when a spec asks for them (issue 34,
# start-up: a plain n-gram decode loads neither).
if TYPE_CHECKING:
    from arsdecode.model.vpylm import VpylmLM

NgramLoader = Callable[[str, Config], Model]
"""Loads an n-gram model file with a strictness (default: `maxarpa.load`)."""
VpylmLoader = Callable[[str], "VpylmLM"]
"""Loads a VPYLM .npz (default: `load_vpylm`)."""


@dataclass(frozen=True)
class TargetSpec:
    """What target to build (every field plain and picklable: a batch run ships it).

    `lm`: the n-gram model file (--lm), or `vpylm` a VPYLM .npz (--vpylm), exactly one.
    `mix`: more n-gram models with their weights (--mix-lm B --mix-lm2 C ...), `lm_lambda` the
    weight of `lm` among them (--lambda), `mix_missing` what a model gives a word it lacks.
    `features`: an n-gram feature file (--features): the log-linear target with alpha =
    `lm_weight`. `lm_weight`: every LM ln probability times it (--lmw). `order`: `lm`
    truncated to this order if lower (SRILM's -order). `config`: the strictness of every
    n-gram model read (the --sentence-marker-missing, ... flags). `sentence_start`,
    `sentence_end`: score the first word after `<s>` and a final `</s>` (disambig's -no-sos,
    -no-eos). Raises OptionError for a combination that cannot be built.
    """

    lm: str | None = None
    vpylm: str | None = None
    mix: tuple[tuple[str, float], ...] = ()
    lm_lambda: float = 1.0
    mix_missing: str = "unk"
    features: str | None = None
    lm_weight: float = 1.0
    order: int | None = None
    config: Config = DEFAULT_CONFIG
    sentence_start: bool = True
    sentence_end: bool = True

    def __post_init__(self) -> None:
        if (self.lm is None) == (self.vpylm is None):
            raise OptionError("give --lm (an n-gram model) or --vpylm (a VPYLM), one of the two"
                              if self.lm is None else "give --lm or --vpylm, not both")
        if not (math.isfinite(self.lm_weight) and self.lm_weight > 0):
            raise OptionError(f"--lmw must be a finite number > 0, got {self.lm_weight!r}")
        if self.mix_missing not in MISSING:
            raise OptionError(f"--mix-missing must be one of {', '.join(MISSING)}, got "
                              f"{self.mix_missing!r}")
        if self.order is not None and self.order < 1:
            raise OptionError(f"--order must be >= 1, got {self.order}")
        if self.vpylm is not None:
            if self.mix:
                raise OptionError("--mix-lm interpolates n-gram models; it does not combine "
                                  "with --vpylm")
            if self.features is not None:
                raise OptionError("--features adds n-gram features to an n-gram model; it "
                                  "does not combine with --vpylm")
            if self.order is not None:
                raise OptionError("--order truncates an n-gram model; it does not combine "
                                  "with --vpylm")
            if self.config != Config():
                raise OptionError("the ARPA strictness flags (--sentence-marker-missing, ...) "
                                  "apply to --lm, not to --vpylm")
        if self.features is not None:
            if self.mix:  # LogLinearLM takes its vocabulary from one n-gram table
                raise OptionError("--features and --mix-lm do not combine yet (a log-linear "
                                  "target's vocabulary is its first n-gram model's)")
            if not (self.sentence_start and self.sentence_end):
                raise OptionError("--features scores <s> and </s> as its model does; "
                                  "--no-bos and --no-eos do not combine with it")

    @property
    def model_path(self) -> str:
        """The file of the main model (--lm or --vpylm), for messages."""
        return self.lm if self.lm is not None else str(self.vpylm)


@dataclass(frozen=True)
class Target:
    """A built target: `model` is what every `arsdecode.api` function takes; `hidden` the
    hidden layer before the LM weight and the features (the model, or the interpolation,
    whose vocabulary is the union), which says which lattice words are out of vocabulary;
    `source` names its files for messages."""

    model: Any
    hidden: Any
    source: str

    def vocabulary(self) -> Container[str]:
        """The words the hidden layer knows (any other is scored as its <unk>)."""
        known = getattr(self.hidden, "word_to_id", None)
        return known if known is not None else set(self.hidden.vocab)


def _load_ngram(path: str, config: Config) -> Model:
    import maxarpa

    return maxarpa.load(path, config=config)


def build_target(spec: TargetSpec, *, load_ngram: NgramLoader | None = None,
                 load_vpylm_file: VpylmLoader | None = None) -> Target:
    """The target `spec` asks for (module docstring), its models read by the loaders given
    (default: `maxarpa.load` and `load_vpylm`). Raises what the loaders raise for a bad file
    (MaxArpaError, ModelError) and ModelError naming a feature file's bad line."""
    if spec.vpylm is not None:
        from arsdecode.model.vpylm import load_vpylm

        vpylm = (load_vpylm_file or load_vpylm)(spec.vpylm)
        return Target(_weighted(vpylm, spec), vpylm, spec.vpylm)
    load = load_ngram or _load_ngram
    lm = load(spec.model_path, spec.config)
    if spec.order is not None and spec.order < lm.order:
        import maxarpa

        lm = maxarpa.truncate(lm, spec.order)
    if spec.features is not None:  # the log-linear target, alpha = the LM weight
        from arsdecode.model.loglinear import LogLinearLM

        return Target(LogLinearLM([lm], [spec.lm_weight], features=spec.features), lm,
                      spec.model_path)
    if not spec.mix:
        return Target(_weighted(lm, spec), lm, spec.model_path)
    models = [lm, *(load(path, spec.config) for path, _ in spec.mix)]
    mixed = InterpolatedLM(models, [spec.lm_lambda, *(w for _, w in spec.mix)],
                           missing=spec.mix_missing)  # type: ignore[arg-type]
    return Target(_weighted(mixed, spec), mixed, f"{spec.model_path} and the --mix-lm models")


def _weighted(model: Any, spec: TargetSpec) -> Any:
    return weighted_target(model, lm_weight=spec.lm_weight,
                           sentence_start=spec.sentence_start, sentence_end=spec.sentence_end)


def weighted_target(model: Any, *, lm_weight: float = 1.0, sentence_start: bool = True,
                    sentence_end: bool = True) -> Any:
    """`model` scored with an LM weight and sentence markers (`WeightedLM`), or `model` itself
    when they are the defaults and it is not weighted already: nothing to change, so the
    compiled core sees the plain model. `arsdecode.api.weighted` is this."""
    if lm_weight == 1.0 and sentence_start and sentence_end and not isinstance(model,
                                                                               WeightedLM):
        return model
    return WeightedLM(model, lm_weight=lm_weight, sentence_start=sentence_start,
                      sentence_end=sentence_end)
