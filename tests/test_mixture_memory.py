"""A mixture's tables without copies (issue 34, memory of `-mix-lm`).

Why: the mixture's compiled walks now read each component's log10 arrays where the model
holds them (`log10_core`, scaled by ln 10 where read) instead of NativeNgram's natural-log
copy, and the union of the components' useful contexts is written level by level into
arrays allocated once. Both must give the same numbers as before, bit for bit:

- `Log10Core.walk` = `NgramCore.walk` (the compiled walk on the ln copy, the reference the
  rest of the engine uses and the exactness tests check against brute force), compared with
  ==, on the embedded 5-gram read from text and mapped from a binary file, and on random
  models with positive backoffs, for p and for the max-backoff bound;
- the union tables = the union computed independently here: every component context, each of
  its words replaced by every union word mapping to it, as a set of word tuples; each row
  is the one `maxarpa.contexts.rows_from_keys` derives from the keys;
- a union whose `<unk>` expansion outgrows the components' count (the arrays grow) is still
  that set.
"""

from __future__ import annotations

import itertools
import random
import re

import numpy as np
import pytest

import maxarpa
from arsdecode.api import DEFAULT_LM
from arsdecode.methods import fast_mixture
from arsdecode.model.interpolated import InterpolatedLM
from arsdecode.model.maxarpa_lm import as_target_model, log10_core
from arsdecode.native import native_ngram
from arsdecode.testing.random_arpa import random_arpa_text
from maxarpa.contexts import rows_from_keys, useful_context_tables


def random_rows(rng: np.random.Generator, vocab: int, b: int, width: int) -> np.ndarray:
    """(b, width) contexts: random ids, some left-padded with -1, in runs of one context."""
    rows = rng.integers(0, vocab, size=(b, width))
    pad = rng.integers(0, width + 1, size=b)
    rows[np.arange(width)[None, :] < pad[:, None]] = -1
    return np.repeat(rows, rng.integers(1, 4, size=b), axis=0)[:b]


def assert_walks_equal(lm: maxarpa.Model, seed: int) -> None:
    rng = np.random.default_rng(seed)
    mine, ref = log10_core(lm), native_ngram(lm).core
    for width in sorted({0, 1, lm.order - 1, lm.order + 1}):
        rows = np.ascontiguousarray(random_rows(rng, len(lm.vocab), 400, width))
        words = rng.integers(0, len(lm.vocab), size=len(rows))
        for want_max in (False, True):
            a, b = mine.walk(rows, words, want_max), ref.walk(rows, words, want_max)
            assert np.array_equal(a, b), (width, want_max, np.flatnonzero(a != b)[:5])


def test_log10_walk_equals_the_native_walk_on_the_embedded_model(tmp_path):
    text = maxarpa.load(DEFAULT_LM)
    assert_walks_equal(text, 1)
    binary = tmp_path / "lm.npz"
    maxarpa.convert(DEFAULT_LM, binary, binary=True)
    mapped = maxarpa.load(binary, mmap=True)
    assert not mapped.trie.nodes[1].keys.flags.writeable  # read in place, not copied
    assert_walks_equal(mapped, 2)
    core = log10_core(mapped)
    assert np.shares_memory(core.arrays[0][2], mapped.trie.nodes[2].keys)
    assert np.shares_memory(core.arrays[1][2], mapped.trie.nodes[2].log10p)


@pytest.mark.parametrize("seed", range(6))
def test_log10_walk_equals_the_native_walk_on_random_models(tmp_path, seed):
    rng = random.Random(seed)
    path = tmp_path / "m.arpa"
    path.write_text(random_arpa_text(rng, rng.randint(1, 5), rng.randint(3, 9), 0.5,
                                     density=0.8, neg_inf_fraction=0.1))
    assert_walks_equal(maxarpa.load(path), seed)


def union_reference(mix: InterpolatedLM) -> set[tuple[int, ...]]:
    """Every active component's useful contexts in union ids: each word replaced by every
    union word that maps to it (one, or the words a component's <unk> stands for)."""
    out: set[tuple[int, ...]] = {()}
    for i in mix._active:
        model = mix.components[i].ngram
        pre: dict[int, list[int]] = {}
        for u, c in enumerate(mix._maps[i].tolist()):
            if c >= 0:
                pre.setdefault(c, []).append(u)
        rows, lens, _ = useful_context_tables(model)
        for row, n in zip(rows.tolist(), lens.tolist(), strict=True):
            words = row[len(row) - n:] if n else []
            out.update(itertools.product(*(pre.get(w, []) for w in words)))
    return out


def assert_union_is_the_reference(mix: InterpolatedLM) -> None:
    tables = fast_mixture.union_tables(mix)
    assert tables is not None
    counts, keys = tables  # no rows or lengths: the DP reads each context from its keys
    assert counts.sum() == len(keys) and (keys[2:] > keys[1:-1]).all()  # FullDP bisects
    lens = np.repeat(np.arange(len(counts)), counts).astype(np.int32)
    width = fast_mixture.dp_order(mix) - 1
    rows = rows_from_keys(lens, keys, len(mix.vocab), width)
    got = [tuple(r[width - n:]) if n else () for r, n in zip(rows.tolist(), lens.tolist(),
                                                                 strict=True)]
    assert len(got) == len(set(got))
    assert set(got) == union_reference(mix)


@pytest.mark.parametrize("missing", ["unk", "zero"])
def test_union_tables_are_the_union_of_the_components_contexts(tmp_path, missing):
    models = []
    for n in range(2):
        path = tmp_path / f"m{n}.arpa"
        text = random_arpa_text(random.Random(40 + n), 3 + n, 6, 0.5, density=0.9)
        path.write_text(re.sub(r"\bw([0-3])\b", r"v\1", text) if n else text)  # some other words
        models.append(maxarpa.load(path))
    assert_union_is_the_reference(InterpolatedLM(models, [0.5, 0.5], missing=missing))


def test_a_union_that_outgrows_the_components_count(tmp_path):
    """A component's <unk> in many of its contexts, standing for many union words: the
    union has more contexts than the components together, so its arrays grow."""
    a = tmp_path / "a.arpa"
    a.write_text(random_arpa_text(random.Random(5), 3, 3, 0.5, density=1.0))
    b = tmp_path / "b.arpa"
    b.write_text(re.sub(r"\bw(\d+)\b", r"u\1",
                        random_arpa_text(random.Random(6), 2, 12, 0.5, density=0.3)))
    mix = InterpolatedLM([maxarpa.load(a), maxarpa.load(b)], [0.5, 0.5], missing="unk")
    total = sum(len(useful_context_tables(c.ngram)[1]) for c in mix.components)
    tables = fast_mixture.union_tables(mix)
    assert tables is not None and len(tables[1]) > total
    assert_union_is_the_reference(mix)


def test_a_component_builds_no_natural_log_copy():
    """A model only mixed is queried through its tables in place: the adapter builds the
    compiled walk's natural-log tables on its own first query, not when made."""
    lm = maxarpa.load(DEFAULT_LM)
    mix = InterpolatedLM([lm, maxarpa.truncate(lm, 2)], [0.6, 0.4])
    rows = np.array([[-1, -1, 3, 4]], dtype=np.int64)
    mix.log_prob(rows, np.array([5]))
    assert as_target_model(lm)._log_prob is None
    from arsdecode.native import _CACHE

    assert lm not in _CACHE


def test_full_dp_without_rows_refuses_what_its_bisection_cannot_read(tmp_path):
    """A mixture's FullDP keeps no rows and no hash (issue 34): it finds a context's child
    by bisecting the keys, so it refuses keys that do not ascend, and rows or a hash missing
    anywhere but a mixture."""
    from arsdecode.errors import ModelError
    from arsdecode.native import _core

    lm = maxarpa.load(DEFAULT_LM)
    mix = InterpolatedLM([lm, maxarpa.truncate(lm, 2)], [0.6, 0.4])
    counts, keys = fast_mixture.union_tables(mix)
    lens = np.repeat(np.arange(len(counts)), counts).astype(np.int32)
    core = fast_mixture.vocabulary_core(len(mix.vocab), fast_mixture.dp_order(mix))
    mc = fast_mixture.mix_core(mix)
    _core.FullDP(core, None, None, keys, None, 0, mix=mc)  # the layout as built
    _core.FullDP(core, None, lens, keys, None, 0, mix=mc)  # with lengths, as given
    swapped = keys.copy()
    swapped[[5, 6]] = swapped[[6, 5]]  # two contexts of length 1, out of key order
    assert lens[5] == lens[6] == 1
    with pytest.raises(ModelError, match="keys must ascend"):
        _core.FullDP(core, None, None, swapped, None, 0, mix=mc)
    with pytest.raises(ModelError, match="disagree"):
        _core.FullDP(core, None, lens[:-1], keys, None, 0, mix=mc)
    with pytest.raises(ModelError, match="only a mixture"):
        _core.FullDP(core, None, lens, keys, None, 0)
    slots, bits = _core.build_hash(keys)
    with pytest.raises(ModelError, match="only a mixture"):
        _core.FullDP(core, None, lens, keys, slots, bits, mix=mc)


def test_a_mapped_binary_model_keeps_its_float32_bounds_until_they_are_read(tmp_path):
    """Format 3 stores mf and mbow as float32 rounded up. Mapped, they stay as stored (no
    float64 copy at load: 60 MB of `-mix-lm`'s general model, issue 34) until `mf`/`mbow`
    is read, which widens them exactly and read-only; each is still at least the exact bound
    the text model holds (the certificate's condition)."""
    text = maxarpa.load(DEFAULT_LM)
    binary = tmp_path / "lm.npz"
    maxarpa.convert(DEFAULT_LM, binary, binary=True)
    mapped = maxarpa.load(binary, mmap=True)
    for exact, node in zip(text.trie.nodes[:-1], mapped.trie.nodes[:-1], strict=True):
        mf32, mbow32 = node.stored_bounds()
        assert mf32.dtype == mbow32.dtype == np.float32 and not mf32.flags.writeable
        assert node.__dict__["mf"] is None is node.__dict__["mbow"]  # not widened by the load
        mf, mbow = node.mf, node.mbow
        assert mf.dtype == mbow.dtype == np.float64 and not mf.flags.writeable
        assert np.array_equal(mf, mf32.astype(np.float64))
        assert np.array_equal(mbow, mbow32.astype(np.float64))
        assert (mf >= exact.mf).all() and (mbow >= exact.mbow).all()
        assert node.stored_bounds()[0] is mf32  # still the stored array


@pytest.mark.parametrize("high", [2**20, 2**62])  # packed with its index, or an argsort
def test_merging_a_level_numbers_the_sorted_distinct_keys(high, monkeypatch):
    """`_merge_level` writes a level's distinct keys sorted after gid n and gives every
    component entry its key's gid, whether the keys are packed with their indices into one
    sorted array (narrow keys) or argsorted (keys too wide to pack)."""
    rng = np.random.default_rng(high % 97)
    parts = [rng.integers(0, high, size=s, dtype=np.uint64) for s in (700, 0, 1500)]
    parts[2][:300] = parts[0][:300]  # keys shared between components
    parts[0][50:60] = parts[0][0]  # and repeated within one
    found = [(i, None, p.copy()) for i, p in enumerate(parts)]
    keys_u = np.zeros(5000, dtype=np.uint64)
    monkeypatch.setattr(fast_mixture, "KEYS_CHUNK", 128)  # duplicates across chunk edges
    count = fast_mixture._merge_level(found, keys_u, 7)
    level = np.unique(np.concatenate(parts))
    assert count == len(level) and np.array_equal(keys_u[7:7 + count], level)
    for (_, _, gids), keys in zip(found, parts, strict=True):
        assert gids.dtype == np.int32
        assert np.array_equal(keys_u[gids], keys)


@pytest.mark.parametrize("order", [2, 5])
def test_a_rowless_mixture_dp_transitions_equal_a_reference(order):
    """Without rows, lengths or a hash (issue 34), each transition of the mixture's FullDP
    (the next state by bisection and the failure chain, ln p from the context read off the
    keys) equals a reference: the longest suffix of context + word among the union's
    contexts (a Python set), and MixCore.walk on the context's row, bit for bit. Order 2
    makes every context but the empty one full-width (n - 1 = 1 word)."""
    from arsdecode.native import _core

    lm = maxarpa.load(DEFAULT_LM)
    models = [lm if order == 5 else maxarpa.truncate(lm, 2), maxarpa.truncate(lm, 2)]
    mix = InterpolatedLM(models, [0.6, 0.4])
    counts, keys = fast_mixture.union_tables(mix)
    width = fast_mixture.dp_order(mix) - 1
    lens = np.repeat(np.arange(len(counts)), counts).astype(np.int32)
    rows = rows_from_keys(lens, keys, len(mix.vocab), width)
    gid_of = {tuple(r[width - n:]) if n else (): g
              for g, (r, n) in enumerate(zip(rows.tolist(), lens.tolist(), strict=True))}
    mc = fast_mixture.mix_core(mix)
    core = fast_mixture.vocabulary_core(len(mix.vocab), width + 1)
    dp = _core.FullDP(core, None, None, keys, None, 0, mix=mc)
    rng = np.random.default_rng(order)
    gids = np.concatenate([rng.integers(0, len(keys), 3000),
                           rng.integers(len(keys) - int(counts[-1]), len(keys), 1000)])
    words = rng.integers(0, len(mix.vocab), len(gids))
    last = rows[gids[::7], -1]
    words[::7] = np.where(last >= 0, last, words[::7])  # words that often continue a context
    nxt, lp = dp.transitions(gids, words)
    for g, w, got in zip(gids.tolist(), words.tolist(), nxt.tolist(), strict=True):
        s = (*(rows[g][width - lens[g]:].tolist() if lens[g] else ()), w)[-width:]
        want = next(gid_of[s[i:]] for i in range(len(s) + 1) if s[i:] in gid_of)
        assert got == want, (g, w)
    assert np.array_equal(lp, mc.walk(np.ascontiguousarray(rows[gids]), words, False))


def test_a_union_too_large_for_32_bit_gids_is_refused_in_one_line(monkeypatch):
    """The union's gids are int32 (its failure links' type): components whose contexts could
    pass that are refused with a ModelError saying so, not numbered modulo 2**31."""
    from arsdecode.errors import ModelError

    lm = maxarpa.load(DEFAULT_LM)
    mix = InterpolatedLM([lm, maxarpa.truncate(lm, 3)], [0.5, 0.5])
    monkeypatch.setattr(fast_mixture, "GID_LIMIT", 1000)
    with pytest.raises(ModelError, match="32 bits"):
        fast_mixture.union_tables(mix)
