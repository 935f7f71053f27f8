# The full-model dynamic program over merged (KenLM-style) context states, many lattices a call.
#
# A state is a "useful context" (arsdecode.full): a proper prefix of a listed n-gram, or a listed
# n-gram with a nonzero backoff. Useful contexts are prefix-closed, so each has a global id (gid)
# found by walking from its oldest word: key = gid(prefix) * V + word in an open-addressing hash
# (gid 0 is the empty context). cut(c.w), the next state, is the longest useful suffix of c.w;
# (gid, word) -> (next gid, ln p) is cached across sentences and calls.

from cython.operator cimport dereference as deref
from libc.math cimport exp, fabs, log, isfinite, INFINITY, NAN
from libcpp.algorithm cimport sort
from libcpp.pair cimport pair
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

ctypedef unsigned long long u64
ctypedef long long i64
ctypedef pair[double, i64] Ranked


cdef enum:
    UC_SHIFT = 4  # without a hash: a children index entry per 2**UC_SHIFT gids (uc_child)


cdef struct UsefulTables:
    int width                       # n - 1
    long long n_ctx
    const long long *rows           # (n_ctx, width) word ids, left-padded with -1
    const int *lens                 # (n_ctx,), or NULL: lengths n - 1 from gid full_from
    long long full_from             #   (a mixture's union: FullDP derives it from the keys)
    const unsigned long long *keys  # (n_ctx,) parent gid * V + last word (gid 0: unused)
    const int *slots                # the hash over keys, or NULL: bisect `child` instead
    long long nslots
    int bits
    const int *child                # with no hash ((n_ctx >> UC_SHIFT) + 2,): the children
                                    #   of gids b * 2**UC_SHIFT.. are gids child[b]..child[b + 1]


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


cdef inline long long uc_child(const UsefulTables *u, long long g, long long word,
                              long long vocab) noexcept nogil:
    """gid of the useful context g.word, or -1: by the hash, or, without one, by bisecting
    the children of g's block of 2**UC_SHIFT gids (a mixture's union, issue 34: a quarter of
    a byte a context instead of the hash's 8 to 16; FullDP checks the layout it relies on,
    keys[1:] strictly ascending, so a block's children are one range)."""
    cdef unsigned long long key = <unsigned long long>g * <unsigned long long>vocab \
        + <unsigned long long>word
    cdef long long lo, hi, end, mid
    if u.slots != NULL:
        return uc_find(u, key)
    lo = u.child[g >> UC_SHIFT]
    end = u.child[(g >> UC_SHIFT) + 1]
    hi = end
    while lo < hi:
        mid = (lo + hi) >> 1
        if u.keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    if lo < end and u.keys[lo] == key:
        return lo
    return -1


cdef inline long long uc_cut_append(const UsefulTables *u, const int *fail, long long vocab,
                                    long long gid, long long word) noexcept nogil:
    """gid of cut(context(gid) . word): its longest useful suffix (0 = the empty context).

    Useful contexts are prefix-closed, so a useful suffix of c.w is s.w with s a useful suffix
    of c; those are gid's failure chain (fail[g] = longest proper useful suffix of g, as in
    Aho-Corasick). Starting from gid itself unless c.w would exceed n - 1 words.
    """
    cdef long long g, c
    if u.width == 0:
        return 0
    if u.lens != NULL:
        g = gid if u.lens[gid] < u.width else fail[gid]
    else:
        g = gid if gid < u.full_from else fail[gid]
    while True:
        c = uc_child(u, g, word, vocab)
        if c >= 0:
            return c
        if g == 0:
            return 0
        g = fail[g]


cdef long long uc_blocks(UsefulTables *u, long long vocab, int *child,
                         bint set_full) noexcept nogil:
    """Without a hash: child[b] = the first gid whose parent is in gid block b (blocks of
    2**UC_SHIFT, (n_ctx >> UC_SHIFT) + 2 entries), in one pass over the keys; with
    `set_full` (no lengths given) also u.full_from, the first gid of n - 1 words: a gid whose
    parent is at or past the first gid of the current length has one word more (parents
    ascend with the keys). Returns the longest length, or -1 if the keys do not ascend or
    a context would pass n - 1 words (the layout uc_child and uc_cut_append rely on)."""
    cdef long long i, p = 0, parent, level = 1, level_start = 1
    cdef long long blocks = (u.n_ctx >> UC_SHIFT) + 1
    if u.n_ctx == 1:
        level = 0
    elif u.width == 1 and set_full:
        u.full_from = 1  # every context but the empty one has one word, n - 1
    for i in range(1, u.n_ctx):
        if i > 1 and u.keys[i] <= u.keys[i - 1]:
            return -1
        parent = <long long>(u.keys[i] // <unsigned long long>vocab)
        while p <= (parent >> UC_SHIFT):
            child[p] = <int>i
            p += 1
        if parent >= level_start:  # its parent has `level` words: it has one more
            level += 1
            level_start = i
            if level > u.width:
                return -1
            if level == u.width and set_full:
                u.full_from = i
    while p <= blocks:
        child[p] = <int>u.n_ctx
        p += 1
    return level


cdef void uc_fail_links(const UsefulTables *u, long long vocab, int *fail) noexcept nogil:
    """fail[x] for every gid, in gid order (gids ascend with length): x = p.w gets the first
    child by w along p's failure chain, else the empty context."""
    cdef long long x, p, w, g, c
    fail[0] = 0
    for x in range(1, u.n_ctx):
        p = <long long>(u.keys[x] // <unsigned long long>vocab)
        w = <long long>(u.keys[x] % <unsigned long long>vocab)
        if p == 0:
            fail[x] = 0
            continue
        g = fail[p]
        while True:
            c = uc_child(u, g, w, vocab)
            if c >= 0:
                fail[x] = <int>c
                break
            if g == 0:
                fail[x] = 0
                break
            g = fail[g]
