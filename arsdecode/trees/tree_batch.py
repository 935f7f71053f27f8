"""Many derivations of a tree automaton drawn at once, as arrays of nodes, and their yields.

Why batched: the adaptive importance sampler draws `ps` trees per round for 100 rounds and 100
repetitions (Teichmann et al.'s Figure 1: up to 2 * 10^7 trees per panel). Drawing tree by tree
in Python costs microseconds per node; drawing the whole round level by level costs one numpy
pass per tree depth. The draw is the paper's section 2.3 (each open state replaced by a rule
drawn from P(rule | state) = softmax of the state's parameters), only breadth first: the
probability of a derivation is the same product of rule probabilities whatever the order in
which its states are expanded.

`TreeBatch` keeps, per node, its tree, rule, parent and child slot, which is all a rule-count
gradient needs; yields (the words of the leaves, left to right) are computed on demand.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arsdecode.core.semiring import LogSumExp, draw_in_segments
from arsdecode.model import TargetModel

from .rule_table import NULL_LABEL, RuleTable


@dataclass(frozen=True)
class TreeBatch:
    """`n` derivations; node arrays in creation order (a parent before its children)."""

    n: int
    tree: np.ndarray  # (N,) int64: which derivation the node belongs to
    rule: np.ndarray  # (N,) int64
    parent: np.ndarray  # (N,) int64, -1 at a root
    slot: np.ndarray  # (N,) int64, the node's position among its parent's children
    depth: np.ndarray  # (N,) int64, 0 at a root

    def rule_sum(self, values: np.ndarray) -> np.ndarray:
        """Per derivation, the sum of `values[rule]` over its nodes ((n,) float64)."""
        return np.bincount(self.tree, weights=values[self.rule], minlength=self.n)

    def count(self, mask: np.ndarray) -> np.ndarray:
        """Per derivation, how many of its nodes use a rule where `mask` (R,) is true."""
        return np.bincount(self.tree, weights=mask[self.rule].astype(np.float64),
                           minlength=self.n)

    def yields(self, table: RuleTable) -> list[tuple[str, ...]]:
        """Each derivation's yield: its word-bearing leaves in left-to-right order."""
        depth_max = int(self.depth.max()) + 1 if len(self.depth) else 1
        digits = np.zeros((len(self.rule), depth_max), dtype=np.int64)
        for d in range(1, depth_max):
            at = np.flatnonzero(self.depth == d)
            digits[at] = digits[self.parent[at]]
            digits[at, d] = self.slot[at] + 1
        leaf = np.flatnonzero(table.arity[self.rule] == 0)
        keys = [digits[leaf, d] for d in range(depth_max - 1, -1, -1)] + [self.tree[leaf]]
        leaf = leaf[np.lexsort(keys)]
        out: list[list[str]] = [[] for _ in range(self.n)]
        labels = table.labels
        for t, r in zip(self.tree[leaf].tolist(), self.rule[leaf].tolist(), strict=True):
            if labels[r] != NULL_LABEL:
                out[t].append(labels[r])
        return [tuple(y) for y in out]


def log_rule_probs(table: RuleTable, theta: np.ndarray) -> np.ndarray:
    """ln P(rule | its lhs) = theta - ln sum over the lhs's rules of exp(theta) (eq. 1)."""
    return theta - LogSumExp.segment_sum(theta, table.rule_start[:-1])[table.lhs]


def sample_batch(table: RuleTable, log_probs: np.ndarray, n: int,
                 rng: np.random.Generator) -> TreeBatch:
    """`n` independent derivations, each rule drawn from exp(log_probs) given its lhs."""
    starts = table.rule_start[:-1]
    tree = np.arange(n, dtype=np.int64)
    state = np.full(n, table.start, dtype=np.int64)
    parent = np.full(n, -1, dtype=np.int64)
    slot = np.zeros(n, dtype=np.int64)
    parts: list[tuple[np.ndarray, ...]] = []
    made, depth = 0, 0
    while len(state):
        r = draw_in_segments(log_probs, starts, state, rng.random(len(state)))
        ids = np.arange(made, made + len(r), dtype=np.int64)
        parts.append((tree, r, parent, slot, np.full(len(r), depth, dtype=np.int64)))
        made += len(r)
        nxt = [(tree[m], table.children[r[m], s], ids[m], np.full(int(m.sum()), s))
               for s in range(table.children.shape[1])
               for m in [table.arity[r] > s] if m.any()]
        if not nxt:
            break
        tree, state, parent, slot = (np.concatenate(x).astype(np.int64) for x in zip(*nxt))
        depth += 1
    cols = [np.concatenate(c) for c in zip(*parts)]
    return TreeBatch(n, *cols)


class YieldScorer:
    """ln p(<s> yield </s>) under a `TargetModel`, cached per distinct yield.

    One `log_prob` call per batch of new yields (every factor's context is the last
    order - 1 words of the history, the interface's layout)."""

    def __init__(self, lm: TargetModel) -> None:
        self.lm = lm
        self.cache: dict[tuple[str, ...], float] = {}

    def __call__(self, yields: Sequence[tuple[str, ...]]) -> np.ndarray:
        new = sorted({y for y in yields if y not in self.cache})
        if new:
            k = max(self.lm.order - 1, 0)
            rows: list[list[int]] = []
            words: list[int] = []
            owner: list[int] = []
            for i, y in enumerate(new):
                ids = [int(x) for x in self.lm.ids(list(y))] if y else []
                hist = [self.lm.bos, *ids]
                for p, w in enumerate([*ids, self.lm.eos]):
                    ctx = hist[max(0, p + 1 - k): p + 1] if k else []
                    rows.append([-1] * (k - len(ctx)) + ctx)
                    words.append(w)
                    owner.append(i)
            lp = self.lm.log_prob(np.array(rows, dtype=np.int64).reshape(len(rows), k),
                                  np.array(words, dtype=np.int64))
            sums = np.bincount(np.array(owner), weights=lp, minlength=len(new))
            for y, s in zip(new, sums.tolist(), strict=True):
                self.cache[y] = s if not math.isnan(s) else -math.inf
        return np.array([self.cache[y] for y in yields], dtype=np.float64)
