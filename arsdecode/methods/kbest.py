"""Exact k-best decoding: the K most probable distinct paths of p, certified.

Why it works: q >= p on every path. Run k-best Viterbi on q; if each of q's K best paths is
exact (q(x) = p(x)), then any path y outside them has p(y) <= q(y) <= q(x_K) = p(x_K), so they
are the K best of p. Otherwise refine q along every inexact one (Algorithm 2, all at once) and
repeat. This is Algorithm 1's decoding loop with a K-best list in place of the argmax.

k-best Viterbi on q is a backward pass over the layered, deterministic automaton: every state
keeps the K best completions (score, candidate j, rank r in the K-list of the state that edge
j leads to); a layer is one numpy sort of states x (candidates * K) scores.

Tie-breaking (deterministic): q's K-lists are ordered by score, then by candidate indices
lexicographically (position 1 first, in lattice order), by a stable sort over (j, r). The
result is ordered by ln p (recomputed by Target, a forward sum), then by candidate indices.
Paths whose q is -inf (hence p = 0) are never returned, so fewer than K paths come back when
fewer than K paths have probability > 0. Which of several paths tied within `tol` at the K-th
place is kept follows q's order; the certificate is that no path left out has ln p above the
K-th ln p + `tol`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from arsdecode.core.automaton import DEFAULT_VARIANT, QAutomaton, Variant
from arsdecode.core.target import Target
from arsdecode.errors import NoPathError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.methods.ars import DEFAULT_TOL, check_bound
from arsdecode.model import as_target_model
from maxarpa.model import Model


@dataclass(frozen=True)
class ScoredPath:
    """One path of the k-best list (natural log)."""

    tokens: list[str]
    indices: tuple[int, ...]
    log_p: float
    log_q: float


@dataclass(frozen=True)
class KBestResult:
    """The K best distinct paths of p, best first, and how they were certified."""

    paths: list[ScoredPath]
    iterations: int
    states: int
    seconds: float
    certified: bool


def kbest_q(qa: QAutomaton, k: int) -> list[tuple[tuple[int, ...], float]]:
    """The k best paths of q (candidate indices, DP score), best first; -inf paths left out."""
    L = len(qa.lattice)
    final = qa.layers[L].state_weights()[:, 0]
    values = np.full((len(final), k), -np.inf)
    values[:, 0] = final
    backs: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * L
    for i in range(L - 1, -1, -1):
        layer = qa.layers[i]
        W, T = layer.state_weights(), layer.state_targets()
        scores = (W[:, :, None] + values[T]).reshape(len(W), -1)  # column = j * k + r
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        backs[i] = order
        values = np.take_along_axis(scores, order, axis=1)  # width * k >= k columns
    out = []
    for rank in range(k):
        score = float(values[0, rank])
        if score == -math.inf:
            break
        idx, s, r = [], 0, rank
        for i in range(L):
            f = int(backs[i][s, r])
            j, r = divmod(f, k)
            idx.append(j)
            s = int(qa.layers[i].targets[s, j])
        out.append((tuple(idx), score))
    return out


def decode_kbest(
    lm: Model,
    lattice: Lattice,
    k: int,
    *,
    variant: Variant = DEFAULT_VARIANT,
    max_iterations: int | None = None,
    tol: float = DEFAULT_TOL,
) -> KBestResult:
    """The k most probable distinct paths of p over the lattice, each exact, best first.

    Raises:
        ValueError: k < 1.
        NoPathError: every path has probability 0.
    """
    if k < 1:
        raise OptionError("k (the number of paths) must be >= 1")
    start = time.perf_counter()
    model = as_target_model(lm)  # core takes a TargetModel: convert once, here
    target = Target(model, lattice)
    qa = QAutomaton(model, lattice, variant=variant)
    iteration = 0
    certified = False
    while True:
        iteration += 1
        best = kbest_q(qa, k)
        if not best:
            raise NoPathError("every path of the lattice has probability 0 under the model")
        idx = np.asarray([p for p, _ in best], dtype=np.int64)
        log_q = qa.log_q_batch(idx)
        log_p = target.log_p_batch(idx)
        for row, lq, lp in zip(idx.tolist(), log_q.tolist(), log_p.tolist(), strict=True):
            check_bound(qa, target, row, lq, lp, tol)  # q >= p, or no certificate at all
        gap = np.where(log_p == -np.inf, np.inf, log_q - log_p)
        inexact = [list(p) for (p, _), g in zip(best, gap) if g > tol]
        if not inexact:
            certified = True
            break
        if qa.refine_many(inexact) == 0:
            certified = bool(np.all(gap <= 1e-6))  # only float noise left on exact paths
            break
        if max_iterations is not None and iteration >= max_iterations:
            break
    rows = [(float(lp), p, float(lq)) for (p, _), lp, lq in zip(best, log_p, log_q)
            if lp > -math.inf]
    rows.sort(key=lambda row: (-row[0], row[1]))
    paths = [ScoredPath([lattice.tokens[i][j] for i, j in enumerate(p)], p, lp, lq)
             for lp, p, lq in rows]
    return KBestResult(paths, iteration, qa.num_states(), time.perf_counter() - start, certified)


def nbest_json(result: KBestResult) -> list[dict]:
    """The `"nbest"` list of `arsdecode decode --nbest K --json`, best first."""
    return [{"tokens": p.tokens, "log_p": p.log_p} for p in result.paths]
