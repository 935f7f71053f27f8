"""Tree-automaton files (issue 31): JSON and Alto/IRTG text, round trips, and every malformed
file as one line naming the file and the line (a cycle with the rule that closes it, an
undefined state, a bad weight, an empty language, bad syntax)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from arsdecode.errors import ArsDecodeError, NoPathError
from arsdecode.trees import Derivation, TreeAutomaton
from arsdecode.trees.errors import (
    EmptyLanguageError,
    TreeCycleError,
    TreeFormatError,
    TreeWeightError,
    UndefinedStateError,
)

ALTO = """// a small grammar
S! -> f(A, B) [0.5]
S -> g(B) [0.5]      // unary
A -> the [0.3]
A -> 'a b' [0.7]
/* a block
   comment */
B -> h(A, C)
C -> cat [1]
C -> null [2.0]
"""


def test_alto_is_read_with_its_weights_as_probabilities():
    a = TreeAutomaton.from_alto(ALTO, "g.alto")
    assert a.states[a.start] == "S" and len(a.rules) == 7
    assert [r.line for r in a.rules] == [2, 3, 4, 5, 8, 9, 10]
    np.testing.assert_allclose(np.exp(a.weights), [0.5, 0.5, 0.3, 0.7, 1.0, 1.0, 2.0])
    # Z = sum over S: 0.5 * A * B + 0.5 * B, A = 1, B = A * C = 3
    assert abs(a.log_partition() - math.log(0.5 * 3 + 0.5 * 3)) < 1e-12
    assert a.rules[3].label == "a b"


def test_round_trips_through_both_formats(tmp_path):
    a = TreeAutomaton.from_alto(ALTO, "g.alto")
    b = TreeAutomaton.from_json(json.dumps(a.to_json()))
    c = TreeAutomaton.from_alto(a.to_alto())
    for x in (b, c):
        assert [(r.lhs, r.label, r.children) for r in x.raw_rules()] == \
            [(r.lhs, r.label, r.children) for r in a.raw_rules()]
        np.testing.assert_allclose(x.weights, a.weights, rtol=0, atol=1e-15)
        assert x.states == a.states and abs(x.log_partition() - a.log_partition()) < 1e-12
    (tmp_path / "g.json").write_text(json.dumps(a.to_json(), indent=1))
    (tmp_path / "g.txt").write_text(ALTO)
    assert TreeAutomaton.read(tmp_path / "g.json").to_json() == a.to_json()
    assert TreeAutomaton.read(tmp_path / "g.txt").to_json() == a.to_json()


def test_a_derivation_prints_as_brackets_and_gives_yield_and_counts():
    a = TreeAutomaton.from_alto(ALTO)
    d = Derivation(0, (Derivation(3), Derivation(4, (Derivation(2), Derivation(6)))))
    assert a.tree_string(d) == "f('a b',h(the,null))"
    assert a.yield_of(d) == ["a b", "the"]
    assert a.rule_counts(d).tolist() == [1, 0, 1, 1, 1, 0, 1]
    assert a.from_preorder(a.preorder(d)) == d
    assert abs(a.derivation_weight(d) - math.log(0.5 * 0.7 * 1 * 0.3 * 2)) < 1e-12


JSON_OK = {"start": "S", "rules": [
    {"lhs": "S", "label": "f", "children": ["A", "B"], "weight": -0.3},
    {"lhs": "A", "label": "the", "children": [], "weight": -1.2},
    {"lhs": "B", "label": "cat", "children": [], "weight": "-inf"},
    {"lhs": "B", "label": "dog", "children": [], "weight": 0}]}


def _json_lines(obj) -> str:
    """One rule per line (rule k on line k + 3), as a person writes it."""
    rules = ",\n".join(json.dumps(r) for r in obj["rules"])
    return '{\n"start": ' + json.dumps(obj["start"]) + ',\n"rules": [\n' + rules + "\n]}\n"


def _bad_json(k: int, **change) -> str:
    obj = json.loads(json.dumps(JSON_OK))
    obj["rules"][k].update(change)
    return _json_lines(obj)


def test_json_is_read_with_ln_weights_and_minus_inf():
    a = TreeAutomaton.from_json(_json_lines(JSON_OK), "t.json")
    assert a.weights[2] == -math.inf and [r.line for r in a.rules] == [4, 5, 6, 7]
    assert abs(a.log_partition() - (-0.3 - 1.2)) < 1e-12


@pytest.mark.parametrize("text, error, message", [
    (_bad_json(1, children=["S"]), TreeCycleError,
     "t.json:5: cycle S -> A -> S, closed by rule `A -> the(S)`"),
    (_bad_json(0, children=["A", "X"]), UndefinedStateError,
     "t.json:4: state 'X' (a child of rule `S -> f(A, X)`) has no rule"),
    (_bad_json(3, weight="heavy"), TreeWeightError, "t.json:7: weight 'heavy' is not a number"),
    (_bad_json(3, weight=None), TreeWeightError, "t.json:7: weight None is not a number"),
    (_bad_json(2, weight=1e400), TreeWeightError, "t.json:6: weight inf is not an ln weight"),
    (_bad_json(3, weight="-inf"), EmptyLanguageError, "t.json: the automaton's language is "
     "empty"),
    (_bad_json(2, children="A"), TreeFormatError, "t.json:6: \"children\" must be a list"),
    (_bad_json(2, lhs=3), TreeFormatError, "t.json:6: \"lhs\" and \"label\" must be"),
    ('{"start": "S", "rules": [\n{"lhs": "S", "label": "a"},\n]}', TreeFormatError,
     "t.json:3: not JSON"),
    ('{"start": "Q", "rules": []}', UndefinedStateError, "t.json: the start state 'Q' has no rule"),
    ('[1, 2]', TreeFormatError, 't.json:1: a tree automaton is an object with "start"'),
])
def test_every_malformed_json_file_is_one_line(text, error, message):
    with pytest.raises(error) as info:
        TreeAutomaton.from_json(text, "t.json")
    assert str(info.value).startswith(message), str(info.value)
    assert "\n" not in str(info.value) and isinstance(info.value, ArsDecodeError)


@pytest.mark.parametrize("text, error, message", [
    ("S! -> f(A) [1]\nA -> g(B) [1]\nB -> h(A)", TreeCycleError,
     "g.alto:3: cycle A -> B -> A, closed by rule `B -> h(A)`"),
    ("S! -> f(S)", TreeCycleError, "g.alto:1: cycle S -> S, closed by rule `S -> f(S)`"),
    ("S! -> f(A, B) [1]\nA -> a", UndefinedStateError,
     "g.alto:1: state 'B' (a child of rule `S -> f(A, B)`) has no rule"),
    ("S! -> a [x]", TreeWeightError, "g.alto:1: weight [x] is not a number"),
    ("S! -> a [-0.5]", TreeWeightError, "g.alto:1: weight [-0.5] is not a probability"),
    ("S! -> a [nan]", TreeWeightError, "g.alto:1: weight [nan] is not a probability"),
    ("S! -> a [inf]", TreeWeightError, "g.alto:1: weight [inf] is not a probability"),
    ("S! -> a [0]\nS -> b [0]", EmptyLanguageError, "g.alto: the automaton's language is empty"),
    ("S! -> f(A) [1]\nA -> b [0]", EmptyLanguageError, "g.alto: the automaton's language"),
    ("S -> a", TreeFormatError, "g.alto: no final state"),
    ("S! -> a\nT! -> b", TreeFormatError, "g.alto:2: a second final state 'T'"),
    ("S! -> f(A,\nA -> a", TreeFormatError, "g.alto:1: not a rule"),
    ("S! -> f(A B)", TreeFormatError, "g.alto:1: not a rule"),
    ("S! f(A)", TreeFormatError, "g.alto:1: not a rule"),
    ("S! -> a [1] extra", TreeFormatError, "g.alto:1: not a rule"),
    ("\n\nS! -> a [1\n", TreeFormatError, "g.alto:3: cannot read"),
    ("", TreeFormatError, "g.alto: no final state"),
])
def test_every_malformed_alto_file_is_one_line(text, error, message):
    with pytest.raises(error) as info:
        TreeAutomaton.from_alto(text, "g.alto")
    assert str(info.value).startswith(message), str(info.value)
    assert "\n" not in str(info.value)


def test_empty_language_is_a_no_path_error():
    with pytest.raises(NoPathError):
        TreeAutomaton.from_alto("S! -> a [0]", "g.alto")


def test_replaced_weights_change_inside_and_sampling_only():
    """theta (Teichmann et al.) replaces the ln rule weights without rebuilding anything."""
    a = TreeAutomaton.from_alto(ALTO)
    theta = np.zeros(len(a.rules))
    # uniform weights: Z counts derivations: S -> f(A,B): 2 * (2*2) = 8, S -> g(B): 4
    assert abs(a.log_partition(theta) - math.log(12)) < 1e-12
    rng = np.random.default_rng(0)
    sampler = a.sampler(theta)
    draws = [tuple(sampler.draw_preorder(rng)) for _ in range(6000)]
    assert len(set(draws)) == 12
    counts = np.mean([a.rule_counts(a.from_preorder(list(d))) for d in draws], axis=0)
    np.testing.assert_allclose(counts, a.expected_counts(theta), atol=0.03)
    with pytest.raises(ValueError):
        a.inside(np.zeros(3))
    assert a.with_weights(theta).log_partition() == a.log_partition(theta)


def test_vectorised_counts_are_the_derivation_distribution():
    """sample_counts draws n derivations at once as rule counts: on a CKY chart (where the
    counts identify the derivation) their distribution is the one-by-one sampler's exact
    distribution (chi-squared against the inside weights)."""
    from arsdecode.lattice import Lattice
    from arsdecode.testing.brute import chi_square_pvalue
    from arsdecode.testing.brute_tree import derivations
    from arsdecode.trees import sample_counts
    from arsdecode.trees.convert import cky_chart

    lat = Lattice.from_lists([[("a", -0.1), ("b", -1.0)], [("c", 0.0)], [("d", -0.5),
                                                                      ("e", -0.2)], [("f", 0)]])
    a = cky_chart(lat, np.random.default_rng(2), 0.5)
    theta = np.random.default_rng(3).normal(size=len(a.rules))
    z = a.log_partition(theta)
    dist = {tuple(map(str, a.rule_counts(d))): math.exp(a.derivation_weight(d, theta) - z)
            for d in derivations(a)}
    assert abs(sum(dist.values()) - 1) < 1e-12 and len(dist) == 5 * 4  # Catalan(3) x 2 x 2
    counts = sample_counts(a, np.random.default_rng(0), 20000, theta)
    assert counts.shape == (20000, len(a.rules))
    assert chi_square_pvalue([tuple(map(str, c)) for c in counts], dist) > 1e-3
    np.testing.assert_allclose(counts.mean(axis=0), a.expected_counts(theta), atol=0.02)


def test_vectorised_counts_where_a_state_occurs_several_times_in_a_draw():
    """S -> f(A, A, A): A occurs three times in every draw (the multinomial branch); the
    counts' distribution is checked against the exact one."""
    from arsdecode.testing.brute import chi_square_pvalue
    from arsdecode.testing.brute_tree import derivations
    from arsdecode.trees import sample_counts

    a = TreeAutomaton.from_rules("S", [("S", "f", ["A", "A", "A"], 0.0),
                                       ("S", "g", ["A"], -1.0), ("A", "x", [], -0.3),
                                       ("A", "h", ["B"], 0.2), ("B", "y", [], 0.0),
                                       ("B", "null", [], -0.7)])
    z = a.log_partition()
    dist: dict[tuple[str, ...], float] = {}
    for d in derivations(a):
        key = tuple(map(str, a.rule_counts(d)))
        dist[key] = dist.get(key, 0.0) + math.exp(a.derivation_weight(d) - z)
    counts = sample_counts(a, np.random.default_rng(5), 20000)
    assert (counts[:, 0] * 3 + counts[:, 1] == counts[:, 2] + counts[:, 3]).all()
    assert chi_square_pvalue([tuple(map(str, c)) for c in counts], dist) > 1e-3
    np.testing.assert_allclose(counts.mean(axis=0), a.expected_counts(), atol=0.03)
