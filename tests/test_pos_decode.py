"""POS tagging end to end: exact ARS decoding equals the full-model decoder, and the CLI.

The models are built from the NLTK corpora in ../shared/data/nltk by data_prep.pos_data,
into a temporary directory (nothing derived from the treebank is committed).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import maxarpa
from arsdecode.methods.ars import decode
from arsdecode.methods.full import full_decode
from arsdecode.tasks.pos.emissions import TnTEmissions
from arsdecode.tasks.pos.evaluation import read_tagged
from corpora import corpus_dir_or_skip
from data_prep.pos_data import prepare


@pytest.fixture(scope="session")
def pos_models(tmp_path_factory):
    out = tmp_path_factory.mktemp("pos")
    prepare(out, corpus_dir_or_skip("treebank", "conll2000"), orders=[3, 4])
    return out


@pytest.mark.parametrize("order", [3, 4])
def test_ars_decode_equals_full_model_on_short_sentences(pos_models, order):
    lm = maxarpa.load(pos_models / f"tags.{order}.maxarpa")
    emissions = TnTEmissions.load(pos_models / "emissions.json.gz")
    sentences = [s for s in read_tagged(pos_models / "test.tsv") if 3 <= len(s) <= 9][:25]
    assert len(sentences) == 25
    for sent in sentences:
        words = [w for w, _ in sent]
        lattice = emissions.lattice(words)
        ars = decode(lm, lattice)
        full = full_decode(lm, lattice)
        assert ars.certified
        assert ars.log_p == pytest.approx(full.log_p, abs=1e-9)
        assert ars.tokens == full.tokens or ars.log_p == pytest.approx(full.log_p, abs=1e-12)


def run_tag(*args, input_text=None):
    return subprocess.run(
        [sys.executable, "-m", "arsdecode", "tag", *args], input=input_text,
        capture_output=True, text=True, timeout=300,
    )


def test_cli_tags_a_sentence_as_json(pos_models):
    proc = run_tag("The dog barked .", "--models", str(pos_models), "--order", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["tokens"] == ["The", "dog", "barked", "."]
    assert len(out["tags"]) == 4 and out["tags"][0] == "DT" and out["tags"][-1] == "."
    assert out["log_p"] < 0 and out["timing"]["seconds"] >= 0


def test_cli_blank_lines_are_skipped(pos_models, tmp_path):
    """Issue 9 E: a blank line (also a trailing one) is skipped, not an abort."""
    f = tmp_path / "in.txt"
    f.write_text("The dog barked .\n\nA cat sat .\n\n", encoding="utf-8")
    out = tmp_path / "out.conll"
    proc = run_tag("--file", str(f), "--models", str(pos_models), "--order", "3",
                   "--conll", str(out))
    assert proc.returncode == 0, proc.stderr
    assert [len(b.splitlines()) for b in out.read_text().strip().split("\n\n")] == [4, 4]
    proc = run_tag("   ", "--models", str(pos_models), "--order", "3")
    assert proc.returncode == 2 and "empty" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_file_mode_writes_conll(pos_models, tmp_path):
    f = tmp_path / "in.txt"
    f.write_text("The dog barked .\nPrices rose sharply .\n", encoding="utf-8")
    out = tmp_path / "out.conll"
    proc = run_tag("--file", str(f), "--models", str(pos_models), "--order", "4",
                   "--conll", str(out))
    assert proc.returncode == 0, proc.stderr
    blocks = out.read_text(encoding="utf-8").strip().split("\n\n")
    assert [len(b.splitlines()) for b in blocks] == [4, 4]
    assert all(len(line.split("\t")) == 2 for b in blocks for line in b.splitlines())
