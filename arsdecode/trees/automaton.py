"""A cycle-free probabilistic regular tree automaton (pRTA): the tree input kind.

A rule `q -> label(q1 .. qk)` has an ln weight; a rule with no children is a leaf, whose label
is a word of the yield, except the label `null`, which yields nothing. One start state. The
automaton must be cycle-free (every state's trees are finite and finitely many), every state
named must have a rule, and the start's language must have a tree of non-zero weight.

Derivations, not trees (the choice issue 31 asks for): the engine's objects are derivations,
trees of rule ids. An ambiguous automaton (two derivations with the same labelled tree, e.g.
`A -> x` and `B -> x` under `S -> f(A)` / `S -> f(B)`) gives two objects, each weighed by its
own rules: weight(d) = sum of its rules' ln weights + ln p_target(<s> yield(d) </s>). Why: it
is the weighting the dynamic programs (inside, Viterbi, the intersection) compute, sampling
derivations and forgetting which rules made them samples trees from the summed weights, and
the best derivation is what a parser returns (the best tree would be NP-hard to find for an
ambiguous automaton, as for the best string of a weighted non-deterministic automaton).

Why arrays and Python loops: the automata are charts and forests of thousands of rules; the
inside pass is one loop over the rules in topological order, and `weights` can be replaced
(an importance sampler adapts them, Teichmann et al.'s theta) without rebuilding anything.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import (
    EmptyLanguageError,
    TreeCycleError,
    TreeFormatError,
    TreeWeightError,
    UndefinedStateError,
    where,
)
from .forest import logsumexp
from .formats import RawRule, from_json_object, parse_alto, parse_json, to_alto, to_json_object

NULL = "null"  # the label of a leaf that yields nothing


@dataclass(frozen=True)
class Rule:
    """`states[lhs] -> label(states[c] for c in children)` with ln weight `weight`."""

    lhs: int
    label: str
    children: tuple[int, ...]
    weight: float
    line: int | None = None  # where the rule was read (for error messages)

    @property
    def is_leaf(self) -> bool:
        return not self.children


@dataclass(frozen=True)
class Derivation:
    """A derivation: the rule used at the root and the derivations of its children."""

    rule: int
    children: tuple[Derivation, ...] = ()


class TreeAutomaton:
    """A checked cycle-free pRTA (see the module docstring); build it with `from_rules`,
    `from_json`, `from_alto` or `read`."""

    def __init__(self, states: Sequence[str], start: int, rules: Sequence[Rule],
                 source: str = "<automaton>") -> None:
        self.states: tuple[str, ...] = tuple(states)
        self.start = start
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.source = source
        by_lhs: list[list[int]] = [[] for _ in self.states]
        for i, r in enumerate(self.rules):
            by_lhs[r.lhs].append(i)
        self.rules_by_lhs: tuple[tuple[int, ...], ...] = tuple(map(tuple, by_lhs))
        self._check_defined()
        self.topo: tuple[int, ...] = self._topological_order()  # children before parents
        self.weights = np.array([r.weight for r in self.rules], dtype=np.float64)
        if not self.rules_by_lhs[start] or self.inside()[start] == -math.inf:
            raise EmptyLanguageError(f"{where(source, None)}the automaton's language is "
                                     f"empty: every tree from {self.states[start]!r} has "
                                     "weight zero")

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def from_rules(cls, start: str, rules: Iterable[RawRule | tuple],
                   source: str = "<automaton>") -> TreeAutomaton:
        """From named rules: `RawRule`s or tuples (lhs, label, children, ln weight)."""
        raw = [r if isinstance(r, RawRule) else RawRule(r[0], r[1], tuple(r[2]), float(r[3]))
               for r in rules]
        index: dict[str, int] = {}
        for r in raw:
            index.setdefault(r.lhs, len(index))
        for r in raw:
            if not (r.weight < math.inf):  # NaN or +inf, from a caller's tuples
                raise TreeWeightError(f"{where(source, r.line)}weight {r.weight!r} of rule "
                                      f"{r.lhs} -> {r.label} is not an ln weight")
            for c in r.children:
                if c not in index:
                    raise UndefinedStateError(
                        f"{where(source, r.line)}state {c!r} (a child of rule {_show(r)}) has "
                        "no rule")
        if start not in index:
            raise UndefinedStateError(f"{where(source, None)}the start state {start!r} has no "
                                      "rule")
        states = list(index)
        rules_ = [Rule(index[r.lhs], r.label, tuple(index[c] for c in r.children), r.weight,
                       r.line) for r in raw]
        return cls(states, index[start], rules_, source)

    @classmethod
    def from_json(cls, data: str | dict, source: str = "<json>") -> TreeAutomaton:
        """From JSON text or a decoded object (ln weights)."""
        start, rules = parse_json(data, source) if isinstance(data, str) else \
            from_json_object(data, source)
        return cls.from_rules(start, rules, source)

    @classmethod
    def from_alto(cls, text: str, source: str = "<alto>") -> TreeAutomaton:
        """From Alto/IRTG weighted tree automaton text (probabilities in brackets)."""
        start, rules = parse_alto(text, source)
        return cls.from_rules(start, rules, source)

    @classmethod
    def read(cls, path: str | Path) -> TreeAutomaton:
        """From a file: JSON if its first non-blank character is `{`, else Alto text."""
        try:
            text = Path(path).read_text(encoding="utf-8", errors="surrogateescape")
        except OSError as err:
            raise TreeFormatError(f"{path}: cannot read: {err.strerror or err}") from None
        if text.lstrip().startswith("{"):
            return cls.from_json(text, str(path))
        return cls.from_alto(text, str(path))

    def raw_rules(self) -> list[RawRule]:
        return [RawRule(self.states[r.lhs], r.label, tuple(self.states[c] for c in r.children),
                        r.weight, r.line) for r in self.rules]

    def to_json(self) -> dict:
        """The JSON form (ln weights)."""
        return to_json_object(self.states[self.start], self.raw_rules())

    def to_alto(self) -> str:
        """The Alto/IRTG text form (probabilities: exp of the ln weights)."""
        return to_alto(self.states[self.start], self.raw_rules())

    def with_weights(self, weights: Sequence[float] | np.ndarray) -> TreeAutomaton:
        """The same automaton with other ln rule weights (one per rule, in rule order)."""
        w = np.asarray(weights, dtype=np.float64)
        rules = [Rule(r.lhs, r.label, r.children, float(x), r.line)
                 for r, x in zip(self.rules, w, strict=True)]
        return TreeAutomaton(self.states, self.start, rules, self.source)

    # ---- checks ---------------------------------------------------------------------------

    def _check_defined(self) -> None:
        for r in self.rules:
            for c in r.children:
                if not self.rules_by_lhs[c]:
                    raise UndefinedStateError(f"{where(self.source, r.line)}state "
                                              f"{self.states[c]!r} (a child of rule "
                                              f"{self.show_rule(r)}) has no rule")

    def _topological_order(self) -> tuple[int, ...]:
        """States children-first, by an iterative depth-first search; a cycle is an error
        naming the rule that closes it (the rule whose child is still on the search path)."""
        color = [0] * len(self.states)  # 0 new, 1 on the path, 2 done
        order: list[int] = []
        for root in range(len(self.states)):
            if color[root]:
                continue
            color[root] = 1
            stack: list[tuple[int, int, int]] = [(root, 0, 0)]  # state, rule k, child j
            while stack:
                q, k, j = stack.pop()
                rules = self.rules_by_lhs[q]
                if k == len(rules):
                    color[q] = 2
                    order.append(q)
                    continue
                rule = self.rules[rules[k]]
                if j == len(rule.children):
                    stack.append((q, k + 1, 0))
                    continue
                stack.append((q, k, j + 1))
                c = rule.children[j]
                if color[c] == 1:
                    path = [self.states[s] for s, _, _ in stack] + [self.states[c]]
                    path = path[path.index(self.states[c]):]
                    raise TreeCycleError(f"{where(self.source, rule.line)}cycle "
                                         f"{' -> '.join(path)}, closed by rule "
                                         f"{self.show_rule(rule)}")
                if color[c] == 0:
                    color[c] = 1
                    stack.append((c, 0, 0))
        return tuple(order)

    # ---- the automaton alone --------------------------------------------------------------

    def _weights(self, weights: Sequence[float] | np.ndarray | None) -> np.ndarray:
        if weights is None:
            return self.weights
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (len(self.rules),):
            raise ValueError(f"weights: expected {len(self.rules)} ln rule weights, got "
                             f"shape {w.shape}")
        return w

    def inside(self, weights: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
        """ln of the summed weight of each state's derivations (the automaton alone)."""
        w = self._weights(weights)
        ins = np.full(len(self.states), -math.inf)
        for q in self.topo:
            terms = [float(w[i]) + sum(float(ins[c]) for c in self.rules[i].children)
                     for i in self.rules_by_lhs[q]]
            ins[q] = logsumexp(terms)
        return ins

    def log_partition(self, weights: Sequence[float] | np.ndarray | None = None) -> float:
        """ln Z of the automaton alone: the inside weight of the start state."""
        return float(self.inside(weights)[self.start])

    def expected_counts(self, weights: Sequence[float] | np.ndarray | None = None
                        ) -> np.ndarray:
        """E[count of each rule] under the automaton's normalised distribution (inside-outside);
        the gradient of ln Z with respect to the ln weights."""
        w = self._weights(weights)
        ins = self.inside(w)
        out = np.full(len(self.states), -math.inf)
        out[self.start] = 0.0
        acc: list[list[float]] = [[] for _ in self.states]
        post = np.zeros(len(self.rules))
        z = ins[self.start]
        for q in reversed(self.topo):
            if acc[q]:
                out[q] = logsumexp(acc[q])
            if out[q] == -math.inf:
                continue
            for i in self.rules_by_lhs[q]:
                kids = self.rules[i].children
                total = out[q] + float(w[i]) + sum(float(ins[c]) for c in kids)
                post[i] = math.exp(total - z) if total > -math.inf else 0.0
                for c in kids:
                    acc[c].append(total - float(ins[c]))
        return post

    def viterbi(self, weights: Sequence[float] | np.ndarray | None = None
                ) -> tuple[float, Derivation]:
        """The best derivation of the automaton alone and its ln weight."""
        w = self._weights(weights)
        best = np.full(len(self.states), -math.inf)
        arg = [-1] * len(self.states)
        for q in self.topo:
            for i in self.rules_by_lhs[q]:
                v = float(w[i]) + sum(float(best[c]) for c in self.rules[i].children)
                if arg[q] < 0 or v > best[q]:
                    best[q], arg[q] = v, i
        return float(best[self.start]), self._build(arg)

    def _build(self, choice: Sequence[int]) -> Derivation:
        """The derivation that uses rule choice[q] at every state q (from the start)."""
        chosen, stack = [], [self.start]
        while stack:
            r = choice[stack.pop()]
            chosen.append(r)
            stack.extend(reversed(self.rules[r].children))
        return self.from_preorder(chosen)

    def from_preorder(self, rules: Sequence[int]) -> Derivation:
        """The derivation whose rule ids, in pre-order (root, then each child's subtree
        left to right), are `rules`."""
        built: list[Derivation] = []
        for r in reversed(rules):
            k = len(self.rules[r].children)
            built.append(Derivation(r, tuple(built.pop() for _ in range(k))))
        return built[0]

    def sampler(self, weights: Sequence[float] | np.ndarray | None = None) -> TreeSampler:
        """A sampler of derivations in proportion to their weight (the automaton alone)."""
        return TreeSampler(self, self._weights(weights))

    def sample(self, rng: np.random.Generator, weights: Sequence[float] | np.ndarray | None
               = None) -> Derivation:
        """One derivation drawn from the automaton alone (an inside pass per call: draw many
        with `sampler(weights).draw(rng)`)."""
        return self.sampler(weights).draw(rng)

    # ---- a derivation ---------------------------------------------------------------------

    def preorder(self, d: Derivation) -> list[int]:
        """The rule ids of a derivation, root first, children left to right."""
        out, stack = [], [d]
        while stack:
            node = stack.pop()
            out.append(node.rule)
            stack.extend(reversed(node.children))
        return out

    def yield_of(self, d: Derivation) -> list[str]:
        """The words of a derivation's leaves, left to right (`null` leaves yield nothing)."""
        return [self.rules[r].label for r in self.preorder(d)
                if not self.rules[r].children and self.rules[r].label != NULL]

    def rule_counts(self, d: Derivation) -> np.ndarray:
        """How many times each rule is used in `d` (int64, one entry per rule)."""
        return np.bincount(np.asarray(self.preorder(d), dtype=np.int64),
                           minlength=len(self.rules)).astype(np.int64)

    def derivation_weight(self, d: Derivation, weights: Sequence[float] | np.ndarray | None
                          = None) -> float:
        """The ln weight of `d` under the automaton alone (sum of its rules' weights)."""
        w = self._weights(weights)
        return math.fsum(float(w[r]) for r in self.preorder(d))

    def tree_string(self, d: Derivation) -> str:
        """The tree, bracketed: `f(the,g(cat,sat))` (labels with `(),'` or blanks quoted)."""
        parts: list[str] = []
        stack: list[Derivation | str] = [d]
        while stack:
            node = stack.pop()
            if isinstance(node, str):
                parts.append(node)
                continue
            rule = self.rules[node.rule]
            parts.append(_label(rule.label))
            if node.children:
                parts.append("(")
                stack.append(")")
                for k, child in enumerate(reversed(node.children)):
                    stack.append(child)
                    if k < len(node.children) - 1:
                        stack.append(",")
        return "".join(parts)

    def show_rule(self, r: Rule) -> str:
        kids = "(" + ", ".join(self.states[c] for c in r.children) + ")" if r.children else ""
        return f"`{self.states[r.lhs]} -> {r.label}{kids}`"

    def __repr__(self) -> str:
        return (f"TreeAutomaton({len(self.states)} states, {len(self.rules)} rules, start "
                f"{self.states[self.start]!r})")


def _show(r: RawRule) -> str:
    kids = "(" + ", ".join(r.children) + ")" if r.children else ""
    return f"`{r.lhs} -> {r.label}{kids}`"


def _label(label: str) -> str:
    if any(ch in label for ch in "(),' \t") or not label:
        return "'" + label.replace("'", "\\'") + "'"
    return label


class TreeSampler:
    """Top-down sampling after one inside pass: at state q, rule i with probability
    exp(w_i + sum inside(children) - inside(q)); exact for the automaton alone."""

    def __init__(self, automaton: TreeAutomaton, weights: np.ndarray) -> None:
        self.automaton = automaton
        ins = automaton.inside(weights)
        self.log_Z = float(ins[automaton.start])
        self._rules: list[np.ndarray] = []
        self._cum: list[np.ndarray] = []
        for q, rules in enumerate(automaton.rules_by_lhs):
            logits = np.array([float(weights[i]) + sum(float(ins[c]) for c in
                                                       automaton.rules[i].children)
                               for i in rules], dtype=np.float64)
            if len(rules) and ins[q] > -math.inf:
                p = np.exp(logits - ins[q])
                cum = np.cumsum(p)
                cum /= cum[-1]
            else:
                cum = np.ones(len(rules))
            self._rules.append(np.asarray(rules, dtype=np.int64))
            self._cum.append(cum)

    def draw(self, rng: np.random.Generator) -> Derivation:
        return self.automaton.from_preorder(self.draw_preorder(rng))

    def draw_preorder(self, rng: np.random.Generator) -> list[int]:
        """One derivation's rule ids in pre-order (cheaper than building the tree)."""
        a = self.automaton
        chosen: list[int] = []
        stack = [a.start]
        while stack:
            q = stack.pop()
            cum = self._cum[q]
            k = int(np.searchsorted(cum, rng.random(), side="right")) if len(cum) > 1 else 0
            r = int(self._rules[q][min(k, len(cum) - 1)])
            chosen.append(r)
            stack.extend(reversed(a.rules[r].children))
        return chosen
