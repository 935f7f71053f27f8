"""Exact k-best decoding: the K most probable distinct paths of p, certified.

Why it works: q >= p on every path. Run k-best Viterbi on q; if each of q's K best paths is
exact (q(x) = p(x)), then any path y outside them has p(y) <= q(y) <= q(x_K) = p(x_K), so they
are the K best of p. Otherwise refine q along every inexact one (Algorithm 2, all at once) and
repeat. This is Algorithm 1's decoding loop with a K-best list in place of the argmax: the
same `ars.ArsDecoder` (its check, stopping rule and refinement), proposing q's K best paths.

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

import numpy as np

from arsdecode.core.automaton import DEFAULT_VARIANT, QAutomaton, Variant
from arsdecode.core.tolerances import CERTIFICATE_TOL
from arsdecode.errors import OptionError
from arsdecode.lattice import Lattice
from arsdecode.methods.ars import ArsDecoder
from arsdecode.methods.results import KBestResult, ScoredPath
from arsdecode.model import ModelLike, TargetModel, as_target_model


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


class KBestDecoder(ArsDecoder):
    """Algorithm 1's decoding iteration with x* = q's K best paths (`kbest_q`).

    Everything else is `ArsDecoder`'s: q >= p checked on every path, certified when all K are
    exact, refined along every inexact one, the same FLOAT_NOISE rule when nothing is left to
    refine. No pruning: it keeps only what can beat the single best path.
    """

    def __init__(self, model: TargetModel, lattice: Lattice, k: int, *,
                 variant: Variant = DEFAULT_VARIANT, tol: float = CERTIFICATE_TOL,
                 max_iterations: int | None = None) -> None:
        super().__init__(model, lattice, variant=variant, tol=tol,
                         max_iterations=max_iterations, prune=False)
        self.k = k

    def best_of_q(self) -> tuple[list[list[int]], list[float]]:
        """q's K best paths, best first, and ln q of each forward-summed like p."""
        paths = [list(p) for p, _ in kbest_q(self.qa, self.k)]
        return paths, [self.qa.log_q_indices(p) for p in paths]


def decode_kbest(
    lm: ModelLike,
    lattice: Lattice,
    k: int,
    *,
    variant: Variant = DEFAULT_VARIANT,
    max_iterations: int | None = None,
    tol: float = CERTIFICATE_TOL,
) -> KBestResult:
    """The k most probable distinct paths of p over the lattice, each exact, best first.

    Raises:
        OptionError: k < 1.
        NoPathError: every path has probability 0.
    """
    if k < 1:
        raise OptionError("k (the number of paths) must be >= 1")
    start = time.perf_counter()
    run = KBestDecoder(as_target_model(lm), lattice, k, variant=variant, tol=tol,
                       max_iterations=max_iterations)
    while not run.done:  # certified iff q's K best paths are all exact
        run.step()
    rows = sorted(((lp, tuple(p), lq) for p, lp, lq in zip(run.paths, run.log_p, run.log_q,
                                                             strict=True) if lp > -math.inf),
                  key=lambda row: (-row[0], row[1]))
    paths = [ScoredPath(run.tokens(p), p, lp, lq) for lp, p, lq in rows]
    return KBestResult(paths, run.iterations, run.qa.num_states(), time.perf_counter() - start,
                       run.certified)


def nbest_json(result: KBestResult) -> list[dict]:
    """The `"nbest"` list of `arsdecode decode --nbest K --json`, best first."""
    return [{"tokens": p.tokens, "log_p": p.log_p} for p in result.paths]
