"""The completion bound by the last k words (issue 34: `_DPPairBounds` in
arsdecode/native/_dppair.pxi, k = 2 at order 3, 3 above but where the pass by 3 would cost
more than PAIR_MAX_WORK terms) is admissible, checked by brute force.

Why: exact pruning drops a (state, candidate) pair when its score so far plus a bound on the
rest falls below a known path's score, so a bound below the true best completion, anywhere,
loses the optimum. H_p[b_1..b_k] must be at least the exact best completion after positions
p - k + 1 .. p hold the words of b_1..b_k, whatever came before them: here every history through the
lattice and random histories of other words, scored by scalar `Model.log10p` calls on the
whole history, on random models with positive backoffs (where the max over left extensions
is not the max over listed n-grams), missing prefixes and -inf probabilities, and with an LM
weight. The DP with that bound must still return the unpruned optimum (the tests of
test_native_full.py run it too).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import maxarpa
from ars_fixtures import LM, make_lattice
from arsdecode.lattice.flat import FlatLattices
from arsdecode.methods.fast_full import useful_context_tables
from arsdecode.native import _core, native_ngram
from arsdecode.testing.brute import brute_model
from arsdecode.testing.random_arpa import random_arpa_text
from maxarpa.constants import BOS, EOS, LN10

SLACK = 1e-9
DEFAULT_WORK = 256  # _dppair.pxi's PAIR_MAX_WORK


def exact_completion(lm, history: list[str], rest: list[list[int]], emis: list[list[float]],
                     lmw: float) -> float:
    """Best lmw ln p + emissions of positions `rest` and </s> after `history`, by brute force."""
    best = -math.inf
    for pick in itertools.product(*(range(len(r)) for r in rest)):
        hist, tot = list(history), 0.0
        for r, j in enumerate(pick):
            w = lm.vocab[rest[r][j]]
            tot += lmw * LN10 * lm.log10p(w, hist) + emis[r][j]
            hist.append(w)
        tot += lmw * LN10 * lm.log10p(EOS, hist)
        best = max(best, tot)
    return best


@contextlib.contextmanager
def pair_max_work(max_work: int):
    """Workers made inside pass by 3 words only where that costs <= max_work terms."""
    old = _core.set_pair_max_work(max_work)
    try:
        yield
    finally:
        _core.set_pair_max_work(old)


def check_admissible(lm, flat: FlatLattices, rng: random.Random, lmw: float,
                     max_work: int = DEFAULT_WORK, ks: set[int] | None = None) -> int:
    """Every H2 of every sentence against brute force; returns how many entries were checked.
    Where a position's pass by 3 words would cost more than `max_work` terms, its H is by 2
    (the mixed passes are checked with a small max_work)."""
    rows, lens, keys = useful_context_tables(lm)
    slots, bits = _core.build_hash(keys)
    dp = _core.FullDP(native_ngram(lm).core, rows, lens, keys, slots, bits, True)
    words = [w for w in lm.vocab if w not in (BOS, EOS)]
    checked = 0
    for s in range(len(flat.sent_off) - 1):
        p0, p1 = int(flat.sent_off[s]), int(flat.sent_off[s + 1])
        off = flat.pos_off[p0 : p1 + 1] - flat.pos_off[p0]
        a, b = int(flat.pos_off[p0]), int(flat.pos_off[p1])
        ids = np.ascontiguousarray(flat.cand_ids[a:b])
        emis = np.ascontiguousarray(flat.cand_emis[a:b])
        with pair_max_work(max_work):
            h2 = _core.pair_completion_bounds(dp, np.ascontiguousarray(off), ids, emis,
                                              lm.bos_id, lm.eos_id, lmw)
        if lm.order < 3:
            assert h2 is None
            continue
        hk = 3 if lm.order >= 4 else 2  # the most words the bound is conditioned on
        cand = [ids[off[p] : off[p + 1]].tolist() for p in range(p1 - p0)]
        cemis = [emis[off[p] : off[p + 1]].tolist() for p in range(p1 - p0)]
        width = [len(c) for c in cand] + [1]
        for p in range(p1 - p0):
            k = h2[p].ndim  # hk, or 2 where the pass by hk words would cost more than work
            work = math.prod(width[q] for q in range(max(p - hk + 1, 0), p + 2))
            assert k == (hk if work <= max_work else 2), (p, work)
            if ks is not None:
                ks.add(k)
            first = p - k + 1  # positions first..p are the tuple's; before 0: virtual
            assert h2[p].shape == tuple(len(cand[q]) if q >= 0 else 1
                                        for q in range(first, p + 1))
            for t in np.ndindex(h2[p].shape):
                fixed = [lm.vocab[cand[q][t[j]]] for j, q in enumerate(range(first, p + 1))
                         if q >= 0]
                if first <= 0:  # the tuple reaches back to <s>
                    histories = [[BOS, *fixed]]
                else:  # every lattice history, and random ones of other words
                    histories = [[BOS, *(lm.vocab[cand[q][j]] for q, j in enumerate(pick)),
                                  *fixed] for pick in itertools.product(
                                      *(range(len(cand[q])) for q in range(first)))]
                    histories += [[BOS, *rng.choices(words, k=rng.randint(0, lm.order)),
                                   *fixed] for _ in range(3)]
                for hist in histories:
                    want = exact_completion(lm, hist, cand[p + 1 :], cemis[p + 1 :], lmw)
                    got = float(h2[p][t])
                    assert got >= want - SLACK * (1 + abs(want)), (s, p, t, hist)
                    checked += 1
    return checked


def test_pair_bound_is_admissible_on_random_positive_backoff_models(random_lms):
    rng = random.Random(34)
    checked = 0
    for model in random_lms:
        lattices = [make_lattice(rng, model, max_len=4, max_width=3) for _ in range(6)]
        flat = FlatLattices.from_lattices(model.lm, lattices)
        checked += check_admissible(model.lm, flat, rng, 1.0)
    assert checked > 500


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    order=st.integers(3, 5),
    vocab=st.integers(2, 6),
    positive=st.sampled_from([0.5, 1.0]),
    drop_prefix=st.booleans(),
    neg_inf=st.sampled_from([0.0, 0.2]),
    lmw=st.sampled_from([1.0, 0.6, 1.7]),
)
def test_pair_bound_is_admissible_with_missing_prefixes_zeros_and_a_weight(
    tmp_path_factory, seed, order, vocab, positive, drop_prefix, neg_inf, lmw
):
    rng = random.Random(seed)
    path = tmp_path_factory.mktemp("pair") / "m.arpa"
    path.write_text(random_arpa_text(rng, order, vocab, positive, drop_prefix,
                                     neg_inf_fraction=neg_inf))
    lm = maxarpa.load(path)
    model = LM("pair", path, lm, None, [w for w in lm.vocab if w not in (BOS, EOS)], [])
    lattices = [make_lattice(rng, model, max_len=4, max_width=3) for _ in range(3)]
    check_admissible(lm, FlatLattices.from_lattices(lm, lattices), rng, lmw)


def test_mixed_passes_by_3_and_2_words_are_admissible(random_lms):
    """With a small work limit, positions next to wide ones take the pass by 2 words and the
    others by 3: each H is still at least the exact best completion (its H_{p+1} read with
    fewer or more words than its own)."""
    rng = random.Random(36)
    checked = 0
    ks: set[int] = set()
    for model in random_lms:
        lattices = [make_lattice(rng, model, max_len=4, max_width=3) for _ in range(6)]
        flat = FlatLattices.from_lattices(model.lm, lattices)
        checked += check_admissible(model.lm, flat, rng, 1.0, max_work=6,
                                    ks=ks if model.lm.order >= 4 else None)
    assert ks == {2, 3}  # on the models of order >= 4, both passes ran
    assert checked > 500


@pytest.mark.parametrize("max_work", [DEFAULT_WORK, 6])
def test_pruned_dp_with_the_pair_bound_keeps_the_optimum_and_builds_fewer_states(
        random_lms, max_work):
    """The DP (dense rows, order >= 3: the pair bound on) returns the unpruned optimum, and
    brute force scores its path at it; also with mixed passes (max_work 6)."""
    rng = random.Random(35)
    for model in random_lms:
        lm = model.lm
        lattices = [make_lattice(rng, model, max_len=7, max_width=4) for _ in range(10)]
        flat = FlatLattices.from_lattices(lm, lattices)
        rows, lens, keys = useful_context_tables(lm)
        slots, bits = _core.build_hash(keys)
        dp = _core.FullDP(native_ngram(lm).core, rows, lens, keys, slots, bits, True)
        args = (flat.sent_off, flat.pos_off, flat.cand_ids, flat.cand_emis, lm.bos_id,
                lm.eos_id, True)
        with pair_max_work(max_work):  # the worker is made at the first run
            _, whole, whole_states, _, _ = dp.run(*args, False)
            choice, score, states, _, _ = dp.run(*args, True)
        assert np.array_equal(score, whole)
        assert (states <= whole_states).all()
        for s, lat in enumerate(lattices[:4]):  # brute force on the shorter ones
            if len(lat.tokens) > 5 or not np.isfinite(score[s]):
                continue
            picks = choice[flat.sent_off[s] : flat.sent_off[s + 1]]
            b = brute_model(lm, lat)
            assert b.score([lat.tokens[i][c] for i, c in enumerate(picks)]) == pytest.approx(
                score[s], abs=1e-9)


def test_pair_completion_bounds_refuses_bad_arrays(random_lms):
    lm = random_lms[1].lm
    rows, lens, keys = useful_context_tables(lm)
    slots, bits = _core.build_hash(keys)
    dp = _core.FullDP(native_ngram(lm).core, rows, lens, keys, slots, bits, True)
    off = np.array([0, 1, 2], dtype=np.int64)
    emis = np.zeros(2)
    with pytest.raises(Exception, match="out of range"):
        _core.pair_completion_bounds(dp, off, np.array([0, 99], dtype=np.int64), emis,
                                     lm.bos_id, lm.eos_id)
    with pytest.raises(Exception, match="disagree"):
        _core.pair_completion_bounds(dp, off, np.array([0], dtype=np.int64), emis, lm.bos_id,
                                     lm.eos_id)
