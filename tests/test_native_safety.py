"""The compiled core does not trust its inputs (issue 19, A.2).

It indexes its tables without bounds checks and without the GIL, so everything a caller can
pass is checked first, with the project's error classes: the model order (its walks keep a
context's backoffs in a fixed stack buffer), word and context ids of the public `log_prob`,
the offsets of flat lattices, and negative word ids in maxarpa's numpy walk (which would wrap
around). The full DP keeps its caches per concurrent run, so threads sharing one model's DP
get the serial answers, and each cache stays within its documented bound.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import maxarpa
from ars_fixtures import LM, make_lattice
from arsdecode.errors import LatticeError, ModelError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.lattice.flat import FlatLattices
from arsdecode.methods.fast_full import full_dp, run_flat, useful_context_tables
from arsdecode.methods.full import full_decode
from arsdecode.native import MAX_ORDER, _core, native_ngram
from arsdecode.testing.random_arpa import random_arpa_text
from maxarpa.constants import LN10
from maxarpa.errors import UnknownWordError
from maxarpa.model import Model

EMBEDDED = Path(__file__).resolve().parent.parent / "arsdecode/data/state_union.5gram.maxarpa.gz"


def chain_arpa(order: int) -> str:
    """An ARPA model of order `order` over {a, b}: every a^k and <s> a^(k-1) up to `order`,
    with distinct probabilities and backoffs, so a long context walks every order."""
    grams = {1: [("<s>", -99.0, -0.5), ("</s>", -1.0, -0.1), ("a", -0.3, -0.2),
                 ("b", -0.6, -0.3)]}
    for k in range(2, order + 1):
        bow = -0.01 * (k % 7) - 0.05 if k < order else None
        grams[k] = [(" ".join(["a"] * k), -0.1 - 0.003 * k, bow),
                    (" ".join(["<s>"] + ["a"] * (k - 1)), -0.2 - 0.002 * k, bow)]
    grams[2].append(("a </s>", -0.9, None))
    out = ["\\data\\"] + [f"ngram {k}={len(g)}" for k, g in grams.items()] + [""]
    for k, g in grams.items():
        out.append(f"\\{k}-grams:")
        out += [f"{p}\t{w}" + (f"\t{b}" if b is not None else "") for w, p, b in g]
        out.append("")
    return "\n".join(out + ["\\end\\", ""])


def random_model(tmp_path: Path, seed: int, order: int, vocab: int) -> LM:
    path = tmp_path / f"r{seed}.arpa"
    path.write_text(random_arpa_text(random.Random(seed), order, vocab, 0.3))
    lm = maxarpa.load(path)
    return LM(f"r{seed}", path, lm, None, [w for w in lm.vocab if w not in ("<s>", "</s>")], [])


# ----- the model order ---------------------------------------------------------------------------


def test_an_order_above_the_cap_is_refused_at_load_with_one_line(tmp_path):
    path = tmp_path / "o70.arpa"
    path.write_text(chain_arpa(70))
    lm = maxarpa.load(path)  # maxarpa (numpy) takes any order
    assert lm.order == 70 > MAX_ORDER
    with pytest.raises(ModelError, match=r"o70\.arpa: order 70 is above .* maximum of 64"):
        native_ngram(lm)
    lattice = tmp_path / "lat.json"
    lattice.write_text('{"positions": [[["a", 0.0]], [["a", 0.0], ["b", -1.0]]]}')
    proc = subprocess.run([sys.executable, "-m", "arsdecode", "decode", "--lm", str(path),
                           "--lattice", str(lattice)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "o70.arpa" in lines[0] and "order 70" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_the_core_itself_refuses_an_order_above_the_cap():
    """NgramCore's own check (the wrapper checks first, naming the file)."""
    n = MAX_ORDER + 1
    z = np.zeros(n + 1, dtype=np.int64)
    with pytest.raises(ModelError, match="above the compiled core's maximum"):
        _core.NgramCore(n, 1, z, np.zeros(0, np.uint64), np.zeros(0, np.int32), z,
                        np.zeros(n, np.int32), *(np.zeros(0) for _ in range(4)))


def test_the_highest_order_allowed_walks_and_decodes_exactly(tmp_path):
    """At the cap the longest context fills the backoff buffer: answers equal maxarpa's."""
    path = tmp_path / "o64.arpa"
    path.write_text(chain_arpa(MAX_ORDER))
    lm = maxarpa.load(path)
    a, b, bos = lm.word_id("a"), lm.word_id("b"), lm.bos_id
    nm = native_ngram(lm)
    rows = [[bos] + [a] * (MAX_ORDER - 2), [a] * (MAX_ORDER - 1), [-1] * 10 + [a] * 53,
            [b] + [a] * (MAX_ORDER - 2)]
    ctx = np.array(rows * 20, dtype=np.int64)  # 80 rows: walk's shortcut path too
    words = np.array(([a, b, lm.eos_id, a] * 20), dtype=np.int64)
    np.testing.assert_allclose(nm.log_prob(ctx, words), LN10 * lm.log10p_batch(ctx, words),
                               rtol=1e-12)
    np.testing.assert_allclose(nm.log_bound(ctx, words),
                               LN10 * lm.max_log10p_batch(ctx, words), rtol=1e-12)
    lat = Lattice.from_lists([[("a", 0.0), ("b", -0.5)]] * 70)
    res = run_flat(lm, FlatLattices.from_lattices(lm, [lat]))
    assert res.score[0] == pytest.approx(full_decode(lm, lat).log_p, abs=1e-9)


# ----- word and context ids ----------------------------------------------------------------------


@pytest.mark.parametrize("rows", [1, 40])  # 40: one context repeated, walk's unigram shortcut
@pytest.mark.parametrize("bad", ["vocab", "huge"])
def test_a_context_id_out_of_range_is_refused_by_log_prob(rows, bad):
    lm = maxarpa.load(EMBEDDED)
    nm = native_ngram(lm)
    v = lm.trie.vocab_size
    wid = v if bad == "vocab" else 10**15
    ctx = np.tile(np.array([[-1, lm.bos_id, 5, wid]], dtype=np.int64), (rows, 1))
    words = np.arange(rows, dtype=np.int64) + 3
    for query in (nm.log_prob, nm.log_bound):
        with pytest.raises(OptionError, match=f"context id {wid} out of range"):
            query(ctx, words)
    ok = ctx.copy()
    ok[:, -1] = v - 1  # the last id is fine, and padding (-1) is not an error
    np.testing.assert_allclose(nm.log_prob(ok, words), LN10 * lm.log10p_batch(ok, words),
                               rtol=1e-12)


def test_columns_beyond_the_model_order_are_not_read_nor_checked():
    lm = maxarpa.load(EMBEDDED)  # order 5: the last 4 columns are the context
    nm = native_ngram(lm)
    ctx = np.array([[10**15, -7, lm.bos_id, 5, 9]], dtype=np.int64)
    words = np.array([12], dtype=np.int64)
    assert nm.log_prob(ctx, words)[0] == nm.log_prob(ctx[:, 1:], words)[0]


def test_a_word_id_out_of_range_is_refused_by_log_prob():
    lm = maxarpa.load(EMBEDDED)
    nm = native_ngram(lm)
    ctx = np.full((2, 4), -1, dtype=np.int64)
    for wid in (-1, lm.trie.vocab_size):
        with pytest.raises(OptionError, match=f"word id {wid} out of range"):
            nm.log_prob(ctx, np.array([3, wid], dtype=np.int64))


@pytest.mark.parametrize("query", ["log10p_batch", "max_log10p_batch"])
def test_maxarpa_refuses_negative_and_too_large_ids_instead_of_wrapping(query):
    lm = maxarpa.load(EMBEDDED)
    walk = getattr(lm, query)
    v = lm.trie.vocab_size
    ctx = np.array([[-1, lm.bos_id]], dtype=np.int64)
    for wid in (-1, -v, v):  # -1 would read word v - 1's row
        with pytest.raises(UnknownWordError, match=f"word id {wid} out of range"):
            walk(ctx, np.array([wid]))
    with pytest.raises(UnknownWordError, match=f"context id {v} out of range"):
        walk(np.array([[-1, v]]), np.array([3]))
    assert np.isfinite(walk(ctx, np.array([v - 1])))  # the last id and -1 padding are fine


# ----- flat lattice offsets ----------------------------------------------------------------------


def test_flat_lattices_with_decreasing_offsets_are_refused():
    ids, emis = np.array([3, 4, 5], dtype=np.int64), np.zeros(3)
    good = FlatLattices(np.array([0, 1, 3]), np.array([0, 1, 2, 3]), ids, emis)
    assert len(good.pos_off) == 4
    with pytest.raises(LatticeError, match="pos_off decreases after index 1"):
        FlatLattices(np.array([0, 1, 3]), np.array([0, 2, 1, 3]), ids, emis)
    with pytest.raises(LatticeError, match="sent_off decreases after index 1"):
        FlatLattices(np.array([0, 2, 1, 3]), np.array([0, 1, 2, 3]), ids, emis)
    with pytest.raises(LatticeError, match="sent_off must run from 0 to 3"):
        FlatLattices(np.array([1, 3]), np.array([0, 1, 2, 3]), ids, emis)


def test_the_compiled_dp_refuses_decreasing_offsets_itself():
    """FullDP.run is public too: bad offsets raise instead of indexing out of bounds."""
    lm = maxarpa.load(EMBEDDED)
    dp = full_dp(lm)
    ids, emis = np.array([3, 4, 5], dtype=np.int64), np.zeros(3)
    for sent_off, pos_off, what in (
        ([0, 2, 1, 3], [0, 1, 2, 3], "sentence offsets decrease after sentence 1"),
        ([0, 1, 3], [0, 2, 1, 3], "position offsets decrease after position 1"),
        ([1, 3], [0, 1, 2, 3], "offsets must start at 0"),
    ):
        with pytest.raises(LatticeError, match=what):
            dp.run(np.array(sent_off, dtype=np.int64), np.array(pos_off, dtype=np.int64), ids,
                   emis, lm.bos_id, lm.eos_id, True)
    with pytest.raises(LatticeError, match="word id -2 out of range"):
        dp.run(np.array([0, 1], dtype=np.int64), np.array([0, 1], dtype=np.int64),
               np.array([-2], dtype=np.int64), np.zeros(1), lm.bos_id, lm.eos_id, True)


# ----- threads and the cache bound ---------------------------------------------------------------


def chunks(lm: Model, lattices: list[Lattice], size: int) -> list[FlatLattices]:
    return [FlatLattices.from_lattices(lm, lattices[i : i + size])
            for i in range(0, len(lattices), size)]


def run_chunk(dp: _core.FullDP, lm: Model, flat: FlatLattices, viterbi: bool = True):
    return dp.run(flat.sent_off, flat.pos_off, flat.cand_ids, flat.cand_emis, lm.bos_id,
                  lm.eos_id, viterbi)


def new_dp(lm: Model, dense: bool, max_bytes: int = _core.DEFAULT_MAX_BYTES):
    rows, lens, keys = useful_context_tables(lm)
    slots, bits = _core.build_hash(keys)
    return _core.FullDP(native_ngram(lm).core, rows, lens, keys, slots, bits, dense,
                        max_bytes)


def assert_same(got, want) -> None:
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w)


def run_threaded(dp, lm: Model, flats: list[FlatLattices], n_threads: int, viterbi: bool):
    """Every thread runs every chunk (each from a different start), all on one `dp`."""
    results: dict[tuple[int, int], tuple] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(n_threads)

    def work(t: int) -> None:
        try:
            barrier.wait()
            for k in range(len(flats)):
                j = (k + t * len(flats) // n_threads) % len(flats)
                results[t, j] = run_chunk(dp, lm, flats[j], viterbi)
        except BaseException as err:  # reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    return results


@pytest.mark.parametrize("dense", [True, False])
def test_threads_sharing_one_dp_get_the_serial_answers(tmp_path, dense):
    """Four threads on one FullDP with cold caches, over and over: every chunk's choices,
    scores and state counts equal a serial run's (the caches are filled without the GIL, so
    a shared cache would race). Viterbi and ln Z both."""
    model = random_model(tmp_path, 7, order=4, vocab=40)
    lm = model.lm
    rng = random.Random(3)
    lattices = [make_lattice(rng, model, max_len=12, max_width=8) for _ in range(240)]
    flats = chunks(lm, lattices, 10)
    for viterbi in (True, False):
        serial = new_dp(lm, dense)
        want = [run_chunk(serial, lm, f, viterbi) for f in flats]
        for _ in range(4):
            dp = new_dp(lm, dense)
            got = run_threaded(dp, lm, flats, 4, viterbi)
            for (_, j), res in got.items():
                assert_same(res, want[j])
            assert 1 <= dp.workers <= 4


def test_threads_sharing_the_process_dp_of_a_large_vocabulary():
    """The real front end: `run_flat` through `full_dp(lm)` (one object per model and
    process) from four threads on the embedded 5-gram (hash-map cache), each round on a new
    model object, so its DP starts cold and the threads fill one cache at once."""
    first = maxarpa.load(EMBEDDED)
    words = [w for w in first.vocab[:3000] if w not in ("<s>", "</s>")]
    model = LM("su5", EMBEDDED, first, None, words, [])
    rng = random.Random(5)
    lattices = [make_lattice(rng, model, max_len=10, max_width=25) for _ in range(160)]
    want = None
    for _ in range(2):
        lm = maxarpa.load(EMBEDDED)
        flats = chunks(lm, lattices, 20)
        if want is None:
            want = [run_chunk(new_dp(lm, False), lm, f) for f in flats]
        got: dict[tuple[int, int], tuple] = {}

        def work(t: int, lm: Model = lm, flats: list[FlatLattices] = flats,
                 got: dict = got) -> None:
            for j in list(range(t, len(flats))) + list(range(t)):
                r = run_flat(lm, flats[j])
                got[t, j] = (r.choice, r.score, r.dp_states, r.max_states, r.pairs)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert len(got) == 4 * len(flats)
        for (_, j), res in got.items():
            assert_same(res, want[j])
        assert 1 <= full_dp(lm).workers <= 4


@pytest.mark.parametrize("dense", [True, False])
def test_the_transition_cache_stays_within_its_bound(tmp_path, dense):
    """Over many calls a bounded worker never holds more than `max_bytes` (it empties its
    caches when full), while an unbounded one grows well past that; answers agree."""
    model = random_model(tmp_path, 11, order=5, vocab=30)
    lm = model.lm
    rng = random.Random(8)
    flats = chunks(lm, [make_lattice(rng, model, max_len=10, max_width=6)
                        for _ in range(150)], 5)
    big = new_dp(lm, dense)
    bound = 6 * big.row_bytes
    small = new_dp(lm, dense, bound)
    assert small.max_bytes == bound and big.max_bytes == _core.DEFAULT_MAX_BYTES
    for f in flats:
        assert_same(run_chunk(small, lm, f), run_chunk(big, lm, f))
        assert 0 < small.cache_bytes() <= bound
    assert big.cache_bytes() > 3 * bound  # the bound was reached, many times over
    assert small.cache_size() > big.cache_size()  # what was dropped was computed again
    assert full_dp(lm).max_bytes == _core.DEFAULT_MAX_BYTES


def test_a_bound_below_one_dense_row_is_refused(tmp_path):
    lm = random_model(tmp_path, 2, order=3, vocab=20).lm
    row = _core.dense_row_bytes(lm.trie.vocab_size, 2)
    with pytest.raises(OptionError, match="max_bytes"):
        new_dp(lm, True, row)
    assert new_dp(lm, True, row + 56).max_bytes == row + 56


# ----- the tables themselves (public constructors) -----------------------------------------------


def test_corrupt_ngram_tables_are_refused(tmp_path):
    """NgramCore is public: a hash slot naming no row, or a bigram key naming a word >= V,
    would be read blindly by the walk."""
    lm = random_model(tmp_path, 4, order=3, vocab=12).lm
    good = [np.array(a, copy=True) for a in native_ngram(lm).core.arrays]
    node_off, keys, slots, slot_off = good[:4]
    v = lm.trie.vocab_size
    _core.NgramCore(3, v, *good)  # the copies themselves are fine
    bad = [a.copy() for a in good]
    bad[2][slot_off[1]] = node_off[2] - node_off[1]  # one past the last bigram row
    with pytest.raises(ModelError, match="hash slot of order 2 names no row"):
        _core.NgramCore(3, v, *bad)
    bad = [a.copy() for a in good]
    bad[1][node_off[1]] = np.uint64(v * v + 1)  # successor word v
    with pytest.raises(ModelError, match="bigram key names a word id out of range"):
        _core.NgramCore(3, v, *bad)
    with pytest.raises(ModelError, match="one row per word"):
        _core.NgramCore(3, v + 1, *good)


def test_corrupt_useful_context_tables_are_refused(tmp_path):
    lm = random_model(tmp_path, 5, order=3, vocab=12).lm
    rows, lens, keys = useful_context_tables(lm)
    slots, bits = _core.build_hash(keys)
    core = native_ngram(lm).core
    bad_rows = rows.copy()
    bad_rows[-1, -1] = lm.trie.vocab_size
    with pytest.raises(ModelError, match="word id out of range"):
        _core.FullDP(core, bad_rows, lens, keys, slots, bits)
    bad_slots = slots.copy()
    bad_slots[np.flatnonzero(slots >= 0)[0]] = len(lens)
    with pytest.raises(ModelError, match="hash slot names no useful context"):
        _core.FullDP(core, rows, lens, keys, bad_slots, bits)
    bad_keys = keys.copy()
    bad_keys[1] = np.uint64(5 * lm.trie.vocab_size + 1)  # parent gid 5 after gid 1
    with pytest.raises(ModelError, match="parent must come before it"):
        _core.FullDP(core, rows, lens, bad_keys, slots, bits)
