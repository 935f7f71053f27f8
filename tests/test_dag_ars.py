"""ARS on word lattices (arsdecode.methods.dag_ars) against brute force and the exact expansion.

Every path of small random DAGs (`random_word_lattice`: epsilon arcs and chains, parallel arcs
with the same word, several weighted finals, a final with outgoing arcs, unreachable and dead
parts) is scored on its own by scalar `Model.log10p` calls (`brute_dag_model`, float64) on
random ARPA models with positive backoffs and on lmplz-trained ones: the certified best path's
ln p equals the brute-force best (1e-9), the path is one of the (near-)best, and the certificate
really holds (ln q(x*) = ln p(x*) on the final automaton). The sampler passes a chi-square test
against the exact distribution, and its ln Z interval covers the exact ln Z. The confusion-
network special case equals `ars.decode` on the `Lattice`; a `WeightedLM` target is checked
against `dag_decode` on the same target; hypothesis draws random ARPA texts.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maxarpa
from arpa_fixtures import arpa_texts
from ars_fixtures import IMPOSSIBLE_ARPA, make_lattice
from arsdecode.core.automaton import QAutomaton, context_hash
from arsdecode.errors import AutomatonError, BoundViolationError, NoPathError, OptionError
from arsdecode.lattice import WordLattice
from arsdecode.methods.ars import dag_ars_decode, dag_ars_sample
from arsdecode.methods.ars import decode as ars_decode
from arsdecode.methods.ars_paths import draw, path_log_p, paths_log_p, viterbi
from arsdecode.methods.expansion_dp import dag_decode, dag_log_partition
from arsdecode.model import WeightedLM, as_target_model, context_rows
from arsdecode.testing.brute import chi_square_pvalue
from arsdecode.testing.brute_dag import (
    BruteDagResult,
    brute_dag_model,
    brute_dag_target,
    random_word_lattice,
)
from maxarpa.rows import row_hashes

TIGHT = 1e-9


# ----- an ASR-like lattice (for the measurement and a real-model test) ---------------------------
def asr_like_lattice(rng: random.Random, truth: Sequence[str], vocab: Sequence[str],
                     arcs_per_position: int) -> WordLattice:
    """Competing arcs for each true word: the truth and `arcs_per_position - 1` confusable
    words between consecutive nodes, random "acoustic" ln scores where the truth is not always
    best; sometimes a span of two positions, a deletion (epsilon arc) or an insertion (an extra
    node with a short word before the next position)."""
    arcs: list[tuple[int, int, str | None, float]] = []
    n = len(truth) + 1
    extra = n
    for i, word in enumerate(truth):
        others = rng.sample(list(vocab), arcs_per_position - 1)
        arcs.append((i, i + 1, word, rng.gauss(-1.0, 1.0)))
        arcs += [(i, i + 1, w, rng.gauss(-2.0, 1.0)) for w in others]
        if rng.random() < 0.2:  # a deletion
            arcs.append((i, i + 1, None, rng.gauss(-4.0, 1.0)))
        if i + 2 <= len(truth) and rng.random() < 0.2:  # spans of two positions
            arcs += [(i, i + 2, w, rng.gauss(-3.0, 1.0)) for w in rng.sample(list(vocab), 3)]
        if rng.random() < 0.1:  # an insertion
            arcs.append((i, extra, rng.choice(list(vocab)), rng.gauss(-3.0, 1.0)))
            arcs.append((extra, i + 1, word, rng.gauss(-1.5, 1.0)))
            extra += 1
    return WordLattice.build(extra, 0, {len(truth): 0.0}, arcs)


def _arcs_of(wl: WordLattice, tokens: Sequence[str]) -> list[int]:
    """The arcs of a confusion network's word lattice that spell `tokens` (first match)."""
    return [next(a for a in wl.arcs_from(i) if wl.words[a] == t) for i, t in enumerate(tokens)]


# ----- checks ----------------------------------------------------------------------------------
def check_decode(lm, wl: WordLattice, ref: BruteDagResult, where) -> None:
    """The certified best path of ARS is a best path of brute force, and q(x*) = p(x*)."""
    if ref.best_log_p == -math.inf:
        with pytest.raises(NoPathError):
            dag_ars_decode(lm, wl)
        return
    r = dag_ars_decode(lm, wl)
    assert r.certified and r.method == "ars", where
    assert abs(r.log_p - ref.best_log_p) <= TIGHT, (where, r, ref.best_log_p)
    assert r.arcs in ref.near_best(TIGHT), (where, r)
    assert r.words == wl.path_words(r.arcs), where
    assert abs(ref.score(r.arcs) - r.log_p) <= TIGHT, where
    assert r.log_q - r.log_p <= TIGHT and r.log_q >= r.log_p - TIGHT, where
    assert r.iterations == len(r.trace) >= 1
    assert r.trace[-1] == (r.log_q, r.log_p)
    # every earlier x* was refuted: its q was above its p, and q(x*) never rose
    for lq, lp in r.trace[:-1]:
        assert lq > lp + TIGHT, where
    assert all(a[0] >= b[0] - TIGHT for a, b in zip(r.trace, r.trace[1:])), where


def check_q_bounds_p(lm, wl: WordLattice, ref: BruteDagResult, refine: int, seed: int) -> None:
    """q >= p on EVERY path of the lattice, and every state a path reaches has a context that
    is a suffix of the path's history (the invariant behind q >= p), before and after
    refinements along random paths (q^(0) with one-word contexts or, for odd seeds, the
    paper's empty ones)."""
    qa = QAutomaton(as_target_model(lm), wl, first_words=seed % 2 == 0)
    rng = random.Random(seed)
    paths = list(wl.paths())
    for step in range(refine + 1):
        for (arcs, final), lp in zip(paths, ref.log_p, strict=True):
            lq = qa.log_q(arcs, final)
            assert lq >= lp - TIGHT, (step, arcs, lq, lp)
            history = [qa.model.bos]
            nodes = [0, *(int(wl.dst[a]) for a in arcs)]
            for i, (v, s) in enumerate(zip(nodes, qa.states_on_path(arcs), strict=True)):
                if i and wl.words[arcs[i - 1]] is not None:
                    history.append(int(qa.arc_ids[arcs[i - 1]]))
                ctx = qa.nodes[v].contexts[s]
                assert len(ctx) <= max(qa.order - 1, 0)
                assert tuple(history[len(history) - len(ctx):]) == ctx or not ctx, (ctx, history)
        qa.refine_paths([rng.choice(paths)[0]])


def check_exact_states(qa: QAutomaton, words: Sequence[str], longest: int = 99) -> int:
    """Every state the automaton calls exact has p fixed by its context: ln p(w | z + c) is
    the same for every left extension z (all of them up to order - 1 words, at most `longest`,
    over `words`, with or without <s> first) and every word w of `words` and </s>. Returns how
    many short contexts were checked."""
    model = qa.model
    ids = [int(i) for i in model.ids(list(words))]
    vocab = [*ids, model.eos]
    checked = 0
    for node in qa.nodes:
        for ctx, exact in zip(node.contexts, node.exact, strict=True):
            if not exact or len(ctx) >= qa.width or (ctx and ctx[0] == model.bos):
                continue
            checked += 1
            exts: list[tuple[int, ...]] = [()]
            for _ in range(min(qa.width - len(ctx), longest)):
                exts += [(w, *z) for z in exts if len(z) == len(exts[-1]) for w in ids]
            exts += [(model.bos, *z) for z in exts if len(z) < qa.width - len(ctx)]
            rows = [(*z, *ctx) for z in exts]
            for w in vocab:
                lp = model.log_prob(context_rows(rows, qa.width), np.full(len(rows), w))
                assert np.all(lp == lp[0]), (ctx, w, lp)
    return checked


def test_contexts_no_left_extension_changes_are_exact(random_lms, real_lms):
    """The backoff shortcut (`extendable_contexts`) never calls a context exact that is not:
    brute force over every left extension, after refinements along random paths."""
    rng = random.Random(2600)
    checked = 0
    for model in random_lms:
        for _ in range(4):
            wl = random_word_lattice(rng, model.words)
            qa = QAutomaton(as_target_model(model.lm), wl)
            paths = [p for p, _ in wl.paths()]
            for _ in range(6):
                qa.refine_paths([rng.choice(paths)])
            checked += check_exact_states(qa, model.words)
    assert checked >= 3
    real = 0
    for order in (3, 5):
        model = real_lms[order]
        target = as_target_model(model.lm)
        for _ in range(2):
            truth = rng.choice([s for s in model.sentences if len(s) >= 8])[:8]
            wl = asr_like_lattice(rng, truth, model.words, 4)
            qa = QAutomaton(target, wl)
            for _ in range(30):  # the decoder's refinements
                arcs, final, lq = viterbi(qa)
                if lq - path_log_p(target, wl, arcs, final) <= TIGHT:
                    break
                qa.refine_paths([arcs])
            pool = [*dict.fromkeys(truth + rng.sample(model.words, 4))]
            real += check_exact_states(qa, pool, longest=2)
    assert real >= 10


def test_random_dags_on_random_positive_backoff_models(random_lms):
    rng = random.Random(2700)
    for model in random_lms:
        assert model.lm.positive_backoffs > 0
        for _ in range(12):
            wl = random_word_lattice(rng, [*model.words, "zzunseen"])
            ref = brute_dag_model(model.lm, wl)
            check_decode(model.lm, wl, ref, (model.name, wl.to_json_obj()))
            check_q_bounds_p(model.lm, wl, ref, 4, rng.randrange(1000))
            assert abs(dag_decode(model.lm, wl).log_p - ref.best_log_p) <= TIGHT \
                if ref.best_log_p > -math.inf else True


@pytest.mark.parametrize("order", [3, 4, 5])
def test_random_dags_on_real_models(real_lms, order):
    model = real_lms[order]
    rng = random.Random(2800 + order)
    for _ in range(12):
        sent = rng.choice([s for s in model.sentences if len(s) >= 6])
        pool = sent[:6] + rng.sample(model.words, 3) + ["zzunseen"]
        wl = random_word_lattice(rng, pool, max_nodes=8, epsilon=0.15)
        check_decode(model.lm, wl, brute_dag_model(model.lm, wl), (order, wl.to_json_obj()))


@pytest.mark.parametrize("order", [3, 5])
def test_asr_like_lattices_equal_the_expansion(real_lms, order):
    """Larger lattices than brute force can enumerate: ARS's certified ln p equals the exact
    expansion's, and ARS builds fewer states than it."""
    model = real_lms[order]
    rng = random.Random(2900 + order)
    for _ in range(4):
        truth = rng.choice([s for s in model.sentences if len(s) >= 12])[:12]
        wl = asr_like_lattice(rng, truth, model.words, 8)
        full = dag_decode(model.lm, wl)
        r = dag_ars_decode(model.lm, wl)
        assert r.certified
        assert abs(r.log_p - full.log_p) <= TIGHT, (r, full)
        assert abs(path_log_p(as_target_model(model.lm), wl, r.arcs,
                              int(wl.dst[r.arcs[-1]]) if r.arcs else 0) - r.log_p) <= TIGHT
        assert r.states < full.states


def test_the_cases_by_name(random_lms):
    """Epsilon chains, parallel arcs with the same word, several finals (one with outgoing
    arcs), a path of no words, on every random model."""
    for model in random_lms:
        a, b = model.words[0], model.words[1 % len(model.words)]
        cases = {
            "eps_chain": WordLattice.build(5, 0, {4: 0.0}, [
                (0, 1, a, -0.5), (1, 2, None, -0.1), (2, 3, None, -0.2), (3, 4, b, -0.3),
                (0, 4, b, -2.0), (1, 4, None, -1.5)]),
            "parallel": WordLattice.build(3, 0, {2: 0.0}, [
                (0, 1, a, -0.5), (0, 1, a, -0.1), (0, 1, b, -0.7), (1, 2, b, 0.0),
                (1, 2, b, -0.2), (1, 2, None, -1.0)]),
            "finals": WordLattice.build(4, 0, {1: -0.3, 2: -1.0, 3: 0.0}, [
                (0, 1, a, -0.5), (1, 2, b, -0.1), (1, 3, a, -0.4), (2, 3, None, -0.2),
                (0, 2, b, -1.0)]),
            "empty_path": WordLattice.build(3, 0, {0: -2.0, 2: 0.0}, [
                (0, 1, None, -0.3), (1, 2, None, -0.1), (0, 2, a, -1.0)]),
        }
        for name, wl in cases.items():
            check_decode(model.lm, wl, brute_dag_model(model.lm, wl), (model.name, name))


def test_start_state_can_be_final_with_no_word(random_lms):
    model = random_lms[3]
    wl = WordLattice.build(2, 0, {0: 5.0, 1: 0.0}, [(0, 1, model.words[0], -9.0)])
    r = dag_ars_decode(model.lm, wl)
    ref = brute_dag_model(model.lm, wl)
    assert r.arcs == () and r.words == [] and abs(r.log_p - ref.best_log_p) <= TIGHT


# ----- the certificate is real -----------------------------------------------------------------
def test_the_final_automaton_certifies_the_path(random_lms):
    """On the automaton ARS stopped with, Viterbi gives x* again, and its q equals p."""
    rng = random.Random(3000)
    model = random_lms[5]
    target = as_target_model(model.lm)
    for _ in range(10):
        wl = random_word_lattice(rng, model.words)
        qa = QAutomaton(target, wl)
        while True:
            arcs, final, lq = viterbi(qa)
            lp = path_log_p(target, wl, arcs, final)
            if lq - lp <= TIGHT:
                break
            assert qa.refine_paths([arcs])
        ref = brute_dag_model(model.lm, wl)
        assert abs(lp - ref.best_log_p) <= TIGHT
        # q >= p everywhere, so nothing beats x*: checked on every path
        for (p_arcs, p_final), p_lp in zip(wl.paths(), ref.log_p, strict=True):
            assert qa.log_q(p_arcs, p_final) >= p_lp - TIGHT
            assert p_lp <= lp + TIGHT


def test_max_iterations_stops_uncertified(real_lms):
    model = real_lms[5]
    rng = random.Random(3100)
    truth = rng.choice([s for s in model.sentences if len(s) >= 10])[:10]
    wl = asr_like_lattice(rng, truth, model.words, 6)
    full = dag_ars_decode(model.lm, wl)
    assert full.iterations > 1
    r = dag_ars_decode(model.lm, wl, max_iterations=1)
    assert not r.certified and r.iterations == 1 and r.log_q > r.log_p
    assert r.log_q >= full.log_p - TIGHT  # q(x*) bounds the optimum
    with pytest.raises(OptionError):
        dag_ars_decode(model.lm, wl, max_iterations=0)


def test_a_broken_bound_is_an_error(random_lms):
    """A target whose `log_bound` is below `log_prob` is caught, never certified."""
    model = random_lms[2]
    inner = as_target_model(model.lm)

    class Broken:
        order, bos, eos = inner.order, inner.bos, inner.eos
        ids, word, log_prob = inner.ids, inner.word, inner.log_prob
        is_exact, minimal_context = inner.is_exact, inner.minimal_context

        def log_bound(self, contexts, words):
            return inner.log_prob(contexts, words) - 1.0

    wl = WordLattice.build(3, 0, {2: 0.0}, [(0, 1, model.words[0], 0.0),
                                             (1, 2, model.words[1], 0.0)])
    with pytest.raises(BoundViolationError):
        dag_ars_decode(Broken(), wl)
    with pytest.raises(BoundViolationError):
        dag_ars_sample(Broken(), wl, 5, 0)


def test_zero_probability_paths(tmp_path):
    path = tmp_path / "imp.arpa"
    path.write_text(IMPOSSIBLE_ARPA)
    lm = maxarpa.load(path)
    some = WordLattice.build(3, 0, {2: 0.0}, [(0, 1, "a", 0.0), (1, 2, "a", 0.0),
                                              (0, 1, "zz", -1.0), (1, 2, None, 0.0)])
    ref = brute_dag_model(lm, some)
    check_decode(lm, some, ref, "some")
    assert all(p.words[:1] != ["a"] for p in dag_ars_sample(lm, some, 100, 1).paths)
    none = WordLattice.build(2, 0, {1: 0.0}, [(0, 1, "a", 0.0), (0, 1, "a", -1.0)])
    with pytest.raises(NoPathError):
        dag_ars_decode(lm, none)
    with pytest.raises(NoPathError):
        dag_ars_sample(lm, none, 3, 0)


# ----- the confusion-network special case, WeightedLM -------------------------------------------
@pytest.mark.parametrize("source", ["random", "real"])
def test_confusion_network_equals_ars_decode(random_lms, real_lms, source):
    models = random_lms if source == "random" else [real_lms[3], real_lms[5]]
    rng = random.Random(3200)
    for model in models:
        for _ in range(6):
            lat = make_lattice(rng, model, max_len=6, max_width=4, neg_inf=0.0)
            wl = WordLattice.from_confusion(lat)
            ref = ars_decode(model.lm, lat)
            r = dag_ars_decode(model.lm, wl)
            assert r.certified and ref.certified
            assert abs(r.log_p - ref.log_p) <= TIGHT, (model.name, r, ref)
            # the tokens agree unless another path ties within float rounding
            if r.words != ref.tokens:
                assert abs(path_log_p(as_target_model(model.lm), wl, _arcs_of(wl, ref.tokens),
                                      len(lat)) - r.log_p) <= TIGHT


@pytest.mark.parametrize(("weight", "start", "end"),
                         [(0.5, True, True), (1.7, False, True), (1.0, True, False)])
def test_weighted_lm(random_lms, weight, start, end):
    rng = random.Random(3300)
    for model in random_lms[::2]:
        target = WeightedLM(model.lm, lm_weight=weight, sentence_start=start, sentence_end=end)
        for _ in range(6):
            wl = random_word_lattice(rng, model.words)
            ref = brute_dag_target(target, wl)
            check_decode(target, wl, ref, (model.name, weight, start, end))
            full = dag_decode(target, wl) if ref.best_log_p > -math.inf else None
            if full is not None:
                assert abs(full.log_p - ref.best_log_p) <= TIGHT


# ----- sampling ----------------------------------------------------------------------------------
@pytest.mark.parametrize("which", [1, 5, 7])
def test_sample_chi_square(random_lms, which):
    """6,000 samples against the exact path distribution (brute force); the ln Z interval
    covers the exact ln Z."""
    model = random_lms[which]
    rng = random.Random(3400 + which)
    while True:
        wl = random_word_lattice(rng, model.words, max_nodes=6)
        ref = brute_dag_model(model.lm, wl)
        if 4 <= len(ref.distribution()) <= 40:
            break
    res = dag_ars_sample(model.lm, wl, 6000, seed=which, batch=200)
    assert len(res.samples) == 6000
    assert res.trials >= 6000 and 0 < res.acceptance_rate <= 1
    for p in res.paths:
        assert abs(ref.score(p.arcs) - p.log_p) <= TIGHT
        assert p.words == wl.path_words(p.arcs)
    pvalue = chi_square_pvalue([p.arcs for p in res.paths], ref.distribution())
    assert pvalue > 0.001, (pvalue, model.name)
    assert res.log_Z_ci[0] <= ref.log_Z <= res.log_Z_ci[1], (res.log_Z_ci, ref.log_Z)
    assert abs(res.log_Z - dag_log_partition(model.lm, wl)) < 0.1


def test_draw_from_q_is_exact_q(random_lms):
    """The forward draw follows q / q(X) itself (before any acceptance): chi-square against
    q computed path by path on a refined automaton."""
    model = random_lms[4]
    rng = random.Random(3500)
    wl = random_word_lattice(rng, model.words, max_nodes=6, neg_inf=0.0)
    while not 4 <= wl.num_paths() <= 30:
        wl = random_word_lattice(rng, model.words, max_nodes=6, neg_inf=0.0)
    qa = QAutomaton(as_target_model(model.lm), wl)
    paths = list(wl.paths())
    qa.refine_paths([paths[0][0], paths[-1][0]])
    log_q = np.array([qa.log_q(a, f) for a, f in paths])
    top = log_q.max()
    dist_w = np.exp(log_q - top)
    dist = {a: float(w / dist_w.sum()) for (a, _), w in zip(paths, dist_w, strict=True)}
    drawn, finals, drawn_log_q, log_z = draw(qa, 5000, np.random.default_rng(7))
    for a, f, lq in list(zip(drawn, finals, drawn_log_q.tolist(), strict=True))[:300]:
        assert lq == qa.log_q(a, f)  # summed in the same order: bit for bit
    target = as_target_model(model.lm)
    many = paths_log_p(target, wl, drawn[:300], finals[:300])
    assert [path_log_p(target, wl, a, f) for a, f in zip(drawn[:300], finals[:300],
                                                         strict=True)] == many.tolist()
    assert np.allclose(many, [brute_dag_model(model.lm, wl).score(tuple(a)) for a in
                              drawn[:300]], rtol=0, atol=TIGHT)
    assert abs(log_z - (top + math.log(dist_w.sum()))) < 1e-9
    assert all(int(wl.dst[a[-1]]) == f if a else f == 0 for a, f in zip(drawn, finals,
                                                                         strict=True))
    assert chi_square_pvalue([tuple(a) for a in drawn], dist) > 0.001


def test_sample_options(random_lms):
    model = random_lms[1]
    wl = random_word_lattice(random.Random(3600), model.words)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(OptionError):
            dag_ars_sample(model.lm, wl, bad, 0)
    with pytest.raises(OptionError):
        dag_ars_sample(model.lm, wl, 3, 0, batch=0)
    a = dag_ars_sample(model.lm, wl, 50, 4)
    b = dag_ars_sample(model.lm, wl, 50, 4)
    assert [p.arcs for p in a.paths] == [p.arcs for p in b.paths]
    c = dag_ars_sample(model.lm, wl, 10**6, 4, max_trials=30)
    assert c.trials == 30 and len(c.samples) <= 30


# ----- hypothesis ------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arpa=arpa_texts(min_order=1, max_order=5, max_vocab=4), seed=st.integers(0, 10**6))
def test_property_random_models_and_dags(tmp_path_factory, arpa, seed):
    text, _ = arpa
    path = tmp_path_factory.mktemp("dag_ars_prop") / "m.arpa"
    path.write_text(text)
    lm = maxarpa.load(path)
    words = [w for w in lm.vocab if w not in ("<s>", "</s>")] + ["zzunseen"]
    rng = random.Random(seed)
    wl = random_word_lattice(rng, words)
    ref = brute_dag_model(lm, wl)
    check_decode(lm, wl, ref, (text, wl.to_json_obj()))
    check_q_bounds_p(lm, wl, ref, 3, seed)


@pytest.mark.parametrize(("depth", "first_words"), [(1, False), (2, True), (None, True)])
def test_refinement_depth(random_lms, real_lms, depth, first_words):
    """Deeper refinement (more words per step, or the whole way) and the paper's q^(0) (no
    one-word contexts) change the work, never the certified answer."""
    rng = random.Random(3700)
    for model in [*random_lms[::2], real_lms[5]]:
        for _ in range(5):
            pool = model.words if not model.sentences else (
                rng.choice([s for s in model.sentences if len(s) >= 6])[:6]
                + rng.sample(model.words, 3))
            wl = random_word_lattice(rng, pool)
            ref = brute_dag_model(model.lm, wl)
            if ref.best_log_p == -math.inf:
                continue
            r = dag_ars_decode(model.lm, wl, depth=depth, first_words=first_words)
            assert r.certified and abs(r.log_p - ref.best_log_p) <= TIGHT
            assert r.arcs in ref.near_best(TIGHT)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(OptionError):
            dag_ars_decode(random_lms[0].lm, wl, depth=bad)
        with pytest.raises(OptionError):
            dag_ars_sample(random_lms[0].lm, wl, 3, 0, depth=bad)
    with pytest.raises(AutomatonError):
        QAutomaton(as_target_model(random_lms[0].lm), wl).refine_paths([[]], depth=0)


def test_context_hash_is_maxarpas_row_hash():
    """The Python hash the exactness test looks contexts up by equals `row_hashes` of the
    padded row, which the table of extendable contexts was built with."""
    rng = np.random.default_rng(0)
    for width in range(6):
        for n in range(width + 1):
            for _ in range(30):
                ctx = tuple(int(x) for x in rng.integers(0, 2**40, n))
                row = np.full((1, width), -1, dtype=np.int64)
                if n:
                    row[0, width - n:] = ctx
                assert context_hash(ctx, width) == int(row_hashes(row)[0])


def test_every_target_is_the_longest_suffix_present(random_lms):
    """The construction's determinism, on q^(0) (one-word contexts set a node's matrix at a
    time, `_first_word_targets`) and after refinements: each (state, arc) goes to the state
    at the arc's destination whose context is the longest suffix of the state's context
    extended by the arc's word (its context itself on an epsilon arc)."""
    for which in (2, 5):
        model = random_lms[which]
        rng = random.Random(which)
        for _ in range(15):
            wl = random_word_lattice(rng, model.words)
            qa = QAutomaton(as_target_model(model.lm), wl)
            for step in range(3):
                for u, node in enumerate(qa.nodes):
                    lo = int(qa.arc_lo[u])
                    for s, ctx in enumerate(node.contexts):
                        for j, d in enumerate(qa.arc_dst[u].tolist()):
                            full = qa.extend(ctx, lo + j)
                            present = [c for c in qa.nodes[d].contexts
                                       if c == full[len(full) - len(c):] or not c]
                            want = max(present, key=len)
                            got = qa.nodes[d].contexts[int(node.targets[s, j])]
                            assert got == want, (which, step, u, ctx, j, got, want)
                paths = list(wl.paths())
                qa.refine_paths([rng.choice(paths)[0]])
