"""Issue 33, what a user meets: `arsdecode.segment` / `segment_many` and `arsdecode segment` with
the shipped general-English model -- the words in the input's characters and case, the writer's
hints used but never forced, exact posteriors that sum as probabilities must, and the model's
provenance shipped beside it."""

from __future__ import annotations

import json

import pytest
from cli_in_process import in_process_cli as _cli

import arsdecode
from arsdecode.tasks.segment import SEGMENT_LM, SegmentInput
from arsdecode.tasks.segment.segmenter import default_segmenter


@pytest.fixture(scope="module")
def seg():
    return default_segmenter()


def test_the_shipped_model_and_its_provenance_are_in_the_package():
    readme = (SEGMENT_LM.parent / "README.md").read_text(encoding="utf-8")
    assert SEGMENT_LM.is_file() and SEGMENT_LM.stat().st_size < 30e6
    for needed in ("wordfreq", "CC BY-SA 4.0", "English Web Treebank", "State of the Union",
                   "public domain", "python -m data_prep.prepare_segment_model"):
        assert needed in readme, needed


@pytest.mark.parametrize("raw, words", [
    ("#iPhoneForAlonis", ["iPhone", "For", "Alonis"]),
    ("lions2009", ["lions", "2009"]),
    ("#StateOfTheUnion", ["State", "Of", "The", "Union"]),
    ("www.bestbuy.com/deals", ["www", "bestbuy", "com", "deals"]),  # wordfreq has "bestbuy"
    ("heartballoon", ["heart", "balloon"]),
    ("vegas", ["vegas"]),
    ("bittorrent", ["bittorrent"]),
])
def test_the_shipped_model_segments_what_the_issue_names(seg, raw, words):
    assert seg.segment(raw).words == words


@pytest.mark.parametrize("raw, last", [
    ("http://theindex.com/wasthebarkeep", ["was", "the", "barkeep"]),
    ("www.experimentalarrangement.net/duringalunation", ["during", "a", "lunation"]),
    ("http://thesource.net/theschoolboy", ["the", "schoolboy"]),
])
def test_a_url_may_end_in_a_word_the_running_text_never_saw(seg, raw, last):
    """The URL dev set's errors while `</s>` kept only the running text's share of its
    unigram (data_prep.segment_arpa): a word only the word list knows paid ln 5 more to end
    the input, so "bar keep", "alu nation" and "school boy" won."""
    words = seg.segment(raw).words
    assert words[-len(last):] == last and words[3] in ("com", "net")


@pytest.mark.parametrize("word", ["iPhone", "McFly", "gr8", "h1n1",
                                  "4eva"])
def test_hints_are_soft_single_words_survive(seg, word):
    assert seg.segment(word).words == [word]


def test_api_results_lower_and_many(seg):
    res = arsdecode.segment("#iPhoneForAlonis")
    assert isinstance(res, arsdecode.SegmentResult) and res.certified
    assert res.words == ["iPhone", "For", "Alonis"] and res.log_p < 0
    assert res.boundary_posteriors is None
    assert arsdecode.segment("#iPhoneForAlonis", lower=True).words == ["iphone", "for",
                                                                        "alonis"]
    texts = ["lions2009", "", "...", "thisisatest", "#LemonTree"]
    many = arsdecode.segment_many(texts)
    assert [r.words for r in many] == [arsdecode.segment(t).words for t in texts]
    assert many[1].words == [] and many[2].words == []
    assert json.loads(json.dumps(many[0].to_json()))["words"] == ["lions", "2009"]


def test_posteriors_are_probabilities_and_agree_with_the_best_path(seg):
    raw = "thisisatest.goodbuy"  # ("bestbuy" is a brand in the word list: near 50:50 there)
    res = seg.segment(raw, posteriors=True)
    s = SegmentInput.read(raw)
    post = res.boundary_posteriors
    assert post is not None and len(post) == len(s.text) - 1
    assert all(0.0 <= p <= 1.0 for p in post)
    assert post[11 - 1] == pytest.approx(1.0)  # the break after "thisisatest": every path
    cuts = {4, 6, 7, 11, 15}  # this|is|a|test.good|buy
    assert [w.lower() for w in res.words] == ["this", "is", "a", "test", "good", "buy"]
    # a clear best segmentation: its cuts likely, every other offset unlikely
    assert all(post[b - 1] > 0.5 for b in cuts)
    assert all(post[b - 1] < 0.5 for b in range(1, len(s.text)) if b not in cuts)
    # cues=False: the case is ignored (the lower-cased input segments the same way)
    off = arsdecode.segment("#iPhoneForAlonis", cues=False)
    assert [w.lower() for w in off.words] == arsdecode.segment("iphoneforalonis").words


def test_cli_default_model_keeps_case_and_posteriors_in_json(capsys):
    code, out, err = _cli(capsys, "segment", "#iPhoneForAlonis")
    assert code == 0, err
    assert out.strip() == "iPhone For Alonis"
    code, out, err = _cli(capsys, "segment", "lions2009", "--lower")
    assert code == 0 and out.strip() == "lions 2009"
    code, out, err = _cli(capsys, "segment", "lions2009", "--json", "--posteriors")
    got = json.loads(out)
    assert got["words"] == ["lions", "2009"] and got["certified"] is True
    assert len(got["boundary_posteriors"]) == 8 and got["boundary_posteriors"][4] > 0.5
    code, out, err = _cli(capsys, "segment", "lions2009", "--posteriors")
    assert code == 2 and "--posteriors needs --json" in err
