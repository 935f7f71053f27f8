"""A VPYLM on the compiled full DP (issue 34): `fast_vpylm` + `VpCore`.

Why: `VpylmLM` now runs on the compiled DP over its context tree's states (the prefixes of
its node contexts), every factor and bound computed in C from the tree. Exactness is the
product, so every answer is checked against brute force scored without the target's code
(`test_vpylm.reference_prob`, the paper's predictive recomputed from the saved arrays), on
models trained with random seeds, depths and corpora (hypothesis), and against ARS:

- the compiled walk equals VpylmLM.log_prob bit for bit and the reference to 1e-12; the
  compiled bound equals VpylmLM.log_bound and is at least the reference's max over every left
  extension; the states are VpylmLM.minimal_context's cuts (the prefixes of node contexts);
- Viterbi (pruned and not) = the brute-force best, its path scoring it; ln Z; every
  candidate's posterior; the K best; the best path of a word lattice;
- auto runs the compiled DP on a VPYLM once it is set up, with ARS's answers.
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from compiled_brute import check_auto_equals_ars, check_compiled_against_brute, close
from conformance_targets import vpylm_reference_log as reference_log
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_vpylm import WORDS, reference_prob, tiny_corpus

from arsdecode import api
from arsdecode.lattice import Lattice
from arsdecode.lattice.flat import FlatLattices
from arsdecode.methods import fast_full, fast_vpylm
from arsdecode.model import context_rows
from arsdecode.model.vpylm import VpylmLM
from arsdecode.model.vpylm_train import train_vpylm


def random_lattice(rng: random.Random, max_len: int = 5, max_width: int = 3) -> Lattice:
    positions = []
    for _ in range(rng.randint(1, max_len)):
        toks = rng.sample([*WORDS, "zz"], rng.randint(1, max_width))
        ws = [round(rng.uniform(-2.0, 0.0), 4) for _ in toks]
        if len(toks) >= 2 and rng.random() < 0.15:
            ws[rng.randrange(len(toks))] = -math.inf
        positions.append(list(zip(toks, ws, strict=True)))
    return Lattice.from_lists(positions)


def check_tables(lm: VpylmLM) -> None:
    """The compiled walk and bound against VpylmLM and the reference; the states."""
    core = fast_vpylm.vp_core(lm)
    ids = list(range(len(lm.vocab)))
    ctxs = [list(c) for k in range(lm.max_depth + 2)
            for c in itertools.product(ids, repeat=k)][:4000]
    rows = context_rows(ctxs, lm.max_depth)
    words = np.repeat(np.array(ids), len(ctxs))
    tiled = np.ascontiguousarray(np.tile(rows, (len(ids), 1)))
    got = core.walk(tiled, words, False)
    assert np.array_equal(got, lm.log_prob(tiled, words))  # bit for bit
    for r in range(0, len(words), 7):
        want = reference_prob(lm.counts, ctxs[r % len(ctxs)], int(words[r]))
        assert abs(math.exp(got[r]) - want) <= 1e-12
    last = np.ascontiguousarray(tiled[:, -1:] if lm.max_depth else tiled[:, :0])
    assert np.array_equal(core.walk(last, words, True), lm.log_bound(last, words))
    for x in [-1, *ids]:  # the bound after one word >= every extension's factor
        for w in ids:
            bound = core.walk(np.array([[x]], dtype=np.int64), np.array([w]), True)[0]
            for k in range(lm.max_depth + 1):
                for z in itertools.product(ids, repeat=k):
                    ctx = [*z, x] if x >= 0 else list(z)
                    p = reference_prob(lm.counts, ctx, w)
                    assert p <= math.exp(bound) * (1 + 1e-12) + 1e-300, (x, z, w)
    trows, _, _ = fast_vpylm.state_tables(lm)
    states = {tuple(int(x) for x in r if x >= 0) for r in trows}
    assert states == lm._prefixes() and len(states) == len(trows)


def check_against_brute(lm: VpylmLM, lattices: list[Lattice], k: int = 3) -> int:
    """Every compiled answer on `lattices` (and the word-lattice DP) against brute force."""
    return check_compiled_against_brute(lm, lattices, lambda p: reference_log(lm, p), k=k,
                                        word_lattice=True)


@st.composite
def vpylms(draw):
    """A VPYLM trained on a random tiny corpus: seed, depth 1-5, sweeps, corpus size."""
    return (draw(st.integers(0, 10**6)), draw(st.integers(1, 5)), draw(st.integers(1, 3)),
            draw(st.integers(5, 60)), draw(st.integers(0, 99)))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vpylms())
def test_random_vpylms_equal_brute_force(case):
    seed, depth, sweeps, n, lat_seed = case
    lm = VpylmLM(train_vpylm(tiny_corpus(seed, n), max_depth=depth, sweeps=sweeps, seed=seed))
    if depth <= 3:
        check_tables(lm)
    rng = random.Random(lat_seed)
    assert check_against_brute(lm, [random_lattice(rng) for _ in range(6)]) >= 1


@pytest.mark.parametrize("seed", [0, 1])
def test_auto_runs_the_compiled_vpylm_with_the_answers_of_ars(seed):
    lm = VpylmLM(train_vpylm(tiny_corpus(seed + 10, 60), max_depth=4, sweeps=2, seed=seed))
    rng = random.Random(seed)
    check_auto_equals_ars(lm, [random_lattice(rng, 7, 4) for _ in range(20)])


def test_auto_weighs_the_setup_against_ars(monkeypatch):
    """A model not yet set up: auto sets it up when its cost (per tree node) is below ARS's
    estimate on the call, and runs ARS without building anything when it is above."""
    lattice = Lattice.from_lists([[("a", 0.0), ("b", -1.0)], [("c", 0.0), ("a", -0.5)]])
    lm = VpylmLM(train_vpylm(tiny_corpus(3, 60), max_depth=4, sweeps=1, seed=3))
    assert fast_full.setup_ngrams(lm) > 0 and not fast_full.setup_is_free(lm)
    for name in ("SETUP_NGRAMS_PER_NODE", "SETUP_NGRAMS_PER_NODE_TAIL_BUILT"):
        monkeypatch.setattr(fast_vpylm, name, 10**9)
    r = api.decode(lm, lattice, method="auto")
    assert r.method == "ars" and not fast_vpylm.is_built(lm)
    assert lm.tail_max_built  # ARS's bounds built them: the setup left is cheaper
    assert fast_full.setup_ngrams(lm) == 10**9 * len(lm.counts.parent)
    for name in ("SETUP_NGRAMS_PER_NODE", "SETUP_NGRAMS_PER_NODE_TAIL_BUILT"):
        monkeypatch.setattr(fast_vpylm, name, 1)
    r2 = api.decode(lm, lattice, method="auto")
    assert r2.method == "full" and fast_vpylm.is_built(lm) and close(r2.log_p, r.log_p)


def test_wide_lattices_prune_to_the_unpruned_answer_and_ars():
    """The sparse bound pass (`vp_backward`) on wide positions over a larger vocabulary, a
    word id repeated at some positions (two unknown tokens, both `<unk>`), widths from 1
    (few next words: x's exceptions tested one by one) to 40 (many: x's exception list
    read): pruning keeps the unpruned DP's best score (which uses no bound), and ARS agrees."""
    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(60)]
    corpus = []
    for _ in range(300):  # a skewed source, so some words have long exception lists
        s = [rng.choice(vocab[:5])]
        while len(s) < 10 and rng.random() < 0.85:
            s.append(vocab[(vocab.index(s[-1]) * 7 + 3) % 60] if rng.random() < 0.5
                     else vocab[min(int(rng.expovariate(0.1)), 59)])
        corpus.append(s)
    lm = VpylmLM(train_vpylm(corpus, max_depth=3, sweeps=2, seed=5))
    lattices = []
    for _ in range(25):
        positions = []
        for _ in range(rng.randint(2, 6)):
            width = rng.choice([1, 2, 5, 40])
            toks = rng.sample([*vocab, "zz", "yy"], width)  # zz, yy: both <unk>
            positions.append([(t, round(rng.uniform(-4.0, 0.0), 4)) for t in toks])
        lattices.append(Lattice.from_lists(positions))
    assert fast_full.has_dp(lm)
    flat = FlatLattices.from_lattices(lm, lattices)
    pruned = fast_full.run_flat(lm, flat)
    whole = fast_full.run_flat(lm, flat, prune=False)
    assert all(close(a, b) for a, b in zip(pruned.score, whole.score, strict=True))
    assert int(pruned.pairs.sum()) < int(whole.pairs.sum())  # the bounds prune
    for s, lat in enumerate(lattices[:8]):
        assert close(pruned.score[s], api.decode(lm, lat, method="ars").log_p)
