"""The exact lattice expansion on word lattices (arsdecode.methods.expansion_dp) against brute
force.

Every path of small random DAGs (arsdecode.testing.brute_dag.random_word_lattice: epsilon arcs
and chains, parallel arcs with the same word, several weighted finals, a final node with
outgoing arcs, unreachable and dead parts, -inf arcs) is scored on its own by scalar
`Model.log10p` calls (float64, 1e-9) and by KenLM (float32, 1e-4), on random ARPA models with
positive backoffs and on lmplz-trained ones: best path, ln Z, arc posteriors (chunked and
stored), k-best by path
and by distinct word sequence, and a chi-square test of the sampler at a fixed seed. The
confusion-network special case (`methods.full`'s entry points, which run this expansion on the
layout) maps back to its positions and candidates; the dense and sparse layouts of the sweep
agree; a `WeightedLM` is checked
against its own scalar formula; hypothesis draws random ARPA texts.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maxarpa
from arpa_fixtures import arpa_texts
from ars_fixtures import IMPOSSIBLE_ARPA, make_lattice
from arsdecode.errors import NoPathError, OptionError
from arsdecode.lattice import WordLattice
from arsdecode.methods.expansion_dp import (
    DagPath,
    StatesBudgetExceeded,
    dag_decode,
    dag_log_partition,
    dag_sample,
)
from arsdecode.methods.expansion_kbest import dag_kbest
from arsdecode.methods.expansion_posteriors import dag_posteriors, stored_posteriors
from arsdecode.methods.full import full_decode, full_kbest, full_log_partition, full_marginals
from arsdecode.model import WeightedLM
from arsdecode.testing.brute import chi_square_pvalue
from arsdecode.testing.brute_dag import (
    BruteDagResult,
    brute_dag,
    brute_dag_kenlm,
    brute_dag_model,
    random_word_lattice,
)
from maxarpa.constants import LN10

TIGHT = 1e-9
KENLM_TOL = 1e-4


# ----- checks ----------------------------------------------------------------------------------
def check_paths(ref: BruteDagResult, got: list[DagPath], k: int, where, tol: float = TIGHT
                ) -> None:
    """`got` is the top k of `ref` by path: scores, distinctness, order, no better path left."""
    wl = ref.lattice
    top = ref.top_paths(k)
    assert len(got) == len(top), where
    assert len({p.arcs for p in got}) == len(got), where
    for p, (lp, _) in zip(got, top, strict=True):
        assert p.words == wl.path_words(p.arcs), where
        assert abs(ref.score(p.arcs) - p.log_p) <= tol, (where, p)
        assert abs(p.log_p - lp) <= tol, (where, p, top)
    # the tie rule: by ln p as summed, then arc indices
    assert [(-p.log_p, p.arcs) for p in got] == sorted((-p.log_p, p.arcs) for p in got), where
    chosen = {p.arcs for p in got}
    for arcs, lp in zip(ref.paths, ref.log_p, strict=True):
        if arcs not in chosen and lp > -math.inf:
            assert len(got) == k and lp <= got[-1].log_p + tol, (where, arcs, lp)


def check_unique(ref: BruteDagResult, got: list[DagPath], k: int, where, tol: float = TIGHT
                 ) -> None:
    """`got` is the top k distinct word sequences of `ref`, each shown with a best path."""
    wl = ref.lattice
    scores = ref.unique_scores()
    top = ref.top_unique(k)
    assert len(got) == len(top), where
    assert len({tuple(p.words) for p in got}) == len(got), where
    for p, (lp, _) in zip(got, top, strict=True):
        assert p.words == wl.path_words(p.arcs), where
        assert abs(ref.score(p.arcs) - p.log_p) <= tol, (where, p)  # a path of these words...
        assert abs(scores[tuple(p.words)] - p.log_p) <= tol, (where, p)  # ...and their best
        assert abs(p.log_p - lp) <= tol, (where, p, top)
    for a, b in zip(got, got[1:]):
        assert a.log_p >= b.log_p - 1e-12, where
    chosen = {tuple(p.words) for p in got}
    for words, lp in scores.items():
        if words not in chosen:
            assert len(got) == k and lp <= got[-1].log_p + tol, (where, words, lp)


def check_against_brute(lm, wl: WordLattice, ref: BruteDagResult, where,
                        tol: float = TIGHT) -> None:
    """Every method on `wl` against the brute-force `ref` (each path scored on its own)."""
    if ref.best_log_p == -math.inf:
        for call in (lambda: dag_decode(lm, wl), lambda: dag_posteriors(lm, wl),
                     lambda: stored_posteriors(lm, wl),
                     lambda: dag_kbest(lm, wl, 2), lambda: dag_kbest(lm, wl, 2, unique=True),
                     lambda: dag_sample(lm, wl, 3, 0)):
            with pytest.raises(NoPathError):
                call()
        assert dag_log_partition(lm, wl) == -math.inf
        return
    for minimize in (True, False):
        r = dag_decode(lm, wl, minimize=minimize)
        assert r.certified and r.method == "full"
        assert abs(r.log_p - ref.best_log_p) <= tol, (where, minimize, r, ref.best_log_p)
        assert r.arcs in ref.near_best(tol), (where, r)
        assert r.words == wl.path_words(r.arcs)
        assert abs(ref.score(r.arcs) - r.log_p) <= tol, where
        lz = dag_log_partition(lm, wl, minimize=minimize)
        assert abs(lz - ref.log_Z) <= tol, (where, minimize, lz, ref.log_Z)
    for posteriors in (dag_posteriors, stored_posteriors):  # chunked; stored, alpha reversed
        post, lz = posteriors(lm, wl)
        assert abs(lz - ref.log_Z) <= tol, where
        assert post.shape == (wl.n_arcs,)
        assert np.allclose(post, ref.arc_posteriors(), rtol=0,
                           atol=tol if tol < 1e-6 else 1e-4), (where, post, ref.arc_posteriors())
    n_paths = wl.num_paths()
    for k in (1, 3, n_paths + 2):
        check_paths(ref, dag_kbest(lm, wl, k), k, (where, k), tol)
        check_unique(ref, dag_kbest(lm, wl, k, unique=True), k, (where, "unique", k), tol)


def where_of(model, wl: WordLattice) -> tuple:
    return (model.name, wl.to_json_obj(), wl.finals)


# ----- random models, random DAGs --------------------------------------------------------------
def test_random_dags_on_random_positive_backoff_models(random_lms):
    rng = random.Random(2100)
    for model in random_lms:
        assert model.lm.positive_backoffs > 0
        for _ in range(10):
            wl = random_word_lattice(rng, model.words)
            ref = brute_dag_model(model.lm, wl)
            check_against_brute(model.lm, wl, ref, where_of(model, wl))
            if model.km is not None:
                kref = brute_dag_kenlm(model.km, wl)
                assert abs(dag_decode(model.lm, wl).log_p - kref.best_log_p) <= KENLM_TOL
                assert abs(dag_log_partition(model.lm, wl) - kref.log_Z) <= KENLM_TOL


def test_the_generator_makes_the_hard_cases(random_lms):
    """The DAGs above do have epsilon arcs, parallel same-word arcs, several finals, a final
    with outgoing arcs, and word sequences carried by several paths."""
    rng = random.Random(2100)
    seen = dict.fromkeys(("eps", "parallel", "finals", "final_out", "shared_words"), False)
    for model in random_lms:
        for _ in range(10):
            wl = random_word_lattice(rng, model.words)
            arcs = list(zip(wl.src.tolist(), wl.dst.tolist(), wl.words, strict=True))
            seen["eps"] |= any(w is None for w in wl.words)
            seen["parallel"] |= len(set(arcs)) < len(arcs)
            seen["finals"] |= len(wl.finals) > 1
            seen["final_out"] |= any(len(wl.arcs_from(f)) for f in wl.finals)
            words = [tuple(wl.path_words(p)) for p, _ in wl.paths()]
            seen["shared_words"] |= len(set(words)) < len(words)
    assert all(seen.values()), seen


@pytest.mark.parametrize("order", [3, 5])
def test_random_dags_on_real_models_against_kenlm(real_lms, order):
    model = real_lms[order]
    rng = random.Random(2200 + order)
    for _ in range(10):
        sent = rng.choice([s for s in model.sentences if len(s) >= 6])
        pool = sent[:6] + rng.sample(model.words, 3) + ["zzunseen"]
        wl = random_word_lattice(rng, pool, max_nodes=8, epsilon=0.15)
        where = where_of(model, wl)
        check_against_brute(model.lm, wl, brute_dag_model(model.lm, wl), where)
        kref = brute_dag_kenlm(model.km, wl)
        r = dag_decode(model.lm, wl)
        assert abs(r.log_p - kref.best_log_p) <= KENLM_TOL, where
        assert kref.score(r.arcs) >= kref.best_log_p - KENLM_TOL, where
        assert abs(dag_log_partition(model.lm, wl) - kref.log_Z) <= KENLM_TOL, where
        post, _ = dag_posteriors(model.lm, wl)
        assert np.allclose(post, kref.arc_posteriors(), rtol=0, atol=KENLM_TOL), where
        check_paths(kref, dag_kbest(model.lm, wl, 4), 4, where, KENLM_TOL)
        check_unique(kref, dag_kbest(model.lm, wl, 4, unique=True), 4, where, KENLM_TOL)


def test_zero_probability_paths(tmp_path):
    """p(a | <s>) = 0: paths starting with `a` are never returned; all of them: NoPathError."""
    path = tmp_path / "imp.arpa"
    path.write_text(IMPOSSIBLE_ARPA)
    lm = maxarpa.load(path)
    some = WordLattice.build(3, 0, {2: 0.0, 1: -1.0}, [
        (0, 1, "a", 0.0), (0, 1, None, -0.5), (1, 2, "a", -0.1), (0, 2, "zz", -2.0)])
    ref = brute_dag_model(lm, some)
    assert any(lp == -math.inf for lp in ref.log_p) and ref.best_log_p > -math.inf
    check_against_brute(lm, some, ref, "some")
    assert all(p.words[:1] != ["a"] for p in dag_kbest(lm, some, 50))
    assert all(p.words[:1] != ["a"] for p in dag_sample(lm, some, 200, 1))
    none = WordLattice.build(3, 0, {2: 0.0}, [(0, 1, "a", 0.0), (1, 2, None, 0.0),
                                              (0, 1, None, 0.0), (1, 2, "a", 0.0)])
    check_against_brute(lm, none, brute_dag_model(lm, none), "none")
    # node 1 is reached only through `a`: the expansion has no state there
    cut = WordLattice.build(4, 0, {3: 0.0}, [(0, 1, "a", 0.0), (1, 2, "zz", 0.0),
                                             (0, 2, "zz", -1.0), (2, 3, None, 0.0)])
    check_against_brute(lm, cut, brute_dag_model(lm, cut), "cut")
    dead = WordLattice.build(3, 0, {2: 0.0}, [(0, 1, "a", 0.0), (1, 2, "zz", 0.0)])
    check_against_brute(lm, dead, brute_dag_model(lm, dead), "dead")


# ----- ties, options, budget -------------------------------------------------------------------
def test_ties_are_broken_lexicographically_by_arc_indices(random_lms):
    lm = random_lms[1].lm
    a, b = random_lms[1].words[:2]
    # arcs 0 and 1 are parallel with one word and weight; node 1 is final and so is node 2,
    # reached by an epsilon of weight 0 with the same final weight: exact ties everywhere
    wl = WordLattice.build(3, 0, {1: -0.5, 2: -0.5}, [
        (0, 1, a, -1.0), (0, 1, a, -1.0), (1, 2, None, 0.0), (0, 2, b, -50.0)])
    best = dag_decode(lm, wl)
    assert best.arcs == (0,)  # stopping at node 1 comes before the epsilon: a prefix first
    top = dag_kbest(lm, wl, 10)
    assert [wl.words[i] for i in range(4)] == [a, a, b, None]  # canonical: sorted by source
    assert [p.arcs for p in top] == [(0,), (0, 3), (1,), (1, 3), (2,)]
    assert len({p.log_p for p in top[:4]}) == 1
    uniq = dag_kbest(lm, wl, 10, unique=True)
    assert [(p.words, p.arcs) for p in uniq] == [([a], (0,)), ([b], (2,))]


def test_options_and_budget(random_lms):
    model = random_lms[0]
    wl = random_word_lattice(random.Random(5), model.words)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(OptionError):
            dag_kbest(model.lm, wl, bad)
        with pytest.raises(OptionError):
            dag_sample(model.lm, wl, bad, 0)
    r = dag_decode(model.lm, wl)
    assert r.states >= 2
    with pytest.raises(StatesBudgetExceeded):
        dag_decode(model.lm, wl, max_states=r.states - 1)
    assert dag_decode(model.lm, wl, max_states=r.states).log_p == r.log_p
    assert r.to_json()["words"] == r.words


def test_start_node_final_and_empty_path(random_lms):
    """A path with no arc at all (the start node is final) scores ln p(</s> | <s>) + final."""
    model = random_lms[2]
    w = model.words[0]
    wl = WordLattice.build(2, 0, {0: -0.3, 1: 0.0}, [(0, 1, w, -1.0), (0, 1, None, -2.0)])
    ref = brute_dag_model(model.lm, wl)
    assert () in ref.paths
    check_against_brute(model.lm, wl, ref, "empty")
    assert any(p.arcs == () and p.words == [] for p in dag_kbest(model.lm, wl, 5))


# ----- sampling --------------------------------------------------------------------------------
def _spread_dag(rng: random.Random, model) -> tuple[WordLattice, BruteDagResult]:
    while True:
        wl = random_word_lattice(rng, model.words, max_nodes=6, neg_inf=0.0)
        ref = brute_dag_model(model.lm, wl)
        dist = ref.distribution()
        if len(dist) >= 8 and max(dist.values()) < 0.7:
            return wl, ref


@pytest.mark.parametrize("which", [0, 3, 5, 7])
def test_sample_chi_square(random_lms, which):
    model = random_lms[which]
    wl, ref = _spread_dag(random.Random(2300 + which), model)
    samples = dag_sample(model.lm, wl, 10_000, 2024)
    assert len(samples) == 10_000
    for p in samples[:200]:
        assert p.words == wl.path_words(p.arcs)
        assert abs(p.log_p - ref.score(p.arcs)) <= TIGHT
    pvalue = chi_square_pvalue([p.arcs for p in samples], ref.distribution())
    assert pvalue > 0.001, (model.name, wl.to_json_obj(), pvalue)
    again = dag_sample(model.lm, wl, 10_000, 2024)
    assert [p.arcs for p in again] == [p.arcs for p in samples]
    literal = dag_sample(model.lm, wl, 10_000, np.random.default_rng(7), minimize=False)
    assert chi_square_pvalue([p.arcs for p in literal], ref.distribution()) > 0.001


# ----- the confusion network is a special case -------------------------------------------------
@pytest.mark.parametrize("source", ["random", "real"])
def test_confusion_network_equals_full(random_lms, real_lms, source):
    models = random_lms if source == "random" else [real_lms[3], real_lms[5]]
    rng = random.Random(2400)
    for model in models:
        for _ in range(6):
            lat = make_lattice(rng, model, max_len=5, max_width=4)
            wl = WordLattice.from_confusion(lat)
            try:
                full = full_decode(model.lm, lat)
            except NoPathError:
                with pytest.raises(NoPathError):
                    dag_decode(model.lm, wl)
                continue
            dag = dag_decode(model.lm, wl)
            where = (model.name, lat.to_json_obj())
            assert abs(dag.log_p - full.log_p) <= TIGHT, where
            assert dag.states == full.dp_states, where  # the same merged states
            assert abs(dag_log_partition(model.lm, wl) - full_log_partition(model.lm, lat)
                       ) <= TIGHT, where
            fk = full_kbest(model.lm, lat, 6).paths
            dk = dag_kbest(model.lm, wl, 6)
            assert len(fk) == len(dk)
            for f, d in zip(fk, dk, strict=True):
                assert abs(f.log_p - d.log_p) <= TIGHT, where
            # the arc of (position i, candidate j) is the j-th finite candidate leaving node i
            cand = [j for i, emis in enumerate(lat.log_emissions)
                    for j, e in enumerate(emis.tolist()) if e > -math.inf]
            assert [d.words for d in dk] == [[lat.tokens[i][cand[a]] for i, a in enumerate(
                d.arcs)] for d in dk]
            marg, lz = full_marginals(model.lm, lat)
            post, lz2 = dag_posteriors(model.lm, wl)
            assert abs(lz - lz2) <= TIGHT
            for a in range(wl.n_arcs):
                i = int(wl.src[a])
                assert abs(marg[i][cand[a]] - post[a]) <= TIGHT, where


# ----- WeightedLM ------------------------------------------------------------------------------
@pytest.mark.parametrize("weight,start,end", [(0.6, True, True), (1.7, False, True),
                                              (1.0, True, False), (0.8, False, False)])
def test_weighted_lm(random_lms, weight, start, end):
    rng = random.Random(2500)
    for model in random_lms[::2]:
        lm = WeightedLM(model.lm, lm_weight=weight, sentence_start=start, sentence_end=end)

        def words_log(words, m=model.lm):
            hist = ["<s>"] if start else []
            total = 0.0
            for w in [*words, *(["</s>"] if end else [])]:
                total += m.log10p(w, hist)
                hist.append(w)
            return weight * LN10 * total

        for _ in range(5):
            wl = random_word_lattice(rng, model.words)
            check_against_brute(lm, wl, brute_dag(wl, words_log), where_of(model, wl))


# ----- hypothesis: random ARPA texts -----------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arpa=arpa_texts(min_order=1, max_order=4, max_vocab=4, drop_prefix_contexts=None,
                        neg_inf=True), seed=st.integers(0, 2**32 - 1))
def test_property_random_models_and_dags(tmp_path_factory, arpa, seed):
    """Hypothesis: random ARPA models (orders 1-4, positive backoffs, missing prefixes, -inf
    probabilities) and random DAGs with an unknown word: every method equals brute force."""
    text, _ = arpa
    path = tmp_path_factory.mktemp("dag") / "m.arpa"
    path.write_text(text)
    lm = maxarpa.load(path)
    words = [w for w in lm.vocab if w not in ("<s>", "</s>")] + ["unseen"]
    wl = random_word_lattice(random.Random(seed), words, max_nodes=6, max_paths=80)
    check_against_brute(lm, wl, brute_dag_model(lm, wl), (text, wl.to_json_obj()))


# ----- the sweep's two layouts of the expansion ------------------------------------------------
def test_dense_and_sparse_layouts_of_the_expansion_agree(random_lms, real_lms):
    """`ExpansionGraph` is dense where every state of a node has the same out-degree (a
    confusion network's layout, unless the LM gives a word probability zero), sparse
    otherwise; both must give the same max and log-sum-exp values, the same best path and the
    same draws. Forced sparse here, against the dense graph the layout gets."""
    import arsdecode.core.dag_dp as dag_dp
    from arsdecode.core.semiring import LogSumExp, MaxPlus
    from arsdecode.methods.expansion_dp import ExpansionGraph, dag_expand
    from arsdecode.methods.full import ConfusionLayout
    from arsdecode.model import as_target_model

    rng = random.Random(2500)
    dense_seen = 0
    for model in [*random_lms, real_lms[4]]:
        for _ in range(5):
            lat = make_lattice(rng, model, max_len=5, max_width=4)
            try:
                wl = ConfusionLayout.of(lat).wl
            except NoPathError:
                continue
            ex = dag_expand(as_target_model(model.lm), wl)
            dense, sparse = ExpansionGraph(ex), ExpansionGraph(ex)
            sparse.dense = False
            dense_seen += dense.dense
            where = (model.name, lat.to_json_obj())
            best_d = dag_dp.backward(dense, MaxPlus)
            assert np.array_equal(best_d, dag_dp.backward(sparse, MaxPlus)), where
            beta = dag_dp.backward(dense, LogSumExp)
            assert np.allclose(beta, dag_dp.backward(sparse, LogSumExp), rtol=0, atol=1e-12)
            if best_d[0] == -np.inf:
                continue
            assert dag_dp.best_path(dense, best_d) == dag_dp.best_path(sparse, best_d), where
            a = dag_dp.sample(dense, beta, 300, np.random.default_rng(7))
            b = dag_dp.sample(sparse, beta, 300, np.random.default_rng(7))
            arcs_a = a.paths(300, lambda src, col, g=dense, e=ex: e.arc[g.transition(src, col)])
            arcs_b = b.paths(300, lambda src, col, g=sparse, e=ex: e.arc[g.transition(src, col)])
            assert arcs_a == arcs_b, where
            assert np.allclose(a.score, b.score, rtol=0, atol=1e-12), where
    assert dense_seen >= 10
