"""The trans-dimensional MCMC sampler (arsdecode/tasks/trf/mcmc.py) against brute force.

References, independent of the sampler's code:
- p(l, x) ∝ exp(log_pi[l] - zeta[l] + score(x)) enumerated over every sentence of every allowed
  length, score(x) by `arsdecode.testing.brute.target_path_log` (one `log_prob` row per word of
  `<s> x </s>` with its whole history; `LogLinearLM.log_prob` itself is tested against scalar
  maxarpa calls and plain feature matching in tests/test_loglinear_lm.py);
- the Gibbs conditional at a position: that enumeration over the word at that position;
- detailed balance of the length move: p(x) P(x -> x w) = p(x w) P(x w -> x) for every pair,
  boundaries included.
The stationarity check is a chi-square of the final states of many independent chains; the
same check must reject samples compared against a wrong target (zeta ignored), so it can fail.
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

import maxarpa
from arsdecode import api
from arsdecode.errors import OptionError
from arsdecode.model import LogLinearLM
from arsdecode.tasks.trf import mcmc
from arsdecode.tasks.trf.mcmc import TransDimensionalSampler
from arsdecode.testing.brute import chi_square_pvalue, target_path_log
from arsdecode.testing.random_arpa import random_arpa_text

FEATURES = {"w0 w1": 0.7, "w1 * w0": -0.9, "<s> w2": 0.5, "w2 </s>": -0.6, "w0 w0 w0": 0.4,
            "w2 * * w1": 0.8}
LMAX = 3
NO = -math.inf
LOG_PI = np.array([NO, math.log(0.2), math.log(0.5), math.log(0.3)])
ZETA = np.array([0.0, 1.2, -0.4, 0.9])
ZETA5 = np.array([0.0, 1.2, -0.4, 0.9, 0.3])


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> LogLinearLM:
    """Two random components (orders 2 and 3, 3 words, no <unk>) and features up to span 4
    with positive and negative weights, a skip-gram among them."""
    d = tmp_path_factory.mktemp("trf_mcmc")
    paths = []
    for seed, order in ((3, 2), (11, 3)):
        path = d / f"r{seed}.arpa"
        path.write_text(random_arpa_text(random.Random(seed), order, 3, 0.3, False,
                                         density=0.8, with_unk=False))
        paths.append(path)
    return api.loglinear([maxarpa.load(p) for p in paths], [1.0, 0.5], features=FEATURES)


def enumerate_target(model: LogLinearLM, log_pi: np.ndarray, zeta: np.ndarray
                     ) -> dict[tuple[str, ...], float]:
    """p(l, x) over every sentence of every allowed length, normalised."""
    words = model.vocabulary()
    logs: dict[tuple[str, ...], float] = {}
    for length in range(1, len(log_pi)):
        if not np.isfinite(log_pi[length]):
            continue
        for x in itertools.product(words, repeat=length):
            logs[x] = log_pi[length] - zeta[length] + target_path_log(model, x)
    top = max(logs.values())
    total = sum(math.exp(v - top) for v in logs.values())
    return {x: math.exp(v - top) / total for x, v in logs.items()}


def final_states(model: LogLinearLM, log_pi: np.ndarray, zeta: np.ndarray, chains: int,
                 sweeps: int, seed: int) -> list[tuple[str, ...]]:
    sampler = TransDimensionalSampler(model, log_pi, chains, np.random.default_rng(seed))
    for _ in range(sweeps):
        states = sampler.sweep(zeta)
    return [tuple(model.word(int(i)) for i in s) for s in states]


@pytest.mark.parametrize("log_pi", [LOG_PI, np.array([NO, NO, math.log(0.6), math.log(0.4)])],
                         ids=["lengths1-3", "lengths2-3"])
@pytest.mark.parametrize("max_rows", [None, 10_000], ids=["one-batch", "chunked"])
def test_chains_are_stationary_on_the_enumerated_target(model, log_pi, max_rows, monkeypatch):
    if max_rows is not None:  # chains in chunks of about 10_000 / (n V) per log_prob call
        monkeypatch.setattr(mcmc, "_MAX_ROWS", max_rows)
    samples = final_states(model, log_pi, ZETA, chains=12000, sweeps=20, seed=5)
    assert {len(s) for s in samples} <= set(np.flatnonzero(np.isfinite(log_pi)))
    assert chi_square_pvalue(samples, enumerate_target(model, log_pi, ZETA)) > 1e-3


def test_the_check_rejects_a_wrong_target(model):
    """Samples of the zeta-corrected target against the target with zeta ignored: the same
    chi-square must fail, or the stationarity test could not."""
    samples = final_states(model, LOG_PI, ZETA, chains=12000, sweeps=20, seed=5)
    assert chi_square_pvalue(samples, enumerate_target(model, LOG_PI, 0 * ZETA)) < 1e-3


@pytest.mark.parametrize("sentence", [["w1"], ["w0", "w2"], ["w2", "w1", "w0"],
                                      ["w0", "w0", "w1", "w2", "w1"]])
def test_gibbs_conditional_equals_brute_force(model, sentence):
    log_pi = np.array([NO] + [0.0] * 5)
    sampler = TransDimensionalSampler(model, log_pi, 1, np.random.default_rng(0))
    words = model.vocabulary()
    assert [model.word(int(i)) for i in sampler.candidates] == words
    for i in range(len(sentence)):
        got = sampler.gibbs_conditional(model.ids(sentence), i)
        logs = np.array([target_path_log(model, [*sentence[:i], w, *sentence[i + 1:]])
                         for w in words])
        want = logs - np.log(np.sum(np.exp(logs - logs.max()))) - logs.max()
        np.testing.assert_allclose(got, want, atol=1e-9)


@pytest.mark.parametrize("log_pi", [LOG_PI, np.array([NO, NO, 0.0, -0.5, -2.0])],
                         ids=["lengths1-3", "lengths2-4"])
def test_length_moves_are_detailed_balanced(model, log_pi):
    """Every birth pair and its death, both ends of the length range included."""
    zeta = ZETA5[:len(log_pi)]
    sampler = TransDimensionalSampler(model, log_pi, 1, np.random.default_rng(0))
    target = enumerate_target(model, log_pi, zeta)
    allowed = np.flatnonzero(np.isfinite(log_pi))
    checked = 0
    for x in target:
        leaving = 0.0
        for w in model.vocabulary():
            y = (*x, w)
            forward = sampler.length_move_probability(model.ids(x), model.ids(y), zeta)
            if len(x) == allowed[-1]:
                assert forward == 0.0  # no birth beyond Lmax
                continue
            backward = sampler.length_move_probability(model.ids(y), model.ids(x), zeta)
            assert forward > 0 and backward > 0
            assert target[x] * forward == pytest.approx(target[y] * backward, rel=1e-9)
            leaving += forward
            checked += 1
        if len(x) > allowed[0]:
            leaving += sampler.length_move_probability(model.ids(x), model.ids(x[:-1]), zeta)
        else:
            assert sampler.length_move_probability(model.ids(x), model.ids(x[:-1]), zeta) == 0
        assert leaving <= 1 + 1e-12
    assert checked > 20
    # a pair that is not one length move
    assert sampler.length_move_probability(model.ids(["w0", "w1"]),
                                           model.ids(["w1", "w1", "w0"]), zeta) == 0.0


def test_set_model_keeps_the_chains_and_states_are_word_ids(model):
    sampler = TransDimensionalSampler(model, LOG_PI, 50, np.random.default_rng(1))
    states = sampler.sweep(ZETA)
    assert len(states) == 50
    assert all(s.dtype == np.int64 and 1 <= len(s) <= LMAX for s in states)
    assert set(np.concatenate(states).tolist()) <= set(sampler.candidates.tolist())
    other = LogLinearLM(model.components, [1.0, 1.0], features={"w1 w1": 2.0})
    sampler.set_model(other)
    assert all(np.array_equal(a, b) for a, b in zip(sampler.states, states, strict=True))
    sampler.sweep(ZETA)
    assert sampler.model is other


@pytest.mark.parametrize("log_pi", [np.array([NO, 0.0, NO, 0.0]), np.array([0.0, 0.0]),
                                    np.array([NO, np.nan]), np.array([NO, NO]), np.array([NO])])
def test_bad_length_priors_are_refused(model, log_pi):
    with pytest.raises(OptionError):
        TransDimensionalSampler(model, log_pi, 2, np.random.default_rng(0))


def test_bad_zeta_is_refused(model):
    sampler = TransDimensionalSampler(model, LOG_PI, 2, np.random.default_rng(0))
    with pytest.raises(OptionError):
        sampler.sweep(np.zeros(LMAX))


class _NoKernelRatio(TransDimensionalSampler):
    """A deliberately wrong sampler: MH without the length kernel's ratio
    Gamma(l', l) / Gamma(l, l') (it matters at the ends of the length range)."""

    def _log_accept(self, lengths, up, g, zeta):
        new = np.where(up, lengths + 1, lengths - 1)
        right = super()._log_accept(lengths, up, g, zeta)
        return right - (self._log_gamma(new, lengths) - self._log_gamma(lengths, new))


def test_the_check_rejects_a_sampler_without_the_kernel_ratio(model):
    sampler = _NoKernelRatio(model, LOG_PI, 12000, np.random.default_rng(5))
    for _ in range(20):
        states = sampler.sweep(ZETA)
    samples = [tuple(model.word(int(i)) for i in s) for s in states]
    assert chi_square_pvalue(samples, enumerate_target(model, LOG_PI, ZETA)) < 1e-3
