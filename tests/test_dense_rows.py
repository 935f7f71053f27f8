"""The dense DP rows (tags, _dprows.pxi) against the walks from scratch, pair by pair.

A dense row holds every word's (next state, ln p) after one state, filled from the row of
the state's failure link: walk A resumed only where the link's entry is a node of its own
length, walk B resumed from the link's, the next state from the useful-context children.
The reference is the sparse store of a FullDP on the same tables, which walks the model's
hash tables order by order (ng_walk_in) and the failure chain (uc_cut_append) for each pair.
Every (state, word) pair of every model must agree bit for bit: ln p to the last bit (the
same terms added in the same order), the next state exactly. Models: random ARPA files with
missing prefixes (useful contexts that are no node: the fill cannot assume prefix closure),
backoffs above 1, -inf probabilities, and the shipped tag models. A budget of a few rows also
runs the fills that empty the caches halfway and the fallback that fills one row by the walks.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import maxarpa
from arsdecode.errors import OptionError
from arsdecode.methods.fast_full import useful_context_tables
from arsdecode.native import _core, native_ngram
from arsdecode.testing.random_arpa import random_arpa_text
from maxarpa.model import Model

POS_MODELS = Path(__file__).resolve().parent.parent / "arsdecode/data/pos"


def assert_rows_equal_walks(lm: Model, max_gids: int | None = None) -> None:
    """Every (gid, word) pair (or those of `max_gids` random gids): dense == sparse, with
    the default budget and with one of 3 rows (clears, and the one-row fallback)."""
    rows, lens, keys = (a if a.flags.writeable else a.copy() for a in useful_context_tables(lm))
    slots, bits = _core.build_hash(keys)
    core = native_ngram(lm).core
    v, n = lm.trie.vocab_size, len(lens)
    gid_set = np.arange(n)
    if max_gids is not None and n > max_gids:
        gid_set = np.random.default_rng(0).choice(n, max_gids, replace=False)
    # Visit the states in a shuffled order, so chains are filled from every point.
    gid_set = np.random.default_rng(1).permutation(gid_set)
    gids = np.repeat(gid_set, v).astype(np.int64)
    words = np.tile(np.arange(v), len(gid_set)).astype(np.int64)
    sparse = _core.FullDP(core, rows, lens, keys, slots, bits, False)
    want_next, want_lp = sparse.transitions(gids, words)
    width = max(lm.order - 1, 0)
    row = _core.dense_row_bytes(v, width)
    for budget in (_core.DEFAULT_MAX_BYTES, 3 * row + 24):
        dense = _core.FullDP(core, rows, lens, keys, slots, bits, True, budget)
        got_next, got_lp = dense.transitions(gids, words)
        assert np.array_equal(got_next, want_next), budget
        same = (got_lp == want_lp) | (np.isneginf(got_lp) & np.isneginf(want_lp))
        assert same.all(), (budget, np.flatnonzero(~same)[:5])
        assert dense.cache_bytes() <= budget


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    order=st.integers(1, 6),
    vocab=st.integers(2, 9),
    positive=st.sampled_from([0.0, 0.5, 1.0]),
    drop_prefix=st.booleans(),
    neg_inf=st.sampled_from([0.0, 0.2]),
)
def test_dense_rows_equal_the_walks_on_random_models(tmp_path_factory, seed, order, vocab,
                                                      positive, drop_prefix, neg_inf):
    path = tmp_path_factory.mktemp("rows") / "m.arpa"
    path.write_text(random_arpa_text(random.Random(seed), order, vocab, positive, drop_prefix,
                                     neg_inf_fraction=neg_inf, density=0.8))
    assert_rows_equal_walks(maxarpa.load(path))


@pytest.mark.parametrize("order", [2, 3, 4, 5])
def test_dense_rows_equal_the_walks_on_the_shipped_tag_models(order):
    lm = maxarpa.load(POS_MODELS / f"tags.{order}.maxarpa.gz")
    assert_rows_equal_walks(lm, max_gids=3000)


def test_transitions_refuses_ids_out_of_range(tmp_path):
    path = tmp_path / "m.arpa"
    path.write_text(random_arpa_text(random.Random(3), 3, 5))
    lm = maxarpa.load(path)
    rows, lens, keys = useful_context_tables(lm)
    slots, bits = _core.build_hash(keys)
    dp = _core.FullDP(native_ngram(lm).core, rows, lens, keys, slots, bits, True)
    for gid, word in ((len(lens), 0), (0, lm.trie.vocab_size), (-1, 0)):
        with pytest.raises(OptionError, match="out of range"):
            dp.transitions(np.array([gid], dtype=np.int64), np.array([word], dtype=np.int64))
