"""Exact word segmentation (issue 21): text without spaces -> a word lattice -> the LM's best
word sequence.

`lattice` builds the segmentation lattice (every in-vocabulary substring, plus penalised
unknown-word arcs) and maps a decoded path back to substrings; `evaluation` scores
segmentations (word-boundary precision, recall, F1; exact sentences); `nbest` gives the K best
distinct segmentations. Decoding itself is `arsdecode.methods.dag_full` on the lattice, like any
other word lattice.
"""

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

__all__ = [
    "DEFAULT_UNKNOWN_MAX_LENGTH", "DEFAULT_UNKNOWN_PENALTY_PER_CHAR", "BoundaryScore",
    "SurfaceIndex", "best_segmentations", "boundaries", "normalize_text", "prepare_input",
    "score_segmentations", "segmentation_lattice", "segmentation_words", "surface_form",
]
