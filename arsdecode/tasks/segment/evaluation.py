"""Scoring segmentations: word-boundary precision, recall and F1, and exact sentences.

Why boundaries: two segmentations of one text differ only in where they cut it, so a
segmentation is the set of its inner cut offsets ("this|is|a|test" -> {4, 6, 7}). Counts are
summed over the corpus before dividing (micro-averaged, as in the segmentation literature), so a
long sentence weighs as its boundaries do. A sentence is exactly right when its cut set equals
the reference's. Word identity does not enter: "dont" and "don't" are the same cut.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from arsdecode.errors import ObservationError


def boundaries(words: Sequence[str]) -> frozenset[int]:
    """The inner cut offsets of a segmentation: the running lengths, without 0 and the end."""
    cuts, offset = set(), 0
    for word in words[:-1]:
        offset += len(word)
        cuts.add(offset)
    return frozenset(cuts)


@dataclass(frozen=True)
class BoundaryScore:
    """Corpus totals and the rates they give (a rate with a zero denominator is 1.0: nothing
    was there to get wrong)."""

    true_positives: int
    predicted: int  # boundaries the segmenter cut
    reference: int  # boundaries of the reference
    exact: int  # sentences whose cuts are all right
    sentences: int

    @property
    def precision(self) -> float:
        return self.true_positives / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.reference if self.reference else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def exact_fraction(self) -> float:
        return self.exact / self.sentences if self.sentences else 1.0

    def to_json(self) -> dict:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1,
                "exact": self.exact_fraction, "true_positives": self.true_positives,
                "predicted": self.predicted, "reference": self.reference,
                "exact_sentences": self.exact, "sentences": self.sentences}


def score_segmentations(predicted: Iterable[Sequence[str]],
                        reference: Iterable[Sequence[str]]) -> BoundaryScore:
    """Score each predicted segmentation against the reference one of the same text.

    Raises ObservationError when the two lists differ in length or a pair does not spell the
    same text (a segmenter that changed characters cannot be scored by its cuts)."""
    preds, refs = list(predicted), list(reference)
    if len(preds) != len(refs):
        raise ObservationError(f"{len(preds)} segmentations for {len(refs)} reference "
                               "sentences")
    tp = n_pred = n_ref = exact = 0
    for k, (pred, ref) in enumerate(zip(preds, refs, strict=True)):
        if "".join(pred) != "".join(ref):
            raise ObservationError(f"sentence {k + 1}: the segmentation spells "
                                   f"{''.join(pred)[:40]!r}, the reference "
                                   f"{''.join(ref)[:40]!r}")
        p, r = boundaries(pred), boundaries(ref)
        tp += len(p & r)
        n_pred += len(p)
        n_ref += len(r)
        exact += p == r
    return BoundaryScore(tp, n_pred, n_ref, exact, len(preds))
