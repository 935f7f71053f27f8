"""A weighted acyclic hypergraph (a forest of derivations) and its exact algorithms.

Why a module of its own: the full intersection of a tree automaton with the target's merged
states (`intersect.py`, method "full") and the intersection with the upper-bounding context
automaton (ARS's q, `ars.py`) are both forests whose hyperpaths are in one-to-one
correspondence with the automaton's derivations (each edge is one rule used with one incoming
context; the context automaton is deterministic, so a derivation fixes every context). One set
of algorithms serves both: inside (ln Z), Viterbi, outside (rule posteriors), top-down
sampling, and Huang & Chiang's (2005) lazy k-best (their Algorithm 3).

Nodes are numbered so that every edge's tails come before its head, and the last node is the
goal; an edge carries the automaton's rule id (-1 for the goal's edges, which add the `</s>`
factor) and its ln weight. Natural logs throughout.
"""

from __future__ import annotations

import heapq
import math
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np


def logsumexp(values: Sequence[float]) -> float:
    if not values:
        return -math.inf
    m = max(values)
    if m == -math.inf:
        return -math.inf
    return m + math.log(math.fsum(math.exp(v - m) for v in values))


@contextmanager
def deep_recursion(depth: int) -> Iterator[None]:
    """Allow `depth` more nested Python calls for the duration (restored after).

    Why: the intersection's item expansion and the lazy k-best recurse once per level of
    the automaton, and a chain automaton of a 1,000-word lattice is 1,000 levels deep. Since
    Python 3.11, Python-to-Python calls do not use the C stack, so a higher limit is safe."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, old + depth))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


@dataclass
class Forest:
    """Edges by head; `edge_rule[e]` is the automaton's rule (-1: a goal edge)."""

    node_key: list[tuple] = field(default_factory=list)
    node_edges: list[list[int]] = field(default_factory=list)
    edge_rule: list[int] = field(default_factory=list)
    edge_tails: list[tuple[int, ...]] = field(default_factory=list)
    edge_weight: list[float] = field(default_factory=list)
    _inside: list[float] | None = field(default=None, repr=False)

    def add_node(self, key: tuple, edges: list[tuple[int, tuple[int, ...], float]]) -> int:
        """A node with its incoming edges (rule, tails, ln weight); tails must exist."""
        v = len(self.node_key)
        self.node_key.append(key)
        ids = []
        for rule, tails, w in edges:
            ids.append(len(self.edge_rule))
            self.edge_rule.append(rule)
            self.edge_tails.append(tails)
            self.edge_weight.append(w)
        self.node_edges.append(ids)
        self._inside = None
        return v

    @property
    def goal(self) -> int:
        return len(self.node_key) - 1

    @property
    def num_nodes(self) -> int:
        return len(self.node_key)

    @property
    def num_edges(self) -> int:
        return len(self.edge_rule)

    def _edge_score(self, e: int, values: Sequence[float]) -> float:
        return self.edge_weight[e] + math.fsum(values[t] for t in self.edge_tails[e])

    def inside(self) -> list[float]:
        """ln of the summed weight of each node's hyperpaths."""
        if self._inside is None:
            ins: list[float] = []
            for edges in self.node_edges:
                ins.append(logsumexp([self._edge_score(e, ins) for e in edges]))
            self._inside = ins
        return self._inside

    def log_partition(self) -> float:
        return self.inside()[self.goal]

    def viterbi(self) -> tuple[float, list[int]]:
        """(ln weight, the best hyperpath's rules in pre-order, goal edge left out)."""
        best: list[float] = []
        back: list[int] = []
        for edges in self.node_edges:
            scores = [self._edge_score(e, best) for e in edges]
            k = int(np.argmax(scores)) if scores else -1
            best.append(scores[k] if scores else -math.inf)
            back.append(edges[k] if scores else -1)
        return best[self.goal], self._rules_of(lambda v: back[v])

    def viterbi_outside(self) -> list[float]:
        """Per node, the best ln weight of the rest of a hyperpath through it (goal: 0)."""
        best: list[float] = []
        for edges in self.node_edges:
            best.append(max((self._edge_score(e, best) for e in edges), default=-math.inf))
        out = [-math.inf] * self.num_nodes
        out[self.goal] = 0.0
        for v in range(self.goal, -1, -1):
            if out[v] == -math.inf:
                continue
            for e in self.node_edges[v]:
                total = out[v] + self._edge_score(e, best)
                for t in self.edge_tails[e]:
                    out[t] = max(out[t], total - best[t])
        return out

    def _rules_of(self, choose) -> list[int]:
        """Rules in pre-order of the hyperpath that takes edge choose(v) at each node v."""
        rules: list[int] = []
        stack = [self.goal]
        while stack:
            e = choose(stack.pop())
            if self.edge_rule[e] >= 0:
                rules.append(self.edge_rule[e])
            stack.extend(reversed(self.edge_tails[e]))
        return rules

    def edge_posteriors(self) -> np.ndarray:
        """Per edge, the probability that a hyperpath drawn from the forest uses it."""
        ins = self.inside()
        z = ins[self.goal]
        out = [-math.inf] * self.num_nodes
        out[self.goal] = 0.0
        acc: list[list[float]] = [[] for _ in range(self.num_nodes)]
        post = np.zeros(self.num_edges)
        for v in range(self.goal, -1, -1):
            if acc[v]:
                out[v] = logsumexp(acc[v])
            if out[v] == -math.inf:
                continue
            for e in self.node_edges[v]:
                total = out[v] + self._edge_score(e, ins)
                if total == -math.inf:
                    continue
                post[e] = math.exp(total - z)
                for t in self.edge_tails[e]:
                    acc[t].append(total - ins[t])
        return post

    def rule_posteriors(self, num_rules: int) -> np.ndarray:
        """E[number of uses of each rule] (the probability of its use when a derivation can
        use it at most once, as in a chart)."""
        post = self.edge_posteriors()
        rules = np.asarray(self.edge_rule, dtype=np.int64)
        keep = rules >= 0
        return np.bincount(rules[keep], weights=post[keep], minlength=num_rules)

    def sampler(self) -> ForestSampler:
        return ForestSampler(self)

    def kbest(self, k: int) -> list[tuple[float, list[int]]]:
        """The k best hyperpaths as (ln weight, rules in pre-order), best first."""
        return LazyKBest(self).top(k)


class ForestSampler:
    """Top-down sampling in proportion to hyperpath weight, after one inside pass."""

    def __init__(self, forest: Forest) -> None:
        self.forest = forest
        ins = forest.inside()
        self.log_Z = ins[forest.goal]
        self._cum: list[np.ndarray] = []
        for v, edges in enumerate(forest.node_edges):
            if len(edges) > 1 and ins[v] > -math.inf:
                p = np.exp(np.array([forest._edge_score(e, ins) for e in edges]) - ins[v])
                cum = np.cumsum(p)
                self._cum.append(cum / cum[-1])
            else:
                self._cum.append(np.ones(len(edges)))

    def draw(self, rng: np.random.Generator) -> list[int]:
        """One hyperpath's rules in pre-order."""
        f = self.forest

        def choose(v: int) -> int:
            cum = self._cum[v]
            if len(cum) == 1:
                return f.node_edges[v][0]
            k = int(np.searchsorted(cum, rng.random(), side="right"))
            return f.node_edges[v][min(k, len(cum) - 1)]

        return f._rules_of(choose)


class LazyKBest:
    """Huang & Chiang's lazy k-best (Algorithm 3): per node, the derivations found so far in
    order (`found`) and a heap of candidates; a candidate is (edge, rank of each tail), and
    its successors raise one tail's rank by one. Exact on an acyclic forest: the heap order
    is monotone since every score is a sum of ranked tail scores."""

    def __init__(self, forest: Forest) -> None:
        self.f = forest
        self.found: dict[int, list[tuple[float, int, tuple[int, ...]]]] = {}
        self.cand: dict[int, list[tuple[float, int, tuple[int, ...]]]] = {}
        self.seen: dict[int, set[tuple[int, tuple[int, ...]]]] = {}

    def _score(self, e: int, ranks: tuple[int, ...]) -> float | None:
        total = self.f.edge_weight[e]
        for t, r in zip(self.f.edge_tails[e], ranks, strict=True):
            if not self._ensure(t, r):
                return None
            total += self.found[t][r][0]
        return total

    def _push(self, v: int, e: int, ranks: tuple[int, ...]) -> None:
        if (e, ranks) in self.seen[v]:
            return
        self.seen[v].add((e, ranks))
        s = self._score(e, ranks)
        if s is not None and s > -math.inf:
            heapq.heappush(self.cand[v], (-s, e, ranks))

    def _ensure(self, v: int, r: int) -> bool:
        """Whether node v has an r-th best derivation (finding it if needed)."""
        if v not in self.found:
            self.found[v], self.cand[v], self.seen[v] = [], [], set()
            for e in self.f.node_edges[v]:
                self._push(v, e, (0,) * len(self.f.edge_tails[e]))
        found = self.found[v]
        while len(found) <= r:
            if found:
                _, e, ranks = found[-1]
                for i in range(len(ranks)):
                    self._push(v, e, ranks[:i] + (ranks[i] + 1,) + ranks[i + 1:])
            if not self.cand[v]:
                return False
            neg, e, ranks = heapq.heappop(self.cand[v])
            found.append((-neg, e, ranks))
        return True

    def top(self, k: int) -> list[tuple[float, list[int]]]:
        with deep_recursion(4 * self.f.num_nodes):
            return self._top(k)

    def _top(self, k: int) -> list[tuple[float, list[int]]]:
        out = []
        for v in range(self.f.num_nodes):  # rank 0 bottom-up: no deep recursion for it
            self._ensure(v, 0)
        for r in range(k):
            if not self._ensure(self.f.goal, r):
                break
            out.append((self.found[self.f.goal][r][0], self._rules(self.f.goal, r)))
        return out

    def _rules(self, v: int, r: int) -> list[int]:
        rules: list[int] = []
        stack = [(v, r)]
        while stack:
            node, rank = stack.pop()
            _, e, ranks = self.found[node][rank]
            if self.f.edge_rule[e] >= 0:
                rules.append(self.f.edge_rule[e])
            stack.extend(reversed(list(zip(self.f.edge_tails[e], ranks, strict=True))))
        return rules
