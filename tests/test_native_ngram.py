"""The compiled n-gram walk (arsdecode.native) against maxarpa's numpy walk and KenLM.

maxarpa's batch walk (log10) times ln 10 must match to 1e-12 relative, on random ARPA models
with positive backoffs and missing prefix contexts (hypothesis) and on the embedded state_union
5-gram; KenLM's float32 scores to 1e-4; the bound to the reference's max over left extensions.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import kenlm
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import maxarpa
from arsdecode.native import NativeNgram, native_ngram
from arsdecode.testing.random_arpa import random_arpa_text
from arsdecode.testing.reference_arpa import kenlm_log10p, parse_arpa, ref_max_log10p
from maxarpa.constants import BOS, EOS, LN10
from maxarpa.model import Model

EMBEDDED = Path(__file__).resolve().parent.parent / "arsdecode/data/state_union.5gram.maxarpa.gz"


def random_rows(lm: Model, rng: np.random.Generator, b: int, width: int):
    """Random (context, word) rows: any words, random context length, <s> only first."""
    bos = lm.bos_id
    ctx = rng.integers(0, lm.trie.vocab_size, (b, width)).astype(np.int64)
    ctx[ctx == bos] = (bos + 1) % lm.trie.vocab_size
    lens = rng.integers(0, width + 1, b)
    for i in range(width):
        ctx[lens < width - i, i] = -1
    starts = (lens > 0) & (rng.random(b) < 0.4)
    ctx[starts, np.maximum(width - lens[starts], 0)] = bos  # oldest word = <s>
    words = rng.integers(0, lm.trie.vocab_size, b).astype(np.int64)
    words[words == bos] = lm.eos_id
    return ctx, words


def assert_matches_maxarpa(lm: Model, ctx: np.ndarray, words: np.ndarray) -> None:
    nm = NativeNgram.from_model(lm)
    for got, ref in (
        (nm.log_prob(ctx, words), LN10 * lm.log10p_batch(ctx, words)),
        (nm.log_bound(ctx, words), LN10 * lm.max_log10p_batch(ctx, words)),
    ):
        assert np.array_equal(np.isneginf(got), np.isneginf(ref))
        fin = np.isfinite(ref)
        np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-12, atol=1e-13)
        assert (got <= nm.log_bound(ctx, words) + 1e-12).all()


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    order=st.integers(1, 5),
    vocab=st.integers(1, 6),
    positive=st.sampled_from([0.0, 0.5, 1.0]),
    drop_prefix=st.booleans(),
    neg_inf=st.sampled_from([0.0, 0.2]),
)
def test_native_walk_matches_numpy_walk_on_random_models(
    tmp_path_factory, seed, order, vocab, positive, drop_prefix, neg_inf
):
    text = random_arpa_text(random.Random(seed), order, vocab, positive, drop_prefix,
                            neg_inf_fraction=neg_inf)
    path = tmp_path_factory.mktemp("nat") / "m.arpa"
    path.write_text(text)
    lm = maxarpa.load(path)
    rng = np.random.default_rng(seed)
    for width in {0, max(lm.order - 1, 0), lm.order + 1}:  # shorter, exact, longer than n-1
        ctx, words = random_rows(lm, rng, 300, width)
        assert_matches_maxarpa(lm, ctx, words)


def test_native_walk_matches_numpy_walk_on_embedded_5gram():
    lm = maxarpa.load(EMBEDDED)
    rng = np.random.default_rng(5)
    top = lm.trie.nodes[-1]
    rows = top.rows[top.listed].astype(np.int64)[rng.integers(0, int(top.listed.sum()), 20000)]
    noise = rng.random(rows.shape) < 0.2
    rows[noise] = rng.integers(0, lm.trie.vocab_size, int(noise.sum()))
    rows[rows == lm.bos_id] = lm.eos_id
    assert_matches_maxarpa(lm, rows[:, :-1].copy(), rows[:, -1].copy())
    ctx, words = random_rows(lm, rng, 20000, 4)
    assert_matches_maxarpa(lm, ctx, words)


def test_native_scores_match_kenlm_and_the_reference_bound(random_lms):
    rng = random.Random(3)
    for model in random_lms:
        ref = parse_arpa(model.path.read_text())
        nm = native_ngram(model.lm)
        words = [w for w in model.lm.vocab if w != BOS]
        inner = [w for w in words if w != EOS]
        for _ in range(60):
            k = rng.randint(0, model.lm.order - 1)
            context = [rng.choice(inner) for _ in range(k)]
            if context and rng.random() < 0.4:
                context[0] = BOS
            word = rng.choice(words)
            ctx = np.array([model.lm.ids(context)], dtype=np.int64).reshape(1, len(context))
            wid = model.lm.ids([word])
            lp = float(nm.log_prob(ctx, wid)[0])
            if isinstance(model.km, kenlm.Model):
                kl = kenlm_log10p(model.km, word, context)
                if math.isfinite(kl):
                    assert lp == pytest.approx(LN10 * kl, abs=1e-4), (model, context, word)
            bound = ref_max_log10p(ref, word, context)
            assert float(nm.log_bound(ctx, wid)[0]) == pytest.approx(LN10 * bound, abs=1e-9)


def test_bad_input_is_rejected():
    lm = maxarpa.load(EMBEDDED)
    nm = native_ngram(lm)
    with pytest.raises(ValueError):
        nm.log_prob(np.zeros((2, 4)), np.zeros(3))
    with pytest.raises(ValueError):
        nm.log_prob(np.zeros((1, 4)), np.array([lm.trie.vocab_size]))
    with pytest.raises(ValueError):
        nm.log_prob(np.zeros(4), np.zeros(4))


def runs_of_contexts(lm: Model, rng: np.random.Generator, contexts: int, width: int):
    """Rows as the q-automaton asks for them: each context followed by a run of many words."""
    ctx, _ = random_rows(lm, rng, contexts, width)
    run = max(64, lm.trie.vocab_size)
    words = np.concatenate([rng.permutation(np.resize(np.arange(lm.trie.vocab_size), run))
                            for _ in range(contexts)]).astype(np.int64)
    return np.repeat(ctx, run, axis=0), words


def check_shortcut(lm: Model, rng: np.random.Generator, width: int) -> int:
    """Long runs of one context (the unigram shortcut) give the very bits of the same rows
    in an order with no runs (the plain walk, itself tested against maxarpa above)."""
    ctx, words = runs_of_contexts(lm, rng, 12, width)
    mixed = rng.permutation(len(words))
    used = 0
    for want_max in (False, True):
        core = NativeNgram.from_model(lm).core
        in_runs = core.walk(ctx, words, want_max)
        used += core.shortcut_rows
        core = NativeNgram.from_model(lm).core
        plain = np.empty_like(in_runs)
        plain[mixed] = core.walk(ctx[mixed], words[mixed], want_max)
        assert core.shortcut_rows == 0  # shuffled: no run is long enough
        assert np.array_equal(in_runs, plain)  # bit for bit, -inf included
    return used


def test_unigram_shortcut_is_bit_identical_on_the_embedded_5gram():
    lm = maxarpa.load(EMBEDDED)
    assert check_shortcut(lm, np.random.default_rng(3), lm.order - 1) > 0


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 5), st.sampled_from([0.0, 0.5, 1.0]))
def test_unigram_shortcut_is_bit_identical_on_random_models(tmp_path_factory, seed, order,
                                                             positive):
    text = random_arpa_text(random.Random(seed), order, 40, positive, density=0.3)
    path = tmp_path_factory.mktemp("sc") / "m.arpa"
    path.write_text(text)
    lm = maxarpa.load(path)
    check_shortcut(lm, np.random.default_rng(seed), max(lm.order - 1, 1))
