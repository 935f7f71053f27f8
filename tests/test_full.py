"""The full-model reference (arsdecode/methods/full.py) against brute-force enumeration.

Every path of many small random lattices is scored independently (arsdecode.testing.brute), by KenLM
(float32, so ~1e-4 agreement) and by scalar `Model.log10p` calls (float64, 1e-9 agreement), on
lmplz-trained models and on random models with positive backoffs, missing prefix contexts and
-inf probabilities. Sampling is checked with a chi-square test at a fixed seed.
"""

from __future__ import annotations

import math
import random
import zlib

import numpy as np
import pytest

import ars_fixtures
import maxarpa
from ars_fixtures import make_lattice, random_lm_with_options
from arsdecode.lattice import Lattice
from arsdecode.methods.full import (
    NoPathError,
    full_decode,
    full_log_partition,
    full_sample,
    full_state_count,
)
from arsdecode.testing.brute import brute_kenlm, brute_model, chi_square_pvalue
from maxarpa.constants import BOS
from maxarpa.maxarpa_format import write_max_arpa

TIGHT = 1e-9
KENLM_TOL = 1e-4  # KenLM keeps float32 probabilities


def check_against_brute(model, lattice: Lattice, *, kenlm_too: bool = True) -> None:
    ref = brute_model(model.lm, lattice)
    where = (model.name, lattice.to_json_obj())
    if ref.best_log_p == -math.inf:
        with pytest.raises(NoPathError):
            full_decode(model.lm, lattice)
        assert full_log_partition(model.lm, lattice) == -math.inf
        return
    for minimize in (True, False):
        r = full_decode(model.lm, lattice, minimize=minimize)
        assert abs(r.log_p - ref.best_log_p) <= TIGHT, (where, minimize, r, ref.best_log_p)
        assert tuple(r.tokens) in ref.near_best(TIGHT), (where, minimize, r.tokens, ref.best)
        assert abs(ref.score(r.tokens) - r.log_p) <= TIGHT, where
        lz = full_log_partition(model.lm, lattice, minimize=minimize)
        assert abs(lz - ref.log_Z) <= TIGHT, (where, minimize, lz, ref.log_Z)
    if kenlm_too and model.km is not None:
        kref = brute_kenlm(model.km, lattice)
        assert abs(r.log_p - kref.best_log_p) <= KENLM_TOL, (where, r.log_p, kref.best_log_p)
        assert abs(lz - kref.log_Z) <= KENLM_TOL, (where, lz, kref.log_Z)
        # Same optimum as KenLM's, unless KenLM's float32 scores make it a near-tie.
        assert kref.score(r.tokens) >= kref.best_log_p - KENLM_TOL, (where, r.tokens, kref.best)


@pytest.mark.parametrize("order", [3, 4, 5])
def test_full_matches_brute_force_on_real_models(real_lms, order):
    model = real_lms[order]
    rng = random.Random(1000 + order)
    for _ in range(25 if order < 5 else 12):
        lattice = make_lattice(rng, model, extra_words=["zzunseen"])
        check_against_brute(model, lattice)


def test_full_matches_brute_force_on_random_positive_backoff_models(random_lms):
    rng = random.Random(7)
    for model in random_lms:
        assert model.km is not None, model.name
        for _ in range(12):
            check_against_brute(model, make_lattice(rng, model))


@pytest.mark.parametrize("seed", range(12))
def test_full_matches_brute_force_on_odd_models(tmp_path, seed):
    """Missing prefix contexts (IRSTLM style), -inf probabilities, unigram models."""
    rng = random.Random(seed)
    opts = dict(drop_prefix_contexts=seed % 2 == 0, density=0.9, neg_inf_fraction=0.1 * (seed % 3))
    if seed % 4 == 3:
        opts["order"] = 1
    model = random_lm_with_options(tmp_path, 500 + seed, **opts)
    for _ in range(10):
        lattice = make_lattice(rng, model, max_width=3, extra_words=["unseen"])
        check_against_brute(model, lattice, kenlm_too=False)


def test_minimized_states_match_literal_contexts(real_lms, random_lms):
    """full_state_count equals the distinct (n-1)-token contexts over all path prefixes."""
    rng = random.Random(3)
    for model in [real_lms[3], real_lms[4], *random_lms]:
        for _ in range(6):
            lattice = make_lattice(rng, model, extra_words=["zzunseen"])
            n1 = model.lm.order - 1
            seen: set[tuple[int, ...]] = set()
            layers = [[(BOS,)]]
            for i, toks in enumerate(lattice.tokens):
                ok = [t for t, e in zip(toks, lattice.log_emissions[i], strict=True) if e > -np.inf]
                layers.append([h + (t,) for h in layers[-1] for t in ok])
            for i, layer in enumerate(layers):
                for h in layer:
                    seen.add((i, *model.lm.ids(list(h[-n1:]) if n1 else [])))
            count = full_state_count(model.lm, lattice)
            assert count == len(seen), (model.name, lattice.to_json_obj())
            literal = full_decode(model.lm, lattice, minimize=False)
            merged = full_decode(model.lm, lattice)
            assert literal.dp_states == count == literal.states == merged.states
            assert merged.dp_states <= count
            assert merged.dp_states == full_state_count(model.lm, lattice, minimized=True)


def _spread_lattice(rng: random.Random, model, min_paths: int = 12) -> Lattice:
    while True:
        lat = make_lattice(rng, model, max_len=4, neg_inf=0.5)
        dist = brute_model(model.lm, lat).distribution()
        if lat.num_paths() >= min_paths and max(dist.values()) < 0.8:
            return lat


@pytest.mark.parametrize("which", ["real3", "real4", "rand0", "rand3", "rand5"])
def test_full_sample_chi_square(real_lms, random_lms, which):
    model = real_lms[int(which[-1])] if which.startswith("real") else random_lms[int(which[-1])]
    lattice = _spread_lattice(random.Random(zlib.crc32(which.encode())), model)
    dist = brute_model(model.lm, lattice).distribution()
    samples = full_sample(model.lm, lattice, 10_000, np.random.default_rng(2024))
    assert len(samples) == 10_000
    pvalue = chi_square_pvalue(samples, dist)
    assert pvalue > 0.001, (model.name, lattice.to_json_obj(), pvalue)
    literal = full_sample(model.lm, lattice, 10_000, np.random.default_rng(2025), minimize=False)
    assert chi_square_pvalue(literal, dist) > 0.001


def test_full_sample_is_reproducible_and_never_draws_impossible_paths(random_lms):
    model = random_lms[2]
    lattice = Lattice.from_lists(
        [[(model.words[0], 0.0), (model.words[1], -math.inf)], [(w, -1.0) for w in model.words[:3]]]
    )
    a = full_sample(model.lm, lattice, 500, np.random.default_rng(5))
    b = full_sample(model.lm, lattice, 500, np.random.default_rng(5))
    assert a == b
    assert all(s[0] == model.words[0] for s in a)
    assert full_sample(model.lm, lattice, 0, np.random.default_rng(5)) == []


def test_max_arpa_model_gives_identical_results(real_lms, tmp_path):
    model = real_lms[4]
    out = tmp_path / "m.maxarpa"
    write_max_arpa(model.lm, out)
    back = maxarpa.load(out)
    rng = random.Random(9)
    for _ in range(10):
        lattice = make_lattice(rng, model)
        a, b = full_decode(model.lm, lattice), full_decode(back, lattice)
        assert a.tokens == b.tokens and a.log_p == b.log_p and a.dp_states == b.dp_states
        assert full_log_partition(model.lm, lattice) == full_log_partition(back, lattice)


def test_large_lattice_is_tractable(real_lms):
    """n = 5, 10 positions x 100 candidates: literal states are astronomical, merged are not."""
    model = real_lms[5]
    rng = random.Random(4)
    sent = next(s for s in model.sentences if len(s) >= 10)[:10]
    positions = []
    for w in sent:
        toks = [w] + [t for t in rng.sample(model.words, 100) if t != w][:99]
        positions.append([(t, -rng.random()) for t in toks])
    lattice = Lattice.from_lists(positions)
    r = full_decode(model.lm, lattice)
    assert r.states == 1 + sum(100 ** min(i, 4) for i in range(1, 11))
    assert r.dp_states < 10**6
    assert math.isfinite(full_log_partition(model.lm, lattice)) and r.log_p < 0


def test_all_paths_impossible(tmp_path):
    path = tmp_path / "impossible.arpa"
    path.write_text(ars_fixtures.IMPOSSIBLE_ARPA)
    lm = maxarpa.load(path)
    lattice = Lattice.from_lists([[("a", 0.0)], [("a", -1.0), ("zz", -2.0)]])
    with pytest.raises(NoPathError):
        full_decode(lm, lattice)
    with pytest.raises(NoPathError):
        full_sample(lm, lattice, 3, np.random.default_rng(0))
    assert full_log_partition(lm, lattice) == -math.inf
    # An impossible first word does not block a possible one.
    ok = Lattice.from_lists([[("a", 0.0), ("zz", -2.0)], [("a", -1.0)]])
    assert full_decode(lm, ok).tokens == ["zz", "a"]
    assert full_sample(lm, ok, 20, np.random.default_rng(0)) == [["zz", "a"]] * 20


def test_the_layout_is_the_confusion_networks_word_lattice(random_lms):
    """`ConfusionLayout` builds `WordLattice.from_confusion(lattice)` directly (no per-arc
    re-check) and maps every arc back to its (position, candidate)."""
    from arsdecode.lattice import WordLattice
    from arsdecode.methods.full import ConfusionLayout

    rng = random.Random(41)
    checked = 0
    for model in random_lms:
        for _ in range(8):
            lat = make_lattice(rng, model, max_len=5, neg_inf=0.3)
            try:
                lay = ConfusionLayout.of(lat)
            except NoPathError:  # a position without a finite candidate: no path at all
                assert any(not np.isfinite(e).any() for e in lat.log_emissions)
                assert full_log_partition(model.lm, lat) == -math.inf
                continue
            checked += 1
            ref = WordLattice.from_confusion(lat)
            got = lay.wl
            assert (got.n_nodes, dict(got.finals), got.words, got.node_names, got.source) == (
                ref.n_nodes, dict(ref.finals), ref.words, ref.node_names, ref.source)
            for a, b in ((got.src, ref.src), (got.dst, ref.dst),
                         (got.log_weights, ref.log_weights)):
                assert a.dtype == b.dtype and np.array_equal(a, b)
            for arc in range(got.n_arcs):
                i, j = int(lay.pos[arc]), int(lay.cand[arc])
                assert got.src[arc] == i and got.words[arc] == lat.tokens[i][j]
                assert got.log_weights[arc] == lat.log_emissions[i][j]
    assert checked >= 20


def test_the_reference_runs_no_q_automaton_code():
    """The full model is what ARS is checked against: nothing it imports at run time (its
    whole import closure) may be the q-automaton or ARS."""
    from scripts.import_graph import import_graph

    graph = import_graph()
    seen, todo = set(), ["arsdecode.methods.full"]
    while todo:
        mod = todo.pop()
        if mod not in seen:
            seen.add(mod)
            todo.extend(graph.get(mod, ()))
    assert "arsdecode.methods.expansion_dp" in seen  # the closure is really followed
    forbidden = {"arsdecode.core.automaton", "arsdecode.core.dag_automaton",
                 "arsdecode.methods.ars", "arsdecode.methods.dag_ars",
                 "arsdecode.methods.ars_loop", "arsdecode.core.viterbi", "arsdecode.core.dp"}
    assert not seen & forbidden, sorted(seen & forbidden)
