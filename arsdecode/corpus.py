"""Decoding many lattices at once: `decode_many`, with a choice of exact method per lattice.

Why: per sentence, ARS pays Python and numpy call overhead for every model query (the initial
automaton, each iteration's path scoring, each refinement). Here all active sentences advance
in lockstep, one ARS iteration at a time, and each step's model queries are concatenated
across sentences: one `log_prob` query for the paths to score, one `log_prob` and one
`log_bound` query for the rows to (re)fill. The model answers row by row, so every sentence
gets exactly the numbers `ars.decode` would get, and the same result (tested).

Method choice (`method="auto"`): the merged full DP (`arsdecode.full`) costs one model query
per (state, candidate) pair, and its merged state count is only known as it runs (KenLM-style
merging cuts the literal count by orders of magnitude on real models, so the literal count is a
poor predictor: measured in bench/bench_sms_decode.py, it picked the faster method on 31 of 60
lattices). `auto` therefore runs the full DP with a budget of `FULL_PAIRS_MAX` pairs per
position and falls back to ARS when a position exceeds it; the wasted work is at most the
positions before that one. Small candidate lists (POS tagging, top-K SMS) stay on the full DP,
full candidate lists go to ARS. Each result's `method` says which one ran.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Literal

import numpy as np

from arsdecode.ars import DEFAULT_TOL, DecodeResult
from arsdecode.automaton import DEFAULT_VARIANT, FillRequest, QAutomaton, Variant
from arsdecode.errors import NoPathError, OptionError
from arsdecode.full import FullTooLarge, full_decode
from arsdecode.inference import prune_hopeless, viterbi_indices
from arsdecode.lattice import Lattice
from arsdecode.model import TargetModel, as_target_model
from arsdecode.target import Target

Method = Literal["auto", "ars", "full"]
METHODS: tuple[str, ...] = ("auto", "ars", "full")
FULL_PAIRS_MAX = 20_000  # auto: the full DP gives up past this many pairs at one position


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise OptionError(f"unknown method {method!r}; choose from {METHODS}")


def decode_many(
    lm,
    lattices: Sequence[Lattice],
    *,
    method: Method = "auto",
    variant: Variant = DEFAULT_VARIANT,
    max_iterations: int | None = None,
    tol: float = DEFAULT_TOL,
) -> list[DecodeResult]:
    """The exact argmax of p on each lattice, in input order (natural log).

    ARS results are identical to `ars.decode(lm, lattice, ...)` field by field, apart from
    `seconds` (here: the wall time from the start of the batch until that lattice was done).
    Full-DP results have `method="full"`, `log_q = log_p`, one iteration and the merged DP's
    state count. Raises NoPathError naming the first lattice on which every path has
    probability zero.
    """
    _check_method(method)
    model = as_target_model(lm)
    methods = [method] * len(lattices)
    results: list[DecodeResult | None] = [None] * len(lattices)
    budget = FULL_PAIRS_MAX if method == "auto" else None
    for k, lat in enumerate(lattices):
        if methods[k] != "ars":
            try:
                f = full_decode(model, lat, max_pairs=budget)
            except FullTooLarge:
                methods[k] = "ars"
                continue
            except NoPathError as err:
                raise NoPathError(f"lattice {k}: {err}") from None
            results[k] = DecodeResult(
                tokens=f.tokens, log_p=f.log_p, log_q=f.log_p, iterations=1,
                states=f.dp_states, ngrams_by_order={}, trace=[(f.log_p, f.log_p)],
                seconds=f.seconds, certified=True, method="full",
            )
    ars = [k for k, m in enumerate(methods) if m == "ars"]
    for k, r in zip(ars, _ars_lockstep(model, [lattices[k] for k in ars], variant,
                                       max_iterations, tol, ars), strict=True):
        results[k] = r
    return [r for r in results if r is not None]


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


def _ars_lockstep(model, lattices, variant, max_iterations, tol, labels) -> list[DecodeResult]:
    """Algorithm 1 (decoding) on every lattice, one iteration at a time for all of them."""
    start = time.perf_counter()
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
