"""The K best segmentations (`arsdecode.tasks.segment.best_segmentations`, issue 29): exact
against brute force over every path of small lattices, and in memory linear in the text.

Why the first test: `best_segmentations` asks for distinct *paths*, which are distinct word
sequences only because a segmentation lattice has one path per word sequence; that is checked
by enumeration, with words that share a surface ("its", "it's") and unknown substrings.
"""

from __future__ import annotations

import math
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maxarpa
from arsdecode.api import DEFAULT_LM
from arsdecode.tasks.segment import (
    SurfaceIndex,
    best_segmentations,
    normalize_text,
    segmentation_lattice,
    segmentation_words,
)
from arsdecode.testing.brute_dag import brute_dag_model
from arsdecode.testing.random_arpa import random_arpa_text

VOCAB = ["a", "an", "ant", "and", "the", "then", "hen", "he", "don't", "dont", "its", "it's",
         "it", "<s>", "</s>", "<unk>"]


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="antdhe'isx", max_size=12), st.integers(1, 4))
def test_a_segmentation_lattice_has_one_path_per_word_sequence(raw, unk_max):
    text = normalize_text(raw)
    if not text:
        return
    wl = segmentation_lattice(text, VOCAB, unknown_max_length=unk_max)
    sequences = [tuple(wl.path_words(arcs)) for arcs, _ in wl.paths()]
    assert len(sequences) == wl.num_paths() == len(set(sequences))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.integers(2, 4), st.integers(1, 12),
       st.text(alphabet="w0123", min_size=1, max_size=7), st.sampled_from([0.0, 0.7, 2.0]),
       st.integers(1, 6))
def test_best_segmentations_are_the_brute_force_top_k(tmp_path_factory, seed, order, vocab,
                                                      text, penalty, k):
    path = tmp_path_factory.mktemp("arpa") / "m.arpa"
    path.write_text(random_arpa_text(seed, order, vocab, 0.4, density=0.7))
    lm = maxarpa.load(path)
    wl = segmentation_lattice(text, SurfaceIndex.of_model(lm), unknown_penalty_per_char=penalty,
                              unknown_max_length=3)
    brute = brute_dag_model(lm, wl)
    best_cut: dict[tuple[str, ...], float] = {}
    for words, log_p in zip(brute.words, brute.log_p, strict=True):
        cut = tuple(segmentation_words(words, text))
        best_cut[cut] = max(best_cut.get(cut, -math.inf), log_p)
    expected = sorted(best_cut.values(), reverse=True)[:k]
    got = best_segmentations(lm, wl, text, k)
    assert len(got) == len(expected)
    assert len({tuple(words) for words, _ in got}) == len(got)
    for (words, log_p), want in zip(got, expected, strict=True):
        assert math.isclose(log_p, want, rel_tol=0, abs_tol=1e-9)
        assert math.isclose(best_cut[tuple(words)], log_p, rel_tol=0, abs_tol=1e-9)


def _kbest_peak(lm, index, text: str) -> int:
    wl = segmentation_lattice(text, index)
    tracemalloc.start()
    try:
        rows = best_segmentations(lm, wl, text, 3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(rows) == 3 and "".join(rows[0][0]) == text
    return peak


@pytest.mark.slow
def test_nbest_memory_grows_linearly_with_the_text(state_union_sentences):
    """4x the text, 4x the memory (tracemalloc counts allocations, not RSS: no flake on a
    loaded machine). Here 5.5 -> 22 MB; the word-prefix search it replaced grew 7.1x (34 ->
    246 MB), and past 3 GB on 20,000 characters."""
    text = normalize_text("".join(state_union_sentences[:400]))
    assert len(text) >= 6000
    lm = maxarpa.load(DEFAULT_LM)
    index = SurfaceIndex.of_model(lm)
    small, large = _kbest_peak(lm, index, text[:1500]), _kbest_peak(lm, index, text[:6000])
    assert large < 5.5 * small, (small, large)
