"""The compiled merged full-model DP (methods.fast_full) against methods.full and brute force.

Many lattices go through one call; each must get arsdecode.methods.full's optimum (1e-9) with a path
that brute-force enumeration scores at that optimum, and the same ln Z. Models: random ARPA
models with positive backoffs, missing prefixes and -inf probabilities, and the embedded
state_union 5-gram.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import maxarpa
from ars_fixtures import IMPOSSIBLE_ARPA, LM, make_lattice, random_lm_with_options
from arsdecode.errors import LatticeError, NoPathError
from arsdecode.lattice import Lattice
from arsdecode.lattice.flat import FlatLattices
from arsdecode.methods.fast_full import (
    full_decode_many,
    full_log_partition_many,
    run_flat,
    useful_context_tables,
)
from arsdecode.methods.full import full_decode, full_log_partition
from arsdecode.native import _core, native_ngram
from arsdecode.testing.brute import brute_model
from arsdecode.testing.random_arpa import random_arpa_text
from maxarpa.model import Model

TIGHT = 1e-9
EMBEDDED = Path(__file__).resolve().parent.parent / "arsdecode/data/state_union.5gram.maxarpa.gz"


def check_batch(lm: Model, lattices: list[Lattice], *, brute: bool) -> None:
    """One call for every lattice; compare each with full.py (and brute force when small)."""
    flat = FlatLattices.from_lattices(lm, lattices)
    whole = run_flat(lm, flat, viterbi=True, prune=False)
    best = run_flat(lm, flat, viterbi=True)  # pruned by bounds: the same numbers, fewer states
    assert np.array_equal(best.score, whole.score)
    assert (best.dp_states <= whole.dp_states).all()
    log_z = full_log_partition_many(lm, lattices)
    for s, lat in enumerate(lattices):
        ref_z = full_log_partition(lm, lat)
        if ref_z == -math.inf:
            assert best.score[s] == -math.inf and log_z[s] == -math.inf
            with pytest.raises(NoPathError):
                full_decode(lm, lat)
            continue
        ref = full_decode(lm, lat)
        assert best.score[s] == pytest.approx(ref.log_p, abs=TIGHT), (s, lat.to_json_obj())
        assert log_z[s] == pytest.approx(ref_z, abs=TIGHT)
        assert whole.dp_states[s] == ref.dp_states  # the same merged state space
        picks = best.choice[flat.sent_off[s] : flat.sent_off[s + 1]]
        tokens = [lat.tokens[i][c] for i, c in enumerate(picks)]
        if brute:
            b = brute_model(lm, lat)
            assert b.score(tokens) == pytest.approx(best.score[s], abs=TIGHT)
            assert abs(b.best_log_p - best.score[s]) <= TIGHT
            assert abs(b.log_Z - log_z[s]) <= TIGHT


def test_matches_full_and_brute_on_random_positive_backoff_models(random_lms):
    rng = random.Random(11)
    for model in random_lms:
        check_batch(model.lm, [make_lattice(rng, model) for _ in range(15)], brute=True)


@pytest.mark.parametrize("seed", range(6))
def test_matches_full_and_brute_with_missing_prefixes_and_zero_probabilities(
    tmp_path_factory, seed
):
    model = random_lm_with_options(
        tmp_path_factory.mktemp("opt"), 500 + seed, order=random.Random(seed).randint(2, 5),
        drop_prefix_contexts=True, neg_inf_fraction=0.15,
    )
    rng = random.Random(seed)
    check_batch(model.lm, [make_lattice(rng, model) for _ in range(12)], brute=True)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    order=st.integers(1, 5),
    vocab=st.integers(2, 7),
    positive=st.sampled_from([0.0, 0.5, 1.0]),
    drop_prefix=st.booleans(),
    neg_inf=st.sampled_from([0.0, 0.2]),
)
def test_bound_pruning_keeps_the_optimum_on_random_models(
    tmp_path_factory, seed, order, vocab, positive, drop_prefix, neg_inf
):
    """Pruning by bigram max-backoff bounds is exact: with backoffs above 1 (positive log10),
    missing prefixes and zero probabilities, the pruned DP's best score is the unpruned one,
    bit for bit, and brute force scores its path at that optimum. Both transition stores and
    both bound passes run: dense (tags) and sparse (large vocabularies, whose pass groups the
    words that do not follow a candidate), the latter also with words repeated at a position
    (unknown words that all become <unk>)."""
    rng = random.Random(seed)
    path = tmp_path_factory.mktemp("prune") / "m.arpa"
    path.write_text(random_arpa_text(rng, order, vocab, positive, drop_prefix,
                                     neg_inf_fraction=neg_inf))
    lm = maxarpa.load(path)
    model = LM("prune", path, lm, None, [w for w in lm.vocab if w not in ("<s>", "</s>")], [])
    oov = ["zzq1", "zzq2"] if lm.unk_id is not None else []
    lattices = [make_lattice(rng, model, max_len=6, max_width=5, extra_words=oov)
                for _ in range(8)]
    flat = FlatLattices.from_lattices(lm, lattices)
    rows, lens, keys = useful_context_tables(lm)
    slots, bits = _core.build_hash(keys)
    args = (flat.sent_off, flat.pos_off, flat.cand_ids, flat.cand_emis, lm.bos_id, lm.eos_id,
            True)
    for dense in (True, False):
        dp = _core.FullDP(native_ngram(lm).core, rows, lens, keys, slots, bits, dense)
        _, whole_score, whole_states, _, _ = dp.run(*args, False)
        choice, score, states, _, _ = dp.run(*args, True)
        assert np.array_equal(score, whole_score), dense
        assert (states <= whole_states).all()
        for s, lat in enumerate(lattices):
            b = brute_model(lm, lat)
            assert b.best_log_p == score[s] or abs(b.best_log_p - score[s]) <= TIGHT
            if np.isfinite(score[s]):
                picks = choice[flat.sent_off[s] : flat.sent_off[s + 1]]
                tokens = [lat.tokens[i][c] for i, c in enumerate(picks)]
                assert b.score(tokens) == pytest.approx(score[s], abs=TIGHT)


def test_matches_full_on_the_embedded_5gram_in_one_call():
    lm = maxarpa.load(EMBEDDED)
    sents = [["the", "united", "states", "of", "america", "is", "strong"],
             ["we", "must", "not", "fail", "in", "this", "great", "task"]]
    model = LM("su5", EMBEDDED, lm, None, [w for w in lm.vocab[:400] if w not in ("<s>", "</s>")],
               sents)
    rng = random.Random(2)
    lattices = [make_lattice(rng, model, max_len=7, max_width=5) for _ in range(30)]
    check_batch(lm, lattices, brute=False)
    small = [lat for lat in lattices if lat.num_paths() <= 300][:8]
    check_batch(lm, small, brute=True)


def test_decode_many_returns_tokens_and_reports_a_dead_lattice(tmp_path):
    path = tmp_path / "impossible.arpa"
    path.write_text(IMPOSSIBLE_ARPA)
    lm = maxarpa.load(path)
    ok = Lattice.from_lists([[("zz", -0.1)], [("a", -0.2)]])  # zz is <unk>
    dead = Lattice.from_lists([[("a", 0.0)]])  # p(a | <s>) = 0
    assert full_decode_many(lm, [ok])[0][0] == full_decode(lm, ok).tokens
    res = run_flat(lm, FlatLattices.from_lattices(lm, [ok, dead, ok]))
    assert np.isfinite(res.score[[0, 2]]).all() and res.score[1] == -math.inf
    assert (res.choice[2] == -1) and (res.choice[[0, 1, 3, 4]] >= 0).all()
    with pytest.raises(NoPathError, match="lattice 1"):
        full_decode_many(lm, [ok, dead])


def test_ties_go_to_the_first_candidate():
    lm = maxarpa.load(EMBEDDED)
    # Two unknown words both map to <unk>: identical scores, so the first candidate must win.
    lat = Lattice.from_lists([[("zzqx1", -1.0), ("zzqx2", -1.0)], [("nation", 0.0)]])
    assert full_decode_many(lm, [lat])[0][0] == ["zzqx1", "nation"]
    lat = Lattice.from_lists([[("zzqx2", -1.0), ("zzqx1", -1.0)], [("nation", 0.0)]])
    assert full_decode_many(lm, [lat])[0][0] == ["zzqx2", "nation"]


def test_each_lattice_gets_its_own_pair_budget():
    """`max_pairs` per lattice (auto's budgets grow with each lattice's size, and a corpus is
    one compiled call): a lattice over its own budget is abandoned (NaN), the others, with a
    budget they fit in or none (-1), get the unbudgeted answer, in the same call."""
    lm = maxarpa.load(EMBEDDED)
    lat = Lattice.from_lists([[("the", 0.0), ("a", -0.5)], [("united", 0.0), ("people", -1.0)],
                              [("states", 0.0), ("nation", -0.3)]])
    flat = FlatLattices.from_lattices(lm, [lat, lat, lat])
    free = run_flat(lm, flat)
    need = int(free.pairs[0])
    res = run_flat(lm, flat, max_pairs=np.array([need, need - 1, -1]))
    assert np.isnan(res.score[1]) and (res.choice[3:6] == -1).all()
    assert res.score[0] == res.score[2] == free.score[0]
    assert res.choice[:3].tolist() == res.choice[6:].tolist() == free.choice[:3].tolist()
    with pytest.raises(LatticeError, match="one per sentence"):
        run_flat(lm, flat, max_pairs=np.array([need, need]))
