# Dense transition rows (small vocabularies: tags): every word's (ln p, next state) after one
# state, filled at once from the row of the state's failure link.
#
# Why (issue 34, "Tagging at high order"): the DP used to compute each (state, tag) transition
# on its first use by two walks from scratch: walk A over the model's hash tables order by
# order (the longest table node v.w ending context.w), then the useful-context hash along the
# failure chain (the next state, cut(context.w)), about 10 memory misses per transition, 54% of
# a 9-gram tagging run. Both answers of a state g are those of its failure link f = fail[g]
# (its longest proper useful suffix), except where g itself adds something:
#
# - walk A: the longest node suffix of g.w is the one of f.w, unless f.w is itself a node
#   (its entry's order is |f| + 1): the walk then resumes from that node with g's older words,
#   exactly as walk A would continue (the table is suffix-closed: a node's key holds its
#   suffix's node, so walk A's consecutive search and this resumption meet the same nodes).
#   Only f's successors are probed, once per state, not every (state, word) from order 2.
# - the next state: cut(g.w) is g.w when that is a useful context (one of g's children in the
#   useful-context trie, listed in `child_*`), else cut(f.w), the same word's entry in f's row
#   (uc_cut_append's failure-chain loop, unrolled across rows); a state of n - 1 words has no
#   children (its g.w would be n words) and takes every next state from f's row.
#
# ln p is then the node's ln p plus the backoffs of the context suffixes longer than it,
# summed in walk B's order (ng_walk_in's sum, term for term), the same numbers as the walks:
# the row keeps the node's ln p per word (RowNode) to extend, and the sum (RowEntry) to read.


cdef extern from *:
    """
    #define ARS_PREFETCH(p) __builtin_prefetch((const void *)(p))
    """
    void ARS_PREFETCH(const void *p) noexcept nogil


cdef long long ROW_CHUNK = 512  # dense rows a chunk of their storage (_DPCaches.drow)


cdef packed struct RowEntry:
    # One dense transition (state, word), what the sweep reads: ln p and the next state.
    # Packed (12 bytes): a state's row of V is as few cache lines as it can be.
    double lp
    int nxt


cdef packed struct RowNode:
    # What a longer state's row is filled from (cold: only `row_from_fail` reads it): the
    # longest table node ending context.word, within its order, its order minus one, and its
    # ln p (copied along, instead of read from the model's lp array at a random place, a
    # cache miss per word).
    double base
    int node
    signed char lev


cdef struct RowCtx:
    # Walk B of a row's context (its suffixes while they are table nodes), kept with the nodes
    # of a row that longer rows are filled from: the longer context's walk B resumes from it.
    long long node   # the longest such suffix's node (-1: none)
    int depth        # its length; the backoffs of lengths 1..depth are in the row's bows


cdef inline void row_sums(const double *bows, int depth, int width, double *sums) noexcept nogil:
    """sums[l] (l = 0 .. width) = the ln backoffs bows[j - 1] of the context suffixes longer
    than l words (j = l + 1 .. depth), added shortest first from 0.0: what ng_walk_in adds to
    a node of order l + 1, term for term."""
    cdef int l, j
    cdef double s
    for l in range(width + 1):
        s = 0.0
        for j in range(l + 1, depth + 1):
            s += bows[j - 1]
        sums[l] = s


cdef void row_direct(const NgramTables *t, const UsefulTables *u, const int *fail,
                     long long gid, RowEntry *row, RowNode *nodes, double *bows,
                     RowCtx *rc) noexcept nogil:
    """gid's row by the two walks per word (the row of the empty context, or of a state whose
    failure link's row did not fit in the byte bound): the reference `row_from_fail` follows.
    `nodes`, `bows` and `rc` (what longer rows extend) may be NULL: not kept."""
    cdef long long V = t.vocab, w, node, dummy = -1
    cdef const long long *ctx = (u.rows + gid * u.width) if u.width else &dummy
    cdef int depth
    cdef RowCtx local
    cdef double sums[NG_MAX_ORDER]
    cdef double own[NG_MAX_ORDER]
    if bows == NULL:
        bows = own
    if rc == NULL:
        rc = &local
    rc.depth = ng_context_bows(t, ctx, u.width, bows, &rc.node)
    row_sums(bows, rc.depth, u.width, sums)
    for w in range(V):
        node = ng_walk_a(t, ctx, u.width, w, &depth)
        row[w].lp = t.lp[t.node_off[depth - 1] + node] + sums[depth - 1]
        row[w].nxt = <int>uc_cut_append(u, fail, V, gid, w)
        if nodes != NULL:
            nodes[w].node = <int>node
            nodes[w].lev = <signed char>(depth - 1)
            nodes[w].base = t.lp[t.node_off[depth - 1] + node]


cdef void row_from_fail(const NgramTables *t, const UsefulTables *u, const long long *child_off,
                        const int *child_word, const int *child_gid, long long gid, int flen,
                        const RowEntry *frow, const RowNode *fnodes, const double *fbows,
                        const RowCtx *frc, RowEntry *row, RowNode *nodes, double *bows,
                        RowCtx *rc) noexcept nogil:
    """gid's row from the row of its failure link (a context of `flen` words: frow, fnodes,
    fbows, frc): see this file's header for why each entry is the walks' answer. `nodes`,
    `bows` and `rc` as in `row_direct`."""
    cdef long long V = t.vocab, w, node, found, wj, k
    cdef const long long *ctx = u.rows + gid * u.width
    cdef int glen = u.lens[gid], j, l
    cdef double base
    cdef RowCtx local
    cdef double sums[NG_MAX_ORDER]
    cdef double own[NG_MAX_ORDER]
    if bows == NULL:
        bows = own
    if rc == NULL:
        rc = &local
    # Walk B: the failure link's suffixes are gid's shortest ones; go on from its deepest
    # when it reached its own length (else gid's walk stops where the link's did).
    rc.node = frc.node
    rc.depth = frc.depth
    for j in range(frc.depth):
        bows[j] = fbows[j]
    if frc.depth == flen:
        for j in range(flen + 1, glen + 1):
            wj = ctx[u.width - j]
            if j == 1:
                found = wj
            else:
                found = ng_find(t, j, <unsigned long long>rc.node * <unsigned long long>V
                                + <unsigned long long>wj)
                if found < 0:
                    break
            rc.node = found
            rc.depth = j
            bows[j - 1] = t.lbow[t.node_off[j - 1] + found]
    row_sums(bows, rc.depth, u.width, sums)
    for w in range(V):
        node = fnodes[w].node
        l = fnodes[w].lev
        base = fnodes[w].base
        row[w].nxt = frow[w].nxt
        if l == flen:  # f.w is a node: resume walk A with g's older words
            for j in range(flen + 1, glen + 1):
                wj = ctx[u.width - j]
                found = ng_find(t, j + 1, <unsigned long long>node * <unsigned long long>V
                                + <unsigned long long>wj)
                if found < 0:
                    break
                node = found
                l = j
            if l > flen:
                base = t.lp[t.node_off[l] + node]
        row[w].lp = base + sums[l]
        if nodes != NULL:
            nodes[w].node = <int>node
            nodes[w].lev = <signed char>l
            nodes[w].base = base
    if glen < u.width:
        for k in range(child_off[gid], child_off[gid + 1]):
            row[child_word[k]].nxt = child_gid[k]


cdef inline long long rows_missing(const int *fail, const int *block_of,
                                   long long gid) noexcept nogil:
    """How many rows filling gid's adds: gid's and its failure chain's up to the first that
    has one (or the empty context's)."""
    cdef long long missing = 1
    while gid != 0:
        gid = fail[gid]
        if block_of[gid] >= 0:
            break
        missing += 1
    return missing


cdef inline void row_prefetch(const RowEntry *row, const long long *words,
                              Py_ssize_t n) noexcept nogil:
    """Ask the memory for the entries of `words` in a row, so that the sweep finds them in
    the CPU's cache. Why: the rows a 9-gram tagger visits are hundreds of MiB, and each entry
    the sweep read was a cache miss that stalled it (45% of its time, perf); prefetched while
    the state before is swept, the misses overlap. A hint only."""
    cdef Py_ssize_t i
    for i in range(n):
        ARS_PREFETCH(row + words[i])


cdef void useful_children(const UsefulTables *u, long long vocab, vector[long long] &off,
                          vector[int] &word, vector[int] &child) noexcept nogil:
    """The useful-context trie's child lists (a counting sort of the keys by parent gid):
    gid g's children g.w are child[off[g]:off[g + 1]], with their last words in `word`."""
    cdef long long x, p, n = u.n_ctx
    cdef vector[long long] fill
    off.assign(n + 1, 0)
    word.assign(n - 1 if n > 1 else 0, 0)
    child.assign(n - 1 if n > 1 else 0, 0)
    for x in range(1, n):
        off[<long long>(u.keys[x] // <unsigned long long>vocab) + 1] += 1
    fill.assign(n, 0)
    for x in range(n):
        off[x + 1] += off[x]
        fill[x] = off[x]
    for x in range(1, n):
        p = <long long>(u.keys[x] // <unsigned long long>vocab)
        word[fill[p]] = <int>(u.keys[x] % <unsigned long long>vocab)
        child[fill[p]] = <int>x
        fill[p] += 1
