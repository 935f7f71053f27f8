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

Ctrl-C keeps what was found (`KBestInterrupted`): the K best distinct paths scored so far, and
per rank r a bound. Every q is >= p, so q has at least r paths at or above the r-th best ln p:
the r-th best ln q of any iteration bounds it from above, and the r-th best path scored so far
from below. The gap of the list is the largest of those differences.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence

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
    L = qa.n_nodes - 1
    final = qa.nodes[L].final[: len(qa.nodes[L])]
    values = np.full((len(final), k), -np.inf)
    values[:, 0] = final
    backs: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * L
    for i in range(L - 1, -1, -1):
        layer = qa.nodes[i]
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
            s = int(qa.nodes[i].targets[s, j])
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
        self.found: dict[tuple[int, ...], tuple[float, float]] = {}  # path: (ln p, ln q)
        self.rank_bounds: list[float] = []  # per rank r: the least r-th best ln q seen

    def judge(self, log_p: Sequence[float]) -> None:
        """`ArsDecoder.judge`, then keep what an interrupt reports (module docstring)."""
        super().judge(log_p)
        ranked = sorted(self.log_q, reverse=True)  # bounds first: `found` implies bounds
        self.rank_bounds = [min(a, b) for a, b in zip(self.rank_bounds, ranked, strict=False)
                            ] if self.rank_bounds else ranked
        for idx, lp, lq in zip(self.paths, self.log_p, self.log_q, strict=True):
            if lp > -math.inf:
                self.found[tuple(idx)] = (lp, lq)

    def ranked(self, rows: Iterable[tuple[float, tuple[int, ...], float]]) -> list[ScoredPath]:
        """(ln p, indices, ln q) rows as ScoredPaths, by ln p then candidate indices."""
        ordered = sorted(rows, key=lambda row: (-row[0], row[1]))
        return [ScoredPath(self.tokens(p), p, lp, lq) for lp, p, lq in ordered]

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
    on_iteration: Callable[[int, list[str], float, float], None] | None = None,
) -> KBestResult:
    """The k most probable distinct paths of p over the lattice, each exact, best first.

    `on_iteration`: callback(iteration, tokens, ln q, ln p) of q's best path, after each
    iteration (for traces and progress). Ctrl-C raises `KBestInterrupted` with the best
    paths scored so far and their gap (module docstring).

    Raises:
        OptionError: k < 1.
        NoPathError: every path has probability 0.
    """
    if k < 1:
        raise OptionError("k (the number of paths) must be >= 1")
    start = time.perf_counter()
    run = KBestDecoder(as_target_model(lm), lattice, k, variant=variant, tol=tol,
                       max_iterations=max_iterations)
    try:
        while not run.done:  # certified iff q's K best paths are all exact
            run.step()
            if on_iteration is not None:
                on_iteration(run.iterations, run.tokens(run.paths[0]), run.log_q[0],
                             run.log_p[0])
    except KeyboardInterrupt:
        if not run.found:  # no path scored yet: nothing to report
            raise
        raise KBestInterrupted(run, time.perf_counter() - start) from None
    paths = run.ranked((lp, tuple(p), lq) for p, lp, lq in zip(run.paths, run.log_p, run.log_q,
                                                               strict=True) if lp > -math.inf)
    return KBestResult(paths, run.iterations, run.qa.num_states(), time.perf_counter() - start,
                       run.certified)


class KBestInterrupted(KeyboardInterrupt):
    """Ctrl-C during `decode_kbest`, carrying the K best distinct paths scored so far.

    Why a KeyboardInterrupt: as `ars.DecodeInterrupted`, code that does not know it stops as
    on any interrupt. `result` is a KBestResult with `certified=False` (`states` -1: q may
    be mid-refinement); `gap` (ln) bounds how far each path can be below the true path of its
    rank: the largest, over the ranks, of the least r-th best ln q seen minus the r-th path's
    ln p (module docstring).
    """

    def __init__(self, run: KBestDecoder, seconds: float) -> None:
        super().__init__("interrupted")
        paths = run.ranked((lp, p, lq) for p, (lp, lq) in run.found.items())[:run.k]
        self.result = KBestResult(paths, run.iterations, -1, seconds, False)
        self.gap = max(bound - p.log_p
                       for bound, p in zip(run.rank_bounds, paths, strict=False))


def nbest_json(result: KBestResult) -> list[dict]:
    """The `"nbest"` list of `arsdecode decode --nbest K --json`, best first."""
    return [{"tokens": p.tokens, "log_p": p.log_p} for p in result.paths]
