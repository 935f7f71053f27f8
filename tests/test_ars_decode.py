"""Exact decoding by ARS (arsdecode.methods.ars.decode) against brute force and the full model.

The optimum must be the true argmax of p: its log p equals the brute-force best (scored path by
path with `Model.log10p` to 1e-9, and with KenLM to its float32 precision), its tokens are the
brute-force argmax unless there is a tie, and it agrees with the full model's Viterbi. Both
refinement variants, on lmplz-trained 3/4/5-gram models and on random models whose positive
backoffs make naive bounds wrong.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from ars_fixtures import make_lattice, random_lm_with_options
from arsdecode.lattice import Lattice
from arsdecode.methods.ars import decode
from arsdecode.methods.full import full_decode
from arsdecode.testing.brute import brute_kenlm, brute_model

TIGHT = 1e-9
KENLM_TOL = 1e-4  # KenLM keeps float32 probabilities
VARIANTS = ["all-edges", "paper"]


def check_decode(model, lattice: Lattice, variant: str, *, kenlm_too: bool = True) -> None:
    ref = brute_model(model.lm, lattice)
    where = (model.name, variant, lattice.to_json_obj())
    if ref.best_log_p == -math.inf:
        return  # every path impossible: no optimum to check
    r = decode(model.lm, lattice, variant=variant)
    assert abs(r.log_p - ref.best_log_p) <= TIGHT, (where, r.tokens, r.log_p, ref.best_log_p)
    assert tuple(r.tokens) in ref.near_best(TIGHT), (where, r.tokens, ref.best)
    assert abs(ref.score(r.tokens) - r.log_p) <= TIGHT, (where, r.tokens)
    assert r.log_q >= r.log_p - TIGHT and r.log_q - r.log_p <= TIGHT, (where, r.log_q, r.log_p)
    assert getattr(r, "certified", True), where
    full = full_decode(model.lm, lattice)
    assert abs(full.log_p - r.log_p) <= TIGHT, (where, full, r)
    # The trace: one entry per iteration, ends on the certificate, q(x*) never increases.
    assert len(r.trace) == r.iterations >= 1, where
    assert r.trace[-1] == pytest.approx((r.log_q, r.log_p), abs=TIGHT), where
    qs = [q for q, _ in r.trace]
    assert all(b <= a + TIGHT for a, b in zip(qs, qs[1:], strict=False)), (where, qs)
    assert all(q >= p - TIGHT for q, p in r.trace), (where, r.trace)
    assert r.states >= len(lattice) + 1, where
    assert isinstance(r.ngrams_by_order, dict) and all(
        1 <= k <= model.lm.order and v >= 0 for k, v in r.ngrams_by_order.items()
    ), (where, r.ngrams_by_order)
    assert r.seconds >= 0
    if kenlm_too and model.km is not None:
        kref = brute_kenlm(model.km, lattice)
        assert abs(r.log_p - kref.best_log_p) <= KENLM_TOL, (where, r.log_p, kref.best_log_p)
        assert kref.score(r.tokens) >= kref.best_log_p - KENLM_TOL, (where, r.tokens, kref.best)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("order", [3, 4, 5])
def test_decode_matches_brute_force_on_real_models(real_lms, order, variant):
    model = real_lms[order]
    rng = random.Random(2000 + order)
    for _ in range(15):
        check_decode(model, make_lattice(rng, model, extra_words=["zzunseen"]), variant)


@pytest.mark.parametrize("variant", VARIANTS)
def test_decode_matches_brute_force_on_positive_backoff_models(random_lms, variant):
    rng = random.Random(31)
    for model in random_lms:
        for _ in range(10):
            check_decode(model, make_lattice(rng, model), variant)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("seed", range(6))
def test_decode_matches_brute_force_on_odd_models(tmp_path, seed, variant):
    """Missing prefix contexts (IRSTLM style) and -inf probabilities."""
    rng = random.Random(seed)
    model = random_lm_with_options(
        tmp_path, 700 + seed, drop_prefix_contexts=seed % 2 == 0, density=0.9,
        neg_inf_fraction=0.1 * (seed % 3),
    )
    for _ in range(8):
        check_decode(model, make_lattice(rng, model, max_width=3), variant, kenlm_too=False)


@pytest.mark.parametrize("variant", VARIANTS)
def test_decode_matches_full_model_on_longer_lattices(real_lms, variant):
    """Too many paths for brute force: 8 positions x 12 candidates on the 5-gram model."""
    model = real_lms[5]
    rng = random.Random(55)
    sentences = [s for s in model.sentences if len(s) >= 8]
    for _ in range(3):
        sent = rng.choice(sentences)[:8]
        positions = []
        for w in sent:
            toks = [w] + [t for t in rng.sample(model.words, 12) if t != w][:11]
            positions.append([(t, -2.0 * rng.random()) for t in toks])
        lattice = Lattice.from_lists(positions)
        r = decode(model.lm, lattice, variant=variant)
        full = full_decode(model.lm, lattice)
        assert abs(r.log_p - full.log_p) <= TIGHT, (variant, lattice.to_json_obj(), r, full)
        assert r.states < full.states


def test_decode_is_deterministic_and_variants_agree(real_lms):
    model = real_lms[4]
    rng = random.Random(77)
    for _ in range(5):
        lattice = make_lattice(rng, model)
        a = decode(model.lm, lattice)
        b = decode(model.lm, lattice)
        assert (a.tokens, a.log_p, a.iterations, a.states, a.trace) == (
            b.tokens, b.log_p, b.iterations, b.states, b.trace)
        c = decode(model.lm, lattice, variant="paper")
        assert abs(a.log_p - c.log_p) <= TIGHT


def test_max_iterations_stops_early(real_lms):
    model = real_lms[5]
    rng = random.Random(8)
    lattice = next(
        lat for lat in (make_lattice(rng, model, max_len=5, max_width=4) for _ in range(200))
        if decode(model.lm, lat).iterations >= 3
    )
    r = decode(model.lm, lattice, max_iterations=1)
    assert r.iterations == 1 and len(r.trace) == 1
    assert getattr(r, "certified", False) is False
    assert r.log_q >= r.log_p


def test_decode_single_path_and_unknown_words(random_lms):
    model = random_lms[1]
    lattice = Lattice.from_lists([[("never-seen", -0.5)], [(model.words[0], 0.0)]])
    r = decode(model.lm, lattice)
    ref = brute_model(model.lm, lattice)
    assert r.tokens == ["never-seen", model.words[0]]
    assert abs(r.log_p - ref.best_log_p) <= TIGHT
    assert np.isfinite(r.log_p)


def test_several_unknown_words_in_one_position(random_lms):
    """Distinct OOV tokens (and <unk> itself) share the LM id of <unk> but stay distinct paths."""
    model = random_lms[1]
    w = model.words
    lattice = Lattice.from_lists([
        [("oovA", -1.0), ("oovB", -0.5), ("<unk>", -0.2), (w[0], -1.0)],
        [("oovC", 0.0), (w[1], -2.0), ("oovA", -0.1)],
        [(w[2], -0.3), ("oovD", -0.4)],
    ])
    for variant in VARIANTS:
        check_decode(model, lattice, variant)
