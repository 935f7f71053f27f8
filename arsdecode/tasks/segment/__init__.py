"""Exact word segmentation (issue 21): text without spaces -> a word lattice -> the LM's best
word sequence.

`segmenter` is the front door (`segment`, `segment_many`: raw text in, words in the writer's
characters out, with the shipped general-English model, loaded through `model_cache`'s binary
cache); `cues` reads a raw input (hard breaks, case and digit hints), `spelling` prices unknown
words; `lattice` defines the segmentation lattice (every in-vocabulary substring, plus priced
unknown-word arcs) and maps a decoded path back to substrings, `compiled` builds the lattices
of many texts in one compiled call (`reference_lattice`: the Python builder it is tested
against); `evaluation` scores segmentations (word-boundary precision, recall, F1;
exact sentences); `nbest` gives the K best distinct segmentations. Decoding itself is
`arsdecode.methods.expansion_dp` on the lattice, like any other word lattice.
"""

from arsdecode.tasks.segment.cues import NO_CUES, CueWeights, SegmentInput
from arsdecode.tasks.segment.evaluation import BoundaryScore, boundaries, score_segmentations
from arsdecode.tasks.segment.lattice import (
    DEFAULT_UNKNOWN_MAX_LENGTH,
    DEFAULT_UNKNOWN_PENALTY_PER_CHAR,
    SurfaceIndex,
    normalize_text,
    prepare_input,
    segmentation_lattice,
    segmentation_words,
    surface_form,
)
from arsdecode.tasks.segment.nbest import best_segmentations
from arsdecode.tasks.segment.segmenter import (
    SEGMENT_LM,
    Segmenter,
    SegmentOptions,
    SegmentResult,
    segment,
    segment_many,
)
from arsdecode.tasks.segment.spelling import SpellingModel

__all__ = [
    "DEFAULT_UNKNOWN_MAX_LENGTH", "DEFAULT_UNKNOWN_PENALTY_PER_CHAR", "BoundaryScore",
    "SurfaceIndex", "best_segmentations", "boundaries", "normalize_text", "prepare_input",
    "score_segmentations", "segmentation_lattice", "segmentation_words", "surface_form",
    "NO_CUES", "CueWeights", "SegmentInput", "SEGMENT_LM", "SegmentOptions", "Segmenter",
    "SegmentResult", "segment", "segment_many", "SpellingModel",
]
