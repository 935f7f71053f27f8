"""Headlines and text in capitals: every word gets the sentence-initial rule (issue 29 G).

Out of domain the shipped tagger (capitalised states, closed-class suffix rule) read a sentence
in capitals or title case as a string of proper nouns; `tasks.pos.initial` reads every word of
such a sentence as a sentence-initial word (an unknown capitalised word whose lower-cased form
is known is that word). Checked on the shipped model, through both decoding paths.
"""

from __future__ import annotations

import pytest

from arsdecode.methods.ars import decode
from arsdecode.tasks.pos.initial import case_blind, initial_flags
from arsdecode.tasks.pos.models import load_models
from arsdecode.tasks.pos.tag_many import tag_many


@pytest.mark.parametrize(("words", "blind"), [
    ("THE UNIT WAS SOLD .", True),
    ("Senate Approves Budget , 52-48", True),
    ("He visited Munich yesterday .", False),
    ("NASA said so", False),
    ("I .", False),  # one cased word: only a sentence-initial word
    ("`` 1990 ''", False),
])
def test_case_blind_sentences(words, blind):
    ws = words.split()
    assert case_blind(ws) is blind
    assert initial_flags(ws) == ([True] * len(ws) if blind else [i == 0 for i in range(len(ws))])


# Each word starred here is unknown to the shipped model in this spelling, its lower-case form
# known. Before, they came out WHEREAS/NNS, THEMSELVES/VBZ, SPOKEN/NN and Approves/NNP.
CASES = [
    ("BUT WHEREAS THE BANKS THEMSELVES REMAIN SILENT , THEIR RIVALS HAVE SPOKEN .",
     {1: "IN", 4: "PRP", 11: "VBN"}),
    ("Senate Approves Budget Despite Objections From Its Members", {1: "VBZ"}),
]


@pytest.mark.parametrize(("sentence", "expected"), CASES)
def test_shipped_tagger_reads_capitals_of_a_headline_as_typography(sentence, expected):
    lm, em = load_models(None, None)
    words = sentence.split()
    assert all(not em.is_known(words[i]) and em.is_known(words[i].lower()) for i in expected)
    tags = em.penn_tags(tag_many(lm, em, [words], method="full").tags[0])
    assert {i: tags[i] for i in expected} == expected
    r = decode(lm, em.lattice(words))  # the per-sentence lattice applies the same rule
    assert r.certified and em.penn_tags(list(r.tokens)) == tags
