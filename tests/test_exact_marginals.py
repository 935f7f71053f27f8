"""Exact posterior marginals and ln Z by forward-backward over the merged full-model states
(`arsdecode.methods.full.full_marginals`), and `marginals(method="auto"|"full"|"sample")`.

Reference: `arsdecode.testing.brute`, which scores every path of a small lattice on its own
(no dynamic program, no state merging); its marginals are exp(log_p - ln Z) summed per
(position, token). Agreement is to 1e-9: both sides sum the same float64 terms in different
orders. Models: random ARPA models with positive backoffs (the case where merging contexts is
subtle), lmplz models on real text, and `ToyTrigram` (a TargetModel that is not a maxarpa model,
from tests/test_toy_target.py), each with both merged and literal (`minimize=False`) states.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys

import numpy as np
import pytest
from test_toy_target import ToyTrigram, random_lattice

import arsdecode
from ars_fixtures import make_lattice
from arsdecode.cli import options
from arsdecode.errors import NoPathError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.methods import dispatch
from arsdecode.methods.full import StatesBudgetExceeded, full_log_partition, full_marginals
from arsdecode.methods.marginals import posterior_marginals
from arsdecode.testing.brute import BruteResult, brute_model, brute_target

TIGHT = 1e-9


def brute_marginals(ref: BruteResult, lattice: Lattice) -> list[np.ndarray]:
    """Per position, per candidate index: the exact posterior, by enumeration."""
    out = [np.zeros(len(t)) for t in lattice.tokens]
    for path, prob in ref.distribution().items():
        for i, tok in enumerate(path):
            out[i][lattice.tokens[i].index(tok)] += prob
    return out


def check(lm, lattice: Lattice, ref: BruteResult) -> bool:
    """full_marginals (merged and literal states) against brute force; False if no path."""
    if ref.log_Z == -math.inf:
        with pytest.raises(NoPathError):
            full_marginals(lm, lattice)
        return False
    want = brute_marginals(ref, lattice)
    for minimize in (True, False):
        probs, log_z = full_marginals(lm, lattice, minimize=minimize)
        assert abs(log_z - ref.log_Z) <= TIGHT * max(1.0, abs(ref.log_Z)), (log_z, ref.log_Z)
        assert abs(log_z - full_log_partition(lm, lattice, minimize=minimize)) <= TIGHT
        assert len(probs) == len(lattice)
        for i, (got, exp) in enumerate(zip(probs, want, strict=True)):
            assert got.shape == exp.shape
            assert np.max(np.abs(got - exp)) <= TIGHT, (i, got, exp, lattice.to_json_obj())
            assert abs(got.sum() - 1.0) <= TIGHT
            emis = np.asarray(lattice.log_emissions[i])
            assert np.all(got[emis == -np.inf] == 0.0)
    return True


def test_random_positive_backoff_models(random_lms):
    rng = random.Random(23)
    checked = 0
    for model in random_lms:
        assert model.lm.positive_backoffs > 0
        for _ in range(10):
            lattice = make_lattice(rng, model, extra_words=["zzunseen"])
            checked += check(model.lm, lattice, brute_model(model.lm, lattice))
    assert checked >= 5 * len(random_lms)


@pytest.mark.parametrize("order", [3, 5])
def test_real_models(real_lms, order):
    model = real_lms[order]
    rng = random.Random(230 + order)
    checked = 0
    for _ in range(8):
        lattice = make_lattice(rng, model, extra_words=["zzunseen"])
        checked += check(model.lm, lattice, brute_model(model.lm, lattice))
    assert checked >= 4


def test_a_target_that_is_not_a_maxarpa_model():
    rng = random.Random(7)
    checked = 0
    for seed in range(3):
        toy = ToyTrigram(seed)
        for _ in range(10):
            lattice = random_lattice(rng)
            checked += check(toy, lattice, brute_target(toy, lattice))
            if checked and seed == 0:  # also through the front door
                r = arsdecode.marginals(toy, lattice, method="full")
                assert r.exact and r.draws is None
    assert checked >= 20


def test_api_exact_result(random_lms):
    model = random_lms[4]
    rng = random.Random(5)
    lattice = make_lattice(rng, model, max_len=4, max_width=3, neg_inf=0.0)
    ref = brute_model(model.lm, lattice)
    want = brute_marginals(ref, lattice)
    for method in ("full", "auto"):
        r = arsdecode.marginals(model.lm, lattice, method=method)
        assert r.exact and r.draws is None
        assert abs(r.log_Z - ref.log_Z) <= TIGHT and r.log_Z_ci == (r.log_Z, r.log_Z)
        for i, pos in enumerate(r.marginals):
            assert sorted(m.token for m in pos) == sorted(set(lattice.tokens[i]))
            assert [m.p for m in pos] == sorted((m.p for m in pos), reverse=True)
            for m in pos:
                assert m.lo == m.p == m.hi  # zero-width interval
                assert abs(m.p - want[i][lattice.tokens[i].index(m.token)]) <= TIGHT
        js = r.to_json()
        assert js["exact"] is True and js["samples"] == [] and js["log_Z_ci"] == [r.log_Z] * 2
    sampled = arsdecode.marginals(model.lm, lattice, 50, seed=1, method="sample")
    assert not sampled.exact and sampled.to_json()["exact"] is False
    assert len(sampled.draws.samples) == 50


def test_all_candidates_false_drops_zero_probability_tokens():
    lattice = Lattice.from_lists([[("a", 0.0), ("b", -math.inf)], [("c", -1.0), ("d", -0.5)]])
    toy = ToyTrigram(0)
    r = posterior_marginals(toy, lattice, 1, method="full", all_candidates=False)
    assert [m.token for m in r.marginals[0]] == ["a"]
    full = posterior_marginals(toy, lattice, 1, method="full")
    assert {m.token: m.p for m in full.marginals[0]} == {"a": 1.0, "b": 0.0}


def test_auto_samples_past_the_budget(random_lms, monkeypatch):
    model = random_lms[5]
    rng = random.Random(9)
    lattice = make_lattice(rng, model, max_len=4, max_width=3, neg_inf=0.0)
    assert arsdecode.marginals(model.lm, lattice, 20, seed=0).exact  # default auto, in budget
    monkeypatch.setattr(dispatch, "MARGINALS_FULL_STATES", 1)  # the numpy DP's budget
    monkeypatch.setattr(dispatch, "memory_pairs_budget", lambda: 1)  # the compiled DP's
    with pytest.raises(StatesBudgetExceeded):
        full_marginals(model.lm, lattice, max_states=1)
    r = arsdecode.marginals(model.lm, lattice, 20, seed=0)
    assert not r.exact and len(r.draws.samples) == 20
    # ... and the sampled path is the one method="sample" takes, draw for draw
    s = arsdecode.marginals(model.lm, lattice, 20, seed=0, method="sample")
    assert r.draws.samples == s.draws.samples and r.log_Z == s.log_Z
    assert arsdecode.marginals(model.lm, lattice, 20, method="full").exact  # full: no budget


def test_unknown_method():
    toy = ToyTrigram(0)
    lattice = Lattice.from_lists([[("a", 0.0)]])
    with pytest.raises(OptionError):
        arsdecode.marginals(toy, lattice, method="ars")  # type: ignore[arg-type]
    assert options.MARGINALS_METHODS == dispatch.MARGINALS_METHODS


def test_cli_json_has_exact(random_lms, tmp_path):
    model = random_lms[2]
    rng = random.Random(3)
    lattice = make_lattice(rng, model, max_len=4, max_width=3, neg_inf=0.0)
    ref = brute_model(model.lm, lattice)
    want = brute_marginals(ref, lattice)
    path = tmp_path / "lat.json"
    path.write_text(json.dumps(lattice.to_json_obj()))
    base = [sys.executable, "-m", "arsdecode", "marginals", "--lm", str(model.path),
            "--lattice", str(path), "--json"]
    for extra in (["--method", "full"], []):
        out = json.loads(subprocess.run(base + extra, capture_output=True, text=True,
                                        check=True).stdout)
        assert out["exact"] is True and out["samples"] == []
        assert abs(out["log_Z"] - ref.log_Z) <= TIGHT
        for i, pos in enumerate(out["marginals"]):
            for tok, p, lo, hi in pos:
                assert lo == p == hi
                assert abs(p - want[i][lattice.tokens[i].index(tok)]) <= TIGHT
    out = json.loads(subprocess.run(base + ["--method", "sample", "-n", "30", "--seed", "1"],
                                    capture_output=True, text=True, check=True).stdout)
    assert out["exact"] is False and len(out["samples"]) == 30
    text = subprocess.run(base[:-1] + ["--method", "full"], capture_output=True, text=True,
                          check=True).stdout
    assert "exact log_Z=" in text
