"""Issue 33, the build side: the mixed model is a proper distribution (every context sums to one
after the backoff weights are recomputed), the dev and test sets are disjoint and spell their
inputs, and the English comparison runs end to end on a few items."""

from __future__ import annotations

import json

import pytest

from arsdecode.tasks.segment.cues import SegmentInput
from data_prep.segment_arpa import _p_backoff, mix_unigrams, read_arpa, write_arpa


def _tiny_kn(tmp_path):
    from data_prep.lmplz import LmplzError, train_arpa

    text = ["the dog ran", "the cat ran away", "a dog and a cat", "the dog saw the cat",
            "we ran", "the cat saw a dog"] * 3
    try:
        return train_arpa(text, 3, tmp_path / "kn.arpa", extra_args=["--discount_fallback"])
    except LmplzError as err:
        pytest.skip(str(err))


def test_mixed_unigrams_keep_every_context_normalised(tmp_path):
    kn = read_arpa(_tiny_kn(tmp_path))
    words = {"the": 0.05, "dog": 0.01, "zebra": 0.002, "runs": 0.001}
    mixed = mix_unigrams(kn, words, 0.3)
    vocab = [w for (w,) in mixed.orders[0] if w != "<s>"]
    assert "zebra" in vocab and "runs" in vocab
    total_list = sum(words.values())
    p_end = 10 ** kn.orders[0][("</s>",)][0]
    p_zebra = 10 ** mixed.orders[0][("zebra",)][0]
    assert p_zebra == pytest.approx(0.7 * (1 - p_end) * 0.002 / total_list, rel=1e-9)
    # a list counts no sentence ends: </s> keeps its running-text probability, so a word the
    # running text never saw ends an input at that price (not at 0.3 of it)
    assert 10 ** mixed.orders[0][("</s>",)][0] == pytest.approx(p_end, rel=1e-9)
    assert 10 ** _p_backoff(mixed, ("zebra", "</s>")) == pytest.approx(p_end, rel=1e-9)
    contexts = [()] + [h for order in mixed.orders[:-1] for h in order if h != ("</s>",)]
    for h in contexts:
        mass = sum(10 ** _p_backoff(mixed, (*h, w)) for w in vocab)
        assert mass == pytest.approx(1.0, abs=1e-6), h
    out = tmp_path / "mixed.arpa"
    write_arpa(mixed, out)
    again = read_arpa(out)
    assert again.orders[0].keys() == mixed.orders[0].keys()
    import maxarpa

    model = maxarpa.load(out)  # what the package reads: a valid ARPA file
    assert "zebra" in model.vocab and model.unk_id is not None


@pytest.fixture(scope="module")
def sets_dir(tmp_path_factory):
    from data_prep.corpus import CorpusError
    from data_prep.ewt import DataError, default_ewt_dir
    from data_prep.segment_devsets import build

    out = tmp_path_factory.mktemp("sets")
    try:
        build(out, None, default_ewt_dir())
    except (CorpusError, DataError, FileNotFoundError) as err:
        pytest.skip(f"Brown or EWT not found: {err}")
    return out


def test_dev_and_test_sets_are_disjoint_and_spell_their_inputs(sets_dir):
    from data_prep.segment_devsets import SIZES, read_set

    for part, sizes in SIZES.items():
        for kind, n in sizes.items():
            rows = read_set(sets_dir / f"{part}.{kind}.jsonl")
            assert len(rows) == n
            for r in rows:
                assert "".join(r["words"]) == SegmentInput.read(r["input"]).text.lower()
    dev = {r["input"] for r in read_set(sets_dir / "dev.sentences.jsonl")}
    test = {r["input"] for r in read_set(sets_dir / "test.sentences.jsonl")}
    assert not dev & test
    tags = [r["input"] for r in read_set(sets_dir / "test.hashtags.jsonl")]
    assert any(t[1:2].isupper() for t in tags) and any(t[-1].isdigit() for t in tags)


def test_the_english_comparison_runs_end_to_end(sets_dir, tmp_path):
    from experiments import segment_compare

    doc = tmp_path / "page.md"
    rc = segment_compare.main(["--sets", str(sets_dir), "--limit", "4", "--no-process",
                               "--results", str(tmp_path / "r.json"), "--doc", str(doc),
                               "--img", str(tmp_path / "img")])
    assert rc == 0
    res = json.loads((tmp_path / "results-english.json").read_text())
    e = res["english"]
    assert e["sets"]["hashtags"]["items"] == 4
    assert e["rows"][0]["tool"] == "ours"
    for row in e["rows"]:
        for kind in ("hashtags", "urls", "sentences"):
            assert 0.0 <= row[kind]["accuracy"] <= 1.0 and row[kind]["chars_per_second"] > 0
    assert sum(b["n"] for b in e["reliability"]) > 0
    assert e["examples"]["#iPhoneForAlonis"] == ["iPhone", "For", "Alonis"]
    page = doc.read_text()
    assert "**ours** (exact, shipped model)" in page and (tmp_path / "img" /
                                                          "reliability.png").exists()


def test_the_word_list_keeps_words_and_numbers_not_stray_letters():
    """wordfreq's one-letter tokens other than "a" and "i" are its tokenizer's pieces; they
    would make "org" -> "or g" and "ginghams" -> "gingham s" cheap."""
    pytest.importorskip("wordfreq")
    from data_prep.prepare_segment_model import word_list

    words = word_list(3000)
    assert {"a", "i", "the", "0", "1985", "2100"} <= words.keys()
    assert not {"s", "g", "t", "u", "x"} & words.keys()
    assert all(w == w.lower() and w.isalnum() for w in words)
