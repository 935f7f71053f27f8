"""A tree automaton's rules as flat arrays, for the baselines that sample or sum many trees.

Why arrays beside `automaton.TreeAutomaton`: the adaptive importance sampler of Teichmann et
al. draws every tree of a round together (the Figure 1 reproduction draws 10^8 trees), which
needs the rules of a state as one contiguous slice (`rule_start[q]:rule_start[q + 1]`) and the
children as one (R, max arity) array. Rows are the automaton's rules sorted by left-hand side
(stable); `rule_ids[row]` is the automaton's rule index, so per-row values (theta, posteriors)
map back with `to_automaton_order`. States keep the automaton's numbering; the automaton's
checks (cycles, undefined states, empty language) have run when the table is built.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .automaton import NULL, TreeAutomaton

NULL_LABEL = NULL


@dataclass(frozen=True)
class RuleTable:
    automaton: TreeAutomaton
    rule_ids: np.ndarray  # (R,) automaton rule index of each row
    lhs: np.ndarray  # (R,) int64, non-decreasing
    labels: tuple[str, ...]
    children: np.ndarray  # (R, K) int64, -1 padded
    arity: np.ndarray  # (R,) int64
    weight: np.ndarray  # (R,) float64, ln
    rule_start: np.ndarray  # (S + 1,) int64 offsets of each state's rows

    @property
    def n_rules(self) -> int:
        return len(self.lhs)

    @property
    def n_states(self) -> int:
        return len(self.automaton.states)

    @property
    def start(self) -> int:
        return self.automaton.start

    @property
    def states(self) -> tuple[str, ...]:
        return self.automaton.states

    def to_automaton_order(self, values: np.ndarray) -> np.ndarray:
        """Per-row values as per-rule values in the automaton's rule order."""
        out = np.empty_like(values)
        out[self.rule_ids] = values
        return out

    def from_automaton_order(self, values: np.ndarray) -> np.ndarray:
        """Per-rule values in the automaton's order as per-row values."""
        return np.asarray(values)[self.rule_ids]


def table_of(automaton: TreeAutomaton) -> RuleTable:
    """The array form of a checked automaton."""
    rules = automaton.rules
    lhs = np.array([r.lhs for r in rules], dtype=np.int64)
    order = np.argsort(lhs, kind="stable")
    k = max((len(r.children) for r in rules), default=0)
    children = np.full((len(rules), max(k, 1)), -1, dtype=np.int64)
    for row, i in enumerate(order.tolist()):
        kids = rules[i].children
        children[row, : len(kids)] = kids
    counts = np.bincount(lhs, minlength=len(automaton.states))
    return RuleTable(
        automaton=automaton, rule_ids=order, lhs=lhs[order],
        labels=tuple(rules[i].label for i in order.tolist()), children=children,
        arity=np.array([len(rules[i].children) for i in order.tolist()], dtype=np.int64),
        weight=automaton.weights[order].astype(np.float64),
        rule_start=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))
