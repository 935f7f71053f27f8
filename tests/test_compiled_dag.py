"""The compiled Viterbi over a word lattice's merged expansion (`fast_full.run_dag`, issue 21)
against the numpy reference (`methods.expansion_dp`) and brute force: the same best ln p (1e-9),
the same state and transition counts, a returned path that is a real path with that score; with
LM weights and without `<s>` / `</s>`; many lattices in one call equal to one at a time."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maxarpa
from arpa_fixtures import arpa_texts
from arsdecode.methods import expansion_dp, fast_full
from arsdecode.model import NgramScoring
from arsdecode.model.weighted import WeightedLM
from arsdecode.testing.brute_dag import brute_dag_model, random_word_lattice

SCORINGS = [NgramScoring(), NgramScoring(0.6, True, True), NgramScoring(1.0, False, True),
            NgramScoring(2.0, True, False), NgramScoring(1.3, False, False)]


def path_score(lm, wl, arcs, scoring: NgramScoring) -> float:
    """ln score of a path from the model's scalar walk on the whole history."""
    words = wl.path_words(arcs)
    hist = ["<s>"] if scoring.sentence_start else []
    total = 0.0
    for w in [*words, *(["</s>"] if scoring.sentence_end else [])]:
        total += lm.log10p(w, hist)
        hist.append(w)
    node = int(wl.dst[arcs[-1]]) if arcs else 0
    return (scoring.lm_weight * math.log(10) * total + float(sum(wl.log_weights[a] for a in arcs))
            + wl.finals[node])


@pytest.mark.parametrize("scoring", SCORINGS, ids=str)
def test_compiled_dag_viterbi_equals_the_reference(random_lms, scoring):
    for model in random_lms:
        rng = random.Random(31)
        lats = [random_word_lattice(rng, model.words) for _ in range(8)]
        target = WeightedLM(model.lm, lm_weight=scoring.lm_weight,
                            sentence_start=scoring.sentence_start,
                            sentence_end=scoring.sentence_end)
        many = fast_full.run_dag(model.lm, lats, scoring=scoring)
        for wl, got in zip(lats, many, strict=True):
            try:
                want = expansion_dp.dag_decode(target, wl)
            except Exception:  # NoPathError: every path has probability zero
                assert got.log_p == -math.inf
                continue
            assert abs(got.log_p - want.log_p) <= 1e-9 * (1 + abs(want.log_p))
            assert (got.states, got.transitions) == (want.states, want.transitions)
            assert abs(path_score(model.lm, wl, got.arcs, scoring) - got.log_p) <= 1e-9 * (
                1 + abs(got.log_p))
            [one] = fast_full.run_dag(model.lm, [wl], scoring=scoring)
            assert one == got


def test_compiled_dag_equals_brute_force_on_real_models(real_lms):
    for order, model in real_lms.items():
        rng = random.Random(order)
        for _ in range(5):
            wl = random_word_lattice(rng, model.words)
            [got] = fast_full.run_dag(model.lm, [wl])
            brute = brute_dag_model(model.lm, wl)
            if brute.best_log_p == -math.inf:
                assert got.log_p == -math.inf
                continue
            assert abs(got.log_p - brute.best_log_p) <= 1e-9 * (1 + abs(brute.best_log_p))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arpa=arpa_texts(min_order=1, max_order=4, max_vocab=4), seed=st.integers(0, 10**6))
def test_property_compiled_dag_on_random_models(tmp_path_factory, arpa, seed):
    text, _ = arpa
    path = tmp_path_factory.mktemp("cdag") / "m.arpa"
    path.write_text(text)
    lm = maxarpa.load(path)
    words = [w for w in lm.vocab if w not in ("<s>", "</s>")]
    if not words:
        return
    wl = random_word_lattice(random.Random(seed), words)
    [got] = fast_full.run_dag(lm, [wl])
    brute = brute_dag_model(lm, wl)
    if brute.best_log_p == -math.inf:
        assert got.log_p == -math.inf
        return
    assert abs(got.log_p - brute.best_log_p) <= 1e-9 * (1 + abs(brute.best_log_p))
    assert np.isclose(path_score(lm, wl, got.arcs, NgramScoring()), got.log_p, rtol=0,
                      atol=1e-9 * (1 + abs(got.log_p)))


CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "arpa"
REAL_FILES = sorted(p for s in ("set1", "set2") for p in (CORPUS / s).glob("*")
                    if p.suffix != ".md")


@pytest.mark.skipif(not REAL_FILES, reason=f"no ARPA corpus at {CORPUS}")
def test_word_lattices_on_the_real_arpa_files():
    """Every real ARPA file maxarpa reads (with <s> and </s>): on random DAGs over its words,
    the compiled expansion, the numpy reference and ARS on DAGs give brute force's best ln p
    (each path scored by the model's scalar walk), and ARS certifies."""
    from arsdecode.errors import ArsDecodeError
    from arsdecode.methods.ars import dag_ars_decode
    from maxarpa.errors import MaxArpaError

    ran = 0
    for path in REAL_FILES:
        try:
            lm = maxarpa.load(path)
        except (MaxArpaError, ArsDecodeError, OSError):
            continue  # the broken files of the corpus (its README lists them)
        if lm.bos_id is None or lm.eos_id is None:
            continue
        words = [w for w in lm.vocab if w not in ("<s>", "</s>")][:40]
        if not words:
            continue
        rng = random.Random(path.name)
        for _ in range(2):
            wl = random_word_lattice(rng, words, max_nodes=5, max_paths=60)
            brute = brute_dag_model(lm, wl)
            [got] = fast_full.run_dag(lm, [wl])
            if brute.best_log_p == -math.inf:
                assert got.log_p == -math.inf, path.name
                continue
            tol = 1e-9 * (1 + abs(brute.best_log_p))
            assert abs(got.log_p - brute.best_log_p) <= tol, path.name
            assert abs(expansion_dp.dag_decode(lm, wl).log_p - brute.best_log_p) <= tol, path.name
            ars = dag_ars_decode(lm, wl)
            assert ars.certified and abs(ars.log_p - brute.best_log_p) <= tol, path.name
            ran += 1
    assert ran >= 40
