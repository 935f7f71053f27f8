"""The incremental Viterbi pass gives exactly the values of the full backward pass."""

from __future__ import annotations

import numpy as np
import pytest

from arsdecode.api import DEFAULT_LM
from arsdecode.automaton import QAutomaton
from arsdecode.inference import backward_values, incremental_best_values, sample_indices
from arsdecode.semiring import MaxPlus
from arsdecode.tasks.sms import KeypadChannel
from maxarpa.model import Model


@pytest.mark.parametrize("variant", ["all-edges", "paper"])
def test_incremental_equals_full_pass_after_refinements(variant):
    lm = Model.load(DEFAULT_LM)
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
