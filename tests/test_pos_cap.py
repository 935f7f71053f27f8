"""The capitalised-state POS model (arsdecode.tasks.pos.cap, TnT's capitalisation feature).

Checked: p(w | t, c) sums to 1 over the words of class c for every (t, c) state (known words
plus the unseen-word mass); decoding it equals the full-model DP and ARS; the bulk candidate
table equals the per-word candidates bit for bit; the loader picks the model from the saved
flag, and an emission file of the previous format still loads as the plain model.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import defaultdict

import pytest

import maxarpa
from arsdecode.methods.ars import decode
from arsdecode.methods.full import full_decode
from arsdecode.tasks.pos.cap import CapEmissions
from arsdecode.tasks.pos.emissions import TnTEmissions
from arsdecode.tasks.pos.models import load_emissions, load_models
from arsdecode.tasks.pos.tag_many import tag_many
from data_prep.ewt import SETTINGS, build_model

TRAIN = [
    [("The", "DT"), ("dog", "NN"), ("barked", "VBD"), (".", ".")],
    [("A", "DT"), ("cat", "NN"), ("sat", "VBD"), ("down", "RB"), (".", ".")],
    [("Rex", "NNP"), ("saw", "VBD"), ("the", "DT"), ("Cat", "NNP"), (".", ".")],
    [("Paris", "NNP"), ("is", "VBZ"), ("big", "JJ"), (".", ".")],
    [("the", "DT"), ("big", "JJ"), ("dog", "NN"), ("ran", "VBD"), ("Down", "RB"), (".", ".")],
] * 2 + [[("Zork", "NNP"), ("left", "VBD"), ("quickly", "RB"), (".", ".")]]
SENTS = [["The", "cat", "barked", "."], ["Rex", "sat", "Down", "quickly", "."],
         ["Qwerty", "is", "blorfy", "."], ["Dog", "saw", "Paris", "."]]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cap")
    build_model(TRAIN, out, orders=[2, 3], settings=SETTINGS)  # the shipped model's builder
    return out


def test_cap_emissions_sum_to_one_within_each_class(model_dir):
    ce = load_emissions(model_dir / "emissions.json.gz")
    assert isinstance(ce, CapEmissions)
    em = ce.em
    total: dict[str, float] = defaultdict(float)
    for w in em.vocabulary:
        for state, lp in ce.candidates(w):
            total[state] += math.exp(lp)
    for (t, c), p in ce.p_class.items():
        total[f"{t}^{c}"] += em.unknown_class_mass("A" if c == "upper" else "a")[t] / p
    assert set(total) == set(ce.tags)
    for state, mass in total.items():
        assert mass == pytest.approx(1.0, abs=1e-12), state


@pytest.mark.parametrize("order", [2, 3])
def test_cap_model_decodes_exactly(model_dir, order):
    lm, ce = load_models(model_dir, order)
    res = tag_many(lm, ce, SENTS, method="full")
    for i, words in enumerate(SENTS):
        lattice = ce.lattice(words)
        full = full_decode(lm, lattice)
        ars = decode(lm, lattice)
        assert ars.certified
        assert res.log_p[i] == pytest.approx(full.log_p, abs=1e-9)
        assert ars.log_p == pytest.approx(full.log_p, abs=1e-9)
        assert res.tags[i] == list(full.tokens)
        assert all(s.endswith("^upper") == w[0].isupper() or i == 3 and j == 0
                   for j, (s, w) in enumerate(zip(full.tokens, words, strict=True)))
        assert ce.penn_tags(full.tokens) == [s.split("^")[0] for s in full.tokens]


def test_cap_bulk_rows_equal_the_per_word_candidates(model_dir):
    ce = load_emissions(model_dir / "emissions.json.gz")
    words = ["The", "the", "Dog", "dog", "Qwerty", "blorfy", "Zork", "ZORK", "down", "Down"]
    for initial in (False, True):
        flags = [initial] * len(words)
        table, rows = ce.candidate_rows(words, flags)
        for w, r in zip(words, rows.tolist()):
            lo, hi = table.offsets[r], table.offsets[r + 1]
            got = [(ce.tags[t], e) for t, e in zip(table.tag[lo:hi].tolist(),
                                                   table.log_emission[lo:hi].tolist())]
            assert got == list(ce.candidates(w, initial=initial)), (w, initial)


def test_emission_file_versions(model_dir, tmp_path):
    """Version 3 carries the flags; a version-2 file (no flags) is the plain model it was."""
    with gzip.open(model_dir / "emissions.json.gz", "rt", encoding="utf-8") as f:
        obj = json.load(f)
    assert obj["version"] == 3 and obj["settings"]["capitalisation"] is True
    for key in ("capitalisation", "skip_case_variants"):
        del obj["settings"][key]
    obj["version"] = 2
    old = tmp_path / "old.json.gz"
    with gzip.open(old, "wt", encoding="utf-8") as f:
        json.dump(obj, f)
    em = load_emissions(old)
    assert type(em) is TnTEmissions and not em.capitalisation and not em.skip_case_variants
    assert em.penn_tags(["NN", "DT"]) == ["NN", "DT"]
    plain = TnTEmissions.train(TRAIN, **{**SETTINGS, "capitalisation": False,
                                         "skip_case_variants": False})
    for w in ("Qwerty", "blorfy", "The"):
        assert em.candidates(w) == plain.candidates(w)


def test_plain_lm_and_cap_model_do_not_mix(model_dir):
    """The cap model's LM is over states: a plain tag is not in it (the files go together)."""
    lm = maxarpa.load(model_dir / "tags.2.maxarpa")
    assert "DT^upper" in lm.word_to_id and "DT" not in lm.word_to_id


def test_every_output_path_prints_penn_tags(model_dir, tmp_path, monkeypatch):
    """The decoder's answers are states; the CLI (sentence, --json, --file, --conll, --sample),
    `arsdecode.tag` and a batch worker print tags, the same ones."""
    import subprocess
    import sys

    import arsdecode
    from arsdecode.batch.io import Item
    from arsdecode.batch.worker import TaskSpec, run_chunk

    lm, ce = load_models(model_dir, 3)
    words = SENTS[1]
    want = ce.penn_tags(full_decode(lm, ce.lattice(words)).tokens)
    assert want == ["NNP", "VBD", "RB", "RB", "."]

    def run(*args: str, stdin: str | None = None) -> str:
        proc = subprocess.run([sys.executable, "-m", "arsdecode", "tag", "--models",
                               str(model_dir), "--order", "3", *args], input=stdin,
                              capture_output=True, text=True, check=True)
        return proc.stdout

    line = " ".join(words)
    assert run(line).split() == [f"{w}/{t}" for w, t in zip(words, want)]
    assert json.loads(run(line, "--json"))["tags"] == want
    assert run("--file", "-", stdin=line + "\n").split() == [f"{w}/{t}" for w, t in
                                                             zip(words, want)]
    run("--file", "-", "--conll", str(tmp_path / "o.conll"), stdin=line + "\n")
    conll = (tmp_path / "o.conll").read_text().split()
    assert conll[1::2] == want
    sampled = json.loads(run(line, "--sample", "20", "--json"))
    assert all("^" not in t for s in sampled["samples"] for t in s)
    assert all("^" not in m[0] for pos in sampled["marginals"] for m in pos)
    assert arsdecode.tag(words, models=model_dir, order=3).tokens == want
    spec = TaskSpec(task="tag", lm=str(model_dir / "tags.3.npz"),
                    emissions=str(model_dir / "emissions.json.gz"))
    item = Item("a", "a", 1, json.dumps({"id": "a", "tokens": words}), None)
    assert json.loads(run_chunk(spec, [item])[0])["tags"] == want


def test_shipped_cap_bulk_rows_equal_the_per_word_candidates():
    from arsdecode.tasks.pos.models import SHIPPED_DIR

    ce = load_emissions(SHIPPED_DIR / "emissions.json.gz")
    assert isinstance(ce, CapEmissions)
    words = ["The", "the", "Munich", "munich", "Zürich", "quarbled", "Which", "which", "I",
             "iPhone", "USA", "u", "McDonald's", "2011", ".", ":)", "Blorfington", "Apple"]
    for initial in (False, True):
        table, rows = ce.candidate_rows(words, [initial] * len(words))
        for w, r in zip(words, rows.tolist()):
            lo, hi = table.offsets[r], table.offsets[r + 1]
            got = [(ce.tags[t], e) for t, e in zip(table.tag[lo:hi].tolist(),
                                                   table.log_emission[lo:hi].tolist())]
            assert got == list(ce.candidates(w, initial=initial)), (w, initial)
