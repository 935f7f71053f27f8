"""The semiring-generic dynamic program (dp.py, semiring.py) and long or extreme inputs.

- `LogSumExp` / `MaxPlus` against plain references, zero exactly -inf, no warnings;
- `dp.backward` on random layered automata against enumeration of every path;
- `draw_in_segments` against exact categorical probabilities (chi-square, fixed seed);
- issue 9 D: weights of -1e308 and -inf decode and sample without RuntimeWarnings, the log Z
  estimate stays in log space when trial normalisers span thousands of nats, and a length-500
  lattice decodes to the full DP's optimum.
"""

from __future__ import annotations

import itertools
import math
import random
import warnings

import numpy as np
import pytest
from scipy.stats import chisquare

from arsdecode.core import dp
from arsdecode.core.semiring import LogSumExp, MaxPlus, logsumexp
from arsdecode.lattice import Lattice
from arsdecode.methods import evidence
from arsdecode.methods.ars import decode, sample
from arsdecode.methods.full import full_decode, full_log_partition


def test_semiring_sums_and_zero():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 7)) * 50
    x[1] = -np.inf
    x[2, :3] = -np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lse = LogSumExp.sum(x, axis=1)
        mx = MaxPlus.sum(x, axis=1)
    for r in range(5):
        finite = x[r][np.isfinite(x[r])]
        want = math.log(sum(math.exp(v) for v in finite)) if len(finite) else -math.inf
        assert lse[r] == want or abs(lse[r] - want) <= 1e-12 * max(1, abs(want))
        assert mx[r] == x[r].max()
    assert lse[1] == -np.inf and LogSumExp.zero == -np.inf and MaxPlus.zero == -np.inf
    starts = np.array([0, 3, 4])
    flat = np.array([-1.0, -np.inf, 2.0, -np.inf, 0.5, 0.25])
    seg = LogSumExp.segment_sum(flat, starts)
    assert seg[1] == -np.inf
    assert abs(seg[2] - math.log(math.exp(0.5) + math.exp(0.25))) <= 1e-15
    assert list(MaxPlus.segment_sum(flat, starts)) == [2.0, -np.inf, 0.5]
    assert logsumexp(np.array([])) == -np.inf
    assert logsumexp(np.array([-1e308, -1e308])) == -1e308 + math.log(2)


def random_layers(rng: np.random.Generator, widths: list[int], states: list[int]):
    weights, targets = [], []
    for i, w in enumerate(widths):
        W = rng.normal(size=(states[i], w))
        W[rng.random(W.shape) < 0.2] = -np.inf
        weights.append(W)
        targets.append(rng.integers(0, states[i + 1], size=(states[i], w)).astype(np.int32))
    final = rng.normal(size=states[-1])
    return weights, targets, final


def random_case(rng: np.random.Generator):
    """1-4 layers of 1-3 candidates and 1-3 states (one at layer 0): widths, states and
    `random_layers`' arrays."""
    L = int(rng.integers(1, 5))
    widths = [int(rng.integers(1, 4)) for _ in range(L)]
    states = [1] + [int(rng.integers(1, 4)) for _ in range(L)]
    return widths, states, *random_layers(rng, widths, states)


def enumerate_paths(weights, targets, final):
    out = {}
    for path in itertools.product(*(range(W.shape[1]) for W in weights)):
        s, total = 0, 0.0
        for i, j in enumerate(path):
            total += weights[i][s, j]
            s = targets[i][s, j]
        out[path] = total + final[s]
    return out


def test_backward_sweep_equals_enumeration():
    rng = np.random.default_rng(1)
    for _ in range(20):
        _, _, weights, targets, final = random_case(rng)
        paths = enumerate_paths(weights, targets, final)
        vals = np.array(list(paths.values()))
        best = dp.backward(weights, targets, final, MaxPlus)
        total = dp.backward(weights, targets, final, LogSumExp)
        top = vals.max()  # sums in another order: equal up to rounding
        assert best[0][0] == top or abs(best[0][0] - top) <= 1e-12
        assert total[0][0] == logsumexp(vals) or abs(total[0][0] - logsumexp(vals)) <= 1e-12
        if top > -np.inf:
            idx = dp.best_path(weights, targets, best)
            assert abs(paths[tuple(idx)] - top) <= 1e-12


def test_forward_sweep_equals_enumeration():
    """alpha (`dp.forward`, the `dag_dp.forward` sweep on the layers) against every prefix:
    per state of layer i, the best and the total ln weight of the prefixes reaching it, -inf
    where none does; and alpha + W + beta of each edge is the best path through it."""
    rng = np.random.default_rng(4)
    for _ in range(20):
        widths, states, weights, targets, final = random_case(rng)
        L = len(widths)
        best = dp.forward(weights, targets, states, MaxPlus)
        total = dp.forward(weights, targets, states, LogSumExp)
        for i in range(L + 1):
            reach: dict[int, list[float]] = {}
            for prefix in itertools.product(*(range(W.shape[1]) for W in weights[:i])):
                s, score = 0, 0.0
                for k, j in enumerate(prefix):
                    score += weights[k][s, j]
                    s = targets[k][s, j]
                reach.setdefault(int(s), []).append(score)
            assert len(best[i]) == len(total[i]) == states[i]
            for s in range(states[i]):
                got = reach.get(s, [])
                want_max = max(got) if got else -np.inf
                want_sum = logsumexp(np.array(got)) if got else -np.inf
                assert best[i][s] == want_max or abs(best[i][s] - want_max) <= 1e-12
                assert total[i][s] == want_sum or abs(total[i][s] - want_sum) <= 1e-12
        beta = dp.backward(weights, targets, final, MaxPlus)
        paths = enumerate_paths(weights, targets, final)
        for i in range(L):
            through = best[i][:, None] + weights[i] + beta[i + 1][targets[i]]
            for j in range(widths[i]):
                on = [v for p, v in paths.items() if p[i] == j]
                want = max(on) if on else -np.inf
                got = MaxPlus.sum(through[:, j], axis=0)
                assert got == want or abs(got - want) <= 1e-12


def test_forward_sampling_follows_the_distribution():
    rng = np.random.default_rng(2)
    weights, targets, final = random_layers(rng, [3, 2, 3], [1, 2, 3, 2])
    paths = enumerate_paths(weights, targets, final)
    beta = dp.backward(weights, targets, final, LogSumExp)
    draws = dp.sample_forward(weights, targets, beta, 20_000, np.random.default_rng(3))
    keys = list(paths)
    probs = np.exp(np.array([paths[k] for k in keys]) - beta[0][0])
    counts = {k: 0 for k in keys}
    for row in map(tuple, draws.tolist()):
        counts[row] += 1  # KeyError would mean an impossible path
    assert all(counts[k] == 0 for k, p in zip(keys, probs, strict=True) if p == 0)
    live = [i for i, p in enumerate(probs) if p > 0]
    obs = np.array([counts[keys[i]] for i in live])
    exp = probs[live] * len(draws)
    assert chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 0.001


def test_draw_in_segments_never_picks_zero_probability():
    logits = np.array([-np.inf, 0.0, -np.inf, -np.inf, 3.0, -np.inf])
    starts = np.array([0, 3])
    which = np.array([0, 1, 0, 1])
    for u in (0.0, 0.5, 1.0 - 1e-16):
        pick = dp.draw_in_segments(logits, starts, which, np.full(4, u))
        assert list(pick) == [1, 4, 1, 4]


def extreme_lattice(model, length: int, rng: random.Random, extreme: float) -> Lattice:
    positions = []
    for _ in range(length):
        toks = rng.sample(model.words, 2)
        ws = [round(rng.uniform(-1, 0), 3), extreme if rng.random() < 0.3 else -0.5]
        positions.append(list(zip(toks, ws, strict=True)))
    return Lattice.from_lists(positions)


@pytest.mark.parametrize("extreme", [-1e308, -math.inf])
def test_extreme_weights_decode_and_sample_without_warnings(random_lms, extreme):
    model = random_lms[1]
    rng = random.Random(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):
            lattice = extreme_lattice(model, 6, rng, extreme)
            r = decode(model.lm, lattice)
            assert r.certified and r.log_p == full_decode(model.lm, lattice).log_p
            s = sample(model.lm, lattice, 20, seed=1)
            assert len(s.samples) == 20 and all(math.isfinite(v) for v in s.log_p)


def test_normaliser_estimate_stays_in_log_space():
    log_zq = [-5000.0 + 10 * t for t in range(300)]  # spans 3000 nats
    accepted = [t % 7 == 0 for t in range(300)]
    est = evidence.rejection_estimate(log_zq, accepted)
    plain = evidence.rejection_plain(log_zq, accepted)
    lo, hi = est.ci
    assert all(math.isfinite(v) for v in (est.log_Z, lo, hi, plain))
    assert lo <= est.log_Z <= hi
    lo, hi = evidence.rejection_estimate(log_zq, [False] * 300).ci
    assert lo == -math.inf and math.isfinite(hi)


def test_length_500_lattice_decodes_to_the_full_optimum(random_lms):
    model = random_lms[4]  # order 4
    rng = random.Random(5)
    lattice = Lattice.from_lists([
        [(w, round(rng.uniform(-2, 0), 3)) for w in rng.sample(model.words, 2)]
        for _ in range(500)
    ])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = decode(model.lm, lattice)
        f = full_decode(model.lm, lattice)
        assert r.certified and abs(r.log_p - f.log_p) <= 1e-9 * abs(f.log_p)
        s = sample(model.lm, lattice, 3, seed=0, max_trials=3000)
        lz = full_log_partition(model.lm, lattice)
        assert math.isfinite(lz) and lz >= r.log_p
        assert all(lp <= r.log_p + 1e-6 for lp in s.log_p)
