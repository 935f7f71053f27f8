"""The tree baselines of issue 31 against independent truth on small automata.

- the batched derivation sampler draws each derivation with its product of rule probabilities
  (chi-square against enumeration);
- Teichmann et al.'s adaptive importance sampler converges to the exact E_G[1] (= 1 on a
  Dirichlet chart) and E_G[f] (inside-outside, and brute force with an LM) within stated
  tolerances at a fixed seed;
- the randomized inside DP is exact when it keeps every item (brute force over every
  derivation, scored by `target_path_log`), and unbiased in Z when it samples (the mean of
  Z_hat / Z over seeded runs within 4 standard errors of 1);
- Dirichlet charts are normalised per state (every state's rule probabilities sum to 1) and
  have Z = 1.
Truth never comes from the code under test: derivations are enumerated recursively here, and
yields scored with the interface's own `log_prob` one factor at a time.
"""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

import maxarpa
from arsdecode.lattice import Lattice
from arsdecode.methods.full import full_log_partition
from arsdecode.model import as_target_model
from arsdecode.testing.brute import chi_square_pvalue, target_path_log
from arsdecode.testing.random_arpa import random_arpa_text
from arsdecode.trees.automaton import TreeAutomaton
from arsdecode.trees.charts import (
    bracket_mask,
    cky_chart,
    lattice_chart,
    log_dirichlet,
    shape_weights,
)
from arsdecode.trees.importance import adaptive_importance_sampling, exact_samples, rule_count
from arsdecode.trees.randomized import randomized_inside
from arsdecode.trees.rule_table import table_of
from arsdecode.trees.tree_batch import YieldScorer, log_rule_probs, sample_batch


def derivations(a: TreeAutomaton, q: int) -> list[tuple[tuple[int, ...], tuple[str, ...]]]:
    """Every derivation below state q as (rule ids in pre-order, yield)."""
    out = []
    for r in a.rules_by_lhs[q]:
        rule = a.rules[r]
        partial: list[tuple[tuple[int, ...], tuple[str, ...]]] = [
            ((r,), () if rule.children or rule.label == "null" else (rule.label,))]
        for c in rule.children:
            partial = [(ra + rb, ya + yb) for ra, ya in partial for rb, yb in derivations(a, c)]
        out.extend(partial)
    return out


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    path = tmp_path_factory.mktemp("trees_baselines") / "r.arpa"
    path.write_text(random_arpa_text(random.Random(31), 3, 4, 0.5))
    model = maxarpa.load(path)
    assert model.positive_backoffs > 0
    return model


def small_lattice(lm, rng: random.Random, length: int) -> Lattice:
    words = [w for w in lm.vocab if w not in ("<s>", "</s>", "<unk>")]
    return Lattice.from_lists([[(w, rng.uniform(-2, 0)) for w in rng.sample(words, 2)]
                               for _ in range(length)])


def truth(a: TreeAutomaton, lm, mask_rules: set[int]) -> tuple[float, float]:
    """(ln Z, E_G[count of mask_rules]) by enumeration."""
    target = as_target_model(lm)
    logs, fs = [], []
    for rules, y in derivations(a, a.start):
        logs.append(sum(a.rules[r].weight for r in rules) + target_path_log(target, list(y)))
        fs.append(sum(r in mask_rules for r in rules))
    logs_a = np.array(logs)
    top = logs_a.max()
    p = np.exp(logs_a - top)
    return float(top + math.log(p.sum())), float(np.dot(p, fs) / p.sum())


def test_dirichlet_charts_sum_to_one_per_state():
    a = cky_chart(7, 0.1, np.random.default_rng(3))
    for q, rules in enumerate(a.rules_by_lhs):
        total = math.fsum(math.exp(a.rules[r].weight) for r in rules)
        assert abs(total - 1.0) < 1e-12, a.states[q]
    assert len(a.states) == 7 * 8 // 2 and len(a.rules) == 7 + sum(
        (j - i - 1) for i in range(7) for j in range(i + 2, 8))
    assert abs(a.log_partition()) < 1e-12  # a normalised pRTA: Z = E_G[1] = 1
    assert len(derivations(a, a.start)) == 132  # Catalan(6) binary bracketings of 7 leaves
    d = log_dirichlet(0.1, 50, np.random.default_rng(0))
    assert np.isfinite(d).all() and abs(math.fsum(np.exp(d)) - 1) < 1e-12


def test_batched_sampler_matches_the_rule_product():
    a = cky_chart(4, 0.5, np.random.default_rng(5))
    table = table_of(a)
    theta = np.random.default_rng(6).normal(size=table.n_rules)
    log_pi = log_rule_probs(table, theta)
    per_rule = table.to_automaton_order(log_pi)
    dist = {}
    for rules, _ in derivations(a, a.start):
        dist[tuple(sorted(rules))] = math.exp(sum(per_rule[r] for r in rules))
    assert abs(sum(dist.values()) - 1) < 1e-12
    batch = sample_batch(table, log_pi, 20000, np.random.default_rng(7))
    drawn = [[] for _ in range(batch.n)]
    for t, r in zip(batch.tree.tolist(), batch.rule.tolist(), strict=True):
        drawn[t].append(int(table.rule_ids[r]))
    pval = chi_square_pvalue([tuple(sorted(d)) for d in drawn], dist)
    assert pval > 1e-3
    yields = batch.yields(table)
    assert all(y == tuple(str(i) for i in range(4)) for y in yields)  # leaves left to right


def test_yields_follow_the_tree_order(lm):
    lat = small_lattice(lm, random.Random(2), 4)
    a = lattice_chart(lat, 0.5, np.random.default_rng(1))
    table = table_of(a)
    batch = sample_batch(table, log_rule_probs(table, np.zeros(table.n_rules)), 300,
                         np.random.default_rng(2))
    for y in batch.yields(table):
        assert len(y) == 4 and all(y[i] in lat.tokens[i] for i in range(4))
    scorer = YieldScorer(as_target_model(lm))
    y = batch.yields(table)[0]
    assert abs(scorer([y])[0] - target_path_log(as_target_model(lm), list(y))) < 1e-12


def test_ais_converges_to_the_exact_expectations_on_a_dirichlet_chart():
    a = cky_chart(8, 0.5, np.random.default_rng(11))
    table = table_of(a)
    mask = bracket_mask(table, 0, 5)
    exact_f = float(table.from_automaton_order(a.expected_counts())[mask].sum())
    res = adaptive_importance_sampling(table, np.random.default_rng(12), rounds=40,
                                       samples=500, f=rule_count(mask), normalised=True)
    assert abs(math.exp(res.log_Z) - 1.0) < 0.05  # E_G[1] = 1
    assert abs(res.mean_f - exact_f) < 0.05
    first, last = res.rounds[0], res.rounds[-1]
    assert last.ess > 3 * first.ess  # the adaptation moved theta towards G
    exact = exact_samples(table, np.random.default_rng(13), 20000).count(mask).mean()
    assert abs(exact - exact_f) < 0.05


def test_ais_with_an_lm_converges_to_brute_force(lm):
    lat = small_lattice(lm, random.Random(4), 4)
    a = lattice_chart(lat, 0.5, np.random.default_rng(3))
    table = table_of(a)
    mask = bracket_mask(table, 0, 3)
    log_z, ef = truth(a, lm, {int(r) for r in table.rule_ids[mask]})
    res = adaptive_importance_sampling(table, np.random.default_rng(5), rounds=30,
                                       samples=400, lm=lm, f=rule_count(mask))
    assert abs(res.log_Z - log_z) < 0.05
    assert abs(res.mean_f - ef) < 0.05


def test_randomized_inside_keeping_everything_is_the_exact_intersection(lm):
    rng = random.Random(8)
    for length in (1, 2, 3, 5):
        lat = small_lattice(lm, rng, length)
        a = lattice_chart(lat, 0.5, np.random.default_rng(length))
        table = table_of(a)
        mask = bracket_mask(table, 0, max(length - 1, 1))
        log_z, ef = truth(a, lm, {int(r) for r in table.rule_ids[mask]})
        res = randomized_inside(table, lm, np.random.default_rng(0), top=10**6, sampled=0,
                                f_mask=mask)
        assert abs(res.log_Z - log_z) < 1e-9, length
        assert abs(res.mean_f - ef) < 1e-9, length


def test_randomized_inside_on_an_ambiguous_automaton_with_null_leaves(lm):
    words = [w for w in lm.vocab if w not in ("<s>", "</s>", "<unk>")]
    a = TreeAutomaton.from_rules("S", [
        ("S", "f", ("A", "B"), -0.3), ("S", "g", ("B", "A"), -1.1), ("S", "h", ("A",), -2.0),
        ("A", words[0], (), -0.2), ("A", words[1], (), -0.9), ("A", "null", (), -1.5),
        ("B", "k", ("A", "A"), -0.4), ("B", words[2], (), -0.7)])
    log_z, _ = truth(a, lm, set())
    res = randomized_inside(table_of(a), lm, np.random.default_rng(0), top=10**6, sampled=0)
    assert abs(res.log_Z - log_z) < 1e-9


@pytest.mark.parametrize("lookahead", [True, False])
def test_randomized_inside_is_unbiased_in_z(lm, lookahead):
    lat = small_lattice(lm, random.Random(9), 5)
    a = lattice_chart(lat, 0.5, np.random.default_rng(9))
    table = table_of(a)
    log_z, _ = truth(a, lm, set())
    rng = np.random.default_rng(10)
    ratios = np.array([math.exp(randomized_inside(table, lm, rng, top=1, sampled=1,
                                                  lookahead=lookahead).log_Z
                                - log_z) for _ in range(400)])
    se = ratios.std(ddof=1) / math.sqrt(len(ratios))
    assert ratios.std() > 1e-3  # it did sample (the test has power)
    assert abs(ratios.mean() - 1.0) < 4 * se, (ratios.mean(), se)
    counts = Counter(np.round(ratios, 12))
    assert len(counts) > 5


def test_a_lattice_chart_factorises_into_shape_and_path(lm):
    """What experiments.trees_sms uses as its exact reference: Z = Z_shape * Z_lattice, and a
    bracket count has the shape automaton's expectation (against enumeration)."""
    lat = small_lattice(lm, random.Random(12), 4)
    a = lattice_chart(lat, 0.5, np.random.default_rng(12))
    table = table_of(a)
    mask = bracket_mask(table, 1, 4)
    log_z, ef = truth(a, lm, {int(r) for r in table.rule_ids[mask]})
    shape = a.with_weights(shape_weights(a))
    assert abs(shape.log_partition() + full_log_partition(lm, lat) - log_z) < 1e-9
    assert abs(table.from_automaton_order(shape.expected_counts())[mask].sum() - ef) < 1e-9
