# One backoff model's tables read where the model holds them, in log10: the walk and its owner.
#
# Why a part of its own: NgramCore (_ngram.pxi, _ngramcore.pxi) walks flat natural-log copies
# of a model's values, 40 bytes an n-gram with its hash (about 260 MB for the 5.4M-n-gram
# general model of `-mix-lm`, issue 34). A mixture's components are read here instead, in
# place (a mapped binary file's pages, or the arrays read from text): each value is scaled by
# ln 10 where it is read, the same product of the same two doubles NativeNgram.from_model
# stores, summed in the same order, so every walk returns NgramCore's number bit for bit (the
# tests compare them with ==). The mixture's walks (_mixture.pxi) and InterpolatedLM's batched
# queries (`Log10Core.walk`) read these tables.


cdef struct L10Tables:
    # One backoff model's trie as maxarpa holds it; index k - 1 is order k. Order 1's row is
    # the word id. An order k >= 2 node's key is parent * V + word (parent: its row at order
    # k - 1), the keys ascending, so a parent's children are one range, children[k - 1][parent]
    # .. children[k - 1][parent + 1], searched by bisection: 4 bytes per parent instead of a
    # hash's 8 to 16 bytes per node (issue 34: 15 MB, not 57 MB, for the 5.4M-n-gram model).
    int order
    long long vocab
    double ln10                               # maxarpa.constants.LN10, the factor from_model uses
    long long rows[NG_MAX_ORDER]              # nodes of each order
    const unsigned long long *keys[NG_MAX_ORDER]
    const int *children[NG_MAX_ORDER]         # order k >= 2: (rows[k - 2] >> shift[k - 1]) + 2
    int shift[NG_MAX_ORDER]                   #   offsets, the first child of each parent block
                                              #   offsets, the first child of each parent block
    const double *lp[NG_MAX_ORDER]            # log10 p
    const double *lbow[NG_MAX_ORDER]          # log10 backoff
    const double *lmf[NG_MAX_ORDER]           # log10 max over left extensions of p
    const double *lmbow[NG_MAX_ORDER]         # log10 max accumulated backoff
    # The same bounds where the model holds them as float32 (a format-3 file's, rounded up:
    # still bounds), else NULL: read through l10_mf / l10_mbow, each value widened exactly
    # where it is read, so no float64 copy of them exists (issue 34: 60 MB for -mix-lm).
    const float *fmf[NG_MAX_ORDER]
    const float *fmbow[NG_MAX_ORDER]


cdef inline double l10_mf(const L10Tables *t, int k, long long i) noexcept nogil:
    """Order k + 1's mf of row i, log10, in float64 (widened exactly from a float32)."""
    if t.fmf[k] != NULL:
        return <double>t.fmf[k][i]
    return t.lmf[k][i]


cdef inline double l10_mbow(const L10Tables *t, int k, long long i) noexcept nogil:
    """Order k + 1's mbow of row i, log10, in float64 (widened exactly from a float32)."""
    if t.fmbow[k] != NULL:
        return <double>t.fmbow[k][i]
    return t.lmbow[k][i]


cdef enum:
    CHILD_SHIFT = 4  # past CHILD_FULL_ROWS parents, an index entry per 2**CHILD_SHIFT of them
    CHILD_FULL_ROWS = 1 << 20  # up to this many parents, an entry each (4 MB at most)


cdef inline long long l10_find(const L10Tables *t, int k, long long parent,
                               long long word) noexcept nogil:
    """Row (within order k >= 2) of the node parent * V + word, or -1: a bisection of the
    children of parent's block (keys ascending, so they are one range, children[k - 1][b]..
    children[k - 1][b + 1], b = parent >> shift[k - 1]). Why blocks: an offset per parent
    was 15 MB of -mix-lm's general model; an order with more than CHILD_FULL_ROWS parents
    takes one per 2**CHILD_SHIFT (its 3 M rows: 0.8 MB) for up to four more bisection steps,
    a smaller one an offset each (the walks' shorter orders, most probed: 2.7 MB), 3.5 MB
    in all (issue 34). `parent` is a row of order k - 1, checked by the caller's walk."""
    cdef const int *child = t.children[k - 1]
    cdef long long b = parent >> t.shift[k - 1]
    cdef long long lo = child[b], end = child[b + 1], hi = end, mid
    cdef const unsigned long long *keys = t.keys[k - 1]
    cdef unsigned long long key = <unsigned long long>parent * <unsigned long long>t.vocab \
        + <unsigned long long>word
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    if lo < end and keys[lo] == key:
        return lo
    return -1


cdef inline int l10_context(const L10Tables *t, const long long *ctx, int width, int *ctx_len,
                            double *bows, long long *ctx_node) noexcept nogil:
    """ng_context on L10Tables: the context's length, and walk B (its suffixes while they are
    nodes, their ln backoffs in bows); `width` at most order - 1."""
    cdef int j, ctx_depth = 0
    cdef long long found, wj
    ctx_len[0] = 0
    for j in range(width):
        if ctx[j] >= 0:
            ctx_len[0] += 1
    ctx_node[0] = -1
    for j in range(1, width + 1):
        wj = ctx[width - j]
        if wj < 0:
            break
        if j == 1:
            found = wj
        else:
            found = l10_find(t, j, ctx_node[0], wj)
            if found < 0:
                break
        ctx_node[0] = found
        ctx_depth = j
        bows[j - 1] = t.ln10 * t.lbow[j - 1][found]
    return ctx_depth


cdef inline double l10_walk_in(const L10Tables *t, const long long *ctx, int width,
                               long long word, bint want_max, int ctx_len, int ctx_depth,
                               const double *bows, long long ctx_node) noexcept nogil:
    """ng_walk_in on L10Tables (walk A, then the same sums in the same order)."""
    cdef int j, depth = 1, matched, k
    cdef long long node = word, found, wj
    cdef double base, mf, bow_sum
    for j in range(1, width + 1):  # walk A: the longest node v.word ending ctx.word
        wj = ctx[width - j]
        if wj < 0:
            break
        found = l10_find(t, j + 1, node, wj)
        if found < 0:
            break
        node = found
        depth = j + 1
    matched = depth - 1
    base = t.ln10 * t.lp[depth - 1][node]
    mf = t.ln10 * l10_mf(t, depth - 1, node) if want_max else 0.0
    bow_sum = 0.0
    for j in range(matched + 1, ctx_depth + 1):
        bow_sum += bows[j - 1]
    if not want_max:
        return base + bow_sum
    if matched == ctx_len:
        return mf
    if ctx_depth == ctx_len and 1 <= ctx_len <= t.order - 1:
        k = ctx_len
        return (base + bow_sum) + (t.ln10 * l10_mbow(t, k - 1, ctx_node)
                                   - t.ln10 * t.lbow[k - 1][ctx_node])
    return (base + bow_sum) + 0.0


cdef inline double l10_walk(const L10Tables *t, const long long *ctx, int width,
                            long long word, bint want_max) noexcept nogil:
    """ng_walk on L10Tables: ln p(word | ctx) or its max-backoff bound, bit for bit."""
    cdef int ctx_len, ctx_depth
    cdef long long ctx_node
    cdef double bows[NG_MAX_ORDER]
    if width > t.order - 1:
        ctx += width - (t.order - 1)
        width = t.order - 1
    ctx_depth = l10_context(t, ctx, width, &ctx_len, bows, &ctx_node)
    return l10_walk_in(t, ctx, width, word, want_max, ctx_len, ctx_depth, bows, ctx_node)


cdef class Log10Core:
    """One backoff model's tables read in place, in log10 (`L10Tables`): `walk` answers
    (context, word) rows in ln, the same numbers as NgramCore.walk on NativeNgram's copy.

    Per order k (lists of k arrays): keys (ascending, uint64: parent row * V + word for
    k >= 2), log10 p, backoff (float64), mf and mbow (float64, or float32 as a format-3 file
    stores them: read as stored and widened per value), e.g. read-only views of a mapped
    binary file. `ln10` is the factor every value is scaled by where read
    (NativeNgram.from_model's LN10). The children offsets of each order >= 2 (one per block
    of parents, see l10_find) are derived here, in one pass over its keys that also checks
    them (ModelError): every index the walk reads unchecked is valid."""

    cdef L10Tables t
    cdef readonly object arrays
    cdef readonly list children

    def __init__(self, long long vocab, double ln10, list keys, list lp, list lbow, list lmf,
                 list lmbow):
        cdef int order = <int>len(keys), k
        cdef long long m, i, parent, prev_rows, p, blocks
        cdef unsigned long long last
        cdef bint bad = False
        cdef const unsigned long long[::1] kv
        cdef const double[::1] a
        cdef const float[::1] f
        cdef int[::1] ch
        if not 1 <= order <= NG_MAX_ORDER:
            raise ModelError(f"Log10Core: order {order} is outside 1..{NG_MAX_ORDER}")
        if not len(lp) == len(lbow) == len(lmf) == len(lmbow) == order:
            raise ModelError("Log10Core: one array of each kind per order")
        if vocab < 1:
            raise ModelError("Log10Core: an empty vocabulary")
        self.arrays = (keys, lp, lbow, lmf, lmbow)
        self.children = [None]
        self.t.order = order
        self.t.vocab = vocab
        self.t.ln10 = ln10
        for k in range(1, order + 1):
            kv = keys[k - 1]
            m = kv.shape[0]
            if k == 1 and m != vocab:
                raise ModelError("Log10Core: order 1 must have one row per word of the "
                                 "vocabulary")
            if m >= (1LL << 31) - 1:
                raise ModelError(f"Log10Core: order {k} has too many n-grams")
            self.t.rows[k - 1] = m
            self.t.keys[k - 1] = &kv[0] if m else NULL
            self.t.fmf[k - 1] = NULL
            self.t.fmbow[k - 1] = NULL
            for dest, arrays in enumerate((lp, lbow, lmf, lmbow)):
                if dest >= 2 and getattr(arrays[k - 1], "dtype", None) == np.float32:
                    f = arrays[k - 1]  # a float32 bound, read in place
                    if f.shape[0] != m:
                        raise ModelError(f"Log10Core: order {k}'s values do not match its "
                                         "keys")
                    if dest == 2:
                        self.t.fmf[k - 1] = &f[0] if m else NULL
                        self.t.lmf[k - 1] = NULL
                    else:
                        self.t.fmbow[k - 1] = &f[0] if m else NULL
                        self.t.lmbow[k - 1] = NULL
                    continue
                a = arrays[k - 1]
                if a.shape[0] != m:
                    raise ModelError(f"Log10Core: order {k}'s values do not match its keys")
                if dest == 0:
                    self.t.lp[k - 1] = &a[0] if m else NULL
                elif dest == 1:
                    self.t.lbow[k - 1] = &a[0] if m else NULL
                elif dest == 2:
                    self.t.lmf[k - 1] = &a[0] if m else NULL
                else:
                    self.t.lmbow[k - 1] = &a[0] if m else NULL
            self.t.children[k - 1] = NULL
            if k >= 2:
                prev_rows = self.t.rows[k - 2]
                self.t.shift[k - 1] = 0 if prev_rows <= CHILD_FULL_ROWS else CHILD_SHIFT
                blocks = (prev_rows >> self.t.shift[k - 1]) + 1
                arr = np.empty(blocks + 1, dtype=np.int32)
                ch = arr
                with nogil:  # a counting pass: keys ascending, parent rows below prev_rows
                    p = 0
                    for i in range(m):
                        if i and kv[i] <= kv[i - 1]:
                            bad = True
                            break
                        parent = <long long>(kv[i] // <unsigned long long>vocab)
                        if parent >= prev_rows:
                            bad = True
                            break
                        while p <= (parent >> self.t.shift[k - 1]):
                            ch[p] = <int>i
                            p += 1
                    while p <= blocks:
                        ch[p] = <int>m
                        p += 1
                if bad:
                    raise ModelError(f"Log10Core: order {k}'s keys are not ascending or name "
                                     "no parent")
                self.children.append(arr)
                self.t.children[k - 1] = &ch[0]

    @property
    def order(self) -> int:
        return self.t.order

    @property
    def vocab(self) -> int:
        return self.t.vocab

    def walk(self, const long long[:, ::1] contexts, const long long[::1] words, bint want_max):
        """ln p (or the ln max-backoff bound) of each row; contexts (B, k) left-padded with -1.
        Word ids must be in [0, V) and the context ids read (the last order - 1 columns)
        below V (OptionError). Rows with the previous row's context reuse its walk B."""
        cdef Py_ssize_t b = words.shape[0], i
        cdef int width = <int>contexts.shape[1], j
        cdef long long V = self.t.vocab
        if contexts.shape[0] != b:
            raise OptionError("contexts must be (B, k) with one row per word")
        cdef int w = width if width <= self.t.order - 1 else self.t.order - 1
        cdef int shift = width - w, ctx_len = 0, ctx_depth = 0
        for i in range(b):
            if words[i] < 0 or words[i] >= V:
                raise OptionError(f"word id {words[i]} out of range (vocabulary of {V})")
            for j in range(shift, width):
                if contexts[i, j] >= V:
                    raise OptionError(f"context id {contexts[i, j]} out of range "
                                      f"(vocabulary of {V})")
        out = np.empty(b, dtype=np.float64)
        cdef double[::1] o = out
        cdef long long dummy = -1, ctx_node = -1
        cdef const long long *row
        cdef double bows[NG_MAX_ORDER]
        cdef bint same
        with nogil:
            for i in range(b):
                row = (&contexts[i, 0] + shift) if w else &dummy
                same = i > 0
                if same:
                    for j in range(w):
                        if contexts[i, shift + j] != contexts[i - 1, shift + j]:
                            same = False
                            break
                if not same:
                    ctx_depth = l10_context(&self.t, row, w, &ctx_len, bows, &ctx_node)
                o[i] = l10_walk_in(&self.t, row, w, words[i], want_max, ctx_len, ctx_depth,
                                   bows, ctx_node)
        return out
