"""The binary companion (.npz) holds the MAX-ARPA table and loads without parsing: keys, words,
probabilities and backoffs exactly, the bounds mf and mbow rounded up to float32 (format 3,
maxarpa.compact), never below the exact ones."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import maxarpa
from maxarpa.binary_format import read_binary
from maxarpa.binary_write import write_binary
from maxarpa.errors import FormatError

FIELDS = ("keys", "rows", "log10p", "log10bow", "listed", "mf", "mbow")
EXACT_FIELDS = ("keys", "rows", "log10p", "log10bow", "listed")  # format 3 keeps bit for bit


ROUNDING_SLACK = 1e-6  # log10: a few float32 steps of the values a bound is summed from


def assert_rounded_up(exact, got) -> None:
    """`got` (a bound array read from a format-3 file) is `exact` rounded up to float32:
    never below, a float32 itself (or the exact float64), and above by at most a few float32
    steps of the values it is summed from (rounding goes top-down: a parent is at least the
    recurrence on its children's rounded values, `maxarpa.compact`), so not only of its own.
    tests/test_maxarpa_binary_v3.py checks the exact rounding bit for bit."""
    assert (got >= exact).all()
    finite = np.isfinite(exact)
    assert np.array_equal(exact[~finite], got[~finite])
    slack = got[finite] - exact[finite]
    assert (slack <= ROUNDING_SLACK * np.maximum(np.abs(exact[finite]), 1.0)).all()
    as32 = got.astype(np.float32).astype(np.float64)
    assert ((as32 == got) | (got == exact)).all()


def assert_same_table(model, back) -> None:
    """`back` (read from a format-3 file of `model`) holds `model`'s table: the model's own
    numbers bit for bit, the bounds rounded up, and the same query answers (log10p equal,
    max_log10p never below and at most a float32 step above)."""
    assert back.vocab == model.vocab and back.order == model.order
    for a, b in zip(model.trie.nodes, back.trie.nodes, strict=True):
        for f in EXACT_FIELDS:
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
        for f in ("mf", "mbow"):
            assert_rounded_up(getattr(a, f), getattr(b, f))
    ctx, words = _random_queries(model, size=2000, seed=3)
    assert np.array_equal(model.log10p_batch(ctx, words), back.log10p_batch(ctx, words))
    exact, got = model.max_log10p_batch(ctx, words), back.max_log10p_batch(ctx, words)
    assert (got >= exact).all()
    finite = np.isfinite(exact)
    assert np.array_equal(got[~finite], exact[~finite])
    assert (got[finite] - exact[finite] <= ROUNDING_SLACK * np.maximum(
        np.abs(exact[finite]), 1.0)).all()


def test_binary_round_trip_is_exact(real_models, tmp_path):
    model = maxarpa.load(real_models.paths[5])
    out = tmp_path / "m.npz"
    write_binary(model, out)
    assert_same_table(model, maxarpa.load(out))


def test_cli_convert_binary_and_corrupt_file(tmp_path):
    from arsdecode.api import DEFAULT_LM

    out = tmp_path / "m.npz"
    proc = subprocess.run([sys.executable, "-m", "maxarpa", "convert", "--binary",
                           str(DEFAULT_LM), str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert maxarpa.load(out).counts == maxarpa.load(DEFAULT_LM).counts
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(FormatError):
        read_binary(bad)
    proc = subprocess.run([sys.executable, "-m", "maxarpa", "info", str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "bad.npz" in proc.stderr and "Traceback" not in proc.stderr


def _random_queries(model, size=500, seed=0):
    rng = np.random.default_rng(seed)
    ctx = rng.integers(-1, len(model.vocab), size=(size, model.order - 1)).astype(np.int32)
    ctx = np.sort(ctx, axis=1)  # -1 padding stays on the left
    return ctx, rng.integers(0, len(model.vocab), size=size).astype(np.int32)


def test_mmap_binary_is_read_only_aligned_and_answers_identically(tmp_path):
    import maxarpa
    from arsdecode.api import DEFAULT_LM

    model = maxarpa.load(DEFAULT_LM)
    out = tmp_path / "m.npz"
    maxarpa.convert(DEFAULT_LM, out, binary=True)
    mapped = maxarpa.load(out, mmap=True)
    copied = maxarpa.load(out)
    n = model.order
    for k, (node, node_c) in enumerate(zip(mapped.trie.nodes, copied.trie.nodes, strict=True),
                                       start=1):
        # What the file stores is mapped in place; what the reader derives (the rows, the
        # highest order's zero backoffs, the widened float32 bounds) is read-only all the same.
        in_file = ("keys", "log10p") + (("log10bow",) if k < n else ())
        for f in FIELDS:
            arr = getattr(node, f)
            assert not arr.flags.writeable, f
            if f in in_file:
                assert not arr.flags.owndata, f  # a view of the mapping, not a copy
                assert arr.ctypes.data % 64 == 0, f
            with pytest.raises(ValueError):
                arr[...] = arr
        for f in in_file:
            assert getattr(node_c, f).flags.writeable, f
    for other in (mapped, copied):
        assert_same_table(model, other)


def test_version1_npz_written_by_numpy_still_loads(tmp_path):
    """Files of the first binary version (np.savez, vocab as one numpy string) stay readable,
    with and without mmap."""
    from arsdecode.api import DEFAULT_LM

    model = maxarpa.load(DEFAULT_LM)
    arrays = {"magic": np.array("maxarpa-binary-1"), "vocab": np.array("\n".join(model.vocab)),
              "order": np.array(model.order)}
    for k, node in enumerate(model.trie.nodes, start=1):
        for f in FIELDS:
            arrays[f"{f}_{k}"] = getattr(node, f)
    out = tmp_path / "v1.npz"
    np.savez(out, **arrays)
    ctx, words = _random_queries(model, seed=1)
    for mmap in (False, True):
        back = read_binary(out, mmap=mmap)
        assert back.vocab == model.vocab
        assert np.array_equal(model.max_log10p_batch(ctx, words),
                              back.max_log10p_batch(ctx, words))


def test_truncated_or_compressed_binary_is_refused(tmp_path):
    from arsdecode.api import DEFAULT_LM

    model = maxarpa.load(DEFAULT_LM)
    out = tmp_path / "m.npz"
    write_binary(model, out)
    data = out.read_bytes()
    cut = tmp_path / "cut.npz"
    cut.write_bytes(data[: len(data) // 2])
    for mmap in (False, True):
        with pytest.raises(FormatError, match="cut.npz"):
            read_binary(cut, mmap=mmap)
    squeezed = tmp_path / "z.npz"
    np.savez_compressed(squeezed, magic=np.array("maxarpa-binary-2"))
    with pytest.raises(FormatError, match="compressed"):
        read_binary(squeezed, mmap=True)
