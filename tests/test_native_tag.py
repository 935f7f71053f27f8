"""Batched POS tagging on the compiled core (tasks.pos.tag_many) against the exact decoders.

The models are built from the NLTK corpora by data_prep.pos_data into a temporary directory
(nothing derived from the treebank is committed). Every sentence's ln p must equal
arsdecode.methods.full.full_decode's, tags equal unless tied; ARS agrees on a sample.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import arsdecode.methods.cost_model as cost_model
import arsdecode.methods.dispatch as dispatch
import maxarpa
from arsdecode.errors import ObservationError, OptionError
from arsdecode.methods.fast_full import run_flat
from arsdecode.methods.full import full_decode
from arsdecode.tasks.pos.emissions import TnTEmissions
from arsdecode.tasks.pos.evaluation import read_tagged
from arsdecode.tasks.pos.tag_many import flatten, tag_many
from data_prep.pos_data import DataError, default_data_dir, prepare


@pytest.fixture(scope="module")
def pos3(tmp_path_factory):
    out = tmp_path_factory.mktemp("pos_native")
    try:
        data = default_data_dir()
        prepare(out, data, orders=[3])
    except DataError as err:  # no NLTK corpora here (fresh clone without ../shared)
        pytest.skip(f"WSJ corpora (treebank, conll2000) not found: {err}")
    lm = maxarpa.load(out / "tags.3.maxarpa")
    em = TnTEmissions.load(out / "emissions.json.gz")
    words = [[w for w, _ in s] for s in read_tagged(out / "test.tsv")]
    return lm, em, words


def test_tag_many_equals_the_full_model_decoder(pos3):
    lm, em, words = pos3
    sents = words[:300]
    r = tag_many(lm, em, sents)
    assert r.method == "full" and len(r.tags) == len(sents)
    whole = run_flat(lm, flatten(lm, em, sents)[0], prune=False)
    np.testing.assert_array_equal(whole.score, r.log_p)  # bound pruning: the same numbers
    ref_states = 0
    for i, ws in enumerate(sents):
        ref = full_decode(lm, em.lattice(ws))
        assert r.log_p[i] == pytest.approx(ref.log_p, abs=1e-9), i
        assert r.tags[i] == ref.tokens or abs(r.log_p[i] - ref.log_p) <= 1e-12, i
        assert whole.dp_states[i] == ref.dp_states
        assert r.dp_states[i] <= ref.dp_states
        ref_states += ref.dp_states
    assert r.dp_states.sum() < 0.8 * ref_states  # the bounds do prune on real sentences


def test_tag_many_agrees_with_ars_and_with_itself(pos3):
    lm, em, words = pos3
    sents = [ws for ws in words if len(ws) <= 12][:20]
    full = tag_many(lm, em, sents)
    ars = tag_many(lm, em, sents, method="ars")
    assert ars.method == "ars"
    np.testing.assert_allclose(ars.log_p, full.log_p, atol=1e-9, rtol=0)
    # Batching must not change any sentence's answer.
    one_by_one = [tag_many(lm, em, [ws]).tags[0] for ws in sents]
    assert one_by_one == full.tags


def test_auto_hands_sentences_over_budget_to_ars(pos3, monkeypatch):
    """With a budget between the sentences' costs, the dearer ones come back from ARS, the rest
    from the one full-DP call, all with the full DP's optimum and in input order."""
    lm, em, words = pos3
    sents = [ws for ws in words if len(ws) <= 15][:30]
    full = tag_many(lm, em, sents, method="full")
    budget = float(np.median(full.pairs))
    assert full.pairs.min() <= budget < full.pairs.max()
    monkeypatch.setattr(dispatch, "AUTO_FULL_PAIRS_SMALL_VOCAB", budget)
    for name in ("ARS_SECONDS_PER_POSITION_SMALL_VOCAB", "ARS_SECONDS_PER_CANDIDATE",
                 "ARS_SECONDS_PER_CUBED_WIDTH",
                 "ARS_SECONDS_PER_POSITION_CANDIDATE"):
        monkeypatch.setattr(cost_model, name, 0.0)  # the budget is the floor alone
    mixed = tag_many(lm, em, sents)
    assert mixed.method == "mixed"
    np.testing.assert_allclose(mixed.log_p, full.log_p, atol=1e-9, rtol=0)
    for s, cost in enumerate(full.pairs):
        if cost <= budget:  # the full DP's own answer, bit for bit
            assert mixed.tags[s] == full.tags[s] and mixed.log_p[s] == full.log_p[s]


def test_bad_input(pos3):
    lm, em, _ = pos3
    with pytest.raises(OptionError, match="method"):
        tag_many(lm, em, [["a"]], method="beam")
    with pytest.raises(ObservationError, match="sentence 1"):
        tag_many(lm, em, [["The", "dog"], []])


def test_missing_extension_fails_loudly():
    code = (
        "import sys; sys.modules['arsdecode.native._core'] = None\n"
        "import arsdecode.native\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "compiled core" in proc.stderr and "pip install -e ." in proc.stderr
