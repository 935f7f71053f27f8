"""Issue 33, the lattice side: the writer's hints as soft evidence, the spelling model of unknown
words, and the boundary posteriors -- each checked against an independent computation (brute
force over every path of a small lattice, a scalar loop over characters)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

import maxarpa
from arsdecode.api import DEFAULT_LM
from arsdecode.tasks.segment import (
    NO_CUES,
    CueWeights,
    Segmenter,
    SegmentInput,
    SegmentOptions,
    SpellingModel,
    SurfaceIndex,
    segmentation_lattice,
    segmentation_words,
)
from arsdecode.tasks.segment.evaluation import boundaries
from arsdecode.tasks.segment.spelling import BOUNDARY, encode
from arsdecode.testing.brute_dag import brute_dag_model


@pytest.fixture(scope="module")
def sotu():
    """The small embedded State of the Union model: the brute-force checks need few words."""
    return maxarpa.load(DEFAULT_LM)


def test_reading_keeps_the_raw_characters_breaks_and_case():
    s = SegmentInput.read("#iPhoneFor Alonis!")
    assert s.text == "iphoneforalonis" and s.breaks == frozenset({9})
    assert s.words(["iphone", "for", "alonis"]) == ["iPhone", "For", "Alonis"]
    assert s.words(["iphone", "for", "alonis"], lower=True) == ["iphone", "for", "alonis"]
    s = SegmentInput.read("Don'tStop")
    assert s.text == "dontstop" and s.breaks == frozenset()
    assert s.words(["dont", "stop"]) == ["Don't", "Stop"]
    assert SegmentInput.read("...").text == ""


def test_cues_mark_case_and_digit_transitions_only():
    w = CueWeights(case=3.0, digit=2.0, unmarked=1.0, number=4.0)
    bonus = SegmentInput.read("iPhoneForAlonis").cue_bonus(w)
    assert len(bonus) == 16 and bonus[0] == bonus[15] == 0
    assert bonus[6] == bonus[9] == 3.0  # iPhone|For|Alonis
    assert bonus[1] == 0.0  # "i|Phone": one lower-case letter first is a prefix, no cue
    # unmarked cuts inside camel-case words, after a capital too ("P|hone")
    assert bonus[2] == bonus[3] == bonus[10] == -1.0
    bonus = SegmentInput.read("HTMLParser").cue_bonus(w)
    assert bonus[4] == 3.0  # HTML|Parser: the last capital of a run starts the next word
    assert bonus[2] == -1.0  # "HT|ML": between capitals in camel case, unmarked
    bonus = SegmentInput.read("JavaONE").cue_bonus(w)
    assert bonus[4] == 3.0 and bonus[5] == bonus[6] == -1.0  # a final capital run stays whole
    bonus = SegmentInput.read("lions2009").cue_bonus(w)
    assert bonus[5] == 2.0 and bonus[6] == bonus[7] == bonus[8] == -4.0
    assert bonus[1] == 0.0  # no case in the input: no camel-case costs
    assert not SegmentInput.read("iPhoneFor").cue_bonus(NO_CUES).any()
    bonus = SegmentInput.read("ab.Cd").cue_bonus(w)
    assert bonus[2] == 0.0  # a break is no cue: every path cuts there


def test_known_compounds_and_numeronyms_turn_the_bonus_into_a_cost():
    w = CueWeights(case=3.0, digit=2.0, unmarked=1.0, number=4.0, compound=2.5, numeronym=1.5)
    power = SegmentInput.read("PowerBook")
    assert power.cue_bonus(w)[5] == 3.0  # no vocabulary: the plain case cue
    assert power.cue_bonus(w, {"powerbook"})[5] == -2.5  # one known word: cutting costs
    assert power.cue_bonus(w, {"power", "book"})[5] == 3.0  # known only apart: the bonus
    three = SegmentInput.read("GoPowerBookNow").cue_bonus(w, {"powerbook"})
    assert three[2] == 3.0 and three[7] == -2.5 and three[11] == 3.0
    # a part shorter than COMPOUND_MIN_PART: "abasement" is a word, "A|Basement" two
    assert SegmentInput.read("ABasement").cue_bonus(w, {"abasement"})[1] == 3.0
    # but a first lower-case letter is a prefix by convention: "iphone" keeps it
    assert SegmentInput.read("iPhone").cue_bonus(w, {"iphone"})[1] == -2.5
    assert SegmentInput.read("iLoveYou").cue_bonus(w, {"iphone"})[1] == 0.0
    for raw, at in (("a11y", (1, 3)), ("i18n", (1, 3)), ("k8s", (1, 2)),
                    ("GoA11yFan", (3, 5))):
        bonus = SegmentInput.read(raw).cue_bonus(w)
        assert all(bonus[b] == -1.5 for b in at), raw
    # not numeronyms: more letters before the number, a number at an end, three digits
    assert SegmentInput.read("gr8").cue_bonus(w)[2] == 2.0
    assert SegmentInput.read("lions2009").cue_bonus(w)[5] == 2.0
    assert SegmentInput.read("b2").cue_bonus(w)[1] == 2.0
    assert SegmentInput.read("a123y").cue_bonus(w)[1] == 2.0
    assert not SegmentInput.read("PowerBook").cue_bonus(NO_CUES, {"powerbook"}).any()


@pytest.mark.parametrize("word", ["iPhone", "McFly", "JavaONE", "PowerBook", "gr8", "h1n1",
                                  "a11y", "4eva"])
def test_the_issues_single_words_survive_the_shipped_model(word):
    from arsdecode.tasks.segment.segmenter import default_segmenter

    assert default_segmenter().segment(word).words == [word]


@pytest.mark.parametrize("raw, words", [("#iPhoneForAlonis", ["iPhone", "For", "Alonis"]),
                                        ("lions2009", ["lions", "2009"])])
def test_the_issues_hints_still_cut_with_the_shipped_model(raw, words):
    from arsdecode.tasks.segment.segmenter import default_segmenter

    assert default_segmenter().segment(raw).words == words


def test_cue_bonuses_are_exactly_the_brute_force_path_scores(sotu):
    """Each path's ln score is the LM's plus its unknown costs plus the bonuses of its cuts."""
    raw = "TheNation"
    s = SegmentInput.read(raw)
    w = CueWeights(2.0, 1.0, 0.5, 1.0)
    bonus = s.cue_bonus(w)
    plain = segmentation_lattice(s.text, SurfaceIndex.of_model(sotu), unknown_max_length=3)
    cued = segmentation_lattice(s.text, SurfaceIndex.of_model(sotu), unknown_max_length=3,
                                boundary_bonus=bonus)
    a, b = brute_dag_model(sotu, plain), brute_dag_model(sotu, cued)
    assert a.words == b.words
    for words, lp_plain, lp_cued in zip(a.words, a.log_p, b.log_p, strict=True):
        cuts = boundaries(segmentation_words(words, s.text))
        assert lp_cued == pytest.approx(lp_plain + sum(bonus[c] for c in cuts), abs=1e-9)


@pytest.mark.parametrize("scale", [1.0, 0.5, 1.7])
def test_boundary_posteriors_equal_brute_force(sotu, scale):
    """Exact under p_scale(path) proportional to exp(scale * ln score(path)): the brute force
    scores every path of the unscaled lattice and scales them itself."""
    seg = Segmenter(sotu, SegmentOptions(cues=CueWeights(1.0, 1.0, 0.5, 1.0),
                                         unknown_max_length=3, posterior_scale=scale))
    for raw in ("GodBless", "theunion", "war1941"):
        s = SegmentInput.read(raw)
        res = seg.segment(raw, posteriors=True)
        brute = brute_dag_model(sotu, seg.lattice(s))
        scaled = scale * np.asarray(brute.log_p)
        z = np.logaddexp.reduce(scaled)
        want = np.zeros(len(s.text) + 1)
        for words, lp in zip(brute.words, scaled, strict=True):
            for c in boundaries(segmentation_words(words, s.text)):
                want[c] += math.exp(lp - z)
        assert res.boundary_posteriors is not None
        assert np.allclose(res.boundary_posteriors, want[1:len(s.text)], atol=1e-9), raw
        assert res.log_p == pytest.approx(brute.best_log_p, abs=1e-9)
        best = [segmentation_words(w, s.text) for w, lp in zip(brute.words, brute.log_p,
                                                               strict=True)
                if lp >= brute.best_log_p - 1e-9]  # exact ties ("19 41", "1 941") included
        assert [w.lower() for w in res.words] in best


def test_spelling_model_is_normalised_and_scores_like_a_character_loop():
    words = ["the", "then", "hen", "dog", "dogs", "going", "2009", "gr8"]
    m = SpellingModel.train(words)
    assert np.allclose(np.exp(m.log_p).sum(axis=2), 1.0)
    rng = random.Random(3)
    text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789é") for _ in range(30))
    codes = encode(text)
    starts = np.array([rng.randrange(20) for _ in range(40)])
    lengths = np.array([rng.randrange(1, 10) for _ in range(40)])
    got = m.unknown_log_p(codes, starts, lengths)
    for g, i, n in zip(got, starts, lengths, strict=True):
        seq = [BOUNDARY, BOUNDARY, *codes[i:i + n].tolist(), BOUNDARY]
        want = sum(m.log_p[seq[k - 2], seq[k - 1], seq[k]] for k in range(2, len(seq)))
        assert g == pytest.approx(want, abs=1e-12)
    word_like, noise = (m.unknown_log_p(encode(w), np.array([0]), np.array([len(w)]))[0]
                        for w in ("thens", "xqzj8"))
    assert word_like > noise + 5


def test_spelled_unknown_arcs_and_bonus_validation(sotu):
    index = SurfaceIndex.of_model(sotu)
    m = SpellingModel.train(index.words)
    wl = segmentation_lattice("qzx", index, spelling=m, spelling_scale=0.5,
                              unknown_word_cost=1.0, unknown_max_length=3)
    arc = [k for k, w in enumerate(wl.words) if w == "qzx"][0]
    want = 0.5 * m.unknown_log_p(encode("qzx"), np.array([0]), np.array([3]))[0] - 1.0
    assert wl.log_weights[arc] == pytest.approx(want)
    from arsdecode.errors import OptionError

    with pytest.raises(OptionError, match="boundary_bonus"):
        segmentation_lattice("abc", index, boundary_bonus=np.zeros(3))
    with pytest.raises(OptionError, match="boundary_bonus"):
        segmentation_lattice("abc", index, boundary_bonus=np.array([0, np.inf, 0, 0]))


def test_url_schemes_www_and_top_level_domains_are_single_pieces():
    from arsdecode.tasks.segment.cues import web_atoms

    def atoms(raw):
        s = SegmentInput.read(raw)
        return sorted(web_atoms(raw, len({0, len(s.text), *s.breaks}) - 1))

    assert atoms("www.cafes.org") == [0, 2]
    assert atoms("http://ismypoint.org/outdoray") == [0, 2]
    assert atoms("https://www2.foo-bar.org:8080/a/b?x=1") == [0, 1, 4]
    assert atoms("example.co.uk") == [2]
    for not_url in ("Mr.Smith", "#iPhoneForAlonis", "hello world", "e.g."):
        assert atoms(not_url) == [], not_url
    w = CueWeights(web=5.0)
    bonus = SegmentInput.read("www.cafes.org").cue_bonus(w)  # www|cafes|org, 3 + 5 + 3
    assert list(bonus[[1, 2, 9, 10]]) == [-5.0] * 4 and bonus[4] == 0.0
    assert not SegmentInput.read("www.cafes.org").cue_bonus(NO_CUES).any()


def test_calibration_measures_equal_their_definitions():
    from arsdecode.tasks.segment.calibration import (
        expected_calibration_error,
        fit_posterior_scale,
        log_loss,
    )

    p = np.array([0.05, 0.15, 0.12, 0.95, 0.55])
    y = np.array([False, True, False, True, True])
    want = -np.mean([math.log(0.95), math.log(0.15), math.log(0.88), math.log(0.95),
                     math.log(0.55)])
    assert log_loss(p, y) == pytest.approx(want)
    # bins: [0.05] -> |0.05 - 0|, [0.15, 0.12] -> |0.135 - 0.5|, [0.55] -> 0.45, [0.95] -> 0.05
    assert expected_calibration_error(p, y) == pytest.approx(
        (0.05 + 2 * 0.365 + 0.45 + 0.05) / 5)
    best, rows = fit_posterior_scale(lambda a: (np.clip(p * a, 0, 1), y), grid=(0.5, 1.0))
    assert best == min(rows, key=lambda r: r["log_loss"])["scale"]
    assert [r["scale"] for r in rows] == [0.5, 1.0]
    with pytest.raises(ValueError, match="posterior scale"):
        from arsdecode.tasks.segment.calibration import boundary_posteriors

        boundary_posteriors(None, None, 3, scale=0.0)  # type: ignore[arg-type]
