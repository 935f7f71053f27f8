"""Exact samples by the merged full DP, as a `SampleResult`, on either lattice kind.

Why: `sample(method="full")` draws exactly over the merged full-model states (forward
filtering on the expansion, backward sampling: `expansion_dp.sample_arcs`, the package's one
sampler; a confusion network through its word-lattice layout, `methods.full.full_sample`),
and its caller gets the same result type as ARS's (`results.exact_sample_result`): every draw
is accepted (trials = n, acceptance rate 1) and ln Z is exact (a zero-width interval), so code
written for ARS's samples reads these unchanged. The DP serves every target; its memory grows
with the merged states, which is why "auto" samples a confusion network by ARS.
"""

from __future__ import annotations

import time

import numpy as np

from arsdecode.core.target import Target
from arsdecode.errors import OptionError
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.methods.expansion_dp import sample_arcs
from arsdecode.methods.full import full_log_partition, full_sample_paths
from arsdecode.methods.results import SampleResult, exact_sample_result
from arsdecode.model import ModelLike, as_target_model


def _generator(seed: int | np.random.Generator | None, rng: np.random.Generator | None
               ) -> np.random.Generator:
    if rng is not None:
        return rng
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def full_sample_result(lm: ModelLike, lattice: Lattice, n: int,
                       seed: int | np.random.Generator | None = None, *,
                       rng: np.random.Generator | None = None) -> SampleResult:
    """`n` exact i.i.d. samples of a confusion network and the exact ln Z (natural log);
    `rng`, if given, is used instead of `seed`. Each path's `arcs` are its candidate indices.
    Raises OptionError for n < 0, NoPathError if every path has probability zero."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise OptionError(f"n (the number of samples) must be an integer >= 0, not {n!r}")
    start = time.perf_counter()
    model = as_target_model(lm)
    samples, arcs = full_sample_paths(model, lattice, int(n), _generator(seed, rng))
    log_z = full_log_partition(model, lattice)
    target = Target(model, lattice)
    idx = np.array(arcs, dtype=np.int64).reshape(len(samples), len(lattice))
    log_p = target.log_p_batch(idx).tolist()
    return exact_sample_result(samples, arcs, log_p, log_z, time.perf_counter() - start, "cn")


def dag_sample_result(lm: ModelLike, wl: WordLattice, n: int,
                      seed: int | np.random.Generator | None = None, *,
                      rng: np.random.Generator | None = None) -> SampleResult:
    """`n` exact i.i.d. paths of a word lattice (`expansion_dp.dag_sample`'s draws, the same
    ones for the same generator) and its exact ln Z, as a SampleResult (method "full"; each
    path's `arcs` its arc numbers). Raises OptionError for n < 1, NoPathError if every path
    has probability zero."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise OptionError(f"n (the number of samples) must be an integer >= 1, not {n!r}")
    start = time.perf_counter()
    paths, scores, log_z = sample_arcs(as_target_model(lm), wl, int(n), _generator(seed, rng))
    return exact_sample_result([wl.path_words(p) for p in paths], [tuple(p) for p in paths],
                               scores.tolist(), log_z, time.perf_counter() - start, "dag")
