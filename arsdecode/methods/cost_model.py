"""auto's cost estimates: the time each exact method would take, from sizes alone.

Why a module of its own: it only estimates, it decides nothing (`methods.dispatch` turns these
numbers into auto's choice). Its inputs are the lattices' sizes (`LatticeSizes`), the model's
vocabulary size and n-gram count, so it can be refit from bench/bench_auto.py's measurements
without reading any decoder.

The estimates (docs/performance.md section 4, fit from bench/bench_auto.py's measurements):
  - ARS on a lattice costs about `ars_seconds`: a cost per position, per candidate, per
    position x candidate (its iterations grow with the length, and each costs about the size
    of the automaton, positions x width) and per cubed width (at a wide position with flat
    emissions the iterations grow with the width too: hundreds on 4 positions x 11,674 words,
    where ARS took seconds, against tens on SMS candidate lists). It is a low estimate on
    purpose (near the fastest lattices of each size): auto gives the full DP that much time
    before abandoning it, so a lattice ARS solves quickly costs auto little more than ARS, and
    a long or wide lattice, on which ARS is slow (seconds), gives the full DP the room it needs.
  - The full DP costs about `full_seconds_per_pair` per (state, candidate) pair.
  - The full DP's one-time setup (its useful-context tables) is about 1 us per n-gram when
    built (`setup_seconds`); nothing when the binary model file stores them (what is left,
    rebuilding their rows from the keys, is under 0.1 us per n-gram) or once built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arsdecode.lattice.flat import FlatLattices

# The compiled DP has two transition stores with per-pair costs far apart: a dense row per
# state for small vocabularies (tags) and a hash map for large ones.
SMALL_VOCAB = 4096  # = arsdecode.native._core.DENSE_MAX_VOCAB
# The ARS estimate per lattice (bench_auto's measurements): ARS took 0.4-18 ms per position
# of a word lattice and 1.2-11 ms per position of a tag lattice; 3-450 us per candidate,
# growing with the length (60-130 ns per position x candidate on 100-2,000 positions, 1 us
# on SMS lists of 4-10 positions); 4 positions x 11,674 random candidates took 2-15 s.
ARS_SECONDS_PER_POSITION = 1e-3
ARS_SECONDS_PER_POSITION_SMALL_VOCAB = 2e-3
ARS_SECONDS_PER_CANDIDATE = 2e-6
ARS_SECONDS_PER_POSITION_CANDIDATE = 5e-8
ARS_SECONDS_PER_CUBED_WIDTH = 2.3e-13  # 4 x 11,674: 1.5 s; a 1,755-word SMS list: 1 ms
# The compiled DP, direct-mapped store, per pair tried (a pruned state stops at its first
# hopeless candidate): 0.11 us on SMS full candidate lists, 0.19 us on top-100 lists, where
# the bound pass (per candidate, not counted in pairs) weighs more (bench_disambig).
FULL_SECONDS_PER_PAIR = 1.2e-7
FULL_SECONDS_PER_PAIR_SMALL_VOCAB = 3e-8  # dense rows (tags): 28 ns per pair on UD EWT
SETUP_SECONDS_PER_NGRAM = 1e-6  # building the tables: 0.6-1.5 us per n-gram


@dataclass(frozen=True)
class LatticeSizes:
    """Per lattice (arrays of one entry each, float64): what the estimates read."""

    positions: np.ndarray
    candidates: np.ndarray  # summed over positions
    cubed_widths: np.ndarray  # the sum over positions of the width cubed

    @classmethod
    def of_widths(cls, widths_per_lattice: Sequence[Sequence[int]]) -> LatticeSizes:
        """From each lattice's widths alone: no word lookups, so a caller can decide before
        building the flat layout (which looks up every candidate) whether it needs it."""
        rows = np.array([(len(w), sum(w), sum(x**3 for x in w)) for w in widths_per_lattice],
                        dtype=np.float64).reshape(-1, 3)
        return cls(rows[:, 0], rows[:, 1], rows[:, 2])

    @classmethod
    def of_flat(cls, flat: FlatLattices) -> LatticeSizes:
        widths = np.diff(flat.pos_off).astype(np.float64)
        cubes = np.concatenate(([0.0], np.cumsum(widths**3)))
        start, end = flat.sent_off[:-1], flat.sent_off[1:]
        return cls(np.diff(flat.sent_off).astype(np.float64),
                   (flat.pos_off[end] - flat.pos_off[start]).astype(np.float64),
                   cubes[end] - cubes[start])


def ars_seconds(vocab_size: int, sizes: LatticeSizes) -> np.ndarray:
    """The estimated ARS time on each lattice: grows with positions x width, and fast with the
    width alone."""
    per_position = (ARS_SECONDS_PER_POSITION_SMALL_VOCAB if small_vocab(vocab_size)
                    else ARS_SECONDS_PER_POSITION)
    p, c = sizes.positions, sizes.candidates
    return (per_position * p + ARS_SECONDS_PER_CANDIDATE * c
            + ARS_SECONDS_PER_POSITION_CANDIDATE * p * c
            + ARS_SECONDS_PER_CUBED_WIDTH * sizes.cubed_widths)


def full_seconds_per_pair(vocab_size: int) -> float:
    """The estimated time of the compiled full DP per (state, candidate) pair."""
    return (FULL_SECONDS_PER_PAIR_SMALL_VOCAB if small_vocab(vocab_size)
            else FULL_SECONDS_PER_PAIR)


def setup_seconds(ngrams: int) -> float:
    """The estimated time to build the full DP's useful-context tables of a model of `ngrams`
    n-grams (when the binary file does not store them and this process has not built them)."""
    return SETUP_SECONDS_PER_NGRAM * ngrams


def small_vocab(vocab_size: int) -> bool:
    """Tag-sized vocabularies: the compiled DP keeps a dense transition row per state."""
    return vocab_size <= SMALL_VOCAB
