"""The K best paths of a confusion network, by the method `dispatch` chose: the compiled
merged DP's k-best (within a pair budget under "auto"), the numpy reference (`full_kbest`) for
a target without compiled tables, or ARS's k-best (`methods.kbest`).

Why its own module: k-best has its own memory refusals (K-lists held per state) and its own
budget, and `dispatch` holds the choice of every operation; the budget's knobs stay on
`dispatch` (tests set them there) and come here as `auto_pairs`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from arsdecode.errors import NoPathError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.lattice.flat import FlatLattices
from arsdecode.methods import fast_full
from arsdecode.methods.budget import memory_budget
from arsdecode.methods.cost_model import LatticeSizes
from arsdecode.methods.full import full_kbest
from arsdecode.methods.results import KBestResult, ScoredPath
from arsdecode.model import ModelLike, as_target_model, ngram_scoring

__all__ = ["AutoPairs", "cn_kbest"]

AutoPairs = Callable[[int, LatticeSizes], np.ndarray]
"""auto's pair budget of the compiled k-best: (vocabulary size, lattice sizes) -> per lattice."""


def cn_kbest(lm: ModelLike, lattice: Lattice, k: int, method: str, options: dict,
             auto_pairs: AutoPairs):
    """`decode(k=...)` on a confusion network: the K best distinct paths. "full" runs the
    merged DP's k-best (the compiled one given n-gram tables, else the numpy reference
    `full_kbest`); "auto" runs the compiled one within `auto_pairs(vocabulary size, sizes)`
    pairs (dispatch's budget), else ARS's k-best; "ars" runs ARS's. ARS options apply to ARS
    only."""

    if k < 1:
        raise OptionError("k (the number of paths) must be >= 1")
    # Every method holds K scores per state (or K paths): no more than the lattice has, as
    # the CLI's --nbest (k = 10**12 on a small lattice tried to allocate 7.28 TiB).
    k = min(k, lattice.num_paths())
    _check_kbest_fits(k, lattice)
    try:
        return _kbest_within_budget(lm, lattice, k, method, options, auto_pairs)
    except MemoryError:  # numpy's _ArrayMemoryError included: one line, not a traceback
        raise OptionError(f"k={k}: the {k} best paths ran out of memory; ask for fewer paths "
                          "(k, --nbest)") from None


def _check_kbest_fits(k: int, lattice: Lattice) -> None:
    """Refuse a k whose K-lists cannot fit in the memory budget, before any allocation.

    Why: cutting k to the number of paths is no help on a lattice with 10**30 of them, and
    `decode_kbest(lm, lattice, 10**9)` then died in numpy with a traceback (issue 29 B). The
    estimate is the CLI's --nbest floor (`cli.options.check_fits`: the paths kept, each a row
    of candidates and positions), held against the budget that `set_memory_budget` and
    --memory-budget set, so the API and the CLI refuse alike."""
    per_path = 24 * max(lattice.widths, default=1) + 16 * len(lattice) + 200
    need, budget = k * per_path, memory_budget()
    if need > budget:
        raise OptionError(f"k={k}: the {k} best paths need about {need / 1e9:,.1f} GB, more "
                          f"than the memory budget of {budget / 1e9:,.1f} GB; ask for fewer "
                          "paths, or raise the budget (set_memory_budget, --memory-budget)")


def _kbest_within_budget(lm: ModelLike, lattice: Lattice, k: int, method: str,
                         options: dict, auto_pairs: AutoPairs):
    """`cn_kbest` once k is known to fit."""
    from arsdecode.methods.kbest import decode_kbest

    model = as_target_model(lm)
    ngram = fast_full.compiled_tables(model) if method != "ars" else None
    if method != "ars" and ngram is not None and len(lattice):
        budget = None
        if method == "auto":
            sizes = LatticeSizes.of_widths([lattice.widths])
            budget = auto_pairs(len(ngram.vocab), sizes)
        start = time.perf_counter()
        flat = FlatLattices.from_lattices(model, [lattice])
        res = fast_full.kbest_flat(ngram, flat, k, max_pairs=budget,
                                   scoring=ngram_scoring(model))
        if not np.isnan(res.scores[0, 0]):
            return _compiled_kbest(res, lattice, time.perf_counter() - start)
    elif method == "full":  # the numpy reference DP's K-lists (any target)
        return full_kbest(lm, lattice, k)
    return decode_kbest(lm, lattice, k, **options)  # ARS's options (`check_options`)


def _compiled_kbest(res: fast_full.KBestBatch, lattice: Lattice, seconds: float
                    ) -> KBestResult:
    """Lattice 0 of a compiled k-best as a KBestResult (exact: log_q = log_p)."""
    live = np.flatnonzero(np.isfinite(res.scores[0]))
    if not len(live):
        raise NoPathError("every path has probability zero")
    paths = []
    for r in live.tolist():
        idx = tuple(res.choice[r, : len(lattice)].tolist())
        paths.append(ScoredPath([toks[j] for toks, j in zip(lattice.tokens, idx, strict=True)],
                                idx, float(res.scores[0, r]), float(res.scores[0, r])))
    return KBestResult(paths, iterations=res.passes, states=0, seconds=seconds, certified=True,
                       method="full")
