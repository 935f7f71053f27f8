"""The incremental Viterbi pass gives exactly the values of the full backward pass."""

from __future__ import annotations

import numpy as np
import pytest

import maxarpa
from arsdecode.api import DEFAULT_LM
from arsdecode.core.automaton import QAutomaton
from arsdecode.core.inference import backward_values, incremental_best_values, sample_indices
from arsdecode.core.semiring import MaxPlus
from arsdecode.tasks.sms.keypad import KeypadChannel


@pytest.mark.parametrize("variant", ["all-edges", "paper"])
def test_incremental_equals_full_pass_after_refinements(variant):
    lm = maxarpa.load(DEFAULT_LM)
    lattice = KeypadChannel.from_vocab(lm.vocab).build_lattice(
        "843 78283 63 843 86466 47 787664 *", top_k=40
    )
    qa = QAutomaton(lm, lattice, variant=variant)
    rng = np.random.default_rng(5)
    for step in range(25):
        inc = incremental_best_values(qa)
        full = backward_values(qa, MaxPlus)
        for a, b in zip(inc, full, strict=True):
            assert np.array_equal(a, b), step
        paths, _ = sample_indices(qa, 4, rng)
        if step % 2:
            qa.refine_many(paths.tolist())
        else:
            qa.refine_indices(paths[0].tolist())


@pytest.mark.parametrize("variant", ["all-edges", "paper"])
def test_incremental_equals_full_pass_while_decoding_with_pruning(variant):
    """The decoder's own loop (Viterbi, score p, prune hopeless candidates, refine): after every
    step the incremental values equal the full pass's, and each row's cached column is where
    numpy's argmax of the full row puts its maximum."""
    from arsdecode.core.inference import prune_hopeless, viterbi_indices
    from arsdecode.core.target import Target
    from arsdecode.model import as_target_model

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
        inc = incremental_best_values(qa)
        full = backward_values(qa, MaxPlus)
        for i, (a, b) in enumerate(zip(inc, full, strict=True)):
            assert np.array_equal(a, b), (step, i)
            if i < len(lattice):
                layer = qa.layers[i]
                scores = layer.state_weights() + full[i + 1][layer.state_targets()]
                assert np.array_equal(layer.best_col[: len(layer)], scores.argmax(axis=1))
        log_p = target.log_p_indices(idx)
        if log_q - log_p <= 1e-9:
            break
        if log_p > best:
            best = log_p
            pruned += prune_hopeless(qa, best)
        if not qa.refine_indices(idx):
            break
    assert pruned > 0 and step > 5  # pruning and several refinements were exercised
