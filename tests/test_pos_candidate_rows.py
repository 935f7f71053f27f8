"""The bulk candidate path (`TnTEmissions.candidate_rows`, `tag_fast.flatten`) against the
per-word one (`TnTEmissions.candidates`), bit for bit.

Why: `arsdecode tag --file` looks its words up in arrays built with numpy (pos_table), while
lattices for ARS and the library use `candidates`; the two must give exactly the same (tag,
ln emission) pairs in the same order, for known, unknown, sentence-initial and capitalised
words. Checked on the shipped model (always present) and on the committed fixture.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from pos_fixture_models import FIXTURE, build_fixture_models

import maxarpa
from arsdecode.errors import ModelError, ObservationError
from arsdecode.lattice.flat import FlatLattices
from arsdecode.tasks.pos.emissions import TnTEmissions
from arsdecode.tasks.pos.evaluation import read_tagged
from arsdecode.tasks.pos.models import SHIPPED_DIR
from arsdecode.tasks.pos.table import Lexicon
from arsdecode.tasks.pos.tag_many import flatten

MADE_UP = ["Qwxzblorp", "blargification", "zorbified", "12,345.67x", "Über-Frobs", "-", "Ω",
           "GLORBCO", "x", "Xx", "\U0010ffff", "a" * 40, "ab\x00", "Zorblings"]


def probe_words(em: TnTEmissions, limit: int | None = None) -> list[str]:
    """Known words, their case variants (known or not) and made-up unknown words."""
    vocab = sorted(em.vocabulary)[:limit]
    variants = {v for w in vocab for v in (w.lower(), w.capitalize(), w.upper(), w + "s")}
    return sorted(set(vocab) | variants | set(MADE_UP))


def bulk(em: TnTEmissions, words: list[str], initial: list[bool]) -> list[tuple]:
    table, rows = em.candidate_rows(words, initial)
    sub = table.take(rows)
    bounds, tags, lns = sub.offsets.tolist(), sub.tag.tolist(), sub.log_emission.tolist()
    return [tuple((em.tags[tags[e]], lns[e].hex()) for e in range(lo, hi))
            for lo, hi in zip(bounds, bounds[1:])]


def assert_same_candidates(make: Callable[[], TnTEmissions], words: list[str]) -> None:
    """Fresh models for each path, so neither path's caches can serve the other."""
    one, many = make(), make()
    keys = [(w, first) for w in words for first in (False, True)]
    want = [tuple((t, x.hex()) for t, x in one.candidates(w, initial=first)) for w, first in keys]
    half = len(keys) // 2  # two calls: the second reuses the first one's unknown rows
    got = bulk(many, [w for w, _ in keys[:half]], [f for _, f in keys[:half]])
    got += bulk(many, [w for w, _ in keys[half:]], [f for _, f in keys[half:]])
    for key, a, b in zip(keys, want, got, strict=True):
        assert a == b, key
    assert bulk(many, [w for w, _ in keys], [f for _, f in keys]) == want  # all cached now


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory) -> Path:
    return build_fixture_models(tmp_path_factory.mktemp("pos_rows"))


def test_shipped_model_bulk_equals_per_word():
    path = SHIPPED_DIR / "emissions.json.gz"
    em = TnTEmissions.load(path)
    words = probe_words(em, limit=6000)
    assert sum(not em.is_known(w) for w in words) > 1000  # unknown words of both classes
    assert any(not em.is_known(w) and em.is_known(w.lower()) for w in words)  # initial rule
    assert_same_candidates(lambda: TnTEmissions.load(path), words)


@pytest.mark.parametrize("settings", [{}, {"suffix_alpha": None, "sentence_initial": False}])
def test_fixture_bulk_equals_per_word(fixture_dir, tmp_path, settings):
    path = fixture_dir / "emissions.json.gz"
    if settings:
        path = TnTEmissions.train(read_tagged(FIXTURE), **settings).save(tmp_path / "e.json.gz")
    assert_same_candidates(lambda: TnTEmissions.load(path), probe_words(TnTEmissions.load(path)))


def test_flatten_equals_the_lattices(fixture_dir):
    lm = maxarpa.load(fixture_dir / "tags.3.arpa")
    em = TnTEmissions.load(fixture_dir / "emissions.json.gz")
    sents = [[w for w, _ in s] for s in read_tagged(FIXTURE)]
    sents += [["Zorblings", "quickly", "crossed", "the", "Qwerty", "river", "."], ["The"],
              ["the", "The", "THE", "dog", "Dog"]]
    for part in (sents[:20], sents):  # the second call reuses the first one's rows
        flat, cand_tags = flatten(lm, em, part)
        lattices = [em.lattice(ws) for ws in part]
        want = FlatLattices.from_lattices(lm, lattices)
        for name in ("sent_off", "pos_off", "cand_ids", "cand_emis"):
            a, b = getattr(flat, name), getattr(want, name)
            assert a.dtype == b.dtype and a.tolist() == b.tolist(), name
        assert cand_tags.tolist() == [t for lat in lattices for pos in lat.tokens for t in pos]


def test_bad_words_raise_as_per_word(fixture_dir):
    em = TnTEmissions.load(fixture_dir / "emissions.json.gz")
    with pytest.raises(ObservationError, match="empty word"):
        em.candidate_rows(["the", ""], [False, False])
    upper_only = {"Paris": {"NNP": 1}, "Lyon": {"NNP": 2, "NN": 1}, "the": {"DT": 40}}
    assert_same_candidates(lambda: TnTEmissions(upper_only), ["zorb", "Zorb", "on", "the"])
    no_rare = TnTEmissions({"the": {"DT": 40}})
    with pytest.raises(ObservationError, match="no tag can emit the word 'zorb'"):
        no_rare.candidates("zorb")
    with pytest.raises(ObservationError, match="no tag can emit the word 'zorb'"):
        no_rare.candidate_rows(["the", "zorb"], [True, False])


def test_lexicon_arrays_round_trip(fixture_dir):
    with gzip.open(fixture_dir / "emissions.json.gz", "rt", encoding="utf-8") as f:
        lexicon = json.load(f)["lexicon"]
    assert Lexicon.from_mapping(lexicon).to_mapping() == lexicon
    messy = {"b": {"NN": 2, "DT": 0, "JJ": 1}, "gone": {"NN": 0}, "a": {"DT": True}}
    lex = Lexicon.from_mapping(messy)
    assert lex.words == ["b", "a"] and lex.tags == ("DT", "JJ", "NN")
    assert lex.to_mapping() == {"b": {"JJ": 1, "NN": 2}, "a": {"DT": 1}}  # tags in order
    assert lex.tag_counts().tolist() == [1.0, 1.0, 2.0]
    assert np.array_equal(lex.vectors(np.array([1, 0])), [[1, 0], [0, 1], [0, 2]])
    for bad, msg in [({"w": {"NN": -1}}, "'w': 'NN' -> -1"), ({"w": {"NN": 1.0}}, "1.0"),
                     ({"w": {"NN": 1}, "v": {"A B": 2}}, "'v': 'A B' -> 2"),
                     ({"w": {"NN": 0}}, "empty training set"), ({"w": {"NN": 2**64}}, "64")]:
        with pytest.raises(ModelError, match=msg):
            Lexicon.from_mapping(bad)


def test_save_writes_the_training_counts(tmp_path):
    sents = read_tagged(FIXTURE)
    lexicon: dict[str, Counter[str]] = defaultdict(Counter)
    for sent in sents:
        for w, t in sent:
            lexicon[w][t] += 1
    path = TnTEmissions.train(sents).save(tmp_path / "e.json.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        assert json.load(f)["lexicon"] == lexicon
