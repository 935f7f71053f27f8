"""One ARS adapter for both lattice kinds (issue 30): `ars.decode` and `ars.sample` take a
confusion network or a word lattice, through the one `ars.LatticePaths`, and each answer is
checked against brute force on that lattice. A confusion network and the word lattice it is
(`WordLattice.from_confusion`) give the same optimum; an option that does not apply to the
lattice kind is an OptionError naming it, before any work.
"""

from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest

from ars_fixtures import make_lattice
from arsdecode.errors import NoPathError, OptionError
from arsdecode.lattice import WordLattice
from arsdecode.methods.ars import LatticePaths, decode, sample
from arsdecode.methods.results import DagArsResult, DagArsSampleResult, DecodeResult
from arsdecode.testing.brute import brute_model
from arsdecode.testing.brute_dag import brute_dag_model, random_word_lattice

TIGHT = 1e-9


def test_a_network_and_its_word_lattice_have_the_one_decoder_and_the_same_optimum(random_lms):
    """Both kinds through one `decode`: each certified at brute force's best ln p; the word
    lattice's path is the network's (the arcs spell the tokens), with the same field names."""
    checked = 0
    for m, model in enumerate(random_lms):
        rng = random.Random(4100 + m)
        for _ in range(6):
            cn = make_lattice(rng, model, neg_inf=0.0)
            wl = WordLattice.from_confusion(cn)
            ref = brute_model(model.lm, cn)
            if ref.best_log_p == -math.inf:
                for lat in (cn, wl):
                    with pytest.raises(NoPathError):
                        decode(model.lm, lat)
                continue
            a, b = decode(model.lm, cn), decode(model.lm, wl)
            assert type(a) is DecodeResult and isinstance(b, DagArsResult)
            assert {f.name for f in dataclasses.fields(a)} == {
                f.name for f in dataclasses.fields(b)}
            for r in (a, b):
                assert r.certified and abs(r.log_p - ref.best_log_p) <= TIGHT, (model.name, r)
            assert tuple(a.tokens) in ref.near_best(TIGHT)
            assert tuple(b.tokens) in ref.near_best(TIGHT)
            assert b.tokens == wl.path_words(b.arcs)
            checked += 1
    assert checked >= 10


def test_the_paper_variant_on_a_word_lattice_is_exact(random_lms):
    """Algorithm 2's "paper" variant (lower only the edge on the path) now reaches word
    lattices through the one adapter: still the certified best of brute force."""
    for m, model in enumerate(random_lms[:3]):
        rng = random.Random(4200 + m)
        for _ in range(5):
            wl = random_word_lattice(rng, model.words)
            ref = brute_dag_model(model.lm, wl)
            if ref.best_log_p == -math.inf:
                continue
            r = decode(model.lm, wl, variant="paper")
            assert r.certified and abs(r.log_p - ref.best_log_p) <= TIGHT, (model.name, r)
            assert r.arcs in ref.near_best(TIGHT)


def test_word_lattice_samples_are_scored_as_brute_force_scores_them(random_lms):
    model = random_lms[1]
    wl = random_word_lattice(random.Random(4300), model.words)
    ref = brute_dag_model(model.lm, wl)
    if ref.best_log_p == -math.inf:
        pytest.skip("no path")
    r = sample(model.lm, wl, 40, np.random.default_rng(2))
    assert isinstance(r, DagArsSampleResult) and len(r.samples) == 40
    for s in r.samples:
        assert abs(ref.score(s.arcs) - s.log_p) <= TIGHT and s.tokens == wl.path_words(s.arcs)


def test_an_option_of_the_other_kind_is_refused_by_name(random_lms):
    model = random_lms[2]
    cn = make_lattice(random.Random(4400), model, neg_inf=0.0)
    wl = WordLattice.from_confusion(cn)
    with pytest.raises(OptionError, match="prune"):
        decode(model.lm, wl, prune=True)
    for bad in ({"depth": 2}, {"depth": None}):
        with pytest.raises(OptionError, match="depth"):
            decode(model.lm, cn, **bad)
        with pytest.raises(OptionError, match="depth"):
            sample(model.lm, cn, 3, 0, **bad)
    for bad_depth in (0, 1.5, True):
        with pytest.raises(OptionError, match="depth"):
            decode(model.lm, wl, depth=bad_depth)


def test_one_adapter_class_serves_both_layouts(random_lms):
    """The automaton of each kind is adapted by the same class; only `layered` differs."""
    from arsdecode.core.automaton import QAutomaton
    from arsdecode.model import as_target_model

    model = random_lms[0]
    cn = make_lattice(random.Random(4500), model, neg_inf=0.0)
    target = as_target_model(model.lm)
    a = LatticePaths(target, QAutomaton(target, cn))
    b = LatticePaths(target, QAutomaton(target, WordLattice.from_confusion(cn)))
    assert a.layered and not b.layered
    # q^(0) bounds the same optimum from above on both layouts
    best = brute_model(model.lm, cn).best_log_p
    assert a.argmax()[1] >= best - TIGHT and b.argmax()[1] >= best - TIGHT
