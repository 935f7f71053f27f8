"""The sampling facts the experiments report, computed by the library and checked here
independently: `adapt` (the paper's time-to-AR protocol), `SampleResult.adapted_at_trial`,
`SampleTrace.frozen_from`, `SampleResult.ranked` and `full_ngrams_by_order`.

Uses the embedded state_union 5-gram and keypad lattices (no lmplz needed).
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

import maxarpa
from arsdecode.methods.ars import adapt, sample
from arsdecode.methods.full import full_ngrams_by_order, full_state_count
from arsdecode.tasks.sms.keypad import KeypadChannel, default_model_path
from maxarpa.constants import BOS, EOS
from maxarpa.model import Model

OBSERVATION = "3637 843 66639 39478 *"  # the paper's example, "does the money exist ."


@pytest.fixture(scope="module")
def lm_channel() -> tuple[Model, KeypadChannel]:
    lm = maxarpa.load(default_model_path())
    return lm, KeypadChannel.from_vocab(lm.vocab)


def window_ar(accepted: list[bool], end: int, window: int) -> float:
    chunk = accepted[max(0, end - window) : end]
    return sum(chunk) / len(chunk)


@pytest.mark.parametrize("batch", [1, 7, 100])
def test_adapt_stops_at_the_first_batch_end_meeting_the_target(lm_channel, batch):
    lm, channel = lm_channel
    lattice = channel.build_lattice(OBSERVATION, top_k=100)
    r = adapt(lm, lattice, batch=batch, target_ar=0.2, ar_window=100,
              rng=np.random.default_rng(3))
    acc = r.trace.accepted
    assert r.adapted_at_trial == r.trials == len(acc)
    assert r.trials % batch == 0
    assert r.trials >= 100 and window_ar(acc, r.trials, 100) >= 0.2
    # No earlier batch end met the target (otherwise adapt would have stopped there).
    for end in range(batch, r.trials, batch):
        assert end < 100 or window_ar(acc, end, 100) < 0.2
    assert len(r.samples) == sum(acc)


def test_adapt_reports_none_when_max_trials_runs_out(lm_channel):
    lm, channel = lm_channel
    lattice = channel.build_lattice(OBSERVATION, top_k=100)
    r = adapt(lm, lattice, batch=10, target_ar=0.99, ar_window=100, max_trials=50,
              rng=np.random.default_rng(0))
    assert r.adapted_at_trial is None and r.trials == 50


def test_sample_records_adaptation_and_the_frozen_q(lm_channel):
    lm, channel = lm_channel
    lattice = channel.build_lattice(OBSERVATION, top_k=100)
    r = sample(lm, lattice, 300, batch=100, rng=np.random.default_rng(1))
    t = r.trace
    assert r.adapted_at_trial is not None and r.adapted_at_trial % 100 == 0
    assert window_ar(t.accepted, r.adapted_at_trial, 100) >= 0.2
    # The default variant adds states on every refinement that changes q, so the first trial
    # of the final q is the first one drawn with the final state count.
    assert 0 < t.frozen_from <= r.adapted_at_trial
    assert all(s == r.states for s in t.states[t.frozen_from :])
    assert t.states[t.frozen_from - 1] < r.states


def test_sample_without_adaptation_has_none(lm_channel):
    lm, channel = lm_channel
    lattice = channel.build_lattice(OBSERVATION, top_k=100)
    r = sample(lm, lattice, 5, batch=10, target_ar=0.99, rng=np.random.default_rng(2))
    assert r.adapted_at_trial is None


def test_ranked_counts_every_sample_once_most_frequent_first(lm_channel):
    lm, channel = lm_channel
    lattice = channel.build_lattice(OBSERVATION, top_k=100)
    r = sample(lm, lattice, 400, rng=np.random.default_rng(4))
    ranked = r.ranked()
    counts = Counter(tuple(s) for s in r.samples)
    assert {tuple(t): c for t, c, _ in ranked} == dict(counts)
    keys = [(-c, -lp) for _, c, lp in ranked]
    assert keys == sorted(keys)
    for tokens, _, lp in ranked:
        assert lp == pytest.approx(r.log_p[r.samples.index(tokens)], abs=0)


def brute_full_model(order: int, lattice) -> tuple[dict[int, int], int]:
    """(context, word) pairs and literal states of the full model, by enumerating every path."""
    pairs: set[tuple[tuple[str, ...], str]] = set()
    states: set[tuple[int, tuple[str, ...]]] = {(0, (BOS,))}
    for path in itertools.product(*lattice.tokens):
        history = [BOS, *path, EOS]
        for i in range(1, len(history)):
            ctx = tuple(history[max(0, i - (order - 1)) : i]) if order > 1 else ()
            pairs.add((ctx, history[i]))
            if i < len(history) - 1:  # the state after x_i: the last n - 1 tokens so far
                states.add((i, tuple(history[max(0, i + 1 - (order - 1)) : i + 1])))
    by_order = Counter(len(ctx) + 1 for ctx, _ in pairs)
    return dict(sorted(by_order.items())), len(states)


def test_full_model_size_matches_enumeration(lm_channel):
    lm, channel = lm_channel
    lattice = channel.build_lattice("3637 843 66639 39478", top_k=3)
    ngrams, states = brute_full_model(lm.order, lattice)
    assert full_ngrams_by_order(lm, lattice) == ngrams
    assert full_state_count(lm, lattice) == states
