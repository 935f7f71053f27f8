"""Exact word segmentation (issue 21): the segmentation lattice, the boundary metrics, the
reference Viterbi of the comparison, and the pip segmenters' wrappers.

References: the lattice's arcs against a brute-force listing of every substring; the metrics
against hand-counted cuts; the reference Viterbi against enumerating every path of small
lattices under random ARPA models (maxarpa's scalar `log10p` on the full history).
"""

from __future__ import annotations

import gzip
import math
import random
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maxarpa
from arsdecode.errors import ObservationError, OptionError
from arsdecode.lattice.word_lattice import WordLattice
from arsdecode.tasks.segment import (
    BoundaryScore,
    SurfaceIndex,
    boundaries,
    normalize_text,
    prepare_input,
    score_segmentations,
    segmentation_lattice,
    segmentation_words,
    surface_form,
)
from arsdecode.testing.brute import model_path_log10
from arsdecode.testing.random_arpa import random_arpa_text
from experiments import segment_tools

LN10 = math.log(10)
VOCAB = ["a", "an", "ant", "and", "the", "then", "hen", "he", "don't", "its", "it's", "it",
         "<s>", "</s>", "<unk>", ","]


def arc_set(wl):
    return {(int(s), int(d), w, float(x)) for s, d, w, x in
            zip(wl.src, wl.dst, wl.words, wl.log_weights, strict=True)}


def expected_arcs(text, vocab, penalty, unk_max, breaks=()):
    """Every substring, listed the slow way."""
    index = SurfaceIndex.of(vocab)
    out = set()
    for i in range(len(text)):
        for j in range(i + 1, len(text) + 1):
            if any(i < b < j for b in breaks):
                continue
            words = [w for w in vocab if w not in ("<s>", "</s>", "<unk>")
                     and surface_form(w) == text[i:j]]
            assert set(words) == set(index.words.get(text[i:j], ()))
            out |= {(i, j, w, 0.0) for w in words}
            if not words and j - i <= unk_max:
                out.add((i, j, text[i:j], -penalty * (j - i)))
    return out


# ----- the lattice ----------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="antdhe'isx1", max_size=14), st.sampled_from([0.0, 0.5, 2.0]),
       st.integers(1, 5), st.lists(st.integers(1, 13), max_size=3))
def test_every_word_and_unknown_substring_has_its_arc_and_nothing_else(raw, penalty, unk_max,
                                                                       breaks):
    text = normalize_text(raw)
    brk = {b for b in breaks if b < len(text)}
    wl = segmentation_lattice(text, VOCAB, unknown_penalty_per_char=penalty,
                              unknown_max_length=unk_max, breaks=brk)
    assert wl.n_nodes == len(text) + 1
    assert dict(wl.finals) == {len(text): 0.0}
    assert wl.num_paths() >= 1  # every text has a path
    assert arc_set(wl) == expected_arcs(text, VOCAB, penalty, unk_max, brk)
    assert len(arc_set(wl)) == wl.n_arcs  # no arc twice
    # made directly in canonical form: WordLattice.build, which checks and canonicalises,
    # gives the same lattice back
    again = WordLattice.build(wl.n_nodes, 0, wl.finals, list(zip(
        wl.src.tolist(), wl.dst.tolist(), wl.words, wl.log_weights.tolist(), strict=True)))
    assert again.n_nodes == wl.n_nodes and again.words == wl.words
    assert (again.src == wl.src).all() and (again.dst == wl.dst).all()
    assert (again.log_weights == wl.log_weights).all() and again.finals == wl.finals
    assert wl.src.dtype == again.src.dtype and wl.log_weights.dtype == again.log_weights.dtype


def test_surface_forms_give_parallel_arcs_and_apostrophes_vanish():
    wl = segmentation_lattice("itsdont", VOCAB)
    words_0_3 = {w for s, d, w in zip(wl.src, wl.dst, wl.words, strict=True) if (s, d) == (0, 3)}
    assert words_0_3 == {"its", "it's"}
    assert any(w == "don't" and (s, d) == (3, 7)
               for s, d, w in zip(wl.src, wl.dst, wl.words, strict=True))
    assert surface_form("Don't") == "dont" and surface_form(",") == ""
    assert "," not in {w for ws in SurfaceIndex.of(VOCAB).words.values() for w in ws}


def test_unknown_arcs_never_duplicate_a_word_and_carry_their_substring():
    wl = segmentation_lattice("thex", VOCAB, unknown_penalty_per_char=1.5,
                              unknown_max_length=3)
    arcs = arc_set(wl)
    assert (0, 3, "the", 0.0) in arcs and not any(a[:3] == (0, 3, "the") and a[3] < 0
                                                  for a in arcs)
    assert (3, 4, "x", -1.5) in arcs and (1, 4, "hex", -4.5) in arcs
    assert not any(d - s > 3 and x < 0 for s, d, _, x in arcs)  # unknown_max_length


def test_max_word_length_caps_vocabulary_words_only():
    arcs = arc_set(segmentation_lattice("then", VOCAB, max_word_length=3,
                                        unknown_max_length=1))
    assert (0, 3, "the", 0.0) in arcs and not any(a[2] == "then" for a in arcs)


def test_empty_text_and_digits():
    wl = segmentation_lattice("", VOCAB)
    assert wl.n_nodes == 1 and wl.n_arcs == 0 and wl.num_paths() == 1
    wl = segmentation_lattice("1984", VOCAB, unknown_max_length=2)
    assert wl.num_paths() == 5  # compositions of 4 into parts of 1 and 2


def test_bad_input_is_refused_with_one_clear_error():
    with pytest.raises(ObservationError, match="not normalised"):
        segmentation_lattice("The test", VOCAB)
    with pytest.raises(OptionError, match="unknown_max_length"):
        segmentation_lattice("the", VOCAB, unknown_max_length=0)
    with pytest.raises(OptionError, match="unknown_penalty_per_char"):
        segmentation_lattice("the", VOCAB, unknown_penalty_per_char=-1.0)
    with pytest.raises(OptionError, match="no vocabulary"):
        SurfaceIndex.of_model(object())


def test_prepare_input_keeps_the_writers_separators_as_breaks():
    assert prepare_input("#ThisIsATest") == ("thisisatest", frozenset())
    text, breaks = prepare_input("www.BestBuy.com/deals")
    assert text == "wwwbestbuycomdeals" and breaks == {3, 10, 13}
    assert prepare_input("  Don't  stop! ") == ("dontstop", frozenset({4}))
    assert prepare_input("...") == ("", frozenset())
    wl = segmentation_lattice(text, ["bestbuy", "best", "buy", "deals", "com"], breaks=breaks)
    assert not any(s < b < d for s, d in zip(wl.src.tolist(), wl.dst.tolist(), strict=True)
                   for b in breaks)


def test_a_long_text_builds_one_node_per_character():
    """Its speed is measured in bench/bench_lattice_building.py, not here: a timing assert
    fails at random on a loaded 2-core CI machine (issue 29 F)."""
    lm = maxarpa.load(_embedded())
    index = SurfaceIndex.of_model(lm)
    rng = random.Random(0)
    words = [w for w in index.words if w.isalpha()]
    text = "".join(rng.choice(words) for _ in range(600))[:3000]
    wl = segmentation_lattice(text, index)
    assert wl.n_nodes == 3001


def test_segmentation_words_maps_decoded_words_back_to_substrings():
    assert segmentation_words(["i", "don't", None, "know", "xyz"], "idontknowxyz") == [
        "i", "dont", "know", "xyz"]
    with pytest.raises(ObservationError, match="does not continue"):
        segmentation_words(["i", "know"], "idontknow")
    with pytest.raises(ObservationError, match="cover 1 of"):
        segmentation_words(["i"], "idontknow")


# ----- the metrics ----------------------------------------------------------------------------
def test_boundaries_are_the_inner_cuts():
    assert boundaries(["this", "is", "a", "test"]) == {4, 6, 7}
    assert boundaries(["word"]) == frozenset() and boundaries([]) == frozenset()


def test_scores_against_hand_counts():
    ref = [["this", "is", "a", "test"], ["the", "end"]]
    pred = [["this", "isa", "test"], ["the", "e", "nd"]]
    # cuts: ref {4,6,7} {3}; pred {4,7} {3,4}: tp 2 + 1, predicted 4, reference 4
    s = score_segmentations(pred, ref)
    assert (s.true_positives, s.predicted, s.reference, s.exact, s.sentences) == (3, 4, 4, 0, 2)
    assert s.precision == s.recall == s.f1 == 0.75
    s = score_segmentations([["this", "is", "a", "test"], ["theend"]], ref)
    assert (s.true_positives, s.predicted, s.reference, s.exact) == (3, 3, 4, 1)
    assert s.precision == 1.0 and s.recall == 0.75
    assert math.isclose(s.f1, 2 * 0.75 / 1.75) and s.exact_fraction == 0.5
    assert BoundaryScore(0, 0, 0, 0, 0).f1 == 1.0  # nothing to cut, nothing cut
    assert score_segmentations([["a"]], [["a"]]).to_json()["exact"] == 1.0


def test_scoring_refuses_mismatched_texts():
    with pytest.raises(ObservationError, match="spells"):
        score_segmentations([["this", "is"]], [["this", "was"]])
    with pytest.raises(ObservationError, match="2 reference"):
        score_segmentations([["a"]], [["a"], ["b"]])


# ----- the reference Viterbi of the comparison ------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.integers(2, 4), st.integers(1, 6),
       st.text(alphabet="w0123", min_size=1, max_size=7), st.sampled_from([0.0, 0.7, 2.0]))
def test_reference_viterbi_is_the_brute_force_best_path(tmp_path_factory, seed, order, vocab,
                                                        text, penalty):
    path = tmp_path_factory.mktemp("arpa") / "m.arpa"
    path.write_text(random_arpa_text(seed, order, vocab, 0.4, density=0.7))
    lm = maxarpa.load(path)
    wl = segmentation_lattice(text, SurfaceIndex.of_model(lm), unknown_penalty_per_char=penalty,
                              unknown_max_length=3)
    best = max(sum(float(wl.log_weights[a]) for a in arcs)
               + LN10 * model_path_log10(lm, wl.path_words(arcs)) for arcs, _ in wl.paths())
    words, score = segment_tools.reference_dag_decode(lm, wl)
    assert math.isclose(score, best, rel_tol=0, abs_tol=1e-9)
    assert "".join(segmentation_words(words, text)) == text
    unknown = sum(len(w) for w in words if not lm.is_known(w))
    assert math.isclose(score, LN10 * model_path_log10(lm, words) - penalty * unknown,
                        rel_tol=0, abs_tol=1e-9)  # its words, rescored, give its score


# ----- the pip segmenters ---------------------------------------------------------------------
TRAIN = [["this", "is", "a", "test", "."], ["it", "is", "a", "test", "of", "the", "tools"],
         ["don't", "stop", "the", "test"]]


@pytest.mark.parametrize("tool", segment_tools.TOOLS)
def test_the_tools_as_shipped_and_trained_segment_a_tiny_text(tool, tmp_path):
    pytest.importorskip(tool)
    assert segment_tools.shipped(tool)("thisisatest") == ["this", "is", "a", "test"]
    train = segment_tools.surface_sentences(TRAIN)
    assert ["dont", "stop", "the", "test"] in train
    seg = segment_tools.trained(tool, train, tmp_path)
    assert seg("dontstopthetest") == ["dont", "stop", "the", "test"]
    assert seg("") == []


def test_training_counts():
    uni, bi = segment_tools.counts(segment_tools.surface_sentences(TRAIN))
    assert uni["test"] == 3 and uni["is"] == 2 and "." not in uni
    assert bi["a test"] == 2 and bi["test of"] == 1 and "test it" not in bi


def _embedded():
    from arsdecode.api import DEFAULT_LM
    return DEFAULT_LM


def test_the_comparison_runs_end_to_end_on_a_tiny_set(tmp_path):
    """experiments/segment_compare.py on 3 test and 2 dev sentences, the embedded 5-gram as
    lm.5: the page and plot are made, the numbers are in range, and each whole-process run
    (a fresh interpreter per segmenter) printed what the in-process run did (checked inside)."""
    from experiments import segment_compare

    data = tmp_path / "data"
    data.mkdir()
    (data / "train.txt").write_text("we will win the war .\nthe people of the united states "
                                    ", we will .\n")
    (data / "heldout.txt").write_text("we will win .\nthe people will win !\nthe war .\n"
                                      "it is a test .\nthe united states .\n")
    with gzip.open(_embedded(), "rb") as src, open(data / "lm.5.maxarpa", "wb") as dst:
        shutil.copyfileobj(src, dst)
    doc = tmp_path / "page.md"
    rc = segment_compare.main(["--sms", "--data", str(data), "--orders", "5",
                               "--dev-sentences", "2", "--tune", "--results",
                               str(tmp_path / "r.json"), "--doc", str(doc), "--img",
                               str(tmp_path / "img")])
    assert rc == 0
    page = doc.read_text()
    assert "exact 5-gram (ours)" in page and (tmp_path / "img" / "f1_by_order.png").exists()
    import json
    res = json.loads((tmp_path / "r.json").read_text())
    rows = res["compare"]["rows"]
    assert res["compare"]["sentences"] == 3
    assert all(0.0 <= r["f1"] <= 1.0 for r in rows)
    assert all(r["process"]["chars_per_second"] > 0 for r in rows)
    assert [r for r in rows if r["tool"] == "ours"][0]["exact"] == 1.0  # "wewillwin" etc.
    assert len(res["tuning"]["grid"]) == len(segment_compare.PENALTY_GRID)
