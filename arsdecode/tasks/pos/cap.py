"""TnT's capitalisation feature (Brants 2000; NLTK TnT C=True): hidden states are (tag, class).

Why: with plain tag states the tag LM cannot tell a capitalised word from a lower-case one, so
a capitalised unknown word after a verb is scored like any other word there, and closed-class
tags whose capitalised forms are sentence-initial ("Which" WDT, "Each" DT) compete on equal
terms ("He visited Munich yesterday ." came out as Munich/DT). Making the word's class part of
the state lets the tag LM learn that WDT^upper follows <s>, not a verb. On EWT dev it is
better than plain states at every order (docs/results-pos.md), so the shipped tagger uses it.

The model: every tag t becomes the state "t^upper" or "t^lower" after the class of the word
(`pos_suffix.word_class`, the class of TnT's two suffix tries); the tag n-gram LM is trained
on those states (`cap_sequences`, same deleted interpolation); and the emission is the tag's
emission renormalised within the class:

    p(w | t, c) = p(w | t) / P(c | t),
    P(c | t) = (1 - u(t)) c(t, c) / c(t) + u_c(t)

(the known words of class c, then the unseen-word mass of class c; `pos.TnTEmissions`), so
p(. | t, c) sums to 1 over the words of class c (tested). TnT divides by c(t, c) alone,
leaving out the unseen words. The class is a function of the observed word, so the result is
again an HMM over an n-gram LM and decodes exactly with the same code. Only the states that
occur in training exist; an emitted tag always has its state (a known word's tags were seen
with its class; an unknown word's tags come from its class's suffix trie).

The decoder's answers are states; `penn_tags` turns them back into tags for output.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from arsdecode.errors import ModelError
from arsdecode.lattice import Lattice
from arsdecode.tasks.pos.emissions import TnTEmissions
from arsdecode.tasks.pos.sentence_lattice import emission_lattice
from arsdecode.tasks.pos.suffix import WORD_CLASSES, word_class
from arsdecode.tasks.pos.table import CandidateRows

SEP = "^"


def state(tag: str, cls: str) -> str:
    """The hidden state of `tag` on a word of class `cls` ("upper" / "lower")."""
    return f"{tag}{SEP}{cls}"


def cap_sequences(sentences: Sequence[Sequence[tuple[str, str]]]) -> list[list[str]]:
    """The state sequences of tagged training sentences (what the tag LM is trained on)."""
    return [[state(t, word_class(w)) for w, t in s] for s in sentences]


class CapEmissions:
    """p(w | t, c) over "t^c" states, from a `TnTEmissions` (nothing else is estimated).

    The interface of the emission model the taggers use: `tags`, `candidates`,
    `candidate_rows`, `lattice`, plus `penn_tags` for output.
    """

    def __init__(self, em: TnTEmissions) -> None:
        self.em = em
        if {em.unknown_class("A"), em.unknown_class("a")} != set(WORD_CLASSES):
            raise ModelError("capitalised states need rare words of both classes in training "
                             "(one suffix trie per class)")
        lex = em._lex
        upper = np.array([word_class(w) == "upper" for w in lex.words], dtype=bool)
        entry_upper = np.repeat(upper, np.diff(lex.offsets))
        n_tags = len(em.tags)
        # c(t, c): tokens of tag t on words of class c; row 0 = upper, row 1 = lower
        by_class = np.stack([
            np.bincount(lex.tag[entry_upper], weights=lex.count[entry_upper], minlength=n_tags),
            np.bincount(lex.tag[~entry_upper], weights=lex.count[~entry_upper],
                        minlength=n_tags)])
        total = lex.tag_counts()
        unk = np.array([em.unknown_mass[t] for t in em.tags])
        unk_c = [np.array([em.unknown_class_mass(probe)[t] for t in em.tags])
                 for probe in ("A", "a")]  # u_c(t) of each class, through a word of the class
        self._class_row: dict[str, int] = {c: i for i, c in enumerate(WORD_CLASSES)}
        names: list[str] = []
        index = np.full((2, n_tags), -1, dtype=np.intp)
        log_pc = np.full((2, n_tags), np.nan)
        self.p_class: dict[tuple[str, str], float] = {}
        for t, tag in enumerate(em.tags):
            for c, cls in enumerate(WORD_CLASSES):
                if by_class[c, t] > 0:  # only the states seen in training are in the LM
                    p = float((1.0 - unk[t]) * by_class[c, t] / total[t] + unk_c[c][t])
                    self.p_class[(tag, cls)] = p
                    index[c, t] = len(names)
                    log_pc[c, t] = math.log(p)
                    names.append(state(tag, cls))
        self.tags: tuple[str, ...] = tuple(names)
        self._penn = {s: s.rsplit(SEP, 1)[0] for s in names}
        self._state_index = index
        self._log_pc = log_pc
        self._log_pc_of = log_pc.tolist()

    # ---- what the taggers call ----------------------------------------------------------

    def word_class(self, word: str, initial: bool = False) -> str:
        """The class of the word the emission model reads (the sentence-initial rule may
        read an unknown capitalised first word as its known lower-case form)."""
        em = self.em
        if (initial and em.sentence_initial and not em.is_known(word)
                and em.is_known(word.lower())):
            word = word.lower()
        return word_class(word)

    def candidates(self, word: str, initial: bool = False) -> tuple[tuple[str, float], ...]:
        """`(state, ln p(word | state))` for every state with non-zero emission."""
        c = self._class_row[self.word_class(word, initial)]
        index, log_pc = self._state_index[c], self._log_pc_of[c]
        out = []
        for t, e in self.em.candidates(word, initial=initial):
            i = self.em._index[t]
            if index[i] < 0:  # impossible by construction; a corrupt model would get here
                raise ModelError(f"tag {t} was never seen on a {WORD_CLASSES[c]} word, yet "
                                 f"emits {word!r}")
            out.append((self.tags[index[i]], e - log_pc[i]))
        return tuple(out)

    def candidate_rows(self, words: Sequence[str], initial: Sequence[bool]
                       ) -> tuple[CandidateRows, np.ndarray]:
        """As `TnTEmissions.candidate_rows` (row j = `candidates(words[j], initial[j])`, bit
        for bit: the same subtraction of the same floats), over the states."""
        table, rows = self.em.candidate_rows(words, initial)
        mine = table.take(rows)
        cls = np.array([self._class_row[self.word_class(w, f)] for w, f in zip(words, initial)],
                       dtype=np.intp)
        entry_cls = np.repeat(cls, mine.widths)
        states = self._state_index[entry_cls, mine.tag]
        if len(states) and states.min() < 0:
            j = int(np.searchsorted(mine.offsets, int(np.argmin(states)), side="right")) - 1
            raise ModelError(f"a tag of {words[j]!r} was never seen on a word of its class")
        log_e = mine.log_emission - self._log_pc[entry_cls, mine.tag]
        return CandidateRows(mine.offsets, states, log_e), np.arange(len(words))

    def lattice(self, words: Sequence[str], beam: float | None = None) -> Lattice:
        """One position per word, candidates = the states with non-zero emission (as
        `TnTEmissions.lattice`, whose `beam` this takes)."""
        return emission_lattice(self.candidates, words, beam)

    def penn_tags(self, states: Sequence[str]) -> list[str]:
        """The tags of decoded states ("NNP^upper" -> "NNP")."""
        return [self._penn[s] for s in states]

    # ---- the word-level model, as TnTEmissions ------------------------------------------

    @property
    def capitalisation(self) -> bool:
        return True

    @property
    def vocabulary(self) -> frozenset[str]:
        return self.em.vocabulary

    def is_known(self, word: str) -> bool:
        return self.em.is_known(word)
