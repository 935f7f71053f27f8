"""The ASR-like lattice generator of the lattice-rescoring bench (data_prep/asr_lattices.py).

The bench's figures mean something only if its lattices are what the issue describes: the
true path present, `arcs` competing arcs per position, epsilon deletions, two-position spans,
insertions through an extra node, seeded. Each is checked on the generated `WordLattice`
itself (its arcs, after canonical renumbering), not on the generator's own counters alone.
The bench's helpers (word errors, the acoustic-only best path) are checked against brute force.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import maxarpa
from arsdecode.api import DEFAULT_LM
from arsdecode.lattice.lattice_files import read_word_lattice
from data_prep import asr_lattices as asr

TEXT = [["it", "is", "with", "a", "heavy", "heart", "that", "i", "stand", "before", "you", ","],
        ["my", "friends", "and", "colleagues", ",", "in", "the", "congress", "."],
        ["we", "do", "not", "fear", "the", "future", "."]]


@pytest.fixture(scope="module")
def confuser() -> asr.Confuser:
    return asr.Confuser.from_model(maxarpa.load(DEFAULT_LM))


def structure(a: asr.AsrLattice) -> dict:
    """What the lattice holds, read off its arcs: the truth path's nodes, and per kind the
    arcs that are not on it."""
    wl = a.lattice
    path_nodes = [0] + [int(wl.dst[k]) for k in a.truth_arcs]
    at = {v: i for i, v in enumerate(path_nodes)}
    out: dict = {"path_nodes": path_nodes, "position": [], "epsilon": [], "span": [],
                 "into_extra": [], "from_extra": []}
    for k in range(wl.n_arcs):
        s, d, w = int(wl.src[k]), int(wl.dst[k]), wl.words[k]
        if s in at and d in at:
            if at[d] == at[s] + 1:
                out["epsilon" if w is None else "position"].append((at[s], w, k))
            else:
                assert at[d] == at[s] + 2 and w is not None, (s, d, w)
                out["span"].append((at[s], w, k))
        elif s in at:
            out["into_extra"].append((at[s], d, w))
        else:
            out["from_extra"].append((s, at[d], w, k))
    return out


def check(a: asr.AsrLattice, arcs: int) -> None:
    wl = a.lattice
    n = len(a.truth)
    st_ = structure(a)
    # the true path: from the start to the final node, reading the truth
    assert wl.path_words(a.truth_arcs) == list(a.truth)
    assert int(wl.src[a.truth_arcs[0]]) == 0
    assert list(wl.finals) == [st_["path_nodes"][-1]]
    for prev, k in itertools.pairwise(a.truth_arcs):
        assert int(wl.dst[prev]) == int(wl.src[k])
    # widths: `arcs` distinct words per position, the truth among them
    for i in range(n):
        words = [w for p, w, _ in st_["position"] if p == i]
        assert len(words) == arcs == len(set(words))
        assert a.truth[i] in words
    # deletions: epsilon arcs parallel to a truth arc, at most one per position
    eps_pos = [p for p, _, _ in st_["epsilon"]]
    assert len(eps_pos) == a.deletions == len(set(eps_pos))
    # spans: one merged word over positions i, i + 1, neither of the two true words
    assert len(st_["span"]) == a.spans
    for p, w, _ in st_["span"]:
        assert p < n - 1 and w not in (a.truth[p], a.truth[p + 1])
    # insertions: an extra node entered by one inserted word from P_i, left by the truth and
    # its first confusables to P_{i+1}
    extra = {d for _, d, _ in st_["into_extra"]}
    assert wl.n_nodes == n + 1 + a.insertions == n + 1 + len(extra)
    for m in extra:
        (i,) = [p for p, d, _ in st_["into_extra"] if d == m]
        leaving = [(p, w) for s, p, w, _ in st_["from_extra"] if s == m]
        assert len(leaving) == 1 + min(2, arcs - 1)
        assert all(p == i + 1 for p, _ in leaving)
        assert (i + 1, a.truth[i]) in leaving
    assert wl.n_arcs == (n * arcs + a.deletions + a.spans
                         + a.insertions * (2 + min(2, arcs - 1)))


@pytest.mark.parametrize("arcs", [1, 5, 15, 50])
def test_structure_at_every_width(confuser, arcs):
    lats = asr.generate(confuser, TEXT, 12, arcs, 4, seed=3)
    for a in lats:
        check(a, arcs)
        assert len(a.truth) == 12


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 25), arcs=st.integers(1, 20), seed=st.integers(0, 2**32 - 1),
       p=st.sampled_from([0.0, 0.3, 1.0]))
def test_structure_property(confuser, n, arcs, seed, p):
    rng = np.random.default_rng(seed)
    words = [TEXT[0][i % len(TEXT[0])] for i in range(n)]
    words = [w for w in words if asr.is_spoken(w)] or ["it"]
    a = asr.make_lattice(words, arcs, confuser, rng, p_span=p, p_delete=p, p_insert=p)
    check(a, arcs)
    if p == 1.0:
        assert a.deletions == a.insertions == len(words)
        assert a.spans == len(words) - 1  # every merged word found in this vocabulary
    if p == 0.0:
        assert a.deletions == a.insertions == a.spans == 0


def test_every_kind_occurs_and_the_truth_is_not_always_best(confuser):
    lats = asr.generate(confuser, TEXT, 40, 15, 5, seed=0)
    assert all(sum(getattr(a, k) for a in lats) > 0 for k in ("spans", "deletions",
                                                              "insertions"))
    beaten = total = 0
    for a in lats:
        wl = a.lattice
        for k in a.truth_arcs:
            rivals = [j for j in wl.arcs_from(int(wl.src[k]))
                      if int(wl.dst[j]) == int(wl.dst[k]) and wl.words[j] is not None]
            total += 1
            beaten += max(wl.log_weights[j] for j in rivals) > wl.log_weights[k]
    assert 0 < beaten < total


def test_seeded(confuser):
    one = asr.generate(confuser, TEXT, 20, 5, 3, seed=7)
    again = asr.generate(confuser, TEXT, 20, 5, 3, seed=7)
    other = asr.generate(confuser, TEXT, 20, 5, 3, seed=8)
    assert [a.lattice.to_json_obj() for a in one] == [a.lattice.to_json_obj() for a in again]
    assert [a.lattice.to_json_obj() for a in one] != [a.lattice.to_json_obj() for a in other]
    wide = asr.generate(confuser, TEXT, 20, 50, 3, seed=7)
    assert [a.truth for a in wide] == [a.truth for a in one]  # same text at every width


def test_reference_text_is_spoken_and_in_vocabulary(confuser):
    stream, starts = asr.text_stream(TEXT)
    assert "," not in stream and "." not in stream and starts[0] == 0
    a = asr.make_lattice(["qzxqzx", "the"], 3, confuser, np.random.default_rng(0))
    assert a.truth[0] in confuser.index and a.truth[1] == "the"
    conf = confuser.confusables("freedom", 5)
    assert len(conf) == 5 and "freedom" not in conf and "freedoms" in conf
    assert conf == confuser.confusables("freedom", 5)
    assert confuser.confusables("freedom", 3, exclude=("freedoms",)) == [
        w for w in conf if w != "freedoms"][:3]


def test_slf_round_trip(confuser, tmp_path):
    lats = asr.generate(confuser, TEXT, 10, 5, 2, seed=1, p_delete=0.5, p_insert=0.5)
    for a, path in zip(lats, asr.write_slf_files(lats, tmp_path), strict=True):
        back = read_word_lattice(path)
        assert back.words == a.lattice.words
        assert back.src.tolist() == a.lattice.src.tolist()
        assert back.dst.tolist() == a.lattice.dst.tolist()
        np.testing.assert_allclose(back.log_weights, a.lattice.log_weights, rtol=0,
                                   atol=1e-9)


def test_heldout_is_data_preps_split():
    from data_prep.corpus import CorpusError, load_sentences
    from data_prep.prepare_sms import split_heldout

    try:
        sentences = load_sentences(["state_union"])
    except CorpusError as err:
        pytest.skip(f"state_union corpus not available: {err}")
    assert asr.heldout_sentences(["state_union"], 0) == split_heldout(sentences, 0)[1]


def test_bench_helpers_against_brute_force(confuser):
    for a in asr.generate(confuser, TEXT, 4, 3, 3, seed=5, p_delete=0.5, p_insert=0.5,
                          p_span=0.5):
        wl = a.lattice
        scores = {}
        for arcs, final in wl.paths():
            scores[tuple(arcs)] = float(sum(wl.log_weights[list(arcs)])) + wl.finals[final]
        top = max(scores.values())
        best = {tuple(wl.path_words(p)) for p, s in scores.items() if s == top}
        assert tuple(asr.acoustic_best(wl)) in best
    rng = np.random.default_rng(0)
    for _ in range(200):
        x = list(rng.choice(list("abc"), int(rng.integers(0, 6))))
        y = list(rng.choice(list("abc"), int(rng.integers(0, 6))))
        assert asr.word_errors(x, y) == _brute_edit(x, y)


def _brute_edit(x: list[str], y: list[str]) -> int:
    """Edit distance by plain recursion over every alignment (tiny inputs only)."""
    if not x or not y:
        return len(x) + len(y)
    return min(_brute_edit(x[1:], y) + 1, _brute_edit(x, y[1:]) + 1,
               _brute_edit(x[1:], y[1:]) + (x[0] != y[0]))


def test_insertion_word_is_frequent(confuser):
    a = asr.make_lattice(["we", "do", "not"], 2, confuser, np.random.default_rng(0),
                         p_insert=1.0, p_delete=0.0, p_span=0.0)
    st_ = structure(a)
    assert {w for _, _, w in st_["into_extra"]} <= set(confuser.frequent)
    assert not math.isnan(float(a.lattice.log_weights.sum()))
