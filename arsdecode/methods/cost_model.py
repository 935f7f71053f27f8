"""auto's cost model for choosing between the two exact methods, without importing either.

Why a module of its own: `tag_many` (the `tag --file` path) and `corpus.decode_many` both ask
these questions, and the answers need only the model's size and vocabulary and the lattices'
sizes, not the ARS machinery that `methods.dispatch` imports (about 10 ms of a 0.2 s command).

The model (docs/performance.md section 4, fit from bench/bench_auto.py's measurements):
  - ARS on a lattice costs about `ars_seconds`: a cost per position, per candidate, per
    position x candidate (its iterations grow with the length, and each costs about the size
    of the automaton, positions x width) and per cubed width (at a wide position with flat
    emissions the iterations grow with the width too: hundreds on 4 positions x 11,674 words,
    where ARS took seconds, against tens on SMS candidate lists). It is a low estimate on
    purpose (near the fastest lattices of each size): the full DP gets that much time before
    it is abandoned, so a lattice ARS solves quickly costs auto little more than ARS, and a
    long or wide lattice, on which ARS is slow (seconds), gives the full DP the room it needs.
  - The full DP costs about FULL_SECONDS_PER_PAIR per (state, candidate) pair; its budget on
    a lattice is the ARS estimate in pairs, and never less than a floor per vocabulary kind
    (the budgets bench_auto's sweep validated for short lattices).
  - The full DP's one-time setup (its useful-context tables) is about 1 us per n-gram when
    built, and counted as nothing when the binary model file stores them (what is left,
    rebuilding their rows from the keys, is under 0.1 us per n-gram) or once built.
"""

from __future__ import annotations

import sys

import numpy as np

# Floors of the pair budget. Two, because the compiled DP has two transition stores with
# per-pair costs far apart: a dense row per state for small vocabularies (tags; native
# DENSE_MAX_VOCAB = 4096) and a hash map for large ones.
AUTO_FULL_PAIRS = 30_000  # large vocabularies (bench_auto sweep: 3e4 best of 1e3..1e9)
# Tags: every budget >= 1e4 was within 1% of the oracle on WSJ-20, but out-of-domain text
# (UD EWT, many unknown words with ~20 candidate tags each) reaches 2.6M pairs on 24-word
# sentences, which the DP finishes in 0.07 s against ARS's 0.1-1.5 s: 2**23 pairs, ~0.25 s.
AUTO_FULL_PAIRS_SMALL_VOCAB = 2**23
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
FULL_SECONDS_PER_PAIR = 1e-6  # the compiled DP, hash-map store: 0.3-2 us per pair
FULL_SECONDS_PER_PAIR_SMALL_VOCAB = 3e-8  # dense rows (tags): 28 ns per pair on UD EWT
SETUP_SECONDS_PER_NGRAM = 1e-6  # building the tables: 0.6-1.5 us per n-gram


def ars_seconds(lm, positions, candidates, cubed_widths) -> np.ndarray:
    """The estimated ARS time on lattices (arrays, one entry per lattice) of `positions`
    positions, `candidates` candidates in all and `cubed_widths` the sum over positions of
    the cubed width: grows with positions x width, and fast with the width alone."""
    per_position = (ARS_SECONDS_PER_POSITION_SMALL_VOCAB if _small_vocab(lm)
                    else ARS_SECONDS_PER_POSITION)
    positions = np.asarray(positions, dtype=np.float64)
    candidates = np.asarray(candidates, dtype=np.float64)
    return (per_position * positions + ARS_SECONDS_PER_CANDIDATE * candidates
            + ARS_SECONDS_PER_POSITION_CANDIDATE * positions * candidates
            + ARS_SECONDS_PER_CUBED_WIDTH * np.asarray(cubed_widths, dtype=np.float64))


def lattice_sizes(widths_per_lattice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(positions, candidates, cubed widths) per lattice, from each lattice's widths."""
    sizes = np.array([(len(w), sum(w), sum(x**3 for x in w)) for w in widths_per_lattice],
                     dtype=np.float64).reshape(-1, 3)
    return sizes[:, 0], sizes[:, 1], sizes[:, 2]


def full_pairs_budgets(lm, positions, candidates, cubed_widths) -> np.ndarray:
    """Per lattice, the (state, candidate) pairs past which `auto` abandons its full DP for
    ARS: the ARS estimate in pairs rounded down to a power of 2**(1/4) (the estimate is
    coarse; finer steps would only pretend otherwise), at least the floor of the vocabulary
    kind. The compiled core takes one budget per lattice."""
    small = _small_vocab(lm)
    floor = AUTO_FULL_PAIRS_SMALL_VOCAB if small else AUTO_FULL_PAIRS
    per_pair = FULL_SECONDS_PER_PAIR_SMALL_VOCAB if small else FULL_SECONDS_PER_PAIR
    pairs = ars_seconds(lm, positions, candidates, cubed_widths) / per_pair
    rounded = np.exp2(np.floor(4 * np.log2(np.maximum(pairs, 1.0))) / 4)
    return np.maximum(float(floor), np.floor(rounded))


def setup_seconds(lm) -> float:
    """The estimated one-time cost of the full DP for `lm` in this process."""
    from maxarpa.contexts import has_stored_tables

    # Built only if arsdecode.methods.fast_full was imported: a one-off ARS call need not import it.
    fast_full = sys.modules.get("arsdecode.methods.fast_full")
    if (fast_full is not None and fast_full.is_built(lm)) or has_stored_tables(lm):
        return 0.0
    return SETUP_SECONDS_PER_NGRAM * sum(lm.counts)


def setup_outweighs(lm, ars_total_seconds: float) -> bool:
    """Whether setting up the full DP for `lm` would cost more than ARS on every lattice of
    the call (`ars_total_seconds`, the sum of `ars_seconds`): a one-off decode of a short
    lattice on a large model then runs ARS (milliseconds) instead of paying seconds of table
    building; a corpus, or one long or wide lattice, pays it."""
    return ars_total_seconds < setup_seconds(lm)


def _small_vocab(lm) -> bool:
    """Tag-sized vocabularies: the compiled DP keeps a dense transition row per state."""
    return lm.trie.vocab_size <= SMALL_VOCAB
