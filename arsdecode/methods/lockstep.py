"""Algorithm 1's decoding step over many lattices at once (`decode_many`'s ARS part).

Why: per sentence, ARS pays Python and numpy call overhead for every model query (the initial
automaton, each iteration's path scoring, each refinement). Here all active sentences advance
in lockstep, one `ars.ArsDecoder` iteration at a time, and each step's model queries are
concatenated across sentences: one `log_prob` query for the paths to score, one `log_prob` and
one `log_bound` query for the rows to (re)fill. The model answers row by row, so every
sentence gets exactly the numbers `ars.decode` would get, and the same result (tested).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from arsdecode.errors import BoundViolationError, NoPathError
from arsdecode.lattice import Lattice
from arsdecode.methods.results import DecodeResult
from arsdecode.model import TargetModel

if TYPE_CHECKING:
    from arsdecode.core.automaton import FillRequest, QAutomaton, Variant
    from arsdecode.methods.ars import ArsDecoder
    from arsdecode.methods.fast_full import BatchResult

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


def ars_lockstep(
    model: TargetModel,
    lattices: Sequence[Lattice],
    variant: Variant,
    max_iterations: int | None,
    tol: float,
    labels: Sequence[object],
    start: float,
) -> list[DecodeResult]:
    """Algorithm 1 (decoding) on every lattice, one iteration at a time for all of them.

    `model` is already a TargetModel (`dispatch` converts it once). Errors name the lattice
    by its label; `seconds` of each result counts from `start`.
    """
    from arsdecode.methods.ars import ArsDecoder  # here: a full-DP decode never loads ARS

    active = {k: ArsDecoder(model, lat, variant=variant, tol=tol, max_iterations=max_iterations,
                            fill=False)
              for k, lat in enumerate(lattices)}
    _answer(model, [(run.qa, q) for run in active.values()
                    for q in run.qa.fill_requests(run.qa.unfilled)])  # q^(0) of every lattice
    results: list[DecodeResult | None] = [None] * len(lattices)
    try:
        while active:
            for k, run in active.items():  # x* = argmax q, on every lattice
                with _naming(labels[k]):
                    run.propose()
            _score(model, list(active.values()))  # p(x*) of every lattice: one model query
            requests: list[tuple[QAutomaton, FillRequest]] = []
            for k, run in list(active.items()):
                with _naming(labels[k]):
                    run.judge(run.score())  # every factor is known now: no query
                if not run.done:  # Algorithm 2; the new rows are filled below, batched
                    requests.extend((run.qa, q) for q in run.refine(defer=True))
                if run.done:
                    results[k] = run.result(time.perf_counter() - start)
                    del active[k]  # release the automaton now, not when the slowest finishes
            _answer(model, requests)
    except KeyboardInterrupt:
        for k, run in active.items():
            if results[k] is None:
                results[k] = run.best_so_far(time.perf_counter() - start)
        raise DecodeManyInterrupted(results) from None
    return [r for r in results if r is not None]


class DecodeManyInterrupted(KeyboardInterrupt):
    """Ctrl-C during `decode_many`, carrying what was found, in input order.

    Why: as `ars.DecodeInterrupted` for one lattice, a long corpus decode keeps its answers.
    `results[i]` is lattice i's result when it was done (certified as usual), the best path
    scored so far when it was being decoded by ARS (`certified=False`, `states` -1, `log_q`
    the least ln q(x*) seen: `log_q - log_p` bounds its gap to the optimum), and None when
    its decode had not started or had scored no path yet. From `dispatch.decode_flat`, the
    lattices the compiled full DP solved are None in `results` and found in `compiled`.
    """

    def __init__(self, results: list[DecodeResult | None],
                 compiled: BatchResult | None = None, compiled_seconds: float = 0.0) -> None:
        super().__init__("interrupted")
        self.results = results
        self.compiled = compiled
        self.compiled_seconds = compiled_seconds


@contextmanager
def _naming(label: object) -> Iterator[None]:
    """Prefix the lattice's label to the errors one decoder raises about its lattice."""
    try:
        yield
    except (NoPathError, BoundViolationError) as err:
        raise type(err)(f"lattice {label}: {err}") from None


def _score(model: TargetModel, runs: list[ArsDecoder]) -> None:
    """Answer the missing factors of p on every decoder's x* with one `log_prob` query."""
    missing = [r.missing_factors() for r in runs]
    if not sum(len(m) for m in missing):
        return
    rows = np.concatenate(missing)
    width = rows.shape[1] - 1
    values = model.log_prob(rows[:, :width], rows[:, width])
    pos = 0
    for r, m in zip(runs, missing, strict=True):
        r.target.remember(m, values[pos : pos + len(m)])
        pos += len(m)


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
