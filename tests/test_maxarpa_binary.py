"""The binary companion (.npz) holds exactly the MAX-ARPA table and loads without parsing."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from maxarpa.binary_format import read_binary, write_binary
from maxarpa.errors import FormatError
from maxarpa.model import Model

FIELDS = ("keys", "rows", "log10p", "log10bow", "listed", "mf", "mbow")


def test_binary_round_trip_is_exact(real_models, tmp_path):
    model = Model.load(real_models.paths[5])
    out = tmp_path / "m.npz"
    write_binary(model, out)
    back = Model.load(out)
    assert back.vocab == model.vocab and back.order == model.order
    for a, b in zip(model.trie.nodes, back.trie.nodes, strict=True):
        for f in FIELDS:
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
    rng = np.random.default_rng(0)
    ctx = rng.integers(-1, len(model.vocab), size=(500, model.order - 1)).astype(np.int32)
    ctx = np.sort(ctx, axis=1)  # -1 padding stays on the left
    words = rng.integers(0, len(model.vocab), size=500).astype(np.int32)
    assert np.array_equal(model.max_log10p_batch(ctx, words), back.max_log10p_batch(ctx, words))
    assert np.array_equal(model.log10p_batch(ctx, words), back.log10p_batch(ctx, words))


def test_cli_convert_binary_and_corrupt_file(tmp_path):
    from arsdecode.cli import DEFAULT_LM

    out = tmp_path / "m.npz"
    proc = subprocess.run([sys.executable, "-m", "maxarpa", "convert", "--binary",
                           str(DEFAULT_LM), str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert Model.load(out).counts == Model.load(DEFAULT_LM).counts
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(FormatError):
        read_binary(bad)
    proc = subprocess.run([sys.executable, "-m", "maxarpa", "info", str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "bad.npz" in proc.stderr and "Traceback" not in proc.stderr
