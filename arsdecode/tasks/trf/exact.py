"""Exact samples of a random field at each sentence length, and its exact normalisers.

Why per length: p(l, x) = pi_l exp(score(x)) / Z_l factors into the length prior and, at each
length, the field normalised over the sentences of that length. A fixed-length lattice (every
position holds the whole vocabulary, emission 0) has exactly those sentences as paths, so
adaptive rejection on it (`methods.ars.sample`) draws i.i.d. samples of p(x | l) and its
evidence estimate is ln Z_l, with a 95% interval: what random-field training needs, with no
Markov chain, no burn-in and no zeta to learn (the lattice is `Lattice.fixed_length`).

`method="full"` draws the same samples by the numpy merged DP (forward filtering, backward
sampling: `methods.full.full_sample`) with the exact ln Z (`full_log_partition`), for
comparison and as the evaluation's reference normaliser. Both go through
`methods.dispatch.sample`, which owns the choice.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from arsdecode.lattice import Lattice
from arsdecode.methods.dispatch import sample
from arsdecode.methods.full import full_log_partition
from arsdecode.model import TargetModel

ExactMethod = Literal["ars", "full"]


@dataclass(frozen=True)
class LengthDraw:
    """Samples at one length and the normaliser there (natural log).

    `log_Z` is ARS's importance estimate (`log_Z_ci` its 95% interval) or, for "full", the
    exact value (a zero-width interval); `trials` counts ARS's proposals (n for "full")."""

    length: int
    samples: list[list[str]]
    log_Z: float
    log_Z_ci: tuple[float, float]
    trials: int
    seconds: float


def draw_length(model: TargetModel, vocab: Sequence[str], length: int, n: int,
                rng: np.random.Generator, *, method: ExactMethod = "ars",
                **ars_options) -> LengthDraw:
    """`n` exact samples of the model normalised over sentences of `length` words of `vocab`,
    and ln Z at that length (`ars_options` go to `methods.ars.sample`: batch, target_ar, ...).
    """
    start = time.perf_counter()
    lattice = Lattice.fixed_length(vocab, length)
    r = sample(model, lattice, n, method=method, rng=rng, **ars_options)  # dispatch chooses
    return LengthDraw(length, r.samples, r.log_Z, r.log_Z_ci, r.trials,
                      time.perf_counter() - start)


def draw_exact(model: TargetModel, vocab: Sequence[str], counts: Mapping[int, int],
               rng: np.random.Generator, *, method: ExactMethod = "ars",
               **ars_options) -> dict[int, LengthDraw]:
    """`draw_length` for every length of `counts` (length -> number of samples, >= 1)."""
    return {length: draw_length(model, vocab, length, n, rng, method=method, **ars_options)
            for length, n in sorted(counts.items()) if n > 0}


def exact_log_partitions(model: TargetModel, vocab: Sequence[str], lengths: Sequence[int]
                         ) -> dict[int, float]:
    """The exact ln Z_l for each length (the numpy merged forward DP over the fixed-length
    lattice; exact for any `TargetModel`, the evaluation's reference)."""
    return {int(length): full_log_partition(model, Lattice.fixed_length(vocab, int(length)))
            for length in lengths}


def stratified_counts(log_pi: np.ndarray, total: int, minimum: int = 1) -> dict[int, int]:
    """Samples per length for one expectation: about `total` * pi_l, at least `minimum`, for
    every length with pi_l > 0 (`log_pi` indexed by length, -inf where not allowed)."""
    pi = np.exp(np.asarray(log_pi, dtype=np.float64))
    pi = pi / pi.sum()
    return {int(length): max(int(minimum), int(math.floor(total * pi[length] + 0.5)))
            for length in np.flatnonzero(pi > 0)}
