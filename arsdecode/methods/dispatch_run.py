"""Running the exact method that `dispatch` chose, on many lattices: on confusion networks
the compiled full DP over their flat layout, the numpy reference full DP or ARS in lockstep,
their answers as `DecodeResult`s; on word lattices the merged expansion (compiled or numpy).

Why its own module: `dispatch` is where a method is chosen (its knobs, the budgets tests
monkeypatch, are read there and passed down as arguments: a `Plan`); this is how a choice
runs. Nothing here chooses.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arsdecode.core.q_states import Variant
from arsdecode.errors import NoPathError
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.lattice.flat import FlatLattices
from arsdecode.methods import fast_full
from arsdecode.methods.expansion_dp import dag_decode
from arsdecode.methods.fast_full import BatchResult
from arsdecode.methods.lockstep import DecodeManyInterrupted, ars_lockstep, lockstep_groups
from arsdecode.methods.results import DecodeResult, exact_decode_result
from arsdecode.model import TargetModel, ngram_scoring

__all__ = ["FlatDecodeResult", "Plan", "ars_many", "compiled_full", "compiled_result",
           "full_word_lattices", "reference_full"]

Plan = tuple[bool, "np.ndarray | None"]
"""Whether the compiled full DP runs, and its pair budget per lattice (None: no budget)."""


@dataclass(frozen=True)
class FlatDecodeResult:
    """`decode_flat`'s answer, per lattice of the FlatLattices it was given."""

    choice: np.ndarray  # (P,) the chosen candidate's index per position; -1 in `decoded`'s
    log_p: np.ndarray  # (S,) ln p of each lattice's best path
    methods: tuple[str, ...]  # (S,) "full" or "ars": the exact method that ran
    decoded: dict[int, DecodeResult]  # by lattice: those the compiled call did not solve
    compiled: BatchResult | None  # the compiled call (state and pair counts), if it ran
    compiled_seconds: float = 0.0  # its wall time


def compiled_full(model: TargetModel, flat: FlatLattices, plan: Plan
                  ) -> tuple[BatchResult | None, float, list[int]]:
    """The compiled full DP on `flat` as `plan` (dispatch's choice) says: (its result, or None
    where it did not run; its wall time; the lattices left to the other decoders, in order).

    Raises NoPathError naming the first lattice whose paths all have probability zero.
    """
    everyone = list(range(flat.n_lattices))
    runs, budgets = plan
    ngram = fast_full.compiled_tables(model) if runs else None
    if ngram is None:
        return None, 0.0, everyone
    start = time.perf_counter()
    res = fast_full.run_flat(ngram, flat, viterbi=True, max_pairs=budgets,
                             scoring=ngram_scoring(model))
    seconds = time.perf_counter() - start
    over = np.isnan(res.score)  # abandoned past its budget
    dead = np.flatnonzero(~np.isfinite(res.score) & ~over)
    if len(dead):
        raise NoPathError(f"lattice {int(dead[0])}: every path has probability zero")
    return res, seconds, np.flatnonzero(over).tolist()


def ars_many(model: TargetModel, lattices: Sequence[Lattice], labels: list[int],
              variant: Variant, max_iterations: int | None, tol: float) -> list[DecodeResult]:
    """ARS on every lattice, in lockstep groups (`lockstep_groups`), in input order. Ctrl-C
    raises DecodeManyInterrupted with one entry per lattice (None for the groups not run)."""
    start = time.perf_counter()
    out: list[DecodeResult | None] = []
    for group in lockstep_groups(list(range(len(lattices))),
                                 [sum(lat.widths) for lat in lattices]):
        try:
            out.extend(ars_lockstep(model, [lattices[k] for k in group], variant,
                                    max_iterations, tol, [labels[k] for k in group], start))
        except DecodeManyInterrupted as stop:
            out.extend(stop.results)
            raise DecodeManyInterrupted(out + [None] * (len(lattices) - len(out))) from None
    return out  # type: ignore[return-value]  # no None without an interrupt


def reference_full(model: TargetModel, lattices: Sequence[Lattice], labels: list[int]
                    ) -> list[DecodeResult]:
    """The numpy reference full DP (`methods.full`) per lattice: a target without compiled
    tables still gets method "full"."""
    from arsdecode.methods.full import full_decode  # here: the compiled DP does not need it

    out = []
    for k, lat in zip(labels, lattices, strict=True):
        try:
            f = full_decode(model, lat)
        except NoPathError as err:
            raise NoPathError(f"lattice {k}: {err}") from None
        out.append(exact_decode_result(f.tokens, f.log_p, f.dp_states, f.seconds,
                                       arcs=f.indices))
    return out


def compiled_result(res: BatchResult, flat: FlatLattices, s: int, lattice: Lattice,
                     seconds: float) -> DecodeResult:
    """Lattice `s` of a compiled call as a DecodeResult (`seconds`: the call's, shared out)."""
    p0, p1 = int(flat.sent_off[s]), int(flat.sent_off[s + 1])
    choice = res.choice[p0:p1].tolist()
    tokens = [toks[j] for toks, j in zip(lattice.tokens, choice, strict=True)]
    return exact_decode_result(tokens, float(res.score[s]), int(res.dp_states[s]),
                               seconds / max(flat.n_lattices, 1), arcs=tuple(choice))


def full_word_lattices(model: TargetModel, lattices: Sequence[WordLattice]
                       ) -> list[DecodeResult]:
    """The merged expansion's best path of every word lattice: one compiled call over all of
    them given n-gram tables (`fast_full.run_dag`, each result's `seconds` the call's mean),
    else the numpy reference (`dag_full.dag_decode`) lattice by lattice. Raises NoPathError
    naming the first lattice with no path of nonzero probability.

    A word lattice shaped like a confusion network (every arc a word from node i to i + 1,
    one final node) stays here, on the expansion, and is not routed to the compiled
    confusion-network DP (`run_flat`), by decision (issue 30). Measured on 90 SMS lattices
    (embedded 5-gram, widths 3-30): `run_dag` 0.011 s; converting them to `Lattice`s and
    their flat layout 0.004 s, then `run_flat` 0.0025 s with its bound pruning, or 0.009 s
    without it. The pruned DP would be ~1.8x faster, but its `states` and `transitions` would
    count what pruning kept rather than the merged expansion these results report, and its
    tie rule (the first best predecessor) is not the expansion's (the smallest arc
    sequence), so one lattice's answer would depend on its shape. The confusion network's
    own speed is kept where it is read: a `Lattice` (the CLI's and the API's positions) goes
    to `run_flat` on its flat layout."""
    ngram = fast_full.compiled_tables(model)
    if ngram is None:  # no compiled tables: the numpy reference
        return [dag_decode(model, wl) for wl in lattices]
    start = time.perf_counter()
    found = fast_full.run_dag(ngram, lattices, scoring=ngram_scoring(model))
    each = (time.perf_counter() - start) / max(len(lattices), 1)
    out = []
    for wl, best in zip(lattices, found, strict=True):
        if best.log_p == -np.inf:
            raise NoPathError(f"{wl.source}: every path has probability zero")
        out.append(exact_decode_result(wl.path_words(best.arcs), best.log_p, best.states,
                                       each, arcs=tuple(best.arcs),
                                       transitions=best.transitions))
    return out
