"""Tree automata with an n-gram target (issue 31): every exact method against brute force.

Brute force (`arsdecode.testing.brute_tree`) enumerates every derivation of small random
automata (ambiguous: repeated labels, null leaves, shared states) and scores each yield with
the target's own `log_prob` on the full history; the random ARPA models have positive
backoffs, so a bound taken over listed n-grams only would be caught. The formats' tests are in
test_tree_formats.py.
"""

from __future__ import annotations

import math
import random
import zlib
from collections import Counter

import numpy as np
import pytest

from arsdecode.errors import ArsDecodeError
from arsdecode.model import as_target_model
from arsdecode.testing.brute import brute_target, chi_square_pvalue
from arsdecode.testing.brute_tree import brute_tree, random_tree_automaton
from arsdecode.trees import api
from arsdecode.trees.ars import ars_decode
from arsdecode.trees.intersect import ContextStates, intersect

TOL = 1e-9
CASES = 12  # random automata per model


def _cases(random_lms, seed: int = 0):
    """(model, automaton, brute force) triples, CASES per random model, all of p > 0."""
    out = []
    for m in random_lms:
        rng = random.Random(zlib.crc32(f"{m.name}/{seed}".encode()))  # not hash(): salted
        while sum(1 for c in out if c[0] is m) < CASES:
            a = random_tree_automaton(rng, m.words, states=rng.randint(2, 5))
            b = _brute_or_none(m.lm, a)
            if b is not None and b.log_Z > -math.inf:
                out.append((m, a, b))
    return out


def _brute_or_none(lm, a, limit: int = 3000):
    try:
        return brute_tree(lm, a, limit)
    except ValueError:  # too many derivations to enumerate
        return None


@pytest.fixture(scope="module")
def cases(random_lms):
    return _cases(random_lms)


@pytest.mark.parametrize("method", ["full", "ars"])
def test_best_tree_is_brute_force_best(cases, method):
    for m, a, b in cases:
        r = api.decode(m.lm, a, method=method)
        assert r.certified and r.method == method
        assert abs(r.log_p - b.best_log_p) <= TOL, (m.name, a.to_alto())
        assert r.tree in b.near_best(1e-7)
        d = a.from_preorder(list(r.rules))
        assert a.tree_string(d) == r.tree and a.yield_of(d) == r.tokens


@pytest.mark.parametrize("method", ["full", "ars"])
def test_kbest_is_brute_force_ranking(cases, method):
    for m, a, b in cases[::2]:
        k = min(len(b.log_p) + 1, 25)
        got = api.kbest(m.lm, a, k, method=method)
        finite = [x for x in b.ranked() if x > -math.inf]
        assert got.certified and got.method == method
        assert len(got) == min(k, len(finite)), (m.name, a.to_alto())
        np.testing.assert_allclose([p.log_p for p in got], finite[:len(got)], atol=1e-8)
        assert len({p.rules for p in got}) == len(got)  # distinct derivations


def test_log_partition_and_rule_posteriors_equal_brute_force(cases):
    for m, a, b in cases:
        lz, ci, exact = api.log_partition(m.lm, a, method="full")
        assert exact and ci == (lz, lz) and abs(lz - b.log_Z) <= TOL
        marg = api.marginals(m.lm, a, method="full")
        np.testing.assert_allclose(marg.p, b.rule_posteriors(), atol=1e-9)


def test_the_bound_automaton_is_above_p_and_tightens_with_refinement(cases):
    """q^(0)'s ln Z and best are above p's; after ARS's refinements still above, and the
    final q's Viterbi is p's best (the certificate)."""
    for m, a, b in cases[::3]:
        t = as_target_model(m.lm)
        q0 = intersect(a, ContextStates(t, refined=[]))
        assert q0.log_partition() >= b.log_Z - TOL and q0.viterbi()[0] >= b.best_log_p - TOL
        s, rules, ars, trace, ok = ars_decode(a, t)
        assert ok and ars.forest.log_partition() >= b.log_Z - TOL
        assert ars.forest.log_partition() <= q0.log_partition() + TOL
        assert trace[-1][0] - trace[-1][1] <= TOL
        # every derivation's q under the final R is its forest weight and >= its p
        for d, lp in list(zip(b.derivations, b.log_p, strict=True))[:50]:
            sc = ars.score(a.preorder(d))
            assert sc.log_q >= lp - TOL and abs(sc.log_p - lp) <= 1e-9


def test_the_automaton_alone_matches_brute_force(cases):
    for _, a, b in cases[:20]:
        w = [a.derivation_weight(d) for d in b.derivations]
        top = max(w)
        lz = top + math.log(math.fsum(math.exp(x - top) for x in w))
        assert abs(a.log_partition() - lz) <= TOL
        assert abs(a.viterbi()[0] - top) <= TOL
        counts = sum(math.exp(x - lz) * a.rule_counts(d) for x, d in
                     zip(w, b.derivations, strict=True))
        np.testing.assert_allclose(a.expected_counts(), counts, atol=1e-9)


def _chi2_case(random_lms):
    """A fixed ambiguous automaton with a few dozen derivations, under an order-4 model."""
    m = next(x for x in random_lms if x.name.endswith("o4"))
    rng = random.Random(7)
    while True:
        a = random_tree_automaton(rng, m.words, states=4)
        b = _brute_or_none(m.lm, a, 60)
        if b is not None and 15 <= len(b.log_p) and b.log_Z > -math.inf:
            return m, a, b


@pytest.mark.parametrize("method", ["full", "ars"])
def test_samplers_pass_chi_square(random_lms, method):
    m, a, b = _chi2_case(random_lms)
    r = api.sample(m.lm, a, 3000, seed=1, method=method)
    assert r.method == method and len(r.rules) == 3000
    dist = {tuple(map(str, k)): v for k, v in b.distribution().items()}
    pval = chi_square_pvalue([tuple(map(str, x)) for x in r.rules], dist)
    assert pval > 1e-3, pval
    by_rules = {tuple(a.preorder(d)): lp for d, lp in zip(b.derivations, b.log_p, strict=True)}
    for rules, lp in zip(r.rules[:200], r.log_p[:200], strict=True):
        assert abs(by_rules[tuple(rules)] - lp) <= 1e-9
    lo, hi = r.log_Z_ci
    if method == "full":
        assert abs(r.log_Z - b.log_Z) <= TOL
    else:
        assert lo <= b.log_Z <= hi, (lo, b.log_Z, hi)


def test_ars_marginals_cover_the_exact_posteriors(random_lms):
    m, a, b = _chi2_case(random_lms)
    marg = api.marginals(m.lm, a, n=2000, seed=3, method="ars")
    exact = b.rule_posteriors()
    assert not marg.exact
    inside = [mm.lo - 1e-12 <= e <= mm.hi + 1e-12 for mm, e in zip(marg.marginals, exact,
                                                                   strict=True) if e <= 1.0]
    assert sum(inside) >= 0.8 * len(inside)


def test_auto_decodes_by_ars_and_counts_by_full_within_its_budget(cases):
    # a language with a word in it: an automaton of empty yields asks the target nothing, so
    # a zero budget would still count it exactly
    m, a, b = next(c for c in cases if any(c[2].yields))
    r = api.decode(m.lm, a)
    assert r.method == "ars" and r.certified and abs(r.log_p - b.best_log_p) <= TOL
    assert api.kbest(m.lm, a, 2).method == "ars"
    assert api.sample(m.lm, a, 5, seed=0).method == "full"
    lz, ci, exact = api.log_partition(m.lm, a)
    assert exact and abs(lz - b.log_Z) <= TOL
    lz, (lo, hi), exact = api.log_partition(m.lm, a, n=400, seed=0, max_queries=0)
    assert not exact and lo <= b.log_Z <= hi
    assert api.marginals(m.lm, a, n=50, seed=0, max_queries=0).method == "ars"


def test_bad_method_and_marker_leaves_are_one_line_errors(random_lms):
    from arsdecode.trees import TreeAutomaton

    m = random_lms[0]
    a = TreeAutomaton.from_rules("S", [("S", "f", ["A"], 0.0), ("A", "</s>", [], 0.0)], "m.json")
    with pytest.raises(ArsDecodeError, match="sentence marker"):
        api.decode(m.lm, a)
    with pytest.raises(ArsDecodeError, match="method"):
        api.decode(m.lm, a, method="beam")


def test_derivations_are_counted_once_with_ambiguity(random_lms):
    """Two derivations of the same labelled tree (A -> x and B -> x under S) are two
    objects: ln Z sums both (the documented choice: derivations, not trees)."""
    from arsdecode.trees import TreeAutomaton

    m = random_lms[0]
    x = m.words[0]
    a = TreeAutomaton.from_rules("S", [("S", "f", ["A"], -0.5), ("S", "f", ["B"], -0.7),
                                       ("A", x, [], -0.1), ("B", x, [], -0.2)])
    b = brute_tree(m.lm, a)
    assert len(b.derivations) == 2 and len(set(b.yields)) == 1
    lz, _, _ = api.log_partition(m.lm, a, method="full")
    assert abs(lz - b.log_Z) <= TOL
    assert Counter(p.tree for p in api.kbest(m.lm, a, 5)) == Counter({f"f({x})": 2})


def test_a_lattice_as_a_right_branching_tree_gives_the_lattice_answers(random_lms):
    """Best path, its ln p, the k best and ln Z: the tree methods on the chain automaton
    against the lattice methods (arsdecode.decode, decode_kbest, exact marginals)."""
    import arsdecode
    from arsdecode.lattice import Lattice
    from arsdecode.trees.convert import right_branching

    rng = random.Random(3)
    for m in random_lms:
        for _ in range(3):
            lat = Lattice.from_lists([
                [(w, round(rng.uniform(-2, 0), 6)) for w in rng.sample(m.words, min(
                    len(m.words), rng.randint(1, 3)))] for _ in range(rng.randint(1, 6))])
            a = right_branching(lat)
            paths = brute_target(m.lm, lat)
            best = arsdecode.decode(m.lm, lat)
            lz = arsdecode.marginals(m.lm, lat, method="full").log_Z
            top = arsdecode.decode_kbest(m.lm, lat, 4, method="full")
            for method in ("full", "ars"):
                r = api.decode(m.lm, a, method=method)
                assert abs(r.log_p - best.log_p) <= TOL
                assert abs(paths.score(r.tokens) - best.log_p) <= TOL  # the same path, or a tie
                got = api.kbest(m.lm, a, 4, method=method)
                np.testing.assert_allclose([p.log_p for p in got],
                                           [p.log_p for p in top.paths], atol=1e-8)
            assert abs(api.log_partition(m.lm, a, method="full")[0] - lz) <= 1e-8


def test_a_deep_chain_needs_no_recursion_limit(random_lms):
    """A 1,200-word lattice as a chain automaton is 1,200 levels deep: the expansion and the
    lazy k-best recurse per level, within a raised limit (forest.deep_recursion)."""
    import arsdecode
    from arsdecode.lattice import Lattice
    from arsdecode.trees.convert import right_branching

    m = random_lms[1]
    lat = Lattice.from_lists([[(m.words[i % len(m.words)], 0.0),
                               (m.words[(i + 1) % len(m.words)], -1.0)] for i in range(1200)])
    a = right_branching(lat)
    best = arsdecode.decode(m.lm, lat)
    assert abs(api.decode(m.lm, a, method="full").log_p - best.log_p) <= 1e-7
    top = api.kbest(m.lm, a, 2, method="full")
    assert abs(top[0].log_p - best.log_p) <= 1e-7 and top[1].log_p <= top[0].log_p


def test_pruning_drops_nodes_but_not_the_best(cases):
    from arsdecode.trees.intersect import decode_pruning

    smaller = 0
    for m, a, b in cases:
        t = as_target_model(m.lm)
        whole = intersect(a, ContextStates(t))
        pruned = intersect(a, ContextStates(t), prune=decode_pruning(a, t))
        assert pruned.num_nodes <= whole.num_nodes
        assert abs(pruned.viterbi()[0] - b.best_log_p) <= TOL
        smaller += pruned.num_nodes < whole.num_nodes
    assert smaller > len(cases) // 4


def test_every_tree_of_probability_zero_is_one_error_for_every_method(tmp_path):
    """A model with -inf n-grams, and an automaton whose only yields use them."""
    import maxarpa
    from arsdecode.testing.random_arpa import random_arpa_text
    from arsdecode.trees import TreeAutomaton
    from arsdecode.trees.errors import EmptyLanguageError

    text = random_arpa_text(random.Random(5), 2, 3, 0.5, density=1.0, neg_inf_fraction=0.5)
    (tmp_path / "z.arpa").write_text(text)
    lm = maxarpa.load(tmp_path / "z.arpa")
    t = as_target_model(lm)
    words = [w for w in lm.vocab if w not in ("<s>", "</s>")]
    zero = [(a, b) for a in words for b in words
            if t.log_prob(np.array([[t.ids([a])[0]]]), t.ids([b]))[0] == -math.inf]
    assert zero, "the model has no -inf bigram"
    a_, b_ = zero[0]
    auto = TreeAutomaton.from_rules("S", [("S", "f", ["A", "B"], 0.0), ("A", a_, [], 0.0),
                                          ("B", b_, [], 0.0)], "z.json")
    for method in ("full", "ars"):
        with pytest.raises(EmptyLanguageError, match="z.json: every tree has probability zero"):
            api.decode(lm, auto, method=method)
        with pytest.raises(EmptyLanguageError):
            api.sample(lm, auto, 3, seed=0, method=method)
    with pytest.raises(ArsDecodeError, match="cannot read"):
        TreeAutomaton.read(tmp_path / "missing.json")


def test_results_print_the_tree_tokens_and_certificate(cases):
    import json

    m, a, b = cases[0]
    r = api.decode(m.lm, a, method="ars").to_json()
    assert {"tree", "tokens", "log_p", "certified", "method", "rules"} <= set(r)
    assert r["tree"] in b.near_best(1e-7) and r["certified"] is True and r["method"] == "ars"
    s = api.sample(m.lm, a, 4, seed=0, method="full").to_json()
    assert len(s["trees"]) == 4 and s["method"] == "full" and s["log_Z_ci"] == [s["log_Z"]] * 2
    k = [p.to_json() for p in api.kbest(m.lm, a, 2)]
    assert all({"tree", "tokens", "rules", "log_p"} <= set(x) for x in k)
    json.dumps([r, s, k, api.marginals(m.lm, a, method="full").to_json()])


def test_wrong_argument_types_are_one_line_argument_errors(cases):
    from arsdecode.errors import ArgumentError

    m, a, _ = cases[0]
    with pytest.raises(ArgumentError, match=r"decode\(\): automaton must be a TreeAutomaton"):
        api.decode(m.lm, "grammar.alto")
    with pytest.raises(ArgumentError, match=r"sample\(\): target must be a loaded model"):
        api.sample("model.arpa", a, 3)
    with pytest.raises(ArgumentError, match=r"kbest\(\): k must be an int >= 1"):
        api.kbest(m.lm, a, 0)
    with pytest.raises(ArgumentError, match=r"sample\(\): n must be an int >= 0"):
        api.sample(m.lm, a, 2.5)
