"""ARS / OS* on tree automata: an upper-bounding tree automaton refined on rejected trees.

The bound. Let d be a derivation with yield y_1 .. y_m and h_i = <s> y_1 .. y_{i-1} the history
of y_i (h_{m+1} that of `</s>`). Its weight is

    p(d) = A(d) + sum_{i <= m+1} ln p(y_i | h_i)        (A(d): the sum of d's rule weights)

For any suffix c of h_i, `log_bound(c, w)` is the maximum of ln p(w | z c) over every left
extension z (max-backoff; with positive backoffs a longer context can raise p, hence the max
over all z and not the listed n-grams). So ln p(y_i | h_i) <= log_bound(c_i, y_i) for every
choice of suffixes c_i, and

    q_R(d) = A(d) + sum_i s(c_i, y_i),   c_i = the longest suffix of h_i in R,

with s = log_prob when the target calls c_i exact and log_bound otherwise, is >= p(d) for every
derivation, whatever the suffix-closed set R. q_R is the weight of a tree automaton: the
intersection of A with the deterministic automaton whose states are R (`intersect.py`), an item
being (q, c_in, c_out). q^(0) has R = {()}: every leaf, `</s>` too, scored by its bound at the
empty context. Decoding is Viterbi on the q_R forest; sampling draws from it top-down.

The hard case, a leaf whose left context lies in another subtree: in q -> f(q1, q2) the first
leaf of q2 has its context in q1's yield. The items carry it: q2 is entered with the state
c_out that q1's subtree left, so splitting the context states splits q1's items by the words
their yield ends with (and q2's by the words before them), exactly as the lattice's
(node, context) states split a node by its history.

The refinement. On a rejected (or uncertified) d, every factor i whose state c_i is not exact
and whose gap s(c_i, y_i) - ln p(y_i | h_i) is above the tolerance adds the one-word-longer
suffix c = h_i[-(|c_i|+1):] to R, with every substring of c. The suffixes keep R
suffix-closed; the prefixes make d's path reach c: by induction on j, the state before
factor i - j ends with c[:-j] (c[:-j] is in R and the previous state ends with c[:-j-1]), so
the longest suffix in R at factor i is at least c. (Adding c alone is not enough: the state
before it may be too short to know c's first word.) The longer state is a suffix of h_i, so
q_R stays a bound, and at d the factor's state is now longer: after at most n - 1
refinements per factor it is exact (n - 1 words, or the whole history from <s>), so
q(d) = p(d) then. Every member of R has its substrings in R, so a gap always adds a new
context. Each refinement changes q only
on histories ending with the new context, so q decreases monotonically and the loop ends: the
histories of an acyclic automaton are finitely many.

Certificate (decode): Viterbi's d* under q_R with q_R(d*) - p(d*) <= CERTIFICATE_TOL is the
argmax of p, since p(d) <= q_R(d) <= q_R(d*) = p(d*) for every d. k-best: the k best of q_R all
tight are the k best of p, by the same argument at the k-th. Sampling: draw d from q_R,
accept with p(d)/q_R(d); accepted draws are i.i.d. from p (whatever the refinements before
them, which depend only on earlier trials); every trial gives the evidence estimates of
`methods.evidence` (Teichmann et al.'s importance weights, combined with predictable weights).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from arsdecode.core.tolerances import CERTIFICATE_TOL
from arsdecode.errors import BoundViolationError
from arsdecode.methods.trials import TrialLog
from arsdecode.model import TargetModel, context_rows

from .automaton import TreeAutomaton
from .errors import EmptyLanguageError
from .forest import Forest, ForestSampler
from .intersect import ContextStates, intersect, leaf_ids


@dataclass
class Scored:
    """A derivation's yield ids, exact ln p, ln q under the current R, and the contexts R
    would add to tighten it (empty when q = p)."""

    log_p: float
    log_q: float
    refinements: list[tuple[int, ...]]


class TreeArs:
    """The q_R forest of a tree automaton and its refinement (see the module docstring)."""

    def __init__(self, automaton: TreeAutomaton, target: TargetModel) -> None:
        self.automaton = automaton
        self.target = target
        self.k = max(target.order - 1, 0)
        self.ids = leaf_ids(automaton, target)
        self.refined: set[tuple[int, ...]] = {()}
        self.refinements = 0
        self.forest: Forest = self._build()

    def _build(self) -> Forest:
        self.states = ContextStates(self.target, self.refined)
        self.forest = intersect(self.automaton, self.states)
        if not self.forest.node_edges[self.forest.goal]:  # q = 0 everywhere, hence p too
            raise EmptyLanguageError(f"{self.automaton.source}: every tree has probability "
                                     "zero under the target")
        self._sampler: ForestSampler | None = None
        return self.forest

    def sampler(self) -> ForestSampler:
        if self._sampler is None:
            self._sampler = self.forest.sampler()
        return self._sampler

    def yield_ids(self, rules: list[int]) -> list[int]:
        return [self.ids[r] for r in rules if r in self.ids]

    def score(self, rules: list[int]) -> Scored:
        """Exact ln p (full histories, one `log_prob` call) and ln q under R, factor by factor."""
        a = self.automaton
        base = math.fsum(float(a.weights[r]) for r in rules)
        ys = self.yield_ids(rules)
        words = np.array([*ys, self.target.eos], dtype=np.int64)
        hist = [self.target.bos, *ys]
        histories = [tuple(hist[: i + 1]) for i in range(len(words))]
        exact = self.target.log_prob(context_rows(histories, self.k), words)
        states = self.states.walk(ys)
        q_terms = self.states.scores(states, words)
        adds = []
        for i, ((ctx, is_exact), sc) in enumerate(zip(states, q_terms, strict=True)):
            if not is_exact and sc - exact[i] > CERTIFICATE_TOL:
                longer = histories[i][max(len(histories[i]) - len(ctx) - 1, 0):]
                if len(longer) > len(ctx):
                    adds.append(longer)
        log_p = base + math.fsum(float(x) for x in exact)
        log_q = base + math.fsum(float(x) for x in q_terms)
        if log_p > log_q + CERTIFICATE_TOL:
            raise BoundViolationError(f"a tree's ln p {log_p} exceeds its bound ln q {log_q}: "
                                      "the target's log_bound is not an upper bound")
        return Scored(log_p, log_q, adds)

    def refine(self, adds: list[tuple[int, ...]]) -> bool:
        """Add contexts to R, each with every substring (the suffixes keep R suffix-closed,
        the prefixes let the path reach it), and rebuild q; False if none was new."""
        new = {c[i:j] for c in adds for i in range(len(c)) for j in range(i + 1, len(c) + 1)}
        new -= self.refined
        if not new:
            return False
        self.refined.update(new)
        self.refinements += 1
        self._build()
        return True


def ars_decode(automaton: TreeAutomaton, target: TargetModel, max_iterations: int | None = None
               ) -> tuple[Scored, list[int], TreeArs, list[tuple[float, float]], bool]:
    """(scores, best rules in pre-order, the final q, the trace (ln q, ln p) per iteration,
    certified): Viterbi on q_R, refined along d* until q_R(d*) = p(d*)."""
    ars = TreeArs(automaton, target)
    trace: list[tuple[float, float]] = []
    while True:
        _, rules = ars.forest.viterbi()
        s = ars.score(rules)
        trace.append((s.log_q, s.log_p))
        if s.log_q - s.log_p <= CERTIFICATE_TOL:
            return s, rules, ars, trace, True
        if (max_iterations is not None and len(trace) >= max_iterations) or \
                not ars.refine(s.refinements):
            return s, rules, ars, trace, False


def ars_kbest(automaton: TreeAutomaton, target: TargetModel, k: int,
              max_iterations: int | None = None
              ) -> tuple[list[tuple[Scored, list[int]]], TreeArs, int, bool]:
    """The k best derivations of p: the k best of q_R, refined along every one not tight,
    until all k are (then no other derivation can beat the k-th: p <= q_R <= its q)."""
    ars = TreeArs(automaton, target)
    iterations = 0
    while True:
        iterations += 1
        top = [(ars.score(rules), rules) for _, rules in ars.forest.kbest(k)]
        loose = [s for s, _ in top if s.log_q - s.log_p > CERTIFICATE_TOL]
        if not loose:
            top.sort(key=lambda sr: -sr[0].log_p)
            return top, ars, iterations, True
        adds = [c for s in loose for c in s.refinements]
        if (max_iterations is not None and iterations >= max_iterations) or \
                not ars.refine(adds):
            top.sort(key=lambda sr: -sr[0].log_p)
            return top, ars, iterations, False


@dataclass
class ArsDraws:
    """Accepted draws and the trial log of an ARS sampling run."""

    accepted: list[tuple[Scored, list[int]]]
    log: TrialLog
    ars: TreeArs
    adapted_at: int | None
    frozen_from: int
    seconds: float


def ars_sample(automaton: TreeAutomaton, target: TargetModel, n: int,
               rng: np.random.Generator, target_ar: float = 0.5, ar_window: int = 100,
               max_trials: int | None = None, batch: int = 10) -> ArsDraws:
    """n exact i.i.d. derivations by adaptive rejection. Trials are drawn `batch` at a time
    from one q_R; after each batch, q_R is refined along the batch's rejected draws (one
    rebuild of the forest for the batch), until the acceptance rate over the last
    `ar_window` trials reaches `target_ar`; q is frozen from then on. Exact whatever the
    schedule: q_R depends only on earlier trials."""
    t0 = time.perf_counter()
    ars = TreeArs(automaton, target)
    log = TrialLog(keep=True, ar_window=ar_window)
    accepted: list[tuple[Scored, list[int]]] = []
    frozen, adapted_at, frozen_from = False, None, 0
    pending: list[tuple[int, ...]] = []
    while len(accepted) < n and (max_trials is None or log.trials < max_trials):
        sampler = ars.sampler()
        rules = sampler.draw(rng)
        s = ars.score(rules)
        ratio = math.exp(min(s.log_p - s.log_q, 0.0))
        ok = bool(rng.random() < ratio)
        log.add(ratio, ok, ars.forest.num_nodes, sampler.log_Z, s.log_p, s.log_q)
        if ok:
            accepted.append((s, rules))
        elif not frozen:
            pending.extend(s.refinements)
        if log.trials % batch == 0 and not frozen:
            rate = log.window_rate()
            if rate is not None and rate >= target_ar:
                frozen, adapted_at = True, log.trials
            elif pending and ars.refine(pending):
                frozen_from = log.trials
            pending = []
    return ArsDraws(accepted, log, ars, adapted_at, frozen_from,
                    time.perf_counter() - t0)
