"""Brute-force references over every derivation of a small tree automaton.

Why brute force: the tree methods (`arsdecode.trees`) share contexts between subtrees through
the intersection's (state, context in, context out) items; a mistake in how a leaf gets its
left context from another subtree would be invisible to a reference that did the same. Here
every derivation is enumerated on its own (a product over each rule's children) and its yield
is scored by the target's own `log_prob`, from `<s>` to `</s>` (`brute.target_path_log`):

    ln weight(d) = sum of d's rule weights + ln p(<s> yield(d) </s>)

Also `random_tree_automaton`: small random acyclic automata over a word list, ambiguous (two
rules with the same label, null leaves, shared states), for the tests and the experiments.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from arsdecode.model import ModelLike, as_target_model
from arsdecode.testing.brute import target_path_log
from arsdecode.trees.automaton import NULL, Derivation, TreeAutomaton
from arsdecode.trees.forest import logsumexp


def derivations(automaton: TreeAutomaton, limit: int = 200_000) -> list[Derivation]:
    """Every derivation from the start state (refused above `limit`: brute force is for small
    automata)."""
    memo: dict[int, list[Derivation]] = {}
    for q in automaton.topo:
        out: list[Derivation] = []
        for i in automaton.rules_by_lhs[q]:
            kids = [memo[c] for c in automaton.rules[i].children]
            if math.prod(len(k) for k in kids) + len(out) > limit:
                raise ValueError(f"more than {limit} derivations: too large for brute force")
            out.extend(Derivation(i, tuple(combo)) for combo in itertools.product(*kids))
        memo[q] = out
    return memo[automaton.start]


@dataclass(frozen=True)
class BruteTreeResult:
    """Every derivation with its yield and exact ln weight (unnormalised)."""

    automaton: TreeAutomaton
    derivations: list[Derivation]
    yields: list[tuple[str, ...]]
    log_p: list[float]

    @property
    def best_log_p(self) -> float:
        return max(self.log_p)

    @property
    def log_Z(self) -> float:
        return logsumexp(self.log_p)

    def ranked(self) -> list[float]:
        """Every ln weight, best first."""
        return sorted(self.log_p, reverse=True)

    def near_best(self, tol: float) -> set[str]:
        """Bracketed trees of the derivations within `tol` of the best (ties)."""
        return {self.automaton.tree_string(d) for d, lp in zip(self.derivations, self.log_p,
                                                               strict=True)
                if lp >= self.best_log_p - tol}

    def distribution(self) -> dict[tuple[int, ...], float]:
        """p(d)/Z per derivation (keyed by its rules in pre-order) of non-zero weight."""
        lz = self.log_Z
        return {tuple(self.automaton.preorder(d)): math.exp(lp - lz)
                for d, lp in zip(self.derivations, self.log_p, strict=True) if lp > -math.inf}

    def rule_posteriors(self) -> np.ndarray:
        """E[uses of each rule] under p(d)/Z."""
        post = np.zeros(len(self.automaton.rules))
        lz = self.log_Z
        for d, lp in zip(self.derivations, self.log_p, strict=True):
            if lp > -math.inf:
                post += math.exp(lp - lz) * self.automaton.rule_counts(d)
        return post


def brute_tree(model: ModelLike, automaton: TreeAutomaton, limit: int = 200_000,
               path_log: Callable[[tuple[str, ...]], float] | None = None) -> BruteTreeResult:
    """Every derivation of `automaton` scored independently by the target's `log_prob`, or by
    `path_log(yield)` (ln p(<s> yield </s>) from a scorer independent of the target's code)."""
    target = as_target_model(model)
    score = path_log or (lambda y: target_path_log(target, y))
    ds = derivations(automaton, limit)
    yields = [tuple(automaton.yield_of(d)) for d in ds]
    scores: dict[tuple[str, ...], float] = {}
    log_p = []
    for d, y in zip(ds, yields, strict=True):
        if y not in scores:
            scores[y] = score(y)
        a = automaton.derivation_weight(d)
        log_p.append(-math.inf if a == -math.inf or scores[y] == -math.inf else a + scores[y])
    return BruteTreeResult(automaton, ds, yields, log_p)


def random_tree_automaton(rng: random.Random, words: Sequence[str], states: int = 4,
                          max_children: int = 3, null_rate: float = 0.15) -> TreeAutomaton:
    """A random acyclic automaton: state i's rules have children among states > i, the last
    state has leaves only; labels repeat across rules (ambiguity), some leaves are `null`."""
    names = [f"Q{i}" for i in range(states)]
    rules: list[tuple[str, str, list[str], float]] = []
    for i, q in enumerate(names):
        n_rules = rng.randint(1, 3)
        for _ in range(n_rules):
            if i == states - 1 or rng.random() < 0.35:
                label = NULL if rng.random() < null_rate else rng.choice(list(words))
                rules.append((q, label, [], round(rng.uniform(-2.0, 0.5), 6)))
            else:
                k = rng.randint(1, max_children)
                kids = [names[rng.randint(i + 1, states - 1)] for _ in range(k)]
                rules.append((q, rng.choice(["f", "g"]), kids, round(rng.uniform(-1.5, 0.5),
                                                                     6)))
    for q in names:  # every state defined
        if not any(r[0] == q for r in rules):
            rules.append((q, rng.choice(list(words)), [], -0.5))
    return TreeAutomaton.from_rules(names[0], rules, "<random>")
