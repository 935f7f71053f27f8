"""The public references of arsdecode.testing checked against each other and the engine.

Why: tests, bench and experiments (and users) take these as ground truth, so each is checked
against an independent one: the readable reference ARS against brute force and against
`methods.ars.decode` (same optimum, same iterations: bench/bench_sms_decode.py relies on the
latter); `brute_target` (a `TargetModel`'s `log_prob`) against `brute_model` (scalar
`Model.log10p`); the random ARPA generator for reproducibility and validity; the textbook model
for refusing what it cannot read.
"""

from __future__ import annotations

import random

import pytest

import ars_fixtures
import maxarpa
from ars_fixtures import make_lattice
from arsdecode.core.tolerances import CERTIFICATE_TOL
from arsdecode.errors import NoPathError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.methods.ars import decode
from arsdecode.testing import reference_ars
from arsdecode.testing.brute import brute_model, brute_target
from arsdecode.testing.random_arpa import random_arpa_text
from arsdecode.testing.reference_arpa import RefArpaError, parse_arpa, ref_log10p
from maxarpa.model import Model


def reference_decode(lm: Model, lattice: Lattice) -> reference_ars.RefResult:
    return reference_ars.decode(reference_ars.DictLM(lm), lattice.tokens,
                                [e.tolist() for e in lattice.log_emissions])


def test_reference_ars_is_exact_and_agrees_with_the_engine(random_lms, real_lms):
    rng = random.Random(404)
    checked = 0
    for model in [*random_lms, real_lms[4]]:
        for _ in range(6):
            lattice = make_lattice(rng, model, neg_inf=0.0)
            ref = brute_model(model.lm, lattice)
            got = reference_decode(model.lm, lattice)
            where = (model.name, lattice.to_json_obj())
            assert abs(got.log_p - ref.best_log_p) <= CERTIFICATE_TOL, where
            assert tuple(got.tokens) in ref.near_best(CERTIFICATE_TOL), where
            assert got.log_q - got.log_p <= CERTIFICATE_TOL, where
            engine = decode(model.lm, lattice)
            assert abs(engine.log_p - got.log_p) <= CERTIFICATE_TOL, where
            assert engine.iterations == got.iterations, where
            checked += 1
    assert checked == 6 * (len(random_lms) + 1)


def test_reference_ars_refuses_a_lattice_without_a_path(tmp_path):
    path = tmp_path / "imp.arpa"
    path.write_text(ars_fixtures.IMPOSSIBLE_ARPA)
    with pytest.raises(NoPathError):
        reference_decode(maxarpa.load(path), Lattice.from_lists([[("a", 0.0)]]))


def test_brute_target_equals_brute_model(random_lms, real_lms):
    rng = random.Random(405)
    for model in [*random_lms, real_lms[3]]:
        for _ in range(4):
            lattice = make_lattice(rng, model)
            by_target = brute_target(model.lm, lattice)
            by_model = brute_model(model.lm, lattice)
            assert by_target.paths == by_model.paths
            for a, b in zip(by_target.log_p, by_model.log_p, strict=True):
                assert a == b or abs(a - b) <= CERTIFICATE_TOL, (model.name, a, b)


def test_random_arpa_is_seeded_and_readable(tmp_path):
    text = random_arpa_text(7, 4, 4, 0.5, True, neg_inf_fraction=0.1)
    assert random_arpa_text(random.Random(7), 4, 4, 0.5, True, neg_inf_fraction=0.1) == text
    assert random_arpa_text(8, 4, 4, 0.5, True, neg_inf_fraction=0.1) != text
    path = tmp_path / "r.arpa"
    path.write_text(text)
    lm, ref = maxarpa.load(path), parse_arpa(text)
    assert lm.counts == ref.counts
    for w in ref.vocab:
        assert lm.log10p(w, ["<s>"]) == pytest.approx(ref_log10p(ref, w, ["<s>"]), abs=1e-12)
    with pytest.raises(OptionError):
        random_arpa_text(1, 0, 3)


def test_reference_arpa_refuses_a_line_it_cannot_read():
    text = random_arpa_text(3, 2, 2)
    head, rest = text.split("\\2-grams:\n", 1)
    with pytest.raises(RefArpaError):
        parse_arpa(head + "\\2-grams:\n-0.5\tw0\n" + rest)  # one word in a 2-gram section
