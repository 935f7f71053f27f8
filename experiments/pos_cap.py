"""TnT's capitalisation feature (NLTK TnT C=True) for our tagger: states are (tag, cap) pairs.

Why: at n = 2 our tagger loses to TnT on EWT dev, and the loss is on known words (the emission
grid moves known-word accuracy by < 0.1 point at n = 2), i.e. on the transition model, where
TnT's own remedy is to make capitalisation part of the hidden state. Here every tag t becomes
"t^upper" / "t^lower" after the word's class (`pos_suffix.word_class`, the class TnT's two
suffix tries use), the tag n-gram LM is trained on those pairs (same deleted interpolation),
and the emission is the same model renormalised within the class:
p(w | t, c) = p(w | t) / P(c | t), where P(c | t) = sum of p(w | t) over the words w of class
c = (1 - u(t)) c(t, c) / c(t) + u_c(t) (known words, then the unseen-word mass of the class),
so that p(. | t, c) sums to 1 over class c (tested). TnT divides by c(t, c) alone, leaving
out the unseen words. Since c is a function of the observed word, the result is again an HMM
over an n-gram LM and decodes exactly with the same code. Experiment only; nothing ships.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from arsdecode.lattice import Lattice
from arsdecode.tasks.pos import TnTEmissions
from arsdecode.tasks.pos_suffix import WORD_CLASSES, word_class
from data_prep.pos_data import DataError, convert_maxarpa, deleted_interpolation_arpa

SEP = "^"


def cap_class(em: TnTEmissions, word: str, initial: bool) -> str:
    """The class of the word the emission model looks up (the sentence-initial rule may read
    an unknown capitalised first word as its known lower-case form)."""
    if (initial and em.sentence_initial and not em.is_known(word)
            and em.is_known(word.lower())):
        word = word.lower()
    return word_class(word)


def cap_sequences(train: Sequence[Sequence[tuple[str, str]]]) -> list[list[str]]:
    """Training tag sequences over (tag, class) states."""
    return [[f"{t}{SEP}{word_class(w)}" for w, t in s] for s in train]


def build_cap_lms(train: Sequence[Sequence[tuple[str, str]]], out: Path,
                  orders: Sequence[int]) -> None:
    """tags.<n>.maxarpa over (tag, class) pairs under `out`, built only where missing."""
    out.mkdir(parents=True, exist_ok=True)
    seqs = cap_sequences(train)
    for n in orders:
        maxarpa = out / f"tags.{n}.maxarpa"
        if maxarpa.is_file():
            continue
        arpa, _ = deleted_interpolation_arpa(seqs, n, out / f"tags.{n}.arpa")
        if not convert_maxarpa(arpa, maxarpa):
            raise DataError(f"cannot convert {arpa} to MAX-ARPA")


class CapEmissions:
    """p(w | t, c) = p(w | t) / P(c | t) over "t^c" states; the interface tag_many and the
    ARS check use (tags, candidates, lattice)."""

    def __init__(self, em: TnTEmissions, train: Sequence[Sequence[tuple[str, str]]]) -> None:
        self.em = em
        by_class = Counter((t, word_class(w)) for s in train for w, t in s)
        total = Counter(t for s in train for _, t in s)
        u = em.unknown_mass
        # u_c(t) for each class: looked up through a one-letter word of that class
        u_c = {c: em.unknown_class_mass("A" if c == "upper" else "a") for c in WORD_CLASSES}
        if {em.unknown_class("A"), em.unknown_class("a")} != set(WORD_CLASSES):
            raise ValueError("both word classes need their own suffix model")
        self.p_class = {(t, c): (1.0 - u[t]) * n / total[t] + u_c[c][t]
                        for (t, c), n in by_class.items()}
        self.log_p_class = {k: math.log(p) for k, p in self.p_class.items()}
        # only the pairs seen in training are in the LM (and only those can be emitted)
        self.tags = tuple(f"{t}{SEP}{c}" for t in em.tags for c in WORD_CLASSES
                          if (t, c) in by_class)

    def candidates(self, word: str, initial: bool = False) -> tuple[tuple[str, float], ...]:
        c = cap_class(self.em, word, initial)
        out = []
        for t, e in self.em.candidates(word, initial=initial):
            lp = self.log_p_class.get((t, c))
            if lp is None:  # cannot happen: an emitted tag was seen in training with class c
                raise ValueError(f"tag {t} never seen with a {c} word, yet emits {word!r}")
            out.append((f"{t}{SEP}{c}", e - lp))
        return tuple(out)

    def lattice(self, words: Sequence[str]) -> Lattice:
        return Lattice.from_lists([list(self.candidates(w, initial=(i == 0)))
                                   for i, w in enumerate(words)], source="pos cap lattice")


def strip(tags: Sequence[str]) -> list[str]:
    """Penn tags of a decoded "t^c" sequence."""
    return [t.rsplit(SEP, 1)[0] for t in tags]
