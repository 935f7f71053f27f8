"""Which words of a sentence get the sentence-initial rule: the first, or all in a headline.

Why: the emission models read an unknown capitalised word whose lower-cased form is known as
that known word when its capital says nothing about it (`TnTEmissions`' sentence-initial rule;
`CapEmissions` then also gives it the lower-case state). That is so of the first word, and
of every word of a sentence in title case or in capitals ("JUDGE REJECTS THE PLEA", "The Fulton
County Grand Jury Said Friday"): there a capital is the typography, not a proper noun.
Without this, such a sentence out of domain came out as a string of NNP: the capitalised
states' tag LM, trained on EWT, where capitalised states are mostly proper nouns, pushed every
word there, and the closed-class rule kept unknown "THE" or "Of" from DT and IN (issue 29 G:
upper-cased Brown dev 82.6% with plain states, 78.8% with the capitalised ones, TnT 79.3%).
"""

from __future__ import annotations

from collections.abc import Sequence

MIN_CASED_WORDS = 2  # one capitalised word alone is a sentence-initial word, nothing more


def case_blind(words: Sequence[str]) -> bool:
    """Whether every word with a cased letter starts with a capital, and there are at least
    MIN_CASED_WORDS of them: a headline, a title or text in capitals."""
    cased = 0
    for w in words:
        if w.lower() != w.upper():  # has a cased letter
            if not w[:1].isupper():
                return False
            cased += 1
    return cased >= MIN_CASED_WORDS


def initial_flags(words: Sequence[str]) -> list[bool]:
    """Per word, whether its capital carries no information: the first word, or every word
    of a `case_blind` sentence. The emission models' `initial` argument."""
    if case_blind(words):
        return [True] * len(words)
    return [i == 0 for i in range(len(words))]
