"""SMS retrieval end to end on the embedded state_union model: ARS equals the full model, CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from arsdecode.ars import decode, sample
from arsdecode.cli import DEFAULT_LM
from arsdecode.full import full_decode
from arsdecode.tasks.sms import KeypadChannel, sample_sentence
from maxarpa.model import Model

SENTENCES = [
    "the state of the union is strong .",
    "we must work together .",
    "i ask the congress to act now .",
    "our economy is growing .",
]


@pytest.fixture(scope="module")
def lm():
    return Model.load(DEFAULT_LM)


@pytest.mark.parametrize("variant", ["fresh", "paper"])
def test_decode_equals_full_model(lm, variant):
    channel = KeypadChannel.from_vocab(lm.vocab)
    rng = np.random.default_rng(7)
    for sentence in SENTENCES:
        obs = sample_sentence(sentence.split(), rng)
        lattice = channel.build_lattice(obs, top_k=15)
        r = decode(lm, lattice, variant=variant)
        f = full_decode(lm, lattice)
        assert r.certified
        assert r.log_p == pytest.approx(f.log_p, abs=1e-9)
        assert r.tokens == f.tokens


def test_sampling_returns_exact_paths(lm):
    channel = KeypadChannel.from_vocab(lm.vocab)
    lattice = channel.build_lattice("843 78283 63 843 86466 *", top_k=20)
    r = sample(lm, lattice, 30, seed=3, batch=50)
    assert len(r.samples) == 30
    assert all(len(s) == 6 for s in r.samples)
    assert r.log_Z_ci[0] <= r.log_Z <= r.log_Z_ci[1]


def run_sms(*args):
    return subprocess.run([sys.executable, "-m", "arsdecode", "sms", *args],
                          capture_output=True, text=True, timeout=300)


def test_cli_json_contract():
    proc = run_sms("3637 843 66639 39478 *", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    for key in ("tokens", "log_p", "iterations", "states", "seconds"):
        assert key in out
    assert len(out["tokens"]) == 5 and out["tokens"][-1] == "."
    assert out["iterations"] >= 1 and out["states"] >= 6


def test_cli_sample_ranks_samples():
    proc = run_sms("843 78283 63 843 86466 *", "--sample", "50", "--seed", "1")
    assert proc.returncode == 0, proc.stderr
    assert "count" in proc.stdout.splitlines()[0]


@pytest.mark.parametrize("bad", ["12a 3", "", "843 5x", "843  @"])
def test_cli_rejects_bad_observations(bad):
    proc = run_sms(bad)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr
