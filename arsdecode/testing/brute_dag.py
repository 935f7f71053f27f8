"""Brute force over every path of a small word lattice (a DAG), and random small DAGs.

Why brute force: the DAG methods (`arsdecode.methods.expansion_dp`, ARS on DAGs) share context
states between paths; a bug in merging states, in epsilon arcs or in final weights would be
invisible to a reference that did the same. Here every start-to-final path of `wl.paths()` is
scored on its own, from `<s>` to `</s>`:

    score(path) = sum of its arcs' ln weights + its final node's ln weight + ln p_LM(words)

with ln p_LM from scalar `maxarpa.Model.log10p` calls on the full history (`brute_dag_model`,
float64: 1e-9 checks), from KenLM (`brute_dag_kenlm`, float32: ~1e-4), from any
`TargetModel`'s `log_prob` (`brute_dag_target`), or from any function of the words
(`brute_dag`). From the scores: the best path, the top K by path and by distinct word
sequence, ln Z, arc posteriors and the exact distribution over paths (for
`arsdecode.testing.brute.chi_square_pvalue`).

`random_word_lattice` draws small DAGs with everything a lattice reader can hand over:
epsilon arcs and chains of them, parallel arcs with the same word, several final nodes with
weights, a final node with outgoing arcs, unreachable and dead parts, -inf arcs, node ids not
in topological order.

Needs numpy only; `brute_dag_kenlm` needs the kenlm module.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from arsdecode.errors import LatticeError
from arsdecode.lattice import WordLattice
from arsdecode.model import ModelLike, as_target_model
from arsdecode.testing.brute import kenlm_path_log10, model_path_log10, target_path_log
from maxarpa.constants import LN10
from maxarpa.model import Model

ArcPath = tuple[int, ...]
Words = tuple[str, ...]


@dataclass(frozen=True)
class BruteDagResult:
    """Every path of a word lattice (its arc indices) with its words and exact ln score."""

    lattice: WordLattice
    paths: list[ArcPath]
    words: list[Words]
    log_p: list[float]

    @property
    def best_log_p(self) -> float:
        return max(self.log_p)

    def score(self, arcs: Sequence[int]) -> float:
        return self.log_p[self.paths.index(tuple(arcs))]

    def near_best(self, tol: float) -> set[ArcPath]:
        """Paths within `tol` of the best (ties, for checking a decoder's choice)."""
        top = self.best_log_p
        return {p for p, lp in zip(self.paths, self.log_p, strict=True) if lp >= top - tol}

    @property
    def log_Z(self) -> float:
        return _logsumexp(self.log_p)

    def distribution(self) -> dict[ArcPath, float]:
        """Exact probability of every path of nonzero probability, keyed by its arcs."""
        lz = self.log_Z
        return {p: math.exp(lp - lz) for p, lp in zip(self.paths, self.log_p, strict=True)
                if lp > -math.inf}

    def arc_posteriors(self) -> np.ndarray:
        """Per arc, the probability mass of the paths through it (0 if none has p > 0)."""
        post = np.zeros(self.lattice.n_arcs)
        for path, prob in self.distribution().items():
            for a in path:
                post[a] += prob
        return post

    def top_paths(self, k: int) -> list[tuple[float, ArcPath]]:
        """The k best paths of p > 0 as (ln score, arcs), by score then arc indices."""
        live = [(lp, p) for p, lp in zip(self.paths, self.log_p, strict=True) if lp > -math.inf]
        return sorted(live, key=lambda t: (-t[0], t[1]))[:k]

    def unique_scores(self) -> dict[Words, float]:
        """Each word sequence of some path of p > 0, scored by its best path."""
        best: dict[Words, float] = {}
        for w, lp in zip(self.words, self.log_p, strict=True):
            if lp > -math.inf and lp > best.get(w, -math.inf):
                best[w] = lp
        return best

    def top_unique(self, k: int) -> list[tuple[float, Words]]:
        """The k best distinct word sequences as (ln score of the best path, words)."""
        return sorted(((lp, w) for w, lp in self.unique_scores().items()),
                      key=lambda t: (-t[0], t[1]))[:k]


def _logsumexp(xs: Sequence[float]) -> float:
    finite = [x for x in xs if x > -math.inf]
    if not finite:
        return -math.inf
    top = max(finite)
    return top + math.log(sum(math.exp(x - top) for x in finite))


def brute_dag(wl: WordLattice, words_log: Callable[[Words], float]) -> BruteDagResult:
    """Every path of `wl`, scored as its arc and final weights plus `words_log(words)` (ln)."""
    paths: list[ArcPath] = []
    words: list[Words] = []
    scores: list[float] = []
    for arcs, final in wl.paths():
        w = tuple(wl.path_words(arcs))
        lm = words_log(w)
        weights = sum(float(wl.log_weights[a]) for a in arcs) + wl.finals[final]
        paths.append(arcs)
        words.append(w)
        scores.append(-math.inf if lm == -math.inf else lm + weights)
    return BruteDagResult(wl, paths, words, scores)


def brute_dag_model(lm: Model, wl: WordLattice) -> BruteDagResult:
    """Every path scored by scalar `Model.log10p` calls on the full history, times ln 10."""
    return brute_dag(wl, lambda w: LN10 * model_path_log10(lm, w))


def brute_dag_kenlm(km, wl: WordLattice) -> BruteDagResult:
    """Every path scored by KenLM (float32), `<s>` and `</s>` included, times ln 10."""
    return brute_dag(wl, lambda w: LN10 * kenlm_path_log10(km, w))


def brute_dag_target(model: ModelLike, wl: WordLattice) -> BruteDagResult:
    """Every path scored by a target model's `log_prob`, one path at a time."""
    target = as_target_model(model)
    return brute_dag(wl, lambda w: target_path_log(target, w))


def random_word_lattice(rng: random.Random, words: Sequence[str], *, max_nodes: int = 7,
                        max_paths: int = 300, epsilon: float = 0.25,
                        neg_inf: float = 0.1) -> WordLattice:
    """A small random DAG over `words` (module docstring), with at most `max_paths` paths.

    Nodes are drawn in a hidden order and renamed at random (so canonicalisation runs); a
    backbone start -> ... -> final guarantees a path; extra arcs go forward in the hidden
    order. Sometimes: an unreachable node with arcs into the lattice, a dead node that no arc
    leaves, a -inf arc, a final node with outgoing arcs (the last final is not always last).
    """
    while True:
        n = rng.randint(2, max_nodes)
        backbone = sorted(rng.sample(range(1, n), rng.randint(1, n - 1)))
        arcs: list[tuple[int, int, str | None, float]] = []

        def weight() -> float:
            return round(rng.uniform(-3.0, 0.5), 6)

        def label() -> str | None:
            return None if rng.random() < epsilon else rng.choice(list(words))

        prev = 0
        for v in backbone:
            arcs.append((prev, v, label(), weight()))
            prev = v
        for _ in range(rng.randint(0, 2 * n)):
            u, v = sorted(rng.sample(range(n), 2))
            arcs.append((u, v, label(), weight()))
        for _ in range(rng.randint(0, 2)):  # parallel arcs with the same word (or epsilon)
            u, v, word, _ = rng.choice(arcs)
            arcs.append((u, v, word, weight()))
        if rng.random() < 0.3:  # an epsilon chain
            u, v = sorted(rng.sample(range(n), 2))
            mids = list(range(n, n + rng.randint(1, 2)))
            chain = [u, *mids, v]
            arcs += [(a, b, None, weight()) for a, b in zip(chain, chain[1:], strict=False)]
            n += len(mids)
        finals = {backbone[-1]: weight()}
        for v in rng.sample(range(n), rng.randint(0, 2)):
            finals.setdefault(v, weight())
        if rng.random() < 0.3:  # an unreachable node with an arc into the lattice
            arcs.append((n, rng.randrange(1, n), label(), weight()))
            n += 1
        if rng.random() < 0.3:  # a dead node: reachable, reaches no final
            arcs.append((rng.randrange(n), n, label(), weight()))
            n += 1
        if rng.random() < neg_inf and len(arcs) > 1:
            i = rng.randrange(len(arcs))
            arcs[i] = (*arcs[i][:3], -math.inf)
        rename = list(range(n))
        rng.shuffle(rename)
        try:
            wl = WordLattice.build(n, rename[0], {rename[f]: w for f, w in finals.items()},
                                   [(rename[u], rename[v], w, x) for u, v, w, x in arcs],
                                   node_names=[f"n{i}" for i in range(n)])
        except LatticeError:  # a -inf arc cut the only path: draw again
            continue
        if 1 <= wl.num_paths() <= max_paths:
            return wl
