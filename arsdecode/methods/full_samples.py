"""Exact samples of a confusion network by the merged full DP, as a `SampleResult`.

Why: `sample(method="full")` on a confusion network draws exactly over the merged full-model
states (`methods.full.full_sample`: backward filtering on the expansion of the network's word
lattice layout, then forward sampling, the package's one sampler), and its caller gets
the same result type as ARS's: every draw is accepted (trials = n, acceptance rate 1) and
ln Z is exact (`full_log_partition`, a zero-width interval), so code written for ARS's
samples reads these unchanged. The numpy DP serves every target; its memory grows with the
merged states, which is why "auto" samples a confusion network by ARS.
"""

from __future__ import annotations

import math
import time

import numpy as np

from arsdecode.core.target import Target
from arsdecode.errors import OptionError
from arsdecode.lattice import Lattice
from arsdecode.methods.full import full_log_partition, full_sample
from arsdecode.methods.results import SampleResult, SampleTrace
from arsdecode.model import ModelLike, as_target_model


def full_sample_result(lm: ModelLike, lattice: Lattice, n: int,
                       seed: int | np.random.Generator | None = None, *,
                       rng: np.random.Generator | None = None) -> SampleResult:
    """`n` exact i.i.d. samples and the exact ln Z (natural log); `rng`, if given, is used
    instead of `seed`. Raises OptionError for n < 0, NoPathError if every path has
    probability zero."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise OptionError(f"n (the number of samples) must be an integer >= 0, not {n!r}")
    start = time.perf_counter()
    model = as_target_model(lm)
    if rng is None:
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    samples = full_sample(model, lattice, int(n), rng) if n else []
    log_z = full_log_partition(model, lattice)
    target = Target(model, lattice)
    idx = np.array([target.indices(t) for t in samples], dtype=np.int64).reshape(
        len(samples), len(lattice))
    log_p = target.log_p_batch(idx).tolist()
    trace = SampleTrace(ratios=[1.0] * len(samples), accepted=[True] * len(samples),
                        states=[0] * len(samples), log_Z_q=[log_z] * len(samples),
                        frozen_from=0, log_p=log_p, log_q=log_p)
    return SampleResult(
        samples=samples, log_p=log_p, trials=len(samples),
        acceptance_rate=1.0 if samples else 0.0, log_Z=log_z, log_Z_ci=(log_z, log_z),
        log_Z_unweighted=log_z, states=0, refinements=0,
        seconds=time.perf_counter() - start, trace=trace, adapted_at_trial=None,
        log_Z_rejection=log_z if samples else -math.inf,
        log_Z_rejection_ci=(log_z, log_z) if samples else (-math.inf, math.inf))
