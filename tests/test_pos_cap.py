"""The capitalised-state POS model of experiments/pos_cap.py (issue 13's fix for n = 2).

Checked: p(w | t, c) sums to 1 over the words of class c for every (t, c) state (known words
plus the unseen-word mass), and decoding it with tag_many equals the full-model DP and ARS.
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from arsdecode.ars import decode
from arsdecode.full import full_decode
from arsdecode.tag_fast import tag_many
from arsdecode.tasks.pos import TnTEmissions
from maxarpa.model import Model

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from pos_cap import CapEmissions, build_cap_lms, strip  # noqa: E402

TRAIN = [
    [("The", "DT"), ("dog", "NN"), ("barked", "VBD"), (".", ".")],
    [("A", "DT"), ("cat", "NN"), ("sat", "VBD"), ("down", "RB"), (".", ".")],
    [("Rex", "NNP"), ("saw", "VBD"), ("the", "DT"), ("Cat", "NNP"), (".", ".")],
    [("Paris", "NNP"), ("is", "VBZ"), ("big", "JJ"), (".", ".")],
    [("the", "DT"), ("big", "JJ"), ("dog", "NN"), ("ran", "VBD"), ("Down", "RB"), (".", ".")],
] * 2 + [[("Zork", "NNP"), ("left", "VBD"), ("quickly", "RB"), (".", ".")]]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    em = TnTEmissions.train(TRAIN)
    out = tmp_path_factory.mktemp("cap")
    build_cap_lms(TRAIN, out, [2, 3])
    return em, CapEmissions(em, TRAIN), {n: Model.load(out / f"tags.{n}.maxarpa") for n in (2, 3)}


def test_cap_emissions_sum_to_one_within_each_class(model):
    em, ce, _ = model
    total: dict[str, float] = defaultdict(float)
    for w in em.vocabulary:
        for state, lp in ce.candidates(w):
            total[state] += math.exp(lp)
    for (t, c), p in ce.p_class.items():
        total[f"{t}^{c}"] += em.unknown_class_mass("A" if c == "upper" else "a")[t] / p
    assert set(total) == set(ce.tags)
    for state, mass in total.items():
        assert mass == pytest.approx(1.0, abs=1e-12), state


@pytest.mark.parametrize("order", [2, 3])
def test_cap_model_decodes_exactly(model, order):
    _, ce, lms = model
    lm = lms[order]
    sents = [["The", "cat", "barked", "."], ["Rex", "sat", "Down", "quickly", "."],
             ["Qwerty", "is", "blorfy", "."], ["Dog", "saw", "Paris", "."]]
    res = tag_many(lm, ce, sents, method="full")
    for i, words in enumerate(sents):
        lattice = ce.lattice(words)
        full = full_decode(lm, lattice)
        ars = decode(lm, lattice)
        assert ars.certified
        assert res.log_p[i] == pytest.approx(full.log_p, abs=1e-9)
        assert ars.log_p == pytest.approx(full.log_p, abs=1e-9)
        assert res.tags[i] == list(full.tokens)
        assert all(s.endswith("^upper") == w[0].isupper() or i == 3 and j == 0
                   for j, (s, w) in enumerate(zip(full.tokens, words, strict=True)))
    assert strip(["NN^lower", "NNP^upper"]) == ["NN", "NNP"]
