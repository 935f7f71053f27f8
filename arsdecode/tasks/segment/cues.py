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

Two exceptions turn a bonus into a cost, each for a kind of single word the plain cues would
split (the LM alone prefers "power book", "java one" and "a 11 y" to the one word):

* known compound: consecutive camel-case words, each of at least `COMPOUND_MIN_PART` letters,
  that spell one word of the model's vocabulary ("Power|Book" is "powerbook", "Java|ONE"
  "javaone"): brands are written so. Their inner case cues cost `compound` instead;
* numeronym: one letter, one or two digits, one or two letters ("a11y", "i18n", "k8s"): a
  word abbreviated by the count of its missing letters; a cut beside its number costs
  `numeronym` instead of the digit bonus.

A URL or domain name ("www.cafes.org/menu", "http://x.net") has pieces that are one token
each: its scheme, a "www" and its top-level domain (`web_atoms`); a cut inside one costs `web`
("or|g"), whatever the case and digit cues say.

When the writer used camel case (a piece between breaks with a case cue), a cut the writer did
not mark -- before a lower-case letter that follows a letter ("Whiteh|ouse", "L|itta"), or
between two capitals that are no cue ("Java|O|NE": a final run of capitals is one word) --
costs `unmarked` (the LM still may take it: "#TheWhitehouse"). A cut between two digits costs
`number`: a writer who runs a number into words rarely means two numbers. Every cut costs
`cut` besides (a word-insertion penalty, with or without case; 0 by default: it did not help
on the development sets).

`SegmentInput` keeps, for each character of the normalised text, the raw characters it came
from, so a segmentation is printed in the input's own characters and case ("iPhone For
Alonis"); a raw character whose lower-case form has two characters goes with the first.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Container, Sequence
from dataclasses import dataclass

import numpy as np

from arsdecode.tasks.segment.lattice import _INNER_APOSTROPHE

_ASCII_RUN = re.compile(r"[0-9A-Za-z]+")  # an ASCII input's letters and digits (`read`)

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
DEFAULT_COMPOUND_CUT = 3.0
"""ln cost of a cut at a case cue inside a vocabulary word ("Power|Book"): the case bonus with
its sign flipped."""
COMPOUND_MIN_PART = 3
"""Shortest camel-case word of a known compound (`_known_compounds`)."""
DEFAULT_NUMERONYM_CUT = 3.0
"""ln cost of a cut beside the number of a numeronym ("a|11|y")."""
DEFAULT_WEB_CUT = 6.0
"""ln cost of a cut inside a URL's scheme, its "www" or its top-level domain ("or|g")."""


@dataclass(frozen=True)
class CueWeights:
    """The ln weights of the writer's hints (all 0: the hints are ignored)."""

    case: float = DEFAULT_CASE_BONUS
    digit: float = DEFAULT_DIGIT_BONUS
    unmarked: float = DEFAULT_UNMARKED_CUT
    number: float = DEFAULT_NUMBER_CUT
    cut: float = DEFAULT_CUT_COST
    compound: float = DEFAULT_COMPOUND_CUT
    numeronym: float = DEFAULT_NUMERONYM_CUT
    web: float = DEFAULT_WEB_CUT


NO_CUES = CueWeights(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


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
        """`read_general(raw)`, made directly for ASCII without apostrophes (held-out text,
        most hashtags and URLs): NFKC leaves ASCII as it is, its letters and digits are the
        runs of [0-9A-Za-z], every other character is a break, and each character lower-cases
        to one; the per-character reader took a fifth of segmenting a sentence. Anything else
        (an apostrophe, which may join a word, or a non-ASCII character) is read by
        `read_general`; tests/test_segment_compiled.py checks the two agree."""
        if not raw.isascii() or "'" in raw:
            return cls.read_general(raw)
        runs = _ASCII_RUN.findall(raw)
        joined = "".join(runs)
        breaks, at = [], 0
        for run in runs[:-1]:
            at += len(run)
            breaks.append(at)
        return cls(raw, joined.lower(), frozenset(breaks), tuple(joined))

    @classmethod
    def read_general(cls, raw: str) -> SegmentInput:
        """Any input, character by character: NFKC, inner apostrophes joined to their word,
        every other non-alphanumeric character a break."""
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

    def cue_bonus(self, weights: CueWeights,
                  known: Container[str] | None = None) -> np.ndarray:
        """ln bonus of cutting at each offset 0..len(text) (module docstring); 0 at the ends
        and at breaks (a break is cut on every path). `known`: the model's vocabulary by
        surface form, for the known-compound rule (None: no such rule)."""
        n = len(self.text)
        bonus = np.zeros(n + 1)
        if n < 2 or weights == NO_CUES:
            return bonus
        chars = [o[:1] for o in self.original]
        cuts = sorted({0, n, *self.breaks})
        atoms = web_atoms(self.raw, len(cuts) - 1) if weights.web else frozenset()
        for k, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
            if k in atoms:
                marks = np.full(hi - lo + 1, -weights.web)
            else:
                marks = piece_marks(chars[lo:hi], self.text[lo:hi], weights, known)
            bonus[lo + 1:hi] = marks[1:hi - lo] - weights.cut
        return bonus


_URL = re.compile(r"^\s*(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?"
                  r"(?P<host>(?:[^\W_]+(?:-+[^\W_]+)*\.)+[A-Za-z]{2,24})\.?"
                  r"(?::[0-9]+)?(?:[/?#]\S*)?\s*$")
_RUN = re.compile(r"[^\W_]+")


def web_atoms(raw: str, n_pieces: int) -> frozenset[int]:
    """The pieces of a URL or domain name that are one token each: the scheme ("http"), a
    first host label "www" (or "www2"), the top-level domain ("org"); by index among the
    input's pieces between breaks. Empty when `raw` is no URL (no scheme, no "www" and a
    top-level domain that is not 2-6 lower-case letters: "Mr.Smith"), or when its pieces do not line
    up with the `n_pieces` the reader found (an apostrophe, a character NFKC changes)."""
    m = _URL.match(unicodedata.normalize("NFKC", raw))
    if m is None or len(_RUN.findall(raw)) != n_pieces:
        return frozenset()
    scheme = len(_RUN.findall(m.group("scheme") or ""))
    labels = _RUN.findall(m.group("host"))
    www = re.fullmatch(r"www[0-9]*", labels[0], re.IGNORECASE) is not None
    if not (scheme or www or re.fullmatch(r"[a-z]{2,6}", labels[-1])):
        return frozenset()  # "Mr.Smith", "end.Next": a lower-case TLD or nothing
    atoms = {*range(scheme), scheme + len(labels) - 1}
    if www:
        atoms.add(scheme)
    return frozenset(atoms)


def _is_case_cue(piece: Sequence[str], b: int) -> bool:
    """Lower|Upper ("iPhone|For"), or Upper|Upper before a lower-case letter ("HTML|Parser")."""
    x, y = piece[b - 1], piece[b]
    nxt = piece[b + 1] if b + 1 < len(piece) else ""
    return (x.islower() and y.isupper()) or (x.isupper() and y.isupper() and nxt.islower())


def piece_marks(piece: Sequence[str], text: str, w: CueWeights,
                known: Container[str] | None = None) -> np.ndarray:
    """The cues' ln marks at offsets 0..len(piece) of one piece between breaks (its raw first
    characters `piece`, its normalised `text`); the ends are 0 (module docstring)."""
    m = len(piece)
    marks = np.zeros(m + 1)
    case_at = [b for b in range(1, m) if _is_case_cue(piece, b)]
    for b in case_at:
        if b > 1 or not piece[0].islower():  # "i|Phone", "e|Bay": a prefix, no cue
            marks[b] += w.case
    for b in range(1, m):
        x, y = piece[b - 1], piece[b]
        if x and y and (x.isdigit() != y.isdigit()) and (x.isalpha() or y.isalpha()):
            marks[b] += w.digit
        elif x.isdigit() and y.isdigit():
            marks[b] -= w.number
    cued = set(case_at)
    if known is not None and w.compound and case_at:
        _known_compounds(text, case_at, known, w.compound, marks, piece[0].islower())
    if w.numeronym:
        _numeronyms(piece, cued, w.numeronym, marks)
    if case_at and w.unmarked:  # camel case: the writer marks boundaries, so others cost
        for b in range(1, m):
            x, y = piece[b - 1], piece[b]
            inside = y.islower() or (x.isupper() and y.isupper())  # "Whiteh|ouse", "O|NE"
            if b not in cued and x.isalpha() and inside and marks[b] == 0:
                marks[b] -= w.unmarked
    return marks


def _known_compounds(text: str, case_at: list[int], known: Container[str], cost: float,
                     marks: np.ndarray, prefix: bool) -> None:
    """Consecutive camel-case words that spell one vocabulary word ("Power|Book": "powerbook";
    "Java|ONE": "javaone"): their inner case cues cost `cost` instead of their bonus. A brand
    is written so; two words the model knows only apart ("Lemon|Tree") keep the bonus. Every
    part has at least COMPOUND_MIN_PART letters: short function words glue onto their neighbours
    into other words ("A|Basement", "On|To", "In|Glorious"), a brand joins content words; but
    a piece's first lower-case letter before a capital is a part of any length (`prefix`:
    "iPhone", "eBay" are written so, "#iLoveYou" is no vocabulary word)."""
    edges = [0, *case_at, len(text)]
    for i in range(len(edges) - 2):
        for j in range(i + 2, len(edges)):
            parts = np.diff(edges[i:j + 1])
            if i == 0 and prefix and edges[1] == 1:
                parts = parts[1:]  # "i|Phone", "e|Bay": the prefix convention
            if parts.min() >= COMPOUND_MIN_PART and text[edges[i]:edges[j]] in known:
                for b in edges[i + 1:j]:
                    marks[b] = -cost


def _numeronyms(piece: Sequence[str], cued: set[int], cost: float, marks: np.ndarray) -> None:
    """Letter, 1-2 digits, 1-2 letters ("a11y", "i18n", "k8s"): one word abbreviated by the
    count of its omitted letters, so a cut at either side of the number costs `cost` (the
    letter-digit bonus is dropped there). The letter runs end at the piece's ends, at a
    non-letter and at case cues."""
    m = len(piece)
    b = 0
    while b < m:
        if not piece[b].isdigit():
            b += 1
            continue
        end = b
        while end < m and piece[end].isdigit():
            end += 1
        before = b
        while before > 0 and piece[before - 1].isalpha() and before not in cued:
            before -= 1
        after = end
        while after < m and piece[after].isalpha() and (after == end or after not in cued):
            after += 1
        if end - b <= 2 and b - before == 1 and 1 <= after - end <= 2:
            marks[b] = marks[end] = -cost
        b = end
