"""The approximate baselines (methods.approx), each correct in its limit, against brute force.

- beam search with width >= the number of LM states equals exact Viterbi (brute-force best);
  the score it reports is the exact ln p of the path it returns at every width;
- Gibbs sampling's empirical distribution converges: chi-square and total variation against
  the brute-force distribution at a fixed seed with enough sweeps;
- randomized forward DP is exact with enough kept states, and its Z estimate is unbiased
  on average (mean of Z_hat / Z within 4 standard errors of 1).
"""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

from ars_fixtures import make_lattice
from arsdecode.methods.approx import beam_search, gibbs, randomized_log_partition
from arsdecode.methods.full import full_log_partition
from arsdecode.testing.brute import brute_model, chi_square_pvalue

TIGHT = 1e-9


@pytest.mark.parametrize("which", range(8))
def test_beam_wide_is_exact(random_lms, which):
    model = random_lms[which]
    rng = random.Random(70 + which)
    for _ in range(8):
        lattice = make_lattice(rng, model, max_len=5, max_width=4)
        ref = brute_model(model.lm, lattice)
        wide = beam_search(model.lm, lattice, 10_000)
        assert abs(wide.log_p - ref.best_log_p) <= TIGHT, (model.name, lattice.to_json_obj())
        for width in (1, 2, 3):
            narrow = beam_search(model.lm, lattice, width)
            assert abs(narrow.log_p - ref.score(narrow.tokens)) <= TIGHT
            assert narrow.log_p <= ref.best_log_p + TIGHT


def test_beam_width_one_can_fail(random_lms):
    """Greedy search makes search errors somewhere on these models (the test has power)."""
    errors = 0
    rng = random.Random(3)
    for model in random_lms:
        for _ in range(10):
            lattice = make_lattice(rng, model, max_len=5, max_width=4, neg_inf=0.0)
            ref = brute_model(model.lm, lattice)
            errors += beam_search(model.lm, lattice, 1).log_p < ref.best_log_p - TIGHT
    assert errors > 0


def spread_lattice(rng, model):
    while True:
        lattice = make_lattice(rng, model, max_len=4, max_width=3, neg_inf=0.0)
        if lattice.num_paths() >= 8:
            dist = brute_model(model.lm, lattice).distribution()
            if max(dist.values()) < 0.6:
                return lattice, dist


@pytest.mark.parametrize("which", [1, 4, 6])
def test_gibbs_converges(random_lms, which):
    model = random_lms[which]
    lattice, dist = spread_lattice(random.Random(90 + which), model)
    r = gibbs(model.lm, lattice, 10_000, np.random.default_rng(1), burn_in=100)
    samples = [tuple(lattice.tokens[i][j] for i, j in enumerate(x)) for x in r.samples]
    counts = Counter(samples)
    tv = 0.5 * sum(abs(counts.get(p, 0) / len(samples) - q) for p, q in dist.items())
    assert tv < 0.06, tv
    # the chain is correlated, so thin it before the chi-square test of independent draws
    assert chi_square_pvalue(samples[::10], dist) > 0.001


@pytest.mark.parametrize("which", [2, 5, 7])
def test_randomized_dp_exact_and_unbiased(random_lms, which):
    model = random_lms[which]
    rng = random.Random(110 + which)
    lattice = make_lattice(rng, model, max_len=5, max_width=4, neg_inf=0.0)
    while lattice.num_paths() < 30 or len(lattice) < 3:  # several states per layer
        lattice = make_lattice(rng, model, max_len=5, max_width=4, neg_inf=0.0)
    exact = brute_model(model.lm, lattice).log_Z
    assert abs(full_log_partition(model.lm, lattice) - exact) <= TIGHT
    full = randomized_log_partition(model.lm, lattice, 10_000, 0, np.random.default_rng(0))
    assert abs(full - exact) <= 1e-9
    gen = np.random.default_rng(5)
    ratios = np.array([math.exp(randomized_log_partition(model.lm, lattice, 1, 1, gen) - exact)
                       for _ in range(400)])
    se = ratios.std(ddof=1) / math.sqrt(len(ratios))
    assert se > 0  # sampling happened
    assert abs(ratios.mean() - 1.0) <= 4 * se + 1e-12, (ratios.mean(), se)
