"""The writer's own hints: where a raw input's case and digits suggest a word boundary.

Why soft: "iPhoneForAlonis" marks its boundaries with capitals, "lions2009" with a digit, but
"iPhone", "McFly", "JavaONE", "PowerBook", "gr8", "h1n1", "a11y" and "4eva" are single words
with the same transitions inside. So a cue never forces a cut: it adds a ln bonus to every arc
that ends at its offset (every path cuts there or not, so that is a bonus for cutting), and the
LM decides. Punctuation and spaces stay hard breaks (`lattice.prepare_input`).

The cues, at an offset b between characters x = raw[b-1] and y = raw[b]:

* case: x lower-case and y upper-case ("iPhone|For"), or x and y capitals followed by a
  lower-case letter ("HTML|Parser": the last capital of a run starts the next word); not
  after one lower-case letter that starts the piece ("iPhone", "eBay": a prefix by
  convention, so no bonus there);
* digit: one of x, y a digit and the other a letter ("lions|2009", "gr|8").

When the writer used camel case (a piece between breaks with a case cue), a cut before a lower-
case letter that follows a letter ("Whiteh|ouse", "L|itta") is one the writer did not mark, and
costs `unmarked` (the LM still may take it: "#TheWhitehouse"). A cut between two digits costs
`number`: a writer who runs a number into words rarely means two numbers. Every cut costs
`cut` besides (a word-insertion penalty, with or without case; 0 by default: it did not help
on the development sets).

`SegmentInput` keeps, for each character of the normalised text, the raw characters it came
from, so a segmentation is printed in the input's own characters and case ("iPhone For
Alonis"); a raw character whose lower-case form has two characters goes with the first.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np

from arsdecode.tasks.segment.lattice import _INNER_APOSTROPHE

DEFAULT_CASE_BONUS = 3.0
"""ln bonus of a cut at a case cue (the weights below: tuned on the development sets,
docs/results-segment.md, keeping "iPhone", "McFly", "gr8", "h1n1" and "4eva" whole)."""
DEFAULT_DIGIT_BONUS = 0.25
"""ln bonus of a cut between a letter and a digit."""
DEFAULT_UNMARKED_CUT = 3.0
"""ln cost of a cut between two lower-case letters in a camel-case piece."""
DEFAULT_NUMBER_CUT = 4.0
"""ln cost of a cut between two digits ("1985" is one number, not "19 85")."""
DEFAULT_CUT_COST = 0.0
"""ln cost of every cut (a word-insertion penalty: fewer, longer words when positive)."""


@dataclass(frozen=True)
class CueWeights:
    """The ln weights of the writer's hints (all 0: the hints are ignored)."""

    case: float = DEFAULT_CASE_BONUS
    digit: float = DEFAULT_DIGIT_BONUS
    unmarked: float = DEFAULT_UNMARKED_CUT
    number: float = DEFAULT_NUMBER_CUT
    cut: float = DEFAULT_CUT_COST


NO_CUES = CueWeights(0.0, 0.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True)
class SegmentInput:
    """A raw input read for segmentation: the normalised text the lattice is built on, the
    hard breaks (offsets where a space or punctuation stood), and per normalised character the
    raw characters (case kept) it stands for."""

    raw: str
    text: str
    breaks: frozenset[int]
    original: tuple[str, ...]

    @classmethod
    def read(cls, raw: str) -> SegmentInput:
        text: list[str] = []
        original: list[str] = []
        breaks: set[int] = set()
        pending_break = False
        folded = unicodedata.normalize("NFKC", raw)
        apostrophes = {m.start() for m in _INNER_APOSTROPHE.finditer(folded)}
        for k, c in enumerate(folded):
            if k in apostrophes and original:
                original[-1] += c
                continue
            if not c.isalnum():
                pending_break = bool(text)
                continue
            low = [ch for ch in unicodedata.normalize("NFKC", c.lower()) if ch.isalnum()]
            if not low:
                continue
            if pending_break:
                breaks.add(len(text))
                pending_break = False
            text.extend(low)
            original.append(c)
            original.extend("" for _ in low[1:])
        return cls(raw, "".join(text), frozenset(breaks), tuple(original))

    def words(self, pieces: list[str], *, lower: bool = False) -> list[str]:
        """The raw form of a segmentation of `text` (its pieces, in order)."""
        if lower:
            return pieces
        out, offset = [], 0
        for piece in pieces:
            out.append("".join(self.original[offset:offset + len(piece)]))
            offset += len(piece)
        return out

    def cue_bonus(self, weights: CueWeights) -> np.ndarray:
        """ln bonus of cutting at each offset 0..len(text) (module docstring); 0 at the ends
        and at breaks (a break is cut on every path)."""
        n = len(self.text)
        bonus = np.zeros(n + 1)
        if n < 2 or weights == NO_CUES:
            return bonus
        chars = [o[:1] for o in self.original]
        cuts = sorted({0, n, *self.breaks})
        for lo, hi in zip(cuts, cuts[1:]):
            piece = chars[lo:hi]
            camel = False
            marks = np.zeros(hi - lo + 1)
            for b in range(1, hi - lo):
                x, y = piece[b - 1], piece[b]
                nxt = piece[b + 1] if b + 1 < len(piece) else ""
                if (x.islower() and y.isupper()) or (x.isupper() and y.isupper()
                                                       and nxt.islower()):
                    camel = True
                    if b > 1 or not x.islower():  # "i|Phone", "e|Bay": a prefix, no cue
                        marks[b] += weights.case
                if x and y and (x.isdigit() != y.isdigit()) and (x.isalpha() or y.isalpha()):
                    marks[b] += weights.digit
                elif x.isdigit() and y.isdigit():
                    marks[b] -= weights.number
            if camel and weights.unmarked:
                for b in range(1, hi - lo):
                    if piece[b].islower() and piece[b - 1].isalpha() and marks[b] == 0:
                        marks[b] -= weights.unmarked
            bonus[lo + 1:hi] = marks[1:hi - lo] - weights.cut
        return bonus
