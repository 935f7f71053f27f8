"""The POS code path on a committed, hand-written tagged fixture (no corpus needed).

Why: the real-data POS tests skip on a clone without the NLTK corpora; these keep training,
lattices, exact decoding (against the full-model DP and brute force), model lookup and the
`tag` command tested everywhere. The tag LM is TnT's deleted interpolation written as an exact
backoff ARPA by data_prep (pure Python, no lmplz).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from pos_fixture_models import FIXTURE, build_fixture_models

import arsdecode
from arsdecode.errors import ModelError, ObservationError
from arsdecode.methods.ars import decode, sample
from arsdecode.methods.full import full_decode
from arsdecode.tasks.pos.emissions import PosModelError
from arsdecode.tasks.pos.evaluation import read_tagged
from arsdecode.tasks.pos.models import ENV_VAR, load_models, models_dir
from arsdecode.testing.brute import brute_model
from maxarpa.model import Model

HELD_OUT = [
    "The cat walked to the station .",
    "A farmer sold fresh corn and wheat .",
    "She will read the letter tomorrow .",
    "Zorblings quickly crossed the Qwerty river .",  # two unknown words
]


@pytest.fixture(scope="module")
def fixture_models(tmp_path_factory) -> Path:
    """A model directory as the tagger expects it: emissions + tag LMs of order 2 and 3."""
    assert len(read_tagged(FIXTURE)) == 40
    return build_fixture_models(tmp_path_factory.mktemp("pos_fixture"))


@pytest.mark.parametrize("order", [2, 3])
def test_decode_equals_full_model_and_brute_force(fixture_models, order):
    lm, emissions = load_models(fixture_models, order)
    checked_brute = 0
    for line in HELD_OUT + ["The dog barked .", "Mary gave John a book ."]:
        lattice = emissions.lattice(line.split())
        r = decode(lm, lattice)
        full = full_decode(lm, lattice)
        assert r.certified
        assert r.log_p == pytest.approx(full.log_p, abs=1e-9)
        if lattice.num_paths() <= 50_000:
            ref = brute_model(lm, lattice)
            assert abs(r.log_p - ref.best_log_p) <= 1e-9
            assert tuple(r.tokens) in ref.near_best(1e-9)
            checked_brute += 1
    assert checked_brute >= 3


def test_training_sentences_get_their_tags(fixture_models):
    lm, emissions = load_models(fixture_models, 3)
    sentences = read_tagged(FIXTURE)
    correct = total = 0
    for sent in sentences:
        r = decode(lm, emissions.lattice([w for w, _ in sent]))
        correct += sum(a == t for a, (_, t) in zip(r.tokens, sent, strict=True))
        total += len(sent)
    assert correct / total >= 0.95, correct / total


def test_samples_are_valid_tag_sequences(fixture_models):
    lm, emissions = load_models(fixture_models, 3)
    words = HELD_OUT[3].split()
    lattice = emissions.lattice(words)
    r = sample(lm, lattice, 200, seed=5, target_ar=0.5)
    assert len(r.samples) == 200
    ref = brute_model(lm, lattice) if lattice.num_paths() <= 50_000 else None
    for s, lp in zip(r.samples, r.log_p, strict=True):
        assert len(s) == len(words)
        if ref is not None:
            assert abs(ref.score(s) - lp) <= 1e-9


def test_library_tag_uses_the_lookup(fixture_models, monkeypatch):
    r = arsdecode.tag("The dog barked .", models=fixture_models, order=3)
    assert r.tokens == ["DT", "NN", "VBD", "."]
    assert r.certified and r.log_p < 0
    monkeypatch.setenv(ENV_VAR, str(fixture_models))
    assert models_dir(None) == fixture_models
    assert arsdecode.tag(["The", "dog", "barked", "."]).tokens == r.tokens  # order: highest
    with pytest.raises(ObservationError):
        arsdecode.tag("   ", models=fixture_models)


def test_lookup_never_falls_back_from_a_named_directory(tmp_path, monkeypatch, fixture_models):
    monkeypatch.setenv(ENV_VAR, str(fixture_models))
    with pytest.raises(PosModelError, match="nonexistent"):
        models_dir(tmp_path / "nonexistent")
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "gone"))
    with pytest.raises(PosModelError, match="gone"):
        models_dir(None)
    assert issubclass(PosModelError, ModelError)
    with pytest.raises(PosModelError, match="order 7"):
        load_models(fixture_models, 7)


def run_tag(*args, input_text=None, env=None):
    return subprocess.run(
        [sys.executable, "-m", "arsdecode", "tag", *args], input=input_text,
        capture_output=True, text=True, timeout=300, env=env,
    )


def test_cli_json_and_blank_lines(fixture_models, tmp_path):
    f = tmp_path / "in.txt"
    f.write_text("The dog barked .\n\n  \nMary gave John a book .\n\n", encoding="utf-8")
    proc = run_tag("--file", str(f), "--models", str(fixture_models), "--json")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["tokens"] for r in rows] == [["The", "dog", "barked", "."],
                                          ["Mary", "gave", "John", "a", "book", "."]]
    assert rows[0]["tags"] == ["DT", "NN", "VBD", "."]
    assert all(set(r) == {"tokens", "tags", "log_p", "method", "timing"} for r in rows)
    out = tmp_path / "out.conll"
    proc = run_tag("--file", str(f), "--models", str(fixture_models), "--conll", str(out))
    assert proc.returncode == 0, proc.stderr
    blocks = out.read_text(encoding="utf-8").strip().split("\n\n")
    assert [len(b.splitlines()) for b in blocks] == [4, 6]


def test_cli_missing_models_is_an_error(fixture_models, tmp_path):
    import os

    env = {**os.environ, ENV_VAR: str(fixture_models)}
    proc = run_tag("The dog barked .", "--models", str(tmp_path / "nonexistent"), env=env)
    assert proc.returncode == 2, proc.stderr
    assert "nonexistent" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""
    proc = run_tag("The dog barked .", "--json", env=env)  # the env var is honoured
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tags"] == ["DT", "NN", "VBD", "."]


def test_cli_sample_marginals(fixture_models):
    proc = run_tag("The dog barked .", "--models", str(fixture_models), "--sample", "50",
                   "--json", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["samples"]) == 50
    assert len(out["marginals"]) == 4
    for pos in out["marginals"]:  # [token, p, lo, hi], sorted by p, as `arsdecode marginals`
        assert math.isclose(sum(p for _, p, _, _ in pos), 1.0)
        assert all(lo <= p <= hi for _, p, lo, hi in pos)
        assert [p for _, p, _, _ in pos] == sorted((p for _, p, _, _ in pos), reverse=True)
    proc = run_tag("The dog barked .", "--models", str(fixture_models), "--sample", "0")
    assert proc.returncode == 2 and "--sample" in proc.stderr


def test_model_file_names(fixture_models, tmp_path):
    """tags.N.maxarpa[.gz] and tags.N.arpa[.gz] are all found; MAX-ARPA is preferred."""
    import gzip
    import shutil

    d = tmp_path / "m"
    d.mkdir()
    shutil.copy(fixture_models / "emissions.json.gz", d)
    with open(fixture_models / "tags.3.arpa", "rb") as src, gzip.open(d / "tags.3.arpa.gz",
                                                                       "wb") as dst:
        shutil.copyfileobj(src, dst)
    lm, _ = load_models(d, None)
    assert isinstance(lm, Model) and lm.order == 3
