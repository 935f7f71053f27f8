"""Binary format 3 (issue 34): float32 bounds rounded up, no stored rows, compact columns.

What must hold, each checked against an independent reference: every probability read from a
format-3 file equals the one read from the ARPA text (bit for bit); every stored bound is at
least the exact bound (and the smallest float32 that is); the rounded table passes the same
load checks as the exact one; decoders give the same answers; format-2 files still load
trusted; and MAX-ARPA text written from a format-3 file carries the exact bounds again.
"""

from __future__ import annotations

import dataclasses
import random
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_maxarpa_binary import FIELDS, assert_same_table

import maxarpa
from arpa_fixtures import arpa_texts
from arsdecode.testing.random_arpa import random_arpa_text
from maxarpa.binary_format import read_binary_with_digest
from maxarpa.binary_write import write_binary
from maxarpa.checks import check_stored_bounds, verify_bounds
from maxarpa.compact import round_up_f32, rounded_bounds, widened
from maxarpa.config import PERMISSIVE, Config
from maxarpa.digest import ALGORITHM, arrays_digest, table_digest
from maxarpa.errors import MaxArpaError

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "arpa"
REFUSE = dataclasses.replace(PERMISSIVE, untrusted_bounds="refuse")
REAL_FILES = sorted(p for s in ("set1", "set2") for p in (CORPUS / s).glob("*")
                    if p.suffix != ".md")


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=True, width=64))
def test_round_up_is_the_smallest_float32_not_below(x):
    got = round_up_f32(np.array([x]))
    if x > float(np.finfo(np.float32).max):
        assert got is None  # such an order keeps float64
        return
    assert got is not None and got.dtype == np.float32
    g = float(got[0])
    assert g >= x and not (g == 0.0 and np.signbit(got[0]))
    with np.errstate(over="ignore"):  # the step below -F32_MAX is -inf
        below = np.nextafter(got[0], np.float32(-np.inf))
    # nothing smaller would do (-inf is itself; +0.0 stands for both zeros)
    assert float(below) < x or g == x == -np.inf or (g == 0.0 and x == 0.0)


def _loaded_pair(text: str, tmp_path: Path):
    arpa = tmp_path / "m.arpa"
    arpa.write_text(text)
    model = maxarpa.load(arpa, config=PERMISSIVE)
    out = tmp_path / "m.npz"
    write_binary(model, out, bounds_verified=True)
    return model, out


@settings(max_examples=60, deadline=None)
@given(arpa_texts(min_order=1, max_order=4, max_vocab=5, drop_prefix_contexts=None))
def test_random_models_round_trip_with_bounds_rounded_up(tmp_path_factory, drawn):
    """Random models (pruned ones and positive backoffs included): the same table, bounds
    never below the exact ones, exactly `rounded_bounds`, passing the untrusted-file checks
    and `verify`; the file is trusted by its digest (mapped or not)."""
    text, _ = drawn
    tmp_path = tmp_path_factory.mktemp("v3")
    model, out = _loaded_pair(text, tmp_path)
    stored = rounded_bounds(model.trie)
    for mmap in (False, True):
        back, digest = read_binary_with_digest(out, mmap=mmap)
        assert digest is not None
        loaded = maxarpa.load(out, mmap=mmap, config=REFUSE)
        assert_same_table(model, loaded)
        for a, b, s in zip(model.trie.nodes, loaded.trie.nodes, stored, strict=True):
            assert np.array_equal(b.mf, widened(s.mf, a.log10p))
            assert np.array_equal(b.mbow, widened(s.mbow, a.log10bow))
        check_stored_bounds(loaded.trie, loaded.vocab, str(out))  # what an untrusted load runs
        assert verify_bounds(loaded.trie, loaded.vocab, loaded.eos_id) is None


@pytest.mark.skipif(not REAL_FILES, reason=f"no ARPA corpus at {CORPUS}")
def test_real_files_round_trip(tmp_path):
    """Every real ARPA file maxarpa reads: the format-3 file scores as the ARPA text does."""
    ran = 0
    for path in REAL_FILES:
        try:
            model = maxarpa.load(path)
        except MaxArpaError:
            continue  # broken on purpose, or refused by policy (tests/test_arpa_grammar.py)
        out = tmp_path / (path.name + ".npz")
        maxarpa.convert(path, out, binary=True)
        for mmap in (False, True):
            assert_same_table(model, maxarpa.load(out, mmap=mmap))
        ran += 1
    assert ran >= 30


def test_format3_layout_is_compact(real_models, tmp_path):
    """No rows; float32 bounds below the highest order and none there; no all-zero
    backoffs or all-True listed columns; context lengths as counts."""
    model = maxarpa.load(real_models.paths[5])
    out = tmp_path / "m.npz"
    write_binary(model, out)
    with zipfile.ZipFile(out) as zf:
        names = {name.removesuffix(".npy") for name in zf.namelist()}
    n = model.order
    assert not any(name.startswith("rows_") for name in names)
    assert {"ctx_counts", "ctx_keys"} <= names and "ctx_lens" not in names
    assert not {f"mf_{n}", f"mbow_{n}", f"log10bow_{n}", f"listed_{n}"} & names
    with np.load(out) as z:
        for k in range(1, n):
            assert z[f"mf_{k}"].dtype == np.float32 and z[f"mbow_{k}"].dtype == np.float32


def format2_file(model: maxarpa.Model, path: Path) -> None:
    """A format-2 file as the writer before format 3 made it: every array float64, the rows,
    the row-hashing digest, `ctx_lens` per context (members unaligned: readers do not care)."""
    from maxarpa.binary_write import encode_vocab
    from maxarpa.contexts import context_keys

    digest = table_digest(model.vocab, model.trie)
    arrays = {"magic": np.array("maxarpa-binary-2"), "order": np.array(model.order),
              "vocab_utf8": encode_vocab(model.vocab)}
    for k, node in enumerate(model.trie.nodes, start=1):
        for f in FIELDS:
            arrays[f"{f}_{k}"] = np.ascontiguousarray(getattr(node, f))
    arrays["digest"] = np.array(f"{ALGORITHM}:{digest}")
    lens, keys = context_keys(model)
    arrays["ctx_lens"], arrays["ctx_keys"] = lens, keys
    arrays["ctx_digest"] = np.array(f"{ALGORITHM}:{arrays_digest(digest, [lens, keys])}")
    np.savez(path, **arrays)


def test_format2_files_still_load_trusted_with_exact_bounds(real_models, tmp_path):
    from maxarpa import contexts

    model = maxarpa.load(real_models.paths[3])
    old = tmp_path / "old.npz"
    format2_file(model, old)
    for mmap in (False, True):
        back = maxarpa.load(old, mmap=mmap, config=Config(untrusted_bounds="refuse"))
        assert contexts.has_stored_tables(back)  # its ctx_digest matched: trusted
        for a, b in zip(model.trie.nodes, back.trie.nodes, strict=True):
            for f in FIELDS:
                assert np.array_equal(getattr(a, f), getattr(b, f)), f
    # Rewriting it gives a format-3 file of the same table.
    new = tmp_path / "new.npz"
    maxarpa.convert(old, new, binary=True)
    assert str(np.load(new)["magic"]) == "maxarpa-binary-3"
    assert_same_table(model, maxarpa.load(new))


def test_text_written_from_a_format3_file_has_the_exact_bounds(real_models, tmp_path):
    """ARPA -> MAX-ARPA -> binary -> MAX-ARPA round-trips byte for byte: the text writer
    recomputes the exact bounds the binary file rounded up."""
    text1, npz, text2 = tmp_path / "a.maxarpa", tmp_path / "a.npz", tmp_path / "b.maxarpa"
    maxarpa.convert(real_models.paths[3], text1)
    maxarpa.convert(text1, npz, binary=True)
    assert maxarpa.load(npz).trie.bounds_rounded
    proc = subprocess.run([sys.executable, "-m", "maxarpa", "convert", "--quiet", str(npz),
                           str(text2)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert text1.read_bytes() == text2.read_bytes()


def test_verify_accepts_a_format3_file_and_refuses_a_lowered_bound(tmp_path):
    text = random_arpa_text(random.Random(7), 3, 5, 0.5, False, density=0.9)
    model, out = _loaded_pair(text, tmp_path)
    proc = subprocess.run([sys.executable, "-m", "maxarpa", "verify", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Move one stored bound by one float32 step. Raised, it is still a bound, but no longer
    # the rounding of the exact one: the digest fails, `verify` reports it, a refusing load
    # names the file, and the default load recomputes the exact bounds. Lowered, it may not
    # even be a bound: refused by the load checks, or recomputed.
    with np.load(out) as z:
        arrays = {name: z[name] for name in z.files}
    i = int(np.flatnonzero(np.isfinite(arrays["mf_2"]))[0])
    for direction in (np.inf, -np.inf):
        bad = tmp_path / "bad.npz"
        mf = arrays["mf_2"].copy()
        mf[i] = np.nextafter(mf[i], np.float32(direction))
        np.savez(bad, **{**arrays, "mf_2": mf})
        with pytest.raises(MaxArpaError, match="bad.npz"):
            maxarpa.load(bad, config=REFUSE)
        proc = subprocess.run([sys.executable, "-m", "maxarpa", "verify", str(bad)],
                              capture_output=True, text=True)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr
        try:
            fixed = maxarpa.load(bad, config=PERMISSIVE)  # the default: recomputed
        except MaxArpaError as err:
            assert direction < 0 and "not bounds" in str(err)
            continue
        for a, b in zip(model.trie.nodes, fixed.trie.nodes, strict=True):
            assert np.array_equal(a.mf, b.mf) and np.array_equal(a.mbow, b.mbow)


def test_decoders_answer_the_same_from_the_format3_file(tmp_path):
    """Keypad lattices, the full DP and ARS: the same words and score from the binary file
    (bounds rounded up) as from the exact model."""
    from arsdecode.api import DEFAULT_LM
    from arsdecode.methods import dispatch
    from arsdecode.tasks.sms.keypad import KeypadChannel

    exact = maxarpa.load(DEFAULT_LM)
    out = tmp_path / "m.npz"
    maxarpa.convert(DEFAULT_LM, out, binary=True)
    rounded = maxarpa.load(out, mmap=True)
    channel = KeypadChannel.from_vocab(exact.vocab)
    lattices = [channel.build_lattice(obs, top_k=30) for obs in
                ("4663 8447 2 737 8733", "843 63428 6455 66 843 8447", "2 3273 27 2",
                 "46 2 4663 7246", "9673 2 8447 63 4663")]
    for method in ("full", "ars"):
        a = dispatch.decode_many(exact, lattices, method=method)
        b = dispatch.decode_many(rounded, lattices, method=method)
        assert [(r.tokens, r.log_p) for r in a] == [(r.tokens, r.log_p) for r in b], method
        assert all(r.certified for r in b)


def test_conversion_never_builds_the_word_rows(real_models, tmp_path):
    """A suffix-closed ARPA file (lmplz's) is read, bounded and written as format 3 without
    the word rows (issue 34's conversion memory); asked for, they are the rows the keys say."""
    model = maxarpa.load(real_models.paths[5])
    write_binary(model, tmp_path / "m.npz", bounds_verified=True)
    assert not any(node.has_rows for node in model.trie.nodes)
    v = model.trie.vocab_size
    for k, node in enumerate(model.trie.nodes, start=1):
        rows = node.rows
        assert rows.shape == (len(node.keys), k) and rows.dtype == np.int32
        assert np.array_equal(rows[:, 0], (node.keys % np.uint64(v)).astype(np.int64))
        if k > 1:
            parent = (node.keys // np.uint64(v)).astype(np.int64)
            assert np.array_equal(rows[:, 1:], model.trie.nodes[k - 2].rows[parent])
