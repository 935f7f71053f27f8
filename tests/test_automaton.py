"""Invariants of the q-automaton under refinement, checked on every path of small lattices.

What must hold after every refinement along a rejected path (Algorithm 2), for both variants:
- q is an upper bound: log q(x) >= log p(x) on every path x;
- q only goes down: log q(x) never increases, and when it decreases on some possible path the
  partition function ln q(X) strictly decreases;
- inference is exact on q: `log_partition` = logsumexp of log q over all paths, `viterbi` is
  the argmax of log q (and its value never increases), `sample_paths` draws from q / q(X);
- the automaton stays deterministic, and its exports (networkx, pynini log64) agree with it;
- refining a path repeatedly makes q exact on it, so refining everything gives q = p.
"""

from __future__ import annotations

import math
import random

import networkx as nx
import numpy as np
import pynini
import pytest

from ars_fixtures import make_lattice
from arsdecode.core.automaton import QAutomaton
from arsdecode.core.export import to_fst, to_networkx, write_fst
from arsdecode.core.inference import log_partition, sample_paths, viterbi
from arsdecode.core.target import Target
from arsdecode.errors import AutomatonError
from arsdecode.model import as_target_model
from arsdecode.testing.brute import brute_kenlm, brute_model, chi_square_pvalue

TIGHT = 1e-9
FST_REL = 1e-8  # pynini prints weights (and converts them to float) with 9 significant digits
VARIANTS = ["all-edges", "paper"]


def logsumexp(x: np.ndarray) -> float:
    finite = x[np.isfinite(x)]
    if len(finite) == 0:
        return -math.inf
    top = finite.max()
    return float(top + np.log(np.exp(finite - top).sum()))


def all_log_q(qa: QAutomaton, paths) -> np.ndarray:
    return np.array([qa.log_q_tokens(list(p)) for p in paths])


def check_exact_inference(qa: QAutomaton, paths, lq: np.ndarray, where) -> None:
    lz = log_partition(qa)
    assert abs(lz - logsumexp(lq)) <= TIGHT, (where, lz, logsumexp(lq))
    toks, vq = viterbi(qa)
    assert abs(vq - lq.max()) <= TIGHT, (where, toks, vq, lq.max())
    assert abs(qa.log_q_tokens(toks) - vq) <= TIGHT, where
    assert qa.is_deterministic(), where


def models(real_lms, random_lms):
    return [real_lms[3], real_lms[4], real_lms[5], *random_lms]


@pytest.mark.parametrize("variant", VARIANTS)
def test_refinement_invariants_on_every_path(real_lms, random_lms, variant):
    rng = random.Random(12 if variant == "all-edges" else 13)
    nrng = np.random.default_rng(12)
    for model in models(real_lms, random_lms):
        for _ in range(4):
            lattice = make_lattice(rng, model, max_len=4)
            ref = brute_model(model.lm, lattice)
            lp = np.array(ref.log_p)
            where = (model.name, variant, lattice.to_json_obj())
            target = Target(as_target_model(model.lm), lattice)
            for path, want in zip(ref.paths[:50], lp[:50], strict=False):
                got = target.log_p(list(path))
                assert got == want or abs(got - want) <= TIGHT, (where, path, got, want)
            qa = QAutomaton(as_target_model(model.lm), lattice, variant=variant)
            lq = all_log_q(qa, ref.paths)
            assert np.all(lq >= lp - TIGHT), (where, "q0 < p")
            check_exact_inference(qa, ref.paths, lq, where)
            lz, best_q = log_partition(qa), viterbi(qa)[1]
            if not np.isfinite(lz):
                continue
            for _ in range(15):
                x = sample_paths(qa, 1, nrng)[0]
                if nrng.random() < math.exp(min(0.0, target.log_p(x) - qa.log_q_tokens(x))):
                    continue  # accepted: Algorithm 1 does not refine
                before = qa.num_states()
                changed = qa.refine(x)
                new_lq = all_log_q(qa, ref.paths)
                step = (where, x, changed)
                assert np.all(new_lq >= lp - TIGHT), (step, "q < p after refine")
                finite = np.isfinite(lq)
                assert np.all(new_lq[finite] <= lq[finite] + TIGHT), (step, "q went up")
                new_lz, new_best = log_partition(qa), viterbi(qa)[1]
                if np.any(new_lq[finite] < lq[finite] - 1e-12):
                    assert new_lz < lz, (step, "a weight went down but q(X) did not", lz, new_lz)
                else:
                    assert new_lz <= lz + TIGHT, step
                assert new_best <= best_q + TIGHT, (step, "viterbi q went up", best_q, new_best)
                assert qa.num_states() >= before, step
                check_exact_inference(qa, ref.paths, new_lq, step)
                lq, lz, best_q = new_lq, new_lz, new_best


@pytest.mark.parametrize("variant", VARIANTS)
def test_refining_every_path_makes_q_exact(real_lms, random_lms, variant):
    rng = random.Random(21)
    for model in models(real_lms, random_lms):
        for _ in range(2):
            lattice = make_lattice(rng, model, max_len=3, max_width=3, neg_inf=0.0)
            ref = brute_model(model.lm, lattice)
            where = (model.name, variant, lattice.to_json_obj())
            qa = QAutomaton(as_target_model(model.lm), lattice, variant=variant)
            for path, lp in zip(ref.paths, ref.log_p, strict=True):
                for _ in range(model.lm.order + 1):
                    if qa.log_q_tokens(list(path)) - lp <= TIGHT:
                        break
                    assert qa.refine(list(path)), (where, path, "refine did nothing, q > p")
                assert qa.log_q_tokens(list(path)) - lp <= TIGHT, (where, path, "not exact after n")
            lq = all_log_q(qa, ref.paths)
            assert np.allclose(lq, ref.log_p, rtol=0, atol=TIGHT), where
            assert abs(log_partition(qa) - ref.log_Z) <= TIGHT, where
            assert qa.is_deterministic()


def test_target_agrees_with_kenlm(real_lms, random_lms):
    rng = random.Random(5)
    for model in models(real_lms, random_lms):
        lattice = make_lattice(rng, model, max_len=5)
        kref = brute_kenlm(model.km, lattice)
        target = Target(as_target_model(model.lm), lattice)
        for path, want in zip(kref.paths, kref.log_p, strict=True):
            got = target.log_p(list(path))
            assert (got == want == -math.inf) or abs(got - want) <= 1e-4, (model.name, path)


@pytest.mark.parametrize("variant", VARIANTS)
def test_sample_paths_follows_q(real_lms, random_lms, variant):
    """Chi-square of 10k draws against q / q(X), on a partly refined automaton."""
    for model, seed in [(real_lms[4], 1), (random_lms[3], 2)]:
        rng = random.Random(seed)
        lattice = make_lattice(rng, model, max_len=3, max_width=4, neg_inf=0.5)
        while lattice.num_paths() < 8:
            lattice = make_lattice(rng, model, max_len=3, max_width=4, neg_inf=0.5)
        ref = brute_model(model.lm, lattice)
        qa = QAutomaton(as_target_model(model.lm), lattice, variant=variant)
        for path in ref.paths[:: max(1, len(ref.paths) // 4)]:
            qa.refine(list(path))
        lq = all_log_q(qa, ref.paths)
        lz = logsumexp(lq)
        dist = {p: math.exp(v - lz) for p, v in zip(ref.paths, lq, strict=True) if v > -math.inf}
        samples = sample_paths(qa, 10_000, np.random.default_rng(seed))
        assert len(samples) == 10_000
        pvalue = chi_square_pvalue(samples, dist)
        assert pvalue > 0.001, (model.name, variant, lattice.to_json_obj(), pvalue)
        assert sample_paths(qa, 300, np.random.default_rng(7)) == sample_paths(
            qa, 300, np.random.default_rng(7)
        )


@pytest.mark.parametrize("variant", VARIANTS)
def test_exports_agree_with_automaton(real_lms, random_lms, variant, tmp_path):
    rng = random.Random(40)
    nrng = np.random.default_rng(40)
    for model in [real_lms[3], real_lms[5], random_lms[4]]:
        lattice = make_lattice(rng, model, max_len=4)
        qa = QAutomaton(as_target_model(model.lm), lattice, variant=variant)
        for step in range(4):
            where = (model.name, variant, step, lattice.to_json_obj())
            g = to_networkx(qa)
            assert isinstance(g, nx.MultiDiGraph), where
            assert g.number_of_nodes() == qa.num_states(), (where, g.number_of_nodes())
            assert nx.is_directed_acyclic_graph(g), where
            fst = to_fst(qa)
            assert fst.arc_type() == "log64", where
            dist = pynini.shortestdistance(fst, reverse=True)
            got = -float(dist[fst.start()])
            want = log_partition(qa)
            assert abs(got - want) <= TIGHT + FST_REL * abs(want), (where, got, want)
            path = tmp_path / f"q{step}.fst"
            write_fst(qa, str(path))
            back = pynini.Fst.read(str(path))
            dist_back = pynini.shortestdistance(back, reverse=True)
            assert abs(-float(dist_back[back.start()]) - want) <= TIGHT + FST_REL * abs(want)
            qa.refine(sample_paths(qa, 1, nrng)[0])


def test_unknown_variant_is_rejected(random_lms):
    model = random_lms[0]
    lattice = make_lattice(random.Random(0), model)
    with pytest.raises(AutomatonError):
        QAutomaton(as_target_model(model.lm), lattice, variant="nope")
    with pytest.raises(AutomatonError):  # the pre-0.1 name of "all-edges" is gone
        QAutomaton(as_target_model(model.lm), lattice, variant="fresh")


def assert_same_q(a: QAutomaton, b: QAutomaton, where) -> None:
    """Every node's states, contexts, exactness, weights, targets and final weights equal,
    bit for bit."""
    assert a.n_nodes == b.n_nodes, where
    for v, (x, y) in enumerate(zip(a.nodes, b.nodes, strict=True)):
        assert x.contexts == y.contexts and x.exact == y.exact, (where, v)
        n = len(x)
        assert np.array_equal(x.state_weights(), y.state_weights()), (where, v)
        assert np.array_equal(x.state_targets(), y.state_targets()), (where, v)
        assert np.array_equal(x.final[:n], y.final[:n]), (where, v)
        assert np.array_equal(x.own_weight[:n], y.own_weight[:n]), (where, v)


@pytest.mark.parametrize("variant", VARIANTS)
def test_confusion_network_is_a_layout_of_its_word_lattice(real_lms, random_lms, variant):
    """One engine: the q-automaton of a confusion network (read in its layered layout, with
    the incremental Viterbi's fast paths) equals, bit for bit, the q-automaton of the same
    network as a general word lattice (`WordLattice.from_confusion`, arcs and generic node
    tables) with the paper's q^(0), refined along the same paths."""
    from arsdecode.lattice import WordLattice

    rng = random.Random(41)
    nrng = np.random.default_rng(41)
    compared = 0
    for model in [real_lms[3], real_lms[5], random_lms[4], random_lms[7]]:
        target = as_target_model(model.lm)
        for _ in range(6):
            lattice = make_lattice(rng, model, max_len=5)
            if not all(np.isfinite(e).all() for e in lattice.log_emissions):
                continue  # a word lattice drops an arc of weight -inf: not the same arcs
            wl = WordLattice.from_confusion(lattice)
            cn = QAutomaton(target, lattice, variant=variant)
            dag = QAutomaton(target, wl, variant=variant, first_words=False, shortcut=False)
            assert cn.layered and not dag.layered
            where = (model.name, variant, lattice.to_json_obj())
            assert_same_q(cn, dag, where)
            compared += 1
            for _ in range(6):
                paths = sample_paths_idx(cn, nrng)
                changed = cn.refine_many(paths)
                assert changed == dag.refine_paths([cn.arcs_of(p) for p in paths]), where
                assert_same_q(cn, dag, where)
                for p in paths:
                    assert cn.log_q_indices(p) == dag.log_q(cn.arcs_of(p), len(lattice))
    assert compared >= 8, compared


def sample_paths_idx(qa: QAutomaton, rng: np.random.Generator) -> list[list[int]]:
    from arsdecode.core.inference import sample_indices

    idx, _ = sample_indices(qa, 3, rng)
    return idx.tolist()
