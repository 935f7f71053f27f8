# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# distutils: language = c++
"""arsdecode's compiled core: the batched n-gram walk and the merged full-model DP.

Plain functions on arrays; arsdecode/native/__init__.py builds the tables from a maxarpa model.
Natural log throughout (the tables are converted from log10 once, by the wrapper).

One extension module built from parts, one job each, included below in this order (an include
is textual: a part sees the C declarations of the parts before it):

- _ngram.pxi: the n-gram walk, one row in C (maxarpa's Model._walk).
- _fulldp.pxi: the merged state space's useful contexts and their failure links.
- _maxplus.pxi: `best_rows`, the q-automaton's row maxima.
- _graph.pxi: the recorded layered graph's format, forward-backward, the checked wrappers.
- _kbest.pxi: lazy k-best over that graph.
- _ngramcore.pxi: `NgramCore`, a model's checked tables and the batched walk.
- _log10.pxi: `Log10Core`, a model's tables read in place in log10 (a mixture's components).
- _mixture.pxi: several tables interpolated: the walk, the bounds, the sparse bound pass.
- _mixcore.pxi: `MixCore`, a mixture's checked tables, what FullDP reads for it.
- _vpylm.pxi: a VPYLM's context tree, its walk and bound, and `VpCore`, what FullDP reads.
- _loglinear.pxi: a log-linear target (n-gram features with skips): its factor, bound and cut.
- _llstates.pxi: its states made on demand, per worker, and its sparse bound pass.
- _llcore.pxi: `LlCore`, its checked tables, what FullDP reads for it.
- _fullmodel.pxi: `FullDP`, the full DP's shared tables, checked entry points, worker pool.
- _dprows.pxi: dense transition rows (tags), each filled from its failure link's row.
- _dpcache.pxi: `_DPCaches`, one worker's transition memo.
- _dpbounds.pxi: `_DPBounds`, its pruning bounds and the backward bound pass.
- _dpsweep.pxi: `_DPWorker`, the DP sweeps over confusion networks and word lattices.
- _segment.pxi: the segmentation lattice's trie and builder (issue 33).

Why parts of one module and not several modules: they share C-level functions, structs and
inline methods, which across modules would need .pxd declarations and calls through a table
of pointers; one module keeps one build step and lets the C++ compiler inline across parts.
"""

import numpy as np

from arsdecode.errors import LatticeError, ModelError, OptionError

include "_ngram.pxi"
include "_fulldp.pxi"
include "_maxplus.pxi"
include "_graph.pxi"
include "_kbest.pxi"
include "_ngramcore.pxi"
include "_log10.pxi"
include "_mixture.pxi"
include "_mixcore.pxi"
include "_vpylm.pxi"
include "_loglinear.pxi"
include "_llstates.pxi"
include "_llcore.pxi"
include "_fullmodel.pxi"
include "_dprows.pxi"
include "_dpcache.pxi"
include "_dpbounds.pxi"
include "_dpsweep.pxi"
include "_segment.pxi"

MAX_ORDER = NG_MAX_ORDER  # the highest model order NgramCore takes (see _ngram.pxi)


def build_hash(const unsigned long long[::1] keys):
    """Open-addressing slots for `keys` (row -> slot by Fibonacci hashing, linear probing), the
    layout of maxarpa.table.HashIndex (2**bits >= 2 * len(keys) slots); returns (slots, bits)."""
    cdef Py_ssize_t m = keys.shape[0], i
    cdef int bits = 4
    while (1 << bits) < 2 * m:
        bits += 1
    slots_arr = np.full(1 << bits, -1, dtype=np.int32)
    cdef int[::1] slots = slots_arr
    cdef unsigned long long mask = (1ULL << bits) - 1
    cdef unsigned long long pos
    with nogil:
        for i in range(m):
            pos = (keys[i] * ARS_MIX) >> (64 - bits)
            while slots[pos] >= 0:
                pos = (pos + 1) & mask
            slots[pos] = <int>i
    return slots_arr, bits
