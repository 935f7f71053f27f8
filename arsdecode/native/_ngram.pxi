# The n-gram walk: maxarpa.model.Model._walk, one row at a time in C.
#
# Tables (built by arsdecode/native/__init__.py from a maxarpa trie): order k's nodes live at
# rows node_off[k-1] .. node_off[k]-1 of the flat value arrays (already natural log); order 1's
# node index is the word id. Orders >= 2 have maxarpa's open-addressing hash (Fibonacci hashing,
# linear probing): slots[slot_off[k-1] + pos] is a row within order k, or -1.

cdef extern from *:
    """
    static const unsigned long long ARS_MIX = 0x9E3779B97F4A7C15ULL;
    """
    const unsigned long long ARS_MIX


cdef enum:
    # The highest order the compiled core takes. Why a cap: the walks keep a context's
    # backoffs in a stack buffer (bows[NG_MAX_ORDER]; walk B writes up to order - 1 of them)
    # rather than allocating per query; NgramCore refuses a higher order at load.
    NG_MAX_ORDER = 64


cdef struct NgramTables:
    int order
    long long vocab
    const long long *node_off      # (order + 1,)
    const unsigned long long *keys  # flat, per order sorted
    const int *slots               # flat hash slots
    const long long *slot_off      # (order + 1,)
    const int *bits                # (order,)
    const double *lp               # ln p (listed, or backed-off for a blank)
    const double *lbow             # ln backoff (0 for blanks)
    const double *lmf              # ln max over left extensions of p
    const double *lmbow            # ln max accumulated backoff over left extensions


cdef inline long long ng_find(const NgramTables *t, int k, unsigned long long key) noexcept nogil:
    """Row (within order k >= 2) of `key`, or -1: maxarpa.table.HashIndex.find."""
    cdef int b = t.bits[k - 1]
    cdef long long nslots = t.slot_off[k] - t.slot_off[k - 1]
    if nslots == 0 or t.node_off[k] == t.node_off[k - 1]:
        return -1
    cdef const int *slots = t.slots + t.slot_off[k - 1]
    cdef const unsigned long long *keys = t.keys + t.node_off[k - 1]
    cdef unsigned long long mask = <unsigned long long>(nslots - 1)
    cdef unsigned long long pos = (key * ARS_MIX) >> (64 - b)
    cdef int idx
    while True:
        idx = slots[pos]
        if idx < 0:
            return -1
        if keys[idx] == key:
            return idx
        pos = (pos + 1) & mask


cdef inline long long ng_walk_a(const NgramTables *t, const long long *ctx, int width,
                                long long word, int *depth) noexcept nogil:
    """Walk A: the longest table node v.w ending ctx.w; returns its row, sets depth = |v| + 1."""
    cdef int j
    cdef long long node = word, found, wj
    depth[0] = 1
    for j in range(1, width + 1):
        wj = ctx[width - j]
        if wj < 0:
            break
        found = ng_find(t, j + 1, <unsigned long long>node * <unsigned long long>t.vocab
                        + <unsigned long long>wj)
        if found < 0:
            break
        node = found
        depth[0] = j + 1
    return node


cdef inline int ng_context_bows(const NgramTables *t, const long long *ctx, int width,
                                double *bows, long long *ctx_node) noexcept nogil:
    """Walk B: the context suffixes c[-1:], c[-2:], ... while they are table nodes; stores the
    ln backoff of suffix length j in bows[j - 1] and returns how many were found."""
    cdef int j, ctx_depth = 0
    cdef long long found, wj
    ctx_node[0] = -1
    for j in range(1, width + 1):
        wj = ctx[width - j]
        if wj < 0:
            break
        if j == 1:
            found = wj
        else:
            found = ng_find(t, j, <unsigned long long>ctx_node[0] * <unsigned long long>t.vocab
                            + <unsigned long long>wj)
            if found < 0:
                break
        ctx_node[0] = found
        ctx_depth = j
        bows[j - 1] = t.lbow[t.node_off[j - 1] + found]
    return ctx_depth


cdef inline int ng_context(const NgramTables *t, const long long *ctx, int width, int *ctx_len,
                           double *bows, long long *ctx_node) noexcept nogil:
    """What ng_walk needs of the context alone (its length, walk B): shared by every word
    queried after the same context. `width` must already be at most n - 1."""
    cdef int j
    ctx_len[0] = 0
    for j in range(width):
        if ctx[j] >= 0:
            ctx_len[0] += 1
    return ng_context_bows(t, ctx, width, bows, ctx_node)


cdef inline double ng_walk_in(const NgramTables *t, const long long *ctx, int width,
                              long long word, bint want_max, int ctx_len, int ctx_depth,
                              const double *bows, long long ctx_node) noexcept nogil:
    """ng_walk given the context's part (ng_context): walk A and the sums, same order."""
    cdef int n = t.order
    cdef int j, depth, matched, k
    cdef long long node
    cdef double base, mf, bow_sum
    node = ng_walk_a(t, ctx, width, word, &depth)
    matched = depth - 1
    base = t.lp[t.node_off[depth - 1] + node]
    mf = t.lmf[t.node_off[depth - 1] + node] if want_max else 0.0
    bow_sum = 0.0
    for j in range(matched + 1, ctx_depth + 1):  # backoffs of suffixes longer than v
        bow_sum += bows[j - 1]
    if not want_max:
        return base + bow_sum
    if matched == ctx_len:
        return mf
    if ctx_depth == ctx_len and 1 <= ctx_len <= n - 1:
        k = ctx_len
        return (base + bow_sum) + (t.lmbow[t.node_off[k - 1] + ctx_node]
                                   - t.lbow[t.node_off[k - 1] + ctx_node])
    return (base + bow_sum) + 0.0


cdef inline double ng_walk(const NgramTables *t, const long long *ctx, int width,
                           long long word, bint want_max) noexcept nogil:
    """ln p(word | ctx) or its max-backoff bound; `ctx` holds `width` ids, left-padded with -1.

    The same two walks and the same summation order as Model._walk (see its docstring), so the
    result is that method's log10 value computed on ln-converted tables.
    """
    cdef int ctx_len, ctx_depth
    cdef long long ctx_node
    cdef double bows[NG_MAX_ORDER]
    if width > t.order - 1:
        ctx += width - (t.order - 1)
        width = t.order - 1
    ctx_depth = ng_context(t, ctx, width, &ctx_len, bows, &ctx_node)
    return ng_walk_in(t, ctx, width, word, want_max, ctx_len, ctx_depth, bows, ctx_node)
