"""The intersection (Bar-Hillel) of a tree automaton with a deterministic context automaton.

A context automaton reads the yield left to right: a state is a context (a tuple of word ids,
oldest first) with a flag `exact`; reading word w from state s costs a ln score and leads to
one next state, and the final state pays the `</s>` factor. Two of them:

- the target's merged states (`ContextStates(target)`, method "full"): every state is exact,
  s' = cut((s + w)[-(n-1):]) with `minimal_context` (KenLM-style merging, exact by the
  interface's contract: p(. | c) = p(. | cut(c)) and cut(c + w) = cut(cut(c) + w)), scored with
  `log_prob`. The weight of a derivation in the intersection is then exactly
  sum of rule weights + ln p(<s> yield </s>).
- ARS's upper bound (`ContextStates(target, refined)`): a state is the longest suffix of the
  history that lies in a suffix-closed set R of refined contexts, scored with `log_bound`
  (the max over every left extension, hence >= p(w | the true history), whatever lies beyond
  the suffix); a state that the target calls exact (`is_exact`: a full n-1 word context, the
  whole history from `<s>`, a VPYLM context no node continues) is scored with `log_prob`.
  Its successor is again the longest suffix of (s + w) in R, exact or not: s + w is a suffix
  of the true history, so this keeps the bound, and q stays as small as R (if exact states
  moved like the target's own, one exact `<s>` state would rebuild the whole full
  intersection behind it; and an exact state is not cut, since the words a cut drops may be
  the ones a longer context of R needs next). R = {()} is
  q^(0): every word, `</s>` too, bounded at the empty context.

Items. An item is (q, s_in): the automaton state q entered with context state s_in. Its
derivations d produce s_out = delta*(s_in, yield(d)); the node (q, s_in, s_out) sums them. A
rule q -> f(q1 .. qk) at (q, s) chains its children: q1 is entered with s, each later q_j with
the state its left sibling left (this is how a leaf whose left context lies in another subtree
gets it: through s_out of the subtrees to its left), and the rule's node is (q, s, s_k). A leaf
w at (q, s) is the node (q, s, delta(s, w)) with weight rule + score(s, w); a `null` leaf is
(q, s, s). The goal sums (start, s0, s) + the `</s>` factor at s. Items are expanded on demand
from (start, s0), so only the contexts that reach a state are built; nodes are numbered after
all their edges' tails, so the forest is in topological order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from arsdecode.core.tolerances import PRUNE_MARGIN
from arsdecode.errors import TargetError
from arsdecode.model import TargetModel, context_rows

from .automaton import NULL, TreeAutomaton
from .forest import Forest, deep_recursion

State = tuple[tuple[int, ...], bool]  # (context, exact)
MARKERS = ("<s>", "</s>")
FAR = 2**62  # a position beyond every history (is_exact of a context not from <s>)


def _last(words: tuple[int, ...], k: int) -> tuple[int, ...]:
    """The last k words (all of them if fewer; none if k is 0)."""
    return words[max(len(words) - k, 0):] if k else ()


class ContextStates:
    """A deterministic context automaton over the target (see the module docstring):
    exact merged states when `refined` is None, else ARS's bound over the set `refined`."""

    def __init__(self, target: TargetModel, refined: Iterable[tuple[int, ...]] | None = None
                 ) -> None:
        self.target = target
        self.k = max(target.order - 1, 0)
        self.refined: set[tuple[int, ...]] | None = None if refined is None else \
            {(), *map(tuple, refined)}
        self._exact: dict[tuple[int, ...], bool] = {}
        self.initial: State = self.enter((target.bos,))
        self.queries = 0  # (context, word) rows sent to the target

    def cut(self, contexts: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
        if self.k == 0:
            return [() for _ in contexts]
        rows = self.target.minimal_context(context_rows(contexts, self.k))
        return [tuple(int(x) for x in row if x >= 0) for row in rows]

    def is_exact(self, ctx: tuple[int, ...]) -> bool:
        """Whether `ctx` fixes p wherever it is the state. A context from `<s>` is the whole
        history (position len - 1); any other is a suffix of a history of unknown length, so
        it is asked at a position beyond every history (`FAR`), where only what the context
        itself holds can make it exact (a weighted target without `<s>` would otherwise call
        a context exact because it is as long as its position)."""
        if ctx not in self._exact:
            bos = bool(ctx) and ctx[0] == self.target.bos
            self._exact[ctx] = bool(self.target.is_exact(len(ctx) - 1 if bos else FAR,
                                                         list(ctx)))
        return self._exact[ctx]

    def enter(self, history: tuple[int, ...]) -> State:
        """The state after `history` (a suffix of the true history, at most k words), from a
        non-exact state: the longest suffix in R, exact if the target says so."""
        history = _last(history, self.k)
        if self.refined is None:
            return self.cut([history])[0], True
        for start in range(len(history) + 1):
            ctx = history[start:]
            if ctx in self.refined:
                return ctx, self.is_exact(ctx)
        return (), False

    def step(self, state: State, words: np.ndarray) -> tuple[list[State], np.ndarray]:
        """Next states and ln scores (exact or bound) of reading each of `words` from `state`."""
        ctx, exact = state
        rows = context_rows([ctx] * len(words), self.k)
        self.queries += len(words)
        scores = (self.target.log_prob if exact else self.target.log_bound)(rows, words)
        nexts = [(*ctx, int(w)) for w in words]
        if self.refined is None:
            return [(c, True) for c in self.cut([_last(n, self.k) for n in nexts])], scores
        return [self.enter(n) for n in nexts], scores

    def walk(self, words: list[int]) -> list[State]:
        """The bound's state before each of `words` and before `</s>` (len(words) + 1 states;
        no target query but `is_exact`)."""
        assert self.refined is not None, "walk is the bound's (ARS's) path"
        out = [self.initial]
        for w in words:
            out.append(self.enter((*out[-1][0], w)))
        return out

    def scores(self, states: list[State], words: np.ndarray) -> np.ndarray:
        """ln score (exact or bound) of words[i] after states[i], in two batched calls."""
        self.queries += len(words)
        rows = context_rows([c for c, _ in states], self.k)
        exact = np.array([e for _, e in states], dtype=bool)
        out = np.empty(len(words))
        if exact.any():
            out[exact] = self.target.log_prob(rows[exact], words[exact])
        if not exact.all():
            out[~exact] = self.target.log_bound(rows[~exact], words[~exact])
        return out

    def final(self, states: list[State]) -> np.ndarray:
        """ln score (exact or bound) of `</s>` after each state."""
        out = np.empty(len(states))
        eos = np.array([self.target.eos], dtype=np.int64)
        for i, (ctx, exact) in enumerate(states):
            row = context_rows([ctx], self.k)
            self.queries += 1
            out[i] = (self.target.log_prob if exact else self.target.log_bound)(row, eos)[0]
        return out


def leaf_ids(automaton: TreeAutomaton, target: TargetModel) -> dict[int, int]:
    """The target's word id of every leaf rule's label (null leaves excluded); a sentence
    marker as a leaf is refused, as in a lattice."""
    leaves = [i for i, r in enumerate(automaton.rules) if r.is_leaf and r.label != NULL]
    for i in leaves:
        if automaton.rules[i].label in MARKERS:
            r = automaton.rules[i]
            raise TargetError(f"{automaton.source}:{r.line or '?'}: leaf {r.label!r} is a "
                              "sentence marker; the yield is scored as <s> yield </s>")
    ids: np.ndarray | list[int] = target.ids([automaton.rules[i].label for i in leaves]) \
        if leaves else []
    return {i: int(w) for i, w in zip(leaves, ids, strict=True)}


@dataclass(frozen=True)
class Pruning:
    """What lets the full intersection drop nodes that cannot be on the best derivation:
    `outside[q]`, an upper bound of the best weight around automaton state q, and `floor`, the
    exact weight of some derivation. A node whose best inside plus outside[q] is below the
    floor (by more than PRUNE_MARGIN) is dropped: every derivation through it weighs less
    than one already known. Only for the best derivation (not ln Z, samples or k > 1)."""

    outside: np.ndarray
    floor: float


def decode_pruning(automaton: TreeAutomaton, target: TargetModel) -> Pruning:
    """The bounds of q^(0), ARS's first automaton (every factor at its bound at the empty
    context, so each context-free state q has one node): its Viterbi outside per state bounds
    the exact forest's outside of every (q, s_in, s_out), whatever the contexts; the floor is
    the exact weight of q^(0)'s best derivation."""
    q0 = intersect(automaton, ContextStates(target, refined=()))
    out = q0.viterbi_outside()
    outside = np.full(len(automaton.states), -math.inf)
    for v, key in enumerate(q0.node_key[:-1]):
        outside[key[0]] = max(outside[key[0]], out[v])
    _, rules = q0.viterbi()
    return Pruning(outside, derivation_log_p(automaton, target, rules))


def intersect(automaton: TreeAutomaton, states: ContextStates,
              weights: np.ndarray | None = None, prune: Pruning | None = None) -> Forest:
    """The forest of (q, s_in, s_out) nodes (module docstring); goal last. Edges of weight
    -inf are dropped, so a node without edges has no derivation of non-zero weight; with
    `prune`, nodes that cannot be on the best derivation are dropped too (`Pruning`)."""
    w = automaton.weights if weights is None else weights
    ids = leaf_ids(automaton, states.target)
    forest = Forest()
    memo: dict[tuple[int, State], dict[State, int]] = {}
    best: list[float] = []  # per node, its best inside weight (for pruning)
    cut_at = -math.inf if prune is None else prune.floor - PRUNE_MARGIN

    def add(q: int, s: State, s2: State, es: list[tuple[int, tuple[int, ...], float]]
            ) -> int | None:
        b = max(x + math.fsum(best[t] for t in tails) for _, tails, x in es)
        if prune is not None and b + float(prune.outside[q]) < cut_at:
            return None
        best.append(b)
        return forest.add_node((q, s, s2), es)

    def expand(q: int, s: State) -> dict[State, int]:
        key = (q, s)
        if key in memo:
            return memo[key]
        edges: dict[State, list[tuple[int, tuple[int, ...], float]]] = {}
        leaf_rules = [i for i in automaton.rules_by_lhs[q] if i in ids and w[i] > -np.inf]
        if leaf_rules:
            nxt, scores = states.step(s, np.array([ids[i] for i in leaf_rules], np.int64))
            for i, s2, sc in zip(leaf_rules, nxt, scores, strict=True):
                if sc > -np.inf:
                    edges.setdefault(s2, []).append((i, (), float(w[i]) + float(sc)))
        for i in automaton.rules_by_lhs[q]:
            rule = automaton.rules[i]
            if i in ids or not w[i] > -np.inf:
                continue
            if rule.is_leaf:  # null
                edges.setdefault(s, []).append((i, (), float(w[i])))
                continue
            partial: list[tuple[State, tuple[int, ...]]] = [(s, ())]
            for c in rule.children:
                partial = [(s2, tails + (node,)) for cur, tails in partial
                           for s2, node in expand(c, cur).items()]
                if not partial:
                    break
            for s2, tails in partial:
                edges.setdefault(s2, []).append((i, tails, float(w[i])))
        nodes = {s2: add(q, s, s2, es) for s2, es in edges.items()}
        memo[key] = {s2: v for s2, v in nodes.items() if v is not None}
        return memo[key]

    with deep_recursion(4 * len(automaton.states)):
        top = expand(automaton.start, states.initial)
    ends = list(top)
    finals = states.final(ends) if ends else np.empty(0)
    forest.add_node(("goal",), [(-1, (top[s],), float(f))
                                for s, f in zip(ends, finals, strict=True) if f > -np.inf])
    return forest


def derivation_log_p(automaton: TreeAutomaton, target: TargetModel, rules: list[int],
                     ids: dict[int, int] | None = None) -> float:
    """ln weight of a derivation (rules in pre-order): its rules' weights plus
    ln p(<s> yield </s>), each factor on the full history (one `log_prob` call); `ids`:
    `leaf_ids(automaton, target)`, if the caller has it."""
    ids = leaf_ids(automaton, target) if ids is None else ids
    ys = [ids[r] for r in rules if r in ids]
    words = np.array([*ys, target.eos], dtype=np.int64)
    hist = [target.bos, *ys]
    rows = context_rows([hist[: i + 1] for i in range(len(words))], max(target.order - 1, 0))
    base = math.fsum(float(automaton.weights[r]) for r in rules)
    return base + math.fsum(float(x) for x in target.log_prob(rows, words))
