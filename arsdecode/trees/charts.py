"""CKY-chart tree automata: Teichmann et al.'s evaluation automata and charts over SMS lattices.

Why: issue 31 measures the tree methods on the automata of Teichmann, Wansing & Koller's
section 5.1: for a length l, states <i,j> (0 <= i < j <= l), leaf rules <i,i+1> -> i() and
binary rules <i,j> -> *(<i,h>,<h,j>) for every i < h < j; G's rule probabilities given their
left-hand side drawn from a symmetric Dirichlet(gamma). Such a G is a normalised pRTA (each
state's rules sum to 1 and the automaton is cycle-free), so E_G[1] = Z = 1 exactly.

The n-gram case puts a keypad SMS lattice under the chart: the leaves of <i,i+1> are position
i's candidate words with their ln channel emissions, and the binary rules keep Dirichlet weights.
Every tree's yield is then a path of the lattice, and g(t) = A(t) * p_LM(<s> yield </s>).

A fact the experiments use as an independent reference: in such a chart the binary rules do not
depend on the words, so A(t) = S(shape) * E(words) and g factorises into a shape part and a
lattice-path part. Z = (the shape automaton's inside) * (the lattice's Z), and a function of
the shape alone (brackets) has the same expectation under G as under the shape automaton,
whatever the LM. The tree methods are not told this; it checks them.
"""

from __future__ import annotations

import math
import re

import numpy as np

from arsdecode.lattice import Lattice

from .automaton import TreeAutomaton
from .formats import RawRule
from .rule_table import RuleTable

START_FORMAT = "<{i},{j}>"
_STATE = re.compile(r"^<(\d+),(\d+)>$")


def state_name(i: int, j: int) -> str:
    return START_FORMAT.format(i=i, j=j)


def span_of(name: str) -> tuple[int, int] | None:
    """(i, j) of a chart state named `<i,j>`, else None."""
    m = _STATE.match(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def log_dirichlet(gamma: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """ln of a symmetric Dirichlet(gamma) draw, computed in log space.

    Why log space: with gamma = 0.1 a Gamma(gamma) variate is below 1e-300 with probability
    ~5%, so normalising plain draws gives exact zeros (rules of weight zero) that the Dirichlet
    never gives. ln Gamma(g) = ln Gamma(g + 1) + ln(U) / g (Marsaglia & Tsang's boost)."""
    if gamma <= 0 or size < 1:
        raise ValueError("need gamma > 0 and size >= 1")
    logs = np.log(rng.gamma(gamma + 1.0, size=size)) + np.log(rng.random(size)) / gamma
    top = float(np.max(logs))
    return logs - (top + math.log(float(np.exp(logs - top).sum())))


def _binary_rules(length: int, gamma: float, rng: np.random.Generator) -> list[RawRule]:
    rules: list[RawRule] = []
    for width in range(2, length + 1):
        for i in range(0, length - width + 1):
            j = i + width
            w = log_dirichlet(gamma, width - 1, rng)
            rules.extend(RawRule(state_name(i, j), "*", (state_name(i, h), state_name(h, j)),
                              float(w[h - i - 1])) for h in range(i + 1, j))
    return rules


def cky_chart(length: int, gamma: float, rng: np.random.Generator) -> TreeAutomaton:
    """The section 5.1 automaton with Dirichlet(gamma) rule probabilities (as ln weights)."""
    if length < 1:
        raise ValueError("length must be >= 1")
    leaves = [RawRule(state_name(i, i + 1), str(i), (), 0.0) for i in range(length)]
    return TreeAutomaton.from_rules(state_name(0, length),
                                    leaves + _binary_rules(length, gamma, rng), "<cky chart>")


def lattice_chart(lattice: Lattice, gamma: float, rng: np.random.Generator) -> TreeAutomaton:
    """A CKY chart whose <i,i+1> leaves are lattice position i's candidates
    (their ln emissions as weights) and whose binary rules have Dirichlet(gamma) weights."""
    length = len(lattice)
    if length < 1:
        raise ValueError("the lattice has no position")
    leaves = [RawRule(state_name(i, i + 1), tok, (), float(w))
              for i in range(length)
              for tok, w in zip(lattice.tokens[i], lattice.log_emissions[i], strict=True)]
    return TreeAutomaton.from_rules(state_name(0, length),
                                    leaves + _binary_rules(length, gamma, rng), "<sms chart>")


def bracket_mask(table: RuleTable, a: int, b: int) -> np.ndarray:
    """Rules that open a bracket (a binary constituent, width >= 2) inside the span [a, b]:
    f(t) = the number of t's nodes using them = t's brackets over that span."""
    inside = np.zeros(table.n_states, dtype=bool)
    for q, name in enumerate(table.states):
        span = span_of(name)
        inside[q] = span is not None and a <= span[0] and span[1] <= b and span[1] - span[0] > 1
    return inside[table.lhs] & (table.arity > 0)


def shape_weights(automaton: TreeAutomaton) -> np.ndarray:
    """The shape automaton S of the docstring (in the automaton's rule order, for `inside`,
    `expected_counts`, `viterbi` and `with_weights`): binary rules keep their weights, and the
    leaves of a state share ln 1 (each -ln of their number), so a leaf state's inside is 0 and
    S's inside is the sum over shapes of the binary weights alone."""
    leaves = np.zeros(len(automaton.states))
    for r in automaton.rules:
        leaves[r.lhs] += r.is_leaf
    return np.array([-np.log(leaves[r.lhs]) if r.is_leaf else r.weight
                     for r in automaton.rules])
