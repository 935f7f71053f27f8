"""Exact posteriors by the method `dispatch` chose: the compiled forward-backward over the
merged full-model states, the numpy reference (`full.full_marginals`), or None when the
marginals are to be sampled; and every arc's posterior over the merged expansion.

Why its own module: `dispatch` holds the choice of every operation and the knobs tests set on
it (`MARGINALS_FULL_STATES`, `memory_pairs_budget`); they come here as arguments, so the
knobs keep one home and this module stays below `dispatch` in the import graph.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from arsdecode.errors import NoPathError
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.lattice.flat import FlatLattices
from arsdecode.methods import expansion_posteriors, fast_full
from arsdecode.methods.budget import memory_budget
from arsdecode.methods.full import StatesBudgetExceeded, full_marginals
from arsdecode.methods.options import check_options
from arsdecode.model import ModelLike, as_target_model, ngram_scoring
from arsdecode.model.target_spec import weighted_target

__all__ = ["exact_posteriors", "lattice_posteriors"]


def exact_posteriors(lm: ModelLike, lattice: Lattice | WordLattice, method: str, *,
                     full_states: int, pairs_budget: Callable[[], int]
                     ) -> tuple[list[np.ndarray], float] | None:
    """`dispatch.exact_marginals` once `method` is known to be a marginals method: "auto"
    gives the compiled pass `pairs_budget()` pairs and the numpy one `full_states` merged
    states, and returns None past them."""
    if isinstance(lattice, WordLattice):  # arc posteriors; "sample" refused (check_options)
        check_options("marginals", "dag", method, {})
        arc_post, arc_log_z = lattice_posteriors(lm, lattice)
        return [arc_post], arc_log_z
    if method == "sample":
        return None
    model = as_target_model(lm)
    ngram = fast_full.compiled_tables(model)
    if ngram is not None and len(lattice):  # the compiled forward-backward
        flat = FlatLattices.from_lattices(model, [lattice])
        log_z, post = fast_full.posteriors_flat(
            ngram, flat, max_pairs=pairs_budget() if method == "auto" else None,
            scoring=ngram_scoring(model))
        if np.isnan(log_z[0]):
            return None
        if log_z[0] == -np.inf:
            raise NoPathError("every path has probability zero")
        return np.split(post, flat.pos_off[1:-1]), float(log_z[0])
    budget = full_states if method == "auto" else None
    try:
        return full_marginals(lm, lattice, max_states=budget)
    except StatesBudgetExceeded:
        return None


def lattice_posteriors(lm: ModelLike, lattice: Lattice | WordLattice
                       ) -> tuple[np.ndarray, float]:
    """Every arc's exact posterior and ln Z by forward-backward over the merged expansion
    (`expansion_posteriors.dag_posteriors`). A confusion network is read as the word lattice it is
    (`WordLattice.from_confusion`), and the answer has one entry per candidate, position by
    position, in lattice order: its marginal (0 for a candidate of weight -inf, which the
    word lattice has no arc for)."""
    if isinstance(lattice, WordLattice):
        return expansion_posteriors.dag_posteriors(lm, lattice, max_bytes=memory_budget())
    post, log_z = expansion_posteriors.dag_posteriors(lm, WordLattice.from_confusion(lattice),
                                                max_bytes=memory_budget())
    live = np.concatenate([np.isfinite(e) for e in lattice.log_emissions])
    out = np.zeros(len(live))
    out[live] = post  # from_confusion keeps the finite candidates, in order
    return out, log_z


def scaled_lattice_posteriors(lm: ModelLike, wl: WordLattice, scale: float
                              ) -> tuple[np.ndarray, float]:
    """`lattice_posteriors` under the target's scores divided by `scale` S (every path's
    probability proportional to exp(score / S)): lattice-tool's `-posterior-scale`, the
    flattening (S > 1) that overconfident scores need, exact for that distribution. Every arc
    and final weight is divided by S and the target weighted by 1 / S. One home for the CLI's
    --posterior-scale and the segmenter's calibrated posteriors; `scale` is checked by them
    (finite, > 0), each with its own option's name."""
    if scale == 1.0:
        return lattice_posteriors(lm, wl)
    flat = dataclasses.replace(
        wl, log_weights=np.asarray(wl.log_weights, dtype=np.float64) / scale,
        finals={f: w / scale for f, w in wl.finals.items()})
    return lattice_posteriors(weighted_target(lm, lm_weight=1.0 / scale), flat)
