"""SMS retrieval end to end on the embedded state_union model: ARS equals the full model, CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import maxarpa
from arsdecode.api import DEFAULT_LM
from arsdecode.core.automaton import VARIANTS
from arsdecode.methods.ars import decode, sample
from arsdecode.methods.full import full_decode
from arsdecode.tasks.sms.keypad import KeypadChannel, sample_sentence

SENTENCES = [
    "the state of the union is strong .",
    "we must work together .",
    "i ask the congress to act now .",
    "our economy is growing .",
]


@pytest.fixture(scope="module")
def lm():
    return maxarpa.load(DEFAULT_LM)


@pytest.mark.parametrize("variant", VARIANTS)
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
    for key in ("tokens", "log_p", "iterations", "states", "certified", "timing"):
        assert key in out
    assert set(out["timing"]) == {"seconds", "load_seconds"}
    assert out["certified"] is True
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


def test_library_sms_decode_equals_cli(lm):
    import arsdecode

    r = arsdecode.sms_decode("3637 843 66639 39478 *")
    out = json.loads(run_sms("3637 843 66639 39478 *", "--json").stdout)
    assert r.tokens == out["tokens"] and r.log_p == out["log_p"] and r.certified
    with pytest.raises(arsdecode.ObservationError):
        arsdecode.sms_decode("12a")


def test_cli_max_iterations_is_not_a_certificate():
    """Issue 9 E: a decode stopped by --max-iterations says so and exits 3."""
    proc = run_sms("3637 843 66639 39478 *", "--max-iterations", "1", "--method", "ars")
    assert proc.returncode == 3, proc.stderr
    assert "UNCERTIFIED" in proc.stdout and "UNCERTIFIED" in proc.stderr
    proc = run_sms("3637 843 66639 39478 *", "--max-iterations", "1", "--method", "ars", "--json")
    assert proc.returncode == 3
    assert json.loads(proc.stdout)["certified"] is False
    help_text = run_sms("--help").stdout
    assert "3 decode stopped at --max-iterations" in " ".join(help_text.split())


@pytest.mark.parametrize(("option", "value"), [
    ("--max-iterations", "0"), ("--max-iterations", "-1"), ("--trace", "0"),
    ("--target-ar", "0"), ("--target-ar", "1.5"), ("--ar-window", "0"), ("--batch", "0"),
    ("--seed", "-1"), ("--seed", "x"), ("--sample", "0"), ("--top-k", "0"), ("--k", "-1"),
])
def test_cli_option_errors_name_the_option(option, value):
    proc = run_sms("843", option, value)
    assert proc.returncode == 2, (option, value, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and option in lines[0], proc.stderr
    assert proc.stdout == ""


def test_cli_sample_json_differs_only_in_timing():
    """Issue 9 E: with one --seed, two runs print the same JSON apart from "timing"."""
    args = ("843 78283 63 843 86466 *", "--sample", "40", "--seed", "2", "--json")
    a, b = (json.loads(run_sms(*args).stdout) for _ in range(2))
    assert set(a) == set(b) and "timing" in a
    a.pop("timing"), b.pop("timing")
    assert a == b
    assert not any("second" in k for k in a)


def test_cli_version():
    proc = run_sms("--help")
    assert proc.returncode == 0
    proc = subprocess.run([sys.executable, "-m", "arsdecode", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("arsdecode ")
