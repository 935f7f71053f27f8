"""Algorithm 1's decoding step over many lattices at once (`decode_many`'s ARS part).

Why: per sentence, ARS pays Python and numpy call overhead for every model query (the initial
automaton, each iteration's path scoring, each refinement). Here all active sentences advance
in lockstep, one ARS iteration at a time, and each step's model queries are concatenated
across sentences: one `log_prob` query for the paths to score, one `log_prob` and one
`log_bound` query for the rows to (re)fill. The model answers row by row, so every sentence
gets exactly the numbers `ars.decode` would get, and the same result (tested).
"""

from __future__ import annotations

import math
import time

import numpy as np

from arsdecode.core.automaton import FillRequest, QAutomaton
from arsdecode.core.inference import prune_hopeless, viterbi_indices
from arsdecode.core.target import Target
from arsdecode.errors import NoPathError
from arsdecode.lattice import Lattice
from arsdecode.methods.ars import DecodeResult
from arsdecode.model import TargetModel

LOCKSTEP_CANDIDATES = 20_000  # candidates (summed over positions) decoded in lockstep at most


def lockstep_groups(items: list[int], sizes: list[int]) -> list[list[int]]:
    """Consecutive runs of `items` whose summed `sizes` stay within LOCKSTEP_CANDIDATES (an
    item larger than that alone).

    Why: lockstep pays the per-query overhead once for many small lattices, but every
    automaton of a group stays in memory until the group ends; on a large vocabulary
    (thousands of candidates per position, hundreds of MB an automaton) twenty lattices in
    lockstep took 1.6x the memory and 1.3x the time of one at a time.
    """
    groups: list[list[int]] = []
    total = 0
    for item, size in zip(items, sizes, strict=True):
        if not groups or total + size > LOCKSTEP_CANDIDATES:
            groups.append([])
            total = 0
        groups[-1].append(item)
        total += size
    return groups



class _Run:
    """One lattice's ARS state in the lockstep loop."""

    def __init__(self, model: TargetModel, lattice: Lattice, variant: str) -> None:
        self.lattice = lattice
        self.qa = QAutomaton(model, lattice, variant=variant, fill=False)
        self.target = Target(model, lattice, token_ids=self.qa.cand_ids)
        self.qa.on_exact_fill = self.target.remember_context
        self.trace: list[tuple[float, float]] = []
        self.idx: list[int] = []
        self.log_q = self.log_p = math.nan
        self.best_log_p = -math.inf
        self.result: DecodeResult | None = None


def _answer(model: TargetModel, requests: list[tuple[QAutomaton, FillRequest]]) -> None:
    """Answer fill requests of several automata with one query per kind (exact, bound)."""
    for exact in (True, False):
        group = [(qa, r) for qa, r in requests if r.exact == exact]
        if not group:
            continue
        contexts = np.concatenate([r.contexts for _, r in group])
        words = np.concatenate([r.words for _, r in group])
        values = (model.log_prob if exact else model.log_bound)(contexts, words)
        pos = 0
        for qa, r in group:
            qa.apply_fill(r, values[pos : pos + len(r.words)])
            pos += len(r.words)


def ars_lockstep(model, lattices, variant, max_iterations, tol, labels,
                  start: float) -> list[DecodeResult]:
    """Algorithm 1 (decoding) on every lattice, one iteration at a time for all of them;
    `seconds` of each result counts from `start`."""
    from arsdecode.errors import BoundViolationError
    from arsdecode.methods.ars import (
        check_bound,  # imported here: only the lockstep loop needs them
    )

    runs = [_Run(model, lat, variant) for lat in lattices]
    _answer(model, [(r.qa, q) for r in runs for q in r.qa.fill_requests(r.qa.unfilled)])
    width = max(model.order - 1, 0)
    active = list(runs)
    iteration = 0
    while active:
        iteration += 1
        for r in active:  # x* = argmax q
            r.idx, r.log_q = viterbi_indices(r.qa)
        missing = [r.target.missing_factors(r.idx) for r in active]
        if sum(len(m) for m in missing):  # p(x*) for every sentence: one query
            rows = np.concatenate(missing)
            values = model.log_prob(rows[:, :width], rows[:, width])
            pos = 0
            for r, m in zip(active, missing, strict=True):
                r.target.remember(m, values[pos : pos + len(m)])
                pos += len(m)
        requests: list[tuple[QAutomaton, FillRequest]] = []
        still: list[_Run] = []
        for r in active:
            r.log_p = r.target.log_p_indices(r.idx)
            r.trace.append((r.log_q, r.log_p))
            if r.log_q == -math.inf:
                label = labels[runs.index(r)]
                raise NoPathError(f"lattice {label}: every path has probability 0 under the model")
            try:  # the certificate is two-sided, as in ars.decode
                check_bound(r.qa, r.target, r.idx, r.log_q, r.log_p, tol)
            except BoundViolationError as err:
                raise BoundViolationError(f"lattice {labels[runs.index(r)]}: {err}") from None
            if r.log_q - r.log_p <= tol:  # certificate: q(x*) = p(x*) and q >= p
                _finish(r, iteration, True, start)
                continue
            if r.log_p > r.best_log_p:  # exact pruning, as in decode
                r.best_log_p = r.log_p
                prune_hopeless(r.qa, r.best_log_p)
            if r.qa.variant == "all-edges":  # refine; the new rows are filled below, batched
                pending: list[tuple[int, int]] = []
                changed = r.qa.refine_indices(r.idx, pending=pending)
                requests.extend((r.qa, q) for q in r.qa.fill_requests(pending))
            else:
                changed = r.qa.refine_indices(r.idx)
            if not changed:
                _finish(r, iteration, r.log_q - r.log_p <= 1e-6, start)
            elif max_iterations is not None and iteration >= max_iterations:
                _finish(r, iteration, False, start)
            else:
                still.append(r)
        _answer(model, requests)
        active = still
    return [r.result for r in runs if r.result is not None]


def _finish(r: _Run, iteration: int, certified: bool, start: float) -> None:
    lat = r.lattice
    r.result = DecodeResult(
        tokens=[lat.tokens[i][j] for i, j in enumerate(r.idx)],
        log_p=float(r.log_p),
        log_q=float(r.log_q),
        iterations=iteration,
        states=r.qa.num_states(),
        ngrams_by_order=r.qa.ngrams_by_order(),
        trace=r.trace,
        seconds=time.perf_counter() - start,
        certified=certified,
        method="ars",
    )
    # The automaton is done with: release it now, not when the group's slowest finishes.
    r.qa = None  # type: ignore[assignment]
    r.target = None  # type: ignore[assignment]
