"""Posterior marginals with Wilson intervals (arsdecode.methods.marginals) against brute force.

Coverage: on enumerable lattices, the exact marginal of every (position, candidate) must lie
in its 95% interval at about the stated rate. Measured over 200 seeds (N = 100 exact samples
each); the test asserts >= 92% pooled coverage, a threshold a correct 95% interval passes and
a Wald interval (or a biased sampler) fails on these peaked posteriors.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys

import pytest

import arsdecode
from ars_fixtures import make_lattice
from arsdecode.methods.ars import sample
from arsdecode.methods.marginals import marginal_dicts, marginals_from_samples, wilson
from arsdecode.testing.brute import brute_model


def exact_marginals(ref, lattice) -> list[dict[str, float]]:
    dist = ref.distribution()
    out = [dict.fromkeys(toks, 0.0) for toks in lattice.tokens]
    for path, prob in dist.items():
        for i, t in enumerate(path):
            out[i][t] += prob
    return out


def test_wilson_known_values():
    lo, hi = wilson(0, 100)
    assert lo == 0.0 and abs(hi - 0.0370) < 1e-3  # about 3.84 / (100 + 3.84)
    lo, hi = wilson(50, 100)
    assert abs(lo - 0.4038) < 1e-3 and abs(hi - 0.5962) < 1e-3
    assert wilson(7, 7)[1] == 1.0


def test_coverage_200_seeds(random_lms):
    model = random_lms[4]
    rng = random.Random(2024)
    lattices = []
    while len(lattices) < 4:
        lat = make_lattice(rng, model, max_len=4, max_width=3, neg_inf=0.0)
        if lat.num_paths() >= 8:
            lattices.append((lat, exact_marginals(brute_model(model.lm, lat), lat)))
    hits = total = 0
    for seed in range(200):
        lat, exact = lattices[seed % len(lattices)]
        r = sample(model.lm, lat, 100, seed=seed)
        marg = marginals_from_samples(r.samples, lat)
        for i, pos in enumerate(marg):
            assert [m.p for m in pos] == sorted((m.p for m in pos), reverse=True)
            assert abs(sum(m.p for m in pos) - 1.0) < 1e-12
            for m in pos:
                total += 1
                hits += m.lo - 1e-12 <= exact[i][m.token] <= m.hi + 1e-12
    coverage = hits / total
    print(f"marginal coverage {coverage:.4f} over {total} (position, token) pairs")
    assert coverage >= 0.92, coverage


def test_marginal_dicts_and_order():
    samples = [["a", "x"], ["b", "x"], ["b", "y"]]
    assert marginal_dicts(samples) == [{"b": 2 / 3, "a": 1 / 3}, {"x": 2 / 3, "y": 1 / 3}]
    assert list(marginal_dicts(samples)[0]) == ["b", "a"]


def test_cli_marginals(random_lms, tmp_path):
    model = random_lms[2]
    lat = make_lattice(random.Random(1), model, max_len=4, max_width=3, neg_inf=0.0)
    f = tmp_path / "lat.json"
    f.write_text(json.dumps(lat.to_json_obj()))
    cmd = [sys.executable, "-m", "arsdecode", "marginals", "--lm", str(model.path),
           "--lattice", str(f), "--method", "sample", "-n", "300", "--seed", "3", "--json"]
    out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    assert set(out) >= {"marginals", "log_Z", "log_Z_ci", "samples"} and out["exact"] is False
    assert len(out["samples"]) == 300 and len(out["marginals"]) == len(lat)
    exact = exact_marginals(brute_model(model.lm, lat), lat)
    for i, pos in enumerate(out["marginals"]):
        ps = [row[1] for row in pos]
        assert ps == sorted(ps, reverse=True)
        for tok, p, lo, hi in pos:
            assert lo <= p <= hi and abs(p - exact[i][tok]) < 0.15
    lo, hi = out["log_Z_ci"]
    assert lo <= out["log_Z"] <= hi and math.isfinite(out["log_Z"])
    # The front door computes what the command prints (same seed, same defaults).
    api = arsdecode.marginals(model.lm, lat, 300, seed=3, all_candidates=False,
                              method="sample").to_json()
    assert set(api) == set(out)
    assert json.loads(json.dumps({k: v for k, v in api.items() if k != "timing"})) == \
        {k: v for k, v in out.items() if k != "timing"}
    with pytest.raises(arsdecode.OptionError):
        arsdecode.marginals(model.lm, lat, 0)
    bad = subprocess.run(cmd[:-3] + ["-n", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
