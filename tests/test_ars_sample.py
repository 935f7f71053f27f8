"""Exact sampling by ARS (methods.ars.sample) against the exact distribution of small lattices.

The exact p(x)/Z comes from brute-force enumeration (arsdecode.testing.brute). ARS's accepted
samples must fit it (chi-square on 10k samples at a fixed seed), its estimate of ln Z must be
covered by its confidence interval, its bookkeeping (trials, acceptance rate, trace) must be
consistent, and the same seed must give the same output.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

import ars_fixtures
import maxarpa
from ars_fixtures import make_lattice
from arsdecode.lattice import Lattice
from arsdecode.methods.ars import sample
from arsdecode.methods.full import full_log_partition
from arsdecode.testing.brute import brute_model, chi_square_pvalue

TIGHT = 1e-9
N = 10_000


def spread_lattice(rng: random.Random, model, *, min_paths: int = 12, max_len: int = 4):
    """A lattice whose distribution is not concentrated on one path (so the test has power)."""
    while True:
        lattice = make_lattice(rng, model, max_len=max_len, neg_inf=0.4)
        if lattice.num_paths() < min_paths:
            continue
        dist = brute_model(model.lm, lattice).distribution()
        if max(dist.values()) < 0.7:
            return lattice


def check_result(model, lattice, r, n: int) -> None:
    ref = brute_model(model.lm, lattice)
    where = (model.name, lattice.to_json_obj())
    assert len(r.samples) == len(r.log_p) == n, where
    for toks, lp in zip(r.samples, r.log_p, strict=True):
        assert abs(ref.score(toks) - lp) <= TIGHT, (where, toks, lp, ref.score(toks))
    t = r.trace
    assert r.trials == len(t.ratios) == len(t.accepted) == len(t.states) >= n, where
    assert sum(t.accepted) == n, where
    assert abs(r.acceptance_rate - n / r.trials) <= 1e-12, where
    assert all(0.0 <= x <= 1.0 + 1e-9 for x in t.ratios), (where, "p/q > 1: q is not a bound")
    assert all(b >= a for a, b in zip(t.states, t.states[1:], strict=False)), where
    lo, hi = r.log_Z_ci
    assert lo <= r.log_Z <= hi, (where, r.log_Z, r.log_Z_ci)


CASES = [("real3", "all-edges"), ("real4", "paper"), ("real5", "all-edges"), ("rand2", "all-edges"),
         ("rand5", "paper"), ("rand7", "all-edges")]
_RUNS: dict[tuple[str, str], tuple] = {}


def run_case(real_lms, random_lms, which: str, variant: str):
    """(model, lattice, exact reference, 10k-sample result), computed once per case."""
    if (which, variant) not in _RUNS:
        idx = int(which[4:])
        model = real_lms[idx] if which.startswith("real") else random_lms[idx]
        lattice = spread_lattice(random.Random(100 + idx + len(variant)), model)
        r = sample(model.lm, lattice, N, 1234, variant=variant)
        _RUNS[(which, variant)] = (model, lattice, brute_model(model.lm, lattice), r)
    return _RUNS[(which, variant)]


@pytest.mark.parametrize("which,variant", CASES)
def test_sample_chi_square(real_lms, random_lms, which, variant):
    model, lattice, ref, r = run_case(real_lms, random_lms, which, variant)
    check_result(model, lattice, r, N)
    pvalue = chi_square_pvalue(r.samples, ref.distribution())
    assert pvalue > 0.001, (model.name, variant, lattice.to_json_obj(), pvalue)
    assert abs(full_log_partition(model.lm, lattice) - ref.log_Z) <= TIGHT


@pytest.mark.parametrize("which,variant", CASES)
def test_sample_log_z_interval_covers_exact(real_lms, random_lms, which, variant):
    model, lattice, ref, r = run_case(real_lms, random_lms, which, variant)
    lo, hi = r.log_Z_ci
    where = (model.name, variant, lattice.to_json_obj())
    assert lo <= ref.log_Z <= hi, (where, "CI misses exact ln Z", r.log_Z, r.log_Z_ci, ref.log_Z)


def test_log_z_interval_coverage(real_lms, random_lms):
    """Over many short runs the 95% interval covers the exact ln Z most of the time."""
    rng = random.Random(3)
    hits = runs = 0
    for model in [real_lms[3], real_lms[4], random_lms[1], random_lms[6]]:
        for k in range(5):
            lattice = make_lattice(rng, model, max_len=4)
            log_z = brute_model(model.lm, lattice).log_Z
            if log_z == -math.inf:
                continue
            r = sample(model.lm, lattice, 300, 50 + k)
            runs += 1
            hits += r.log_Z_ci[0] <= log_z <= r.log_Z_ci[1]
    assert runs >= 15 and hits >= 0.75 * runs, (hits, runs)


def test_same_seed_same_output(real_lms):
    model = real_lms[4]
    lattice = spread_lattice(random.Random(9), model)
    a = sample(model.lm, lattice, 400, 77)
    b = sample(model.lm, lattice, 400, 77)
    assert (a.samples, a.log_p, a.trials, a.acceptance_rate, a.log_Z, a.log_Z_ci) == (
        b.samples, b.log_p, b.trials, b.acceptance_rate, b.log_Z, b.log_Z_ci)
    assert a.trace.ratios == b.trace.ratios and a.trace.accepted == b.trace.accepted
    c = sample(model.lm, lattice, 400, 78)
    assert c.samples != a.samples


def test_paper_variant_and_batch_options(random_lms):
    model = random_lms[4]
    lattice = spread_lattice(random.Random(11), model, min_paths=8)
    for kwargs in (dict(batch=1), dict(batch=10, target_ar=0.9, ar_window=20),
                   dict(variant="paper", batch=3)):
        r = sample(model.lm, lattice, 200, 5, **kwargs)
        check_result(model, lattice, r, 200)


def test_zero_samples_and_single_path(random_lms):
    model = random_lms[0]
    lattice = make_lattice(random.Random(1), model, max_len=3)
    r = sample(model.lm, lattice, 0, 1)
    assert r.samples == [] and r.log_p == []
    one = type(lattice).from_lists([[(model.words[0], -0.3)], [(model.words[1], 0.0)]])
    r = sample(model.lm, one, 50, 1)
    assert r.samples == [[model.words[0], model.words[1]]] * 50
    exact = brute_model(model.lm, one).log_Z
    assert all(abs(lp - exact) <= TIGHT for lp in r.log_p)
    assert np.isfinite(r.log_Z)


def test_impossible_paths_are_never_accepted(tmp_path):
    """If every path has p = 0 there is nothing to sample: never return a p = 0 'sample'."""
    path = tmp_path / "impossible.arpa"
    path.write_text(ars_fixtures.IMPOSSIBLE_ARPA)
    lm = maxarpa.load(path)
    lattice = Lattice.from_lists([[("a", 0.0)], [("a", -1.0), ("zz", -2.0)]])
    assert brute_model(lm, lattice).log_Z == -math.inf
    try:
        r = sample(lm, lattice, 5, 1, max_trials=500)
    except ValueError:
        return
    assert all(lp > -math.inf for lp in r.log_p), (r.samples, r.log_p)
    assert not math.isnan(r.log_Z), r.log_Z
