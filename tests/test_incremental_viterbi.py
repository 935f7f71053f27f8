"""The incremental Viterbi pass gives exactly the values of the full backward pass."""

from __future__ import annotations

import gc
import random
import weakref

import numpy as np
import pytest

import maxarpa
from ars_fixtures import make_lattice
from arsdecode.api import DEFAULT_LM
from arsdecode.core.automaton import QAutomaton
from arsdecode.core.inference import (
    backward_values,
    incremental_best_values,
    prune_hopeless,
    sample_indices,
    viterbi_indices,
)
from arsdecode.core.semiring import MaxPlus
from arsdecode.core.target import Target
from arsdecode.core.viterbi import IncrementalViterbi, incremental_viterbi
from arsdecode.model import as_target_model
from arsdecode.tasks.sms.keypad import KeypadChannel

VARIANTS = ["all-edges", "paper"]


def assert_incremental_equals_full(qa: QAutomaton, where) -> None:
    """Values bit-identical to the full max-plus sweep; each row's cached column where numpy's
    argmax of the full row puts it; `second` an upper bound on the row's other entries."""
    inc = incremental_best_values(qa)
    full = backward_values(qa, MaxPlus)
    viterbi = incremental_viterbi(qa)
    for i, (a, b) in enumerate(zip(inc, full, strict=True)):
        assert np.array_equal(a, b), (where, i)
        if i == len(qa.lattice):
            continue
        layer, cache = qa.nodes[i], viterbi.caches[i]
        n = len(layer)
        scores = layer.state_weights() + full[i + 1][layer.state_targets()]
        assert np.array_equal(cache.best_col[:n], scores.argmax(axis=1)), (where, i)
        others = scores.copy()
        others[np.arange(n), cache.best_col[:n]] = -np.inf
        assert np.all(cache.second[:n] >= others.max(axis=1)), (where, i)


@pytest.mark.parametrize("variant", VARIANTS)
def test_incremental_equals_full_pass_after_refinements(variant):
    lm = maxarpa.load(DEFAULT_LM)
    lattice = KeypadChannel.from_vocab(lm.vocab).build_lattice(
        "843 78283 63 843 86466 47 787664 *", top_k=40
    )
    qa = QAutomaton(as_target_model(lm), lattice, variant=variant)
    rng = np.random.default_rng(5)
    for step in range(25):
        assert_incremental_equals_full(qa, step)
        paths, _ = sample_indices(qa, 4, rng)
        if step % 2:
            qa.refine_many(paths.tolist())
        else:
            qa.refine_indices(paths[0].tolist())


@pytest.mark.parametrize("variant", VARIANTS)
def test_incremental_equals_full_pass_while_decoding_with_pruning(variant):
    """The decoder's own loop (Viterbi, score p, prune hopeless candidates, refine): after every
    step the incremental values equal the full pass's."""
    lm = maxarpa.load(DEFAULT_LM)
    lattice = KeypadChannel.from_vocab(lm.vocab).build_lattice(
        "4663 3 843 78283 63 843 86466 47 787664 *", top_k=400
    )
    model = as_target_model(lm)
    qa = QAutomaton(model, lattice, variant=variant, fill=False)
    target = Target(model, lattice, token_ids=qa.cand_ids)
    qa.fill_pending()
    best = -np.inf
    pruned = 0
    for step in range(60):
        idx, log_q = viterbi_indices(qa)
        assert_incremental_equals_full(qa, step)
        log_p = target.log_p_indices(idx)
        if log_q - log_p <= 1e-9:
            break
        if log_p > best:
            best = log_p
            pruned += prune_hopeless(qa, best)
        if not qa.refine_indices(idx):
            break
    assert pruned > 0 and step > 5  # pruning and several refinements were exercised


def random_path(rng: random.Random, widths) -> list[int]:
    return [rng.randrange(w) for w in widths]


@pytest.mark.parametrize("variant", VARIANTS)
def test_incremental_equals_full_pass_under_random_refinement_and_pruning(
    real_lms, random_lms, variant
):
    """Random sequences of single and batched refinements along arbitrary paths and of
    arbitrary column prunings (even a whole position), with the incremental cache attached
    at a random step (before the initial fill, or after several changes): after every step the
    incremental values equal the full max-plus sweep, bit for bit."""
    rng = random.Random(31 if variant == "all-edges" else 32)
    steps = 0
    for model in [real_lms[3], real_lms[5], *random_lms]:
        lm = as_target_model(model.lm)
        for trial in range(3):
            lattice = make_lattice(rng, model, max_len=6, max_width=5)
            qa = QAutomaton(lm, lattice, variant=variant, fill=False)
            attach_at = rng.randrange(-1, 4)  # -1: before the initial rows are filled
            if attach_at == -1:
                incremental_viterbi(qa)
            qa.fill_pending()
            for step in range(12):
                where = (model.name, variant, trial, step, lattice.to_json_obj())
                if step >= attach_at:
                    assert_incremental_equals_full(qa, where)
                    steps += 1
                action = rng.random()
                if action < 0.2:
                    i = rng.randrange(len(lattice))
                    cols = rng.sample(range(lattice.widths[i]), rng.randint(1, lattice.widths[i]))
                    qa.prune_columns(i, np.array(sorted(cols)))
                elif action < 0.45:
                    n_paths = rng.randint(1, 4)
                    qa.refine_many([random_path(rng, lattice.widths) for _ in range(n_paths)])
                elif action < 0.7 and step >= attach_at:
                    qa.refine_indices(viterbi_indices(qa)[0])  # the decoder's own choice
                else:
                    qa.refine_indices(random_path(rng, lattice.widths))
            assert_incremental_equals_full(qa, (model.name, variant, trial, "end"))
    assert steps > 100


def test_a_sampling_automaton_keeps_no_cache(random_lms):
    """`track_pointers=False`: no listener is ever attached, and Viterbi values are the full
    sweep's (the sampler pays nothing for the decoder's cache)."""
    model = random_lms[2]
    lattice = make_lattice(random.Random(3), model, max_len=5)
    qa = QAutomaton(as_target_model(model.lm), lattice, track_pointers=False)
    idx, _ = viterbi_indices(qa)
    qa.refine_indices(idx)
    full = backward_values(qa, MaxPlus)
    for a, b in zip(incremental_best_values(qa), full, strict=True):
        assert np.array_equal(a, b)
    assert qa.listener is None
    tracked = QAutomaton(as_target_model(model.lm), lattice)
    viterbi_indices(tracked)
    assert isinstance(tracked.listener, IncrementalViterbi)
    assert incremental_viterbi(tracked) is tracked.listener  # attached once


def test_an_attached_viterbi_makes_no_reference_cycle(random_lms):
    """A decoded automaton is freed as soon as it is dropped, without the cyclic garbage
    collector: its listener holds no reference back to it (automata can hold tens of MB)."""
    model = random_lms[2]
    lattice = make_lattice(random.Random(4), model, max_len=5)
    gc.disable()
    try:
        qa = QAutomaton(as_target_model(model.lm), lattice)
        qa.refine_indices(viterbi_indices(qa)[0])
        viterbi_indices(qa)
        assert isinstance(qa.listener, IncrementalViterbi)
        alive = weakref.ref(qa)
        del qa
        assert alive() is None
    finally:
        gc.enable()
