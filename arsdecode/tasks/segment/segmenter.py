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

import numpy as np

from arsdecode.errors import NoPathError
from arsdecode.lattice.word_lattice import WordLattice
from arsdecode.methods import dispatch
from arsdecode.model.interface import ModelLike, NgramScoring, ngram_scoring, ngram_tables
from arsdecode.model.maxarpa_lm import as_target_model
from arsdecode.tasks.segment.calibration import DEFAULT_POSTERIOR_SCALE, boundary_posteriors
from arsdecode.tasks.segment.compiled import (
    LatticeBatch,
    Pricing,
    TrieIndex,
    best_paths,
    build_batch,
)
from arsdecode.tasks.segment.cues import NO_CUES, CueWeights, SegmentInput
from arsdecode.tasks.segment.lattice import (
    DEFAULT_UNKNOWN_MAX_LENGTH,
    SurfaceIndex,
    segmentation_words,
)
from arsdecode.tasks.segment.model_cache import load_shipped
from arsdecode.tasks.segment.spelling import DEFAULT_PER_WORD, DEFAULT_SCALE, SpellingModel

SEGMENT_LM = Path(__file__).resolve().parents[2] / "data" / "segment" / "english.maxarpa.gz"
"""The shipped general-English segmentation model (arsdecode/data/segment/README.md)."""
SEGMENT_SPELLING = SEGMENT_LM.with_name("spelling.npz")
"""The spelling model of its vocabulary, trained once at build time (as `Segmenter` would)."""
CHUNK = 100_000
"""Characters of text whose lattices are built and decoded in one compiled call each: a few
tens of MB of arcs, so that `segment_many` of a whole file runs in bounded memory."""


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
                 spelling: SpellingModel | None = None, trie: TrieIndex | None = None) -> None:
        import maxarpa

        self._spelling = spelling
        if lm is None:
            lm, trie = load_shipped(SEGMENT_LM)
            if spelling is None and SEGMENT_SPELLING.is_file():
                self._spelling = SpellingModel.load(SEGMENT_SPELLING)
        elif isinstance(lm, (str, Path)):
            lm = maxarpa.load(lm)
        self.lm = lm
        self.options = options or SegmentOptions()
        self._trie = trie
        self._index: SurfaceIndex | None = None
        self._lm_ids: np.ndarray | None = None
        self._tables: tuple[Any, Any, NgramScoring] | None = None  # _decode's, made once

    @property
    def index(self) -> SurfaceIndex:
        """The LM's vocabulary by surface form (made on first use)."""
        if self._index is None:
            self._index = SurfaceIndex.of_model(self.lm)
        return self._index

    @property
    def trie(self) -> TrieIndex:
        """The compiled builder's vocabulary (the shipped model's comes from the cache)."""
        if self._trie is None:
            self._trie = self.index.trie
        return self._trie

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
        return self._batch([seg_input]).word_lattice(0, self.trie.words, "segmentation")

    def _batch(self, inputs: Sequence[SegmentInput]) -> LatticeBatch:
        """The lattices of read inputs (none empty), in one compiled call."""
        o = self.options
        spelled = o.unknown_penalty is None
        pricing = Pricing(0.0 if spelled else float(o.unknown_penalty or 0.0),
                          self.spelling if spelled else None, o.spelling_scale,
                          o.unknown_word_cost)
        return build_batch([s.text for s in inputs], [s.breaks for s in inputs], self.trie,
                           pricing, longest_word=self.trie.max_length,
                           unknown_max_length=o.unknown_max_length,
                           bonuses=[s.cue_bonus(o.cues, self.trie) for s in inputs])

    def segment_many(self, texts: Sequence[str], *, posteriors: bool = False,
                     lower: bool = False) -> list[SegmentResult]:
        """Segment every text: lattices built and decoded together, CHUNK characters at a
        time (one compiled build and one compiled Viterbi per chunk)."""
        inputs = [SegmentInput.read(t) for t in texts]
        out = [SegmentResult(s.raw, "", [], 0.0, True, () if posteriors else None)
               for s in inputs]
        todo = [k for k, s in enumerate(inputs) if s.text]
        start = 0
        while start < len(todo):
            stop, size = start, 0
            while stop < len(todo) and (stop == start or size < CHUNK):
                size += len(inputs[todo[stop]].text)
                stop += 1
            chunk = todo[start:stop]
            batch = self._batch([inputs[k] for k in chunk])
            for s, (k, (pieces, log_p)) in enumerate(zip(chunk, self._decode(batch),
                                                         strict=True)):
                seg_in = inputs[k]
                post = (self._boundary_posteriors(
                    batch.word_lattice(s, self.trie.words, "segmentation"), len(seg_in.text))
                    if posteriors else None)
                out[k] = SegmentResult(seg_in.raw, seg_in.text,
                                       seg_in.words(pieces, lower=lower), log_p, True, post)
            start = stop
        return out

    def _decode(self, batch: LatticeBatch) -> list[tuple[list[str], float]]:
        """The best segmentation (pieces of the text) and its ln score of every lattice of
        the batch, by the compiled Viterbi over the merged expansion (`compiled.best_paths`:
        `FullDP.run_dag`, the call `dispatch.decode_many` makes for word lattices, fed the
        batch's arrays directly); a model without n-gram tables or
        without <unk> goes through `dispatch.decode_many` on WordLattices (which reports a
        missing <unk>)."""
        if self._tables is None:
            target = as_target_model(self.lm)
            self._tables = (target, ngram_tables(target), ngram_scoring(target))
        target, ngram, scoring = self._tables
        if ngram is None or ngram.unk_id is None or ngram.bos_id is None \
                or ngram.eos_id is None:
            lattices = [batch.word_lattice(s, self.trie.words, "segmentation")
                        for s in range(len(batch.texts))]
            return [(segmentation_words(best.tokens, text), best.log_p) for text, best in zip(
                batch.texts, dispatch.decode_many(target, lattices), strict=True)]
        if self._lm_ids is None:
            self._lm_ids = self.trie.ids_in(ngram.word_to_id, ngram.vocab, ngram.unk_id)
        score, path, path_len = best_paths(ngram, batch, self._lm_ids, scoring)
        ends = (batch.dst[path] - np.repeat(batch.node_off[:-1], path_len)).tolist()
        out, at = [], 0
        for text, k, log_p in zip(batch.texts, path_len.tolist(), score.tolist(), strict=True):
            if log_p == -np.inf:
                raise NoPathError("segmentation: every path has probability zero")
            cuts = [0, *ends[at:at + k]]
            out.append(([text[a:b] for a, b in zip(cuts, cuts[1:])], log_p))
            at += k
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
