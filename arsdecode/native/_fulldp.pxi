# The full-model dynamic program over merged (KenLM-style) context states, many lattices a call.
#
# A state is a "useful context" (arsdecode.full): a proper prefix of a listed n-gram, or a listed
# n-gram with a nonzero backoff. Useful contexts are prefix-closed, so each has a global id (gid)
# found by walking from its oldest word: key = gid(prefix) * V + word in an open-addressing hash
# (gid 0 is the empty context). cut(c.w), the next state, is the longest useful suffix of c.w;
# (gid, word) -> (next gid, ln p) is cached across sentences and calls.

from cython.operator cimport dereference as deref
from libc.math cimport exp, log, isfinite, INFINITY
from libcpp.pair cimport pair
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

ctypedef unsigned long long u64
ctypedef long long i64
ctypedef pair[i64, double] Trans
ctypedef unordered_map[u64, Trans] TransMap


cdef struct UsefulTables:
    int width                       # n - 1
    long long n_ctx
    const long long *rows           # (n_ctx, width) word ids, left-padded with -1
    const int *lens                 # (n_ctx,)
    const unsigned long long *keys  # (n_ctx,) parent gid * V + last word (gid 0: unused)
    const int *slots
    long long nslots
    int bits


cdef inline long long uc_find(const UsefulTables *u, unsigned long long key) noexcept nogil:
    cdef unsigned long long mask = <unsigned long long>(u.nslots - 1)
    cdef unsigned long long pos = (key * ARS_MIX) >> (64 - u.bits)
    cdef int idx
    while True:
        idx = u.slots[pos]
        if idx < 0:
            return -1
        if u.keys[idx] == key:
            return idx
        pos = (pos + 1) & mask


cdef inline long long uc_cut_append(const UsefulTables *u, long long vocab, long long gid,
                                    long long word) noexcept nogil:
    """gid of cut(context(gid) . word): its longest useful suffix (0 = the empty context)."""
    cdef long long seq[64]
    cdef int L = u.lens[gid]
    cdef int total, s, t, start0
    cdef long long g
    if u.width == 0:
        return 0
    for t in range(L):
        seq[t] = u.rows[gid * u.width + u.width - L + t]
    seq[L] = word
    total = L + 1
    start0 = total - u.width if total > u.width else 0
    for s in range(start0, total):
        g = 0
        for t in range(s, total):
            g = uc_find(u, <unsigned long long>g * <unsigned long long>vocab
                        + <unsigned long long>seq[t])
            if g < 0:
                break
        if g >= 0:
            return g
    return 0
