"""`segment` and `segment_many`: raw text in, words in the writer's own characters out.

Why a class: the model, its surface index and its spelling model take a second or two to load
and build; a `Segmenter` holds them, and the module functions keep one for the shipped model.
Each text is read (`cues.SegmentInput`: breaks, the raw characters, the case and digit cues),
made into its segmentation lattice (weights: the spelling model's cost of unknown words and the
cues' bonuses) and decoded exactly; with `posteriors=True` every offset's probability of being
a cut comes from the exact arc posteriors of the same lattice (forward-backward over its merged
expansion) with every ln weight times `posterior_scale`, fitted on the dev sets so that the
confidences are calibrated (`calibration` module).

`log_p` is the ln score of the best path: the LM's ln probability of its words plus the
lattice's ln weights (unknown-word costs, cue bonuses).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from arsdecode.lattice.word_lattice import WordLattice
from arsdecode.methods import dispatch
from arsdecode.model.interface import ModelLike
from arsdecode.model.maxarpa_lm import as_target_model
from arsdecode.tasks.segment.calibration import DEFAULT_POSTERIOR_SCALE, boundary_posteriors
from arsdecode.tasks.segment.cues import NO_CUES, CueWeights, SegmentInput
from arsdecode.tasks.segment.lattice import (
    DEFAULT_UNKNOWN_MAX_LENGTH,
    SurfaceIndex,
    segmentation_lattice,
    segmentation_words,
)
from arsdecode.tasks.segment.spelling import DEFAULT_PER_WORD, DEFAULT_SCALE, SpellingModel

SEGMENT_LM = Path(__file__).resolve().parents[2] / "data" / "segment" / "english.maxarpa.gz"
"""The shipped general-English segmentation model (arsdecode/data/segment/README.md)."""
SEGMENT_SPELLING = SEGMENT_LM.with_name("spelling.npz")
"""The spelling model of its vocabulary, trained once at build time (as `Segmenter` would)."""


@dataclass(frozen=True)
class SegmentOptions:
    """How the lattice is weighted. `unknown_penalty` None: unknown words are scored by the
    spelling model (`spelling_scale`, `unknown_word_cost`); a number: the flat ln penalty per
    character instead (the issue-21 model)."""

    cues: CueWeights = CueWeights()
    unknown_penalty: float | None = None
    spelling_scale: float = DEFAULT_SCALE
    unknown_word_cost: float = DEFAULT_PER_WORD
    unknown_max_length: int = DEFAULT_UNKNOWN_MAX_LENGTH
    posterior_scale: float = DEFAULT_POSTERIOR_SCALE


@dataclass(frozen=True)
class SegmentResult:
    """One text's segmentation. `words` are in the input's characters and case (lower-cased
    with lower=True); `log_p` is ln (module docstring); `boundary_posteriors[b - 1]` is the
    exact probability that the segmentation cuts the normalised text at offset b, for b in
    1..len(text) - 1 (None unless asked for)."""

    input: str
    text: str
    words: list[str]
    log_p: float
    certified: bool
    boundary_posteriors: tuple[float, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"input": self.input, "words": self.words, "log_p": self.log_p,
                               "certified": self.certified}
        if self.boundary_posteriors is not None:
            out["boundary_posteriors"] = list(self.boundary_posteriors)
        return out


class Segmenter:
    """A model ready to segment: `lm` a loaded model (or a path; None: the shipped one);
    `spelling` the spelling model of its vocabulary if already at hand (the shipped model's is
    loaded with it; any other is trained on first use)."""

    def __init__(self, lm: ModelLike | str | Path | None = None,
                 options: SegmentOptions | None = None,
                 spelling: SpellingModel | None = None) -> None:
        import maxarpa

        self._spelling = spelling
        if lm is None:
            lm = maxarpa.load(SEGMENT_LM)
            if spelling is None and SEGMENT_SPELLING.is_file():
                self._spelling = SpellingModel.load(SEGMENT_SPELLING)
        elif isinstance(lm, (str, Path)):
            lm = maxarpa.load(lm)
        self.lm = lm
        self.options = options or SegmentOptions()
        self.index = SurfaceIndex.of_model(lm)

    @property
    def spelling(self) -> SpellingModel:
        """The spelling model of this LM's vocabulary (trained on first use)."""
        if self._spelling is None:
            self._spelling = SpellingModel.train(self.index.words)
        return self._spelling

    def with_options(self, **changes: Any) -> Segmenter:
        """The same model and indexes, other options."""
        other = object.__new__(Segmenter)
        other.__dict__.update(self.__dict__)
        other.options = dataclasses.replace(self.options, **changes)
        return other

    def lattice(self, seg_input: SegmentInput) -> WordLattice:
        """The weighted segmentation lattice of a read input (its text must not be empty)."""
        o = self.options
        spelled = o.unknown_penalty is None
        return segmentation_lattice(
            seg_input.text, self.index, breaks=seg_input.breaks,
            unknown_penalty_per_char=0.0 if spelled else float(o.unknown_penalty or 0.0),
            unknown_max_length=o.unknown_max_length,
            spelling=self.spelling if spelled else None, spelling_scale=o.spelling_scale,
            unknown_word_cost=o.unknown_word_cost,
            boundary_bonus=seg_input.cue_bonus(o.cues, self.index.words))

    def segment_many(self, texts: Sequence[str], *, posteriors: bool = False,
                     lower: bool = False) -> list[SegmentResult]:
        """Segment every text (decoded together: `dispatch.decode_many`)."""
        inputs = [SegmentInput.read(t) for t in texts]
        todo = [k for k, s in enumerate(inputs) if s.text]
        lattices = [self.lattice(inputs[k]) for k in todo]
        bests = dispatch.decode_many(as_target_model(self.lm), lattices) if lattices else []
        out = [SegmentResult(s.raw, "", [], 0.0, True, () if posteriors else None)
               for s in inputs]
        for k, wl, best in zip(todo, lattices, bests, strict=True):
            s = inputs[k]
            pieces = segmentation_words(best.tokens, s.text)
            post = self._boundary_posteriors(wl, len(s.text)) if posteriors else None
            out[k] = SegmentResult(s.raw, s.text, s.words(pieces, lower=lower), best.log_p,
                                   best.certified, post)
        return out

    def segment(self, text: str, *, posteriors: bool = False,
                lower: bool = False) -> SegmentResult:
        return self.segment_many([text], posteriors=posteriors, lower=lower)[0]

    def _boundary_posteriors(self, wl: WordLattice, n: int) -> tuple[float, ...]:
        return boundary_posteriors(self.lm, wl, n, self.options.posterior_scale)


@lru_cache(maxsize=1)
def default_segmenter() -> Segmenter:
    """The shipped model, loaded once per process."""
    return Segmenter()


def _segmenter(lm: ModelLike | str | Path | None, options: dict[str, Any]) -> Segmenter:
    base = default_segmenter() if lm is None else Segmenter(lm)
    if not options:
        return base
    if "cues" in options and not isinstance(options["cues"], CueWeights):
        options = {**options, "cues": CueWeights() if options["cues"] else NO_CUES}
    return base.with_options(**options)


def segment(text: str, lm: ModelLike | str | Path | None = None, *, posteriors: bool = False,
            lower: bool = False, **options: Any) -> SegmentResult:
    """Segment one text written without spaces (a hashtag, a URL, a sentence).

    Returns a SegmentResult: words in the input's characters and case, log_p (ln), certified,
    and with posteriors=True each offset's exact probability of being a cut. `lm`: the shipped
    English model by default, or any model with `<unk>`; options: SegmentOptions' fields
    (cues=False ignores case and digits)."""
    return _segmenter(lm, options).segment(text, posteriors=posteriors, lower=lower)


def segment_many(texts: Sequence[str], lm: ModelLike | str | Path | None = None, *,
                 posteriors: bool = False, lower: bool = False,
                 **options: Any) -> list[SegmentResult]:
    """`segment` over many texts, decoded together. Returns one SegmentResult per text."""
    return _segmenter(lm, options).segment_many(texts, posteriors=posteriors, lower=lower)
