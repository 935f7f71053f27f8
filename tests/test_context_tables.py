"""The full DP's useful-context tables stored in the binary model (issue 19 B).

`maxarpa convert --binary` writes them; a model read from such a file hands them to the full
DP, which then does not build them. They must be the very tables the run-time builder makes,
and an old binary without them must still load and decode as before.
"""

from __future__ import annotations

import random
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import arsdecode.methods.dispatch as dispatch
import arsdecode.methods.fast_full as fast_full
import maxarpa
from arsdecode.tasks.sms.keypad import KeypadChannel
from maxarpa import context_rows, contexts
from maxarpa.binary_write import write_binary
from maxarpa.errors import FormatError

DATA = Path(__file__).resolve().parent.parent / "arsdecode" / "data"
SHIPPED = [DATA / "state_union.5gram.maxarpa.gz", DATA / "pos" / "tags.5.maxarpa.gz"]


def convert(src: Path, out: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "maxarpa", "convert", "--binary", "--quiet",
                           str(src), str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("src", SHIPPED, ids=lambda p: p.name)
@pytest.mark.parametrize("mmap", [False, True], ids=["read", "mmap"])
def test_convert_binary_stores_the_tables_the_runtime_builds(src, mmap, tmp_path):
    out = tmp_path / "m.npz"
    convert(src, out)
    with zipfile.ZipFile(out) as zf:
        assert {"ctx_counts.npy", "ctx_keys.npy"} <= set(zf.namelist())  # format 3
    model = maxarpa.load(out, mmap=mmap)
    assert fast_full.setup_is_free(model) and not fast_full.is_built(model)
    stored = contexts.stored_tables(model)
    built = contexts.build_tables(maxarpa.load(src))
    assert stored is not None
    for a, b in zip(stored, built, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_decoding_with_stored_tables_equals_building_them(tmp_path):
    src = SHIPPED[0]
    with_tables, without = tmp_path / "with.npz", tmp_path / "without.npz"
    convert(src, with_tables)
    write_binary(maxarpa.load(src), without, contexts=False)  # an old-style binary
    old = maxarpa.load(without)
    assert contexts.stored_tables(old) is None and not fast_full.setup_is_free(old)
    new = maxarpa.load(with_tables, mmap=True)
    channel = KeypadChannel.from_vocab(new.vocab)
    lattices = [channel.build_lattice(obs, top_k=30) for obs in
                ("4663 8447 2 737 8733", "843 63428 6455 66 843 8447", "2 3273 27 2")]
    a = dispatch.decode_many(new, lattices, method="full")
    b = dispatch.decode_many(old, lattices, method="full")
    assert fast_full.is_built(old)  # built lazily, as before the tables were stored
    assert [(r.tokens, r.log_p, r.states) for r in a] == [(r.tokens, r.log_p, r.states)
                                                           for r in b]


def test_corrupt_stored_tables_are_refused_naming_the_file(tmp_path):
    src = SHIPPED[1]
    good, out = tmp_path / "good.npz", tmp_path / "bad.npz"
    convert(src, good)
    model = maxarpa.load(src)
    keys = contexts.build_tables(model)[2].copy()
    keys[-1] = np.uint64(model.trie.vocab_size) * np.uint64(len(keys) + 5)  # no such prefix
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zout:
        for name in zin.namelist():
            if name == "ctx_keys.npy":
                with zout.open(name, "w") as fh:
                    np.lib.format.write_array(fh, keys)
            else:
                zout.writestr(name, zin.read(name))
    # The table is intact (its digest matches) but the tables no longer match ctx_digest: they
    # are not used, and the full DP builds its own, equal to the good file's.
    loaded = maxarpa.load(out)
    assert contexts.stored_tables(loaded) is None
    assert contexts.stored_tables(maxarpa.load(good)) is not None
    built = contexts.useful_context_tables(loaded)
    for a, b in zip(built, contexts.build_tables(model), strict=True):
        assert np.array_equal(a, b)
    # Tables registered without a digest (a caller's own) are still checked when used.
    raw = maxarpa.load(out)
    contexts.attach(raw, contexts.build_tables(model)[1], keys)
    with pytest.raises(FormatError, match="bad.npz.*useful contexts"):
        fast_full.full_dp(raw)


def test_minimal_context_cuts_by_the_tables_the_full_dp_merges_by(tmp_path):
    """One set of tables: each useful context the full DP numbers is its own cut, found at its
    gid, and a model read with stored tables cuts exactly as one that builds them."""
    from arsdecode.model import MaxArpaLM

    src = SHIPPED[0]
    out = tmp_path / "m.npz"
    convert(src, out)
    built = maxarpa.load(src)
    rows, lens, _ = contexts.useful_context_tables(built)
    useful = contexts.UsefulContexts.of(built)
    for j in range(1, built.order):
        at = np.flatnonzero(lens == j)
        assert np.array_equal(useful.lookup(rows[at, -j:]), at)
    assert np.array_equal(useful.cut(rows), rows)
    rng = np.random.default_rng(5)
    ctx = rows[rng.integers(1, len(rows), 5000)]
    ctx = np.concatenate([rng.integers(-1, built.trie.vocab_size, (5000, 1)), ctx[:, 1:]], 1)
    stored = maxarpa.load(out, mmap=True)
    assert contexts.has_stored_tables(stored)
    assert np.array_equal(MaxArpaLM(stored).minimal_context(ctx),
                          MaxArpaLM(built).minimal_context(ctx))
    assert np.array_equal(useful.cut(np.array([[-1, -1, 7, built.trie.vocab_size]])),
                          [[-1, -1, -1, -1]])  # an id outside the vocabulary is in none


def test_contexts_that_are_not_prefix_closed_are_one_format_error_naming_the_file(tmp_path):
    model = maxarpa.load(SHIPPED[1])
    _, lens, keys = contexts.build_tables(model)
    keys = keys.copy()
    keys[-1] = np.uint64(model.trie.vocab_size) * np.uint64(len(keys) + 5)  # no such prefix
    contexts.attach(model, lens, keys)
    with pytest.raises(FormatError, match="tags.5.maxarpa.gz.*useful contexts"):
        contexts.UsefulContexts.of(model)
    # The builder's own check (a level whose prefix is missing from the level below).
    with pytest.raises(FormatError, match="m.arpa: useful contexts are not prefix-closed"):
        context_rows._parent_gids(np.array([[3, 4]], np.int32), np.array([[5]], np.int32),
                              np.array([1]), "m.arpa")


@pytest.mark.parametrize("seed", range(12))
def test_node_builder_equals_the_row_builder_on_random_models(seed, tmp_path, monkeypatch):
    """The fast builder (node indices, issue 34) against the row builder, the independent
    reference: identical tables, gid for gid, on prefix-closed models (where it must be the
    one used) and on pruned ones whose contexts are not all nodes (where it must give way).
    Odd seeds search prefixes a few nodes at a time, so chunk boundaries are crossed."""
    from arsdecode.testing.random_arpa import random_arpa_text

    if seed % 2:
        from maxarpa import keywalk  # prefix_rows moved there (issue 34: bounds use it too)

        monkeypatch.setattr(keywalk, "PREFIX_CHUNK", 3)
    rng = random.Random(seed)
    drop = seed % 3 == 2
    path = tmp_path / "m.arpa"
    path.write_text(random_arpa_text(rng, 2 + seed % 4, 3 + seed % 5, 0.3 + 0.1 * (seed % 4),
                                     drop, density=0.4 + 0.1 * (seed % 5)))
    model = maxarpa.load(path)
    fast = contexts._keys_from_nodes(model)
    if not drop:
        assert fast is not None
    reference = contexts.build_tables_by_rows(model)
    for a, b in zip(contexts.build_tables(model), reference, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    if fast is not None:
        assert all(np.array_equal(a, b) for a, b in zip(fast, reference[1:], strict=True))


def test_node_builder_gives_way_when_a_prefix_is_no_node(tmp_path):
    """A listed trigram whose prefix bigram is neither listed nor a suffix: no node holds that
    context, so the fast builder returns None and the row builder numbers it."""
    path = tmp_path / "m.arpa"
    path.write_text("\\data\\\nngram 1=5\nngram 2=2\nngram 3=1\n\n\\1-grams:\n-1 <s> -0.5\n"
                    "-1 </s>\n-1 a -0.3\n-1 b -0.2\n-1 c\n\n\\2-grams:\n-0.5 b c -0.1\n"
                    "-0.4 <s> a\n\n\\3-grams:\n-0.2 a b c\n\n\\end\\\n")
    model = maxarpa.load(path)
    assert contexts._keys_from_nodes(model) is None
    rows, lens, _ = contexts.build_tables(model)
    ids = model.ids
    assert rows[lens == 2].tolist() == [ids(["a", "b"]).tolist(), ids(["b", "c"]).tolist()]
