"""The shipped EWT tagger and its data preparation (data_prep/ewt.py).

The shipped model is checked against the treebank it claims to come from (when
../shared/data/ud_ewt is there), decoded exactly (ARS equals the full-model DP), and rebuilt
byte for byte by the ship step.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

import maxarpa
from arsdecode.methods.ars import decode
from arsdecode.methods.full import full_decode
from arsdecode.tasks.pos.cap import CapEmissions
from arsdecode.tasks.pos.emissions import TnTEmissions
from arsdecode.tasks.pos.models import load_emissions
from data_prep.ewt import (
    DEFAULT_ORDER,
    SETTINGS,
    SHIP_ORDERS,
    build_model,
    read_conllu,
    read_ewt,
    shared_data,
    ship,
)
from data_prep.pos_data import DataError

SHIP_DIR = Path(__file__).resolve().parents[1] / "arsdecode" / "data" / "pos"
EWT_DIR = shared_data("ud_ewt")
needs_ewt = pytest.mark.skipif(EWT_DIR is None, reason="no ../shared/data/ud_ewt")

CONLLU = """\
# sent_id = a
# text = I don't know.
1\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\tknow\tknow\tVERB\tVB\t_\t0\troot\t_\t_
4.1\tknows\tknow\tVERB\tVBZ\t_\t_\t_\t0:root\t_
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_

1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t_\t_
"""


def test_read_conllu_skips_ranges_and_empty_nodes(tmp_path):
    path = tmp_path / "x.conllu.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(CONLLU)
    assert read_conllu(path) == [
        [("I", "PRP"), ("do", "VBP"), ("n't", "RB"), ("know", "VB"), (".", ".")],
        [("Yes", "UH")],
    ]


def test_read_conllu_names_file_and_line_of_a_bad_line(tmp_path):
    path = tmp_path / "bad.conllu"
    path.write_text("# c\n1\tI\tI\tPRON\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.conllu:2: expected 10"):
        read_conllu(path)
    path.write_text("1\tI\tI\tPRON\t_\t_\t0\troot\t_\t_\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.conllu:1: missing FORM or XPOS"):
        read_conllu(path)


def test_ship_is_byte_identical_and_loadable(tmp_path):
    sents = [[("The", "DT"), ("dog", "NN"), ("barked", "VBD"), (".", ".")],
             [("A", "DT"), ("cat", "NN"), ("sat", "VBD"), ("down", "RB"), (".", ".")]] * 3
    build_model(sents, tmp_path / "m", orders=[2, 3])
    a = ship(tmp_path / "m", tmp_path / "a", [2, 3])
    build_model(sents, tmp_path / "m", orders=[2, 3])  # rebuilt: new gzip timestamps inside
    b = ship(tmp_path / "m", tmp_path / "b", [2, 3])
    assert [p.name for p in a] == ["emissions.json.gz", "tags.2.maxarpa.gz", "tags.3.maxarpa.gz"]
    for pa, pb in zip(a, b, strict=True):
        assert pa.read_bytes() == pb.read_bytes()
        assert pa.read_bytes()[4:8] == b"\0\0\0\0"  # gzip mtime 0
    assert maxarpa.load(a[2]).order == 3
    assert TnTEmissions.load(a[0]).tags == (".", "DT", "NN", "RB", "VBD")


def test_shipped_directory_layout():
    names = sorted(p.name for p in SHIP_DIR.iterdir())
    expected = ["README.md", "emissions.json.gz", *(f"tags.{n}.maxarpa.gz" for n in SHIP_ORDERS)]
    assert names == sorted(expected)
    assert DEFAULT_ORDER in SHIP_ORDERS
    readme = (SHIP_DIR / "README.md").read_text(encoding="utf-8")
    assert "CC BY-SA 4.0" in readme and "creativecommons.org/licenses/by-sa/4.0" in readme
    assert "Leland Stanford Junior University" in readme and "LDC2012T13" in readme
    assert sum(p.stat().st_size for p in SHIP_DIR.iterdir()) < 10_000_000


@pytest.fixture(scope="module")
def shipped():
    em = load_emissions(SHIP_DIR / "emissions.json.gz")
    lms = {n: maxarpa.load(SHIP_DIR / f"tags.{n}.maxarpa.gz") for n in SHIP_ORDERS}
    return em, lms


def test_shipped_emissions_use_the_chosen_settings(shipped):
    em, lms = shipped
    assert isinstance(em, CapEmissions) and SETTINGS["capitalisation"]
    base = em.em
    assert {k: getattr(base, k) for k in SETTINGS} == SETTINGS
    for n, lm in lms.items():
        assert lm.order == n
        # the tag LM is over exactly the emission model's (tag, class) states
        assert set(lm.vocab) - {"<s>", "</s>"} == set(em.tags)


@needs_ewt
def test_shipped_emissions_are_the_counts_of_ewt_train():
    data = read_ewt(EWT_DIR)
    assert [sum(map(len, data[s])) for s in ("train", "dev", "test")] == [204577, 25147, 25094]
    counts: dict[str, Counter] = defaultdict(Counter)
    for sent in data["train"]:
        for w, t in sent:
            counts[w][t] += 1
    with gzip.open(SHIP_DIR / "emissions.json.gz", "rt", encoding="utf-8") as f:
        lexicon = json.load(f)["lexicon"]
    assert lexicon == {w: dict(c) for w, c in counts.items()}


@pytest.mark.parametrize("order", SHIP_ORDERS)
def test_shipped_tagger_decodes_exactly(shipped, order):
    em, lms = shipped
    lm = lms[order]
    for words in (["The", "dog", "barked", "."],
                  "i love this place , the staff were soooo friendly !".split(),
                  "Unbelievably , Qzxyville 's mayor re-tweeted it twice".split()):
        lattice = em.lattice(words)
        ars = decode(lm, lattice)
        full = full_decode(lm, lattice)
        assert ars.certified
        assert ars.log_p == pytest.approx(full.log_p, abs=1e-9)
        assert ars.tokens == full.tokens


def test_shipped_default_order_tags_a_plain_sentence(shipped):
    em, lms = shipped
    lattice = em.lattice(["The", "dog", "barked", "."])
    tags = em.penn_tags(decode(lms[DEFAULT_ORDER], lattice).tokens)
    assert (tags[0], tags[1], tags[3]) == ("DT", "NN", ".")
    assert tags[2].startswith("VB")  # "barked" is unseen in EWT train: VBD or VBN
