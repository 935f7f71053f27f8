"""auto's rules for choosing between the two exact methods, without importing either.

Why a module of its own: `tag_many` (the `tag --file` path) and `corpus.decode_many` both ask
these questions, and the answers need only the model's size and vocabulary, not the ARS
machinery that `arsdecode.corpus` imports (about 10 ms of a 0.2 s command).
See arsdecode/corpus.py for the rule itself and docs/performance.md section 4 for the figures.
"""

from __future__ import annotations

# auto: the pruned full DP abandons a lattice past this many (state, candidate) pairs, and ARS
# decodes it. Two budgets, because the compiled DP has two transition stores with per-pair
# costs far apart (bench/bench_auto.py, docs/performance.md section 4): a dense row per state
# for small vocabularies (tags; native DENSE_MAX_VOCAB = 4096) and a hash map for large ones.
AUTO_FULL_PAIRS = 30_000  # large vocabularies (bench_auto sweep: 3e4 best of 1e3..1e9)
AUTO_FULL_PAIRS_SMALL_VOCAB = 2_000_000  # tags (every budget >= 1e4 is within 1% of the oracle)
SMALL_VOCAB = 4096  # = arsdecode.native._core.DENSE_MAX_VOCAB
# The full DP's one-time setup (its useful-context tables) against ARS on the lattices of a
# call. Measured (docs/performance.md section 4): 0.6-1.5 us per n-gram (0.034 s for the
# embedded 100k-n-gram model, 0.6 s for 0.8M, 8.0 s for the 5.4M-n-gram 4-corpus 5-gram, 1.2 s
# for a tag 9-gram), and ARS takes 2-10 ms on the word lattices auto would give the full DP,
# 8-40 ms on a POS sentence (bench_auto's families).
SETUP_SECONDS_PER_NGRAM = 1e-6
ARS_SECONDS_PER_LATTICE = 5e-3
ARS_SECONDS_PER_LATTICE_SMALL_VOCAB = 25e-3


def setup_outweighs(lm, n_lattices: int) -> bool:
    """Whether building the full DP for `lm` (not built yet in this process) would cost more
    than ARS on `n_lattices` lattices: a one-off decode or tag on a large model runs ARS
    (milliseconds) instead of paying seconds of table building. A corpus pays it once."""
    from arsdecode.fast_full import is_built

    if is_built(lm):
        return False
    ars = ARS_SECONDS_PER_LATTICE_SMALL_VOCAB if _small_vocab(lm) else ARS_SECONDS_PER_LATTICE
    return n_lattices * ars < SETUP_SECONDS_PER_NGRAM * sum(lm.counts)


def full_pairs_budget(lm) -> float:
    """The (state, candidate) pairs past which `auto` abandons a lattice's full DP for ARS."""
    return float(AUTO_FULL_PAIRS_SMALL_VOCAB if _small_vocab(lm) else AUTO_FULL_PAIRS)


def _small_vocab(lm) -> bool:
    """Tag-sized vocabularies: the compiled DP keeps a dense transition row per state."""
    return lm.trie.vocab_size <= SMALL_VOCAB
