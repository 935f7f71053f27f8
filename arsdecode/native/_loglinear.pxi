# A log-linear target (arsdecode.model.loglinear) as the full DP's transition source.
#
# Why a part of its own: the factor of w after h is sum_i alpha_i ln p_i(w | h) plus the
# weights of the n-gram feature patterns (words and `*` skips) that end at w. A skip `a * c`
# makes the word two back matter whatever word lies between, so no fixed table of states
# serves it (a state (a, v) for every word v). Here the states are made on demand, per
# worker: a state is the longest suffix of the history that is a component's useful context
# or a proper prefix of a pattern (its `*` matching any word); that set is prefix-closed, so
# cut(c + w) = the longest such suffix of cut(c) + w, computed from the state's own words
# (`ll_step`). Each component keeps its own useful-context state (its `UsefulTables` and
# failure links), so its cut is one `uc_cut_append`. The argument is in
# arsdecode/methods/fast_loglinear.py's docstring.


cdef enum:
    LL_MAX = 8          # components
    LL_MAX_KEEP = 16    # words a pattern (or prefix) names

cdef size_t LL_RESET_STATES = 1 << 18  # a worker's states kept between runs, at most (about
# 8 * (width + components) + 24 bytes each: tens of MiB)


cdef struct LlShape:
    # Patterns of one shape: their span, the positions of their words (oldest first, not the
    # `*`s), their codes (the words' ids in base V, ascending) and, for a feature shape, the
    # summed weight of each code (NULL for a prefix shape).
    int span
    int nkeep
    int keep[LL_MAX_KEEP]
    const long long *codes
    const double *weights
    long long n


cdef struct LlTables:
    int k
    long long vocab
    int width                      # the state's words: the target's order - 1
    const NgramTables *t[LL_MAX]
    UsefulTables u[LL_MAX]         # each component's useful contexts, in its ids
    const int *fail[LL_MAX]
    const long long *map[LL_MAX]   # target id -> component id (NULL: the same ids)
    double alpha[LL_MAX]
    int nshape
    const LlShape *shape           # feature shapes, in FeatureTable.shapes' order
    int npre
    const LlShape *pre             # proper prefixes of patterns, longest span first
    const double *fb_empty         # per word: the features' bound after any context
    const double *fb_other         # per word y: their bound after a word no feature ending
    # in y names just before it; the named (x, y) pairs, CSR by x, ys ascending:
    const long long *named_off
    const long long *named_y
    const double *named_fb
    # The skips' part of fb_other[y], per y (`ll_other_at`): fb_other[y] = uni[y] +
    # max(0, max_v B_v): B_v for the words v named two before y (CSR by y) and rest[y] for
    # every other word there.
    const double *uni
    const long long *two_off
    const long long *two_v
    const double *two_val
    const double *rest
    bint sparse                    # one component of order >= 2: the sparse bound pass
    const long long *next_off      # that component's bigram successors (NgramCore's)
    const int *next_word


cdef inline long long ll_bsearch(const long long *codes, long long n,
                                 long long code) noexcept nogil:
    cdef long long lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if codes[mid] < code:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < n and codes[lo] == code else -1


cdef inline long long ll_shape_code(const LlShape *s, const long long *row, int width,
                                    long long w, long long V) noexcept nogil:
    """The code of the shape's words at the end of row + w (-1: its first word is not
    there, the row's -1 padding)."""
    cdef int j, col
    cdef long long x, code = 0
    col = width + 1 - s.span
    if col < 0 or (col < width and row[col] < 0):
        return -1
    for j in range(s.nkeep):
        col = width + 1 - s.span + s.keep[j]
        x = w if col == width else row[col]
        code = code * V + x
    return code


cdef inline double ll_features(const LlTables *m, const long long *row,
                               long long w) noexcept nogil:
    """The weight of the features ending at w within row + w (FeatureTable.value: the
    shapes in its order, each one's summed weight)."""
    cdef double f = 0.0
    cdef int i
    cdef long long code, at
    cdef const LlShape *s
    for i in range(m.nshape):
        s = &m.shape[i]
        code = ll_shape_code(s, row, m.width, w, m.vocab)
        if code < 0:
            continue
        at = ll_bsearch(s.codes, s.n, code)
        if at >= 0:
            f = f + s.weights[at]
    return f


cdef inline double ll_walk(const LlTables *m, const long long *row, long long w) noexcept nogil:
    """ln phi(w | row) (LogLinearLM.log_prob: the features, then each alpha_i ln p_i)."""
    cdef long long ctx[NG_MAX_ORDER]
    cdef double total = ll_features(m, row, w)
    cdef int i, j
    cdef long long x
    for i in range(m.k):
        if m.map[i] == NULL:
            total = total + m.alpha[i] * ng_walk(m.t[i], row, m.width, w, False)
        else:
            for j in range(m.width):
                x = row[j]
                ctx[j] = m.map[i][x] if x >= 0 else -1
            total = total + m.alpha[i] * ng_walk(m.t[i], ctx, m.width, m.map[i][w], False)
    return total


cdef inline double ll_feature_bound(const LlTables *m, long long x, long long y) noexcept nogil:
    cdef long long at
    if x < 0:
        return m.fb_empty[y]
    at = ll_bsearch(m.named_y + m.named_off[x], m.named_off[x + 1] - m.named_off[x], y)
    return m.named_fb[m.named_off[x] + at] if at >= 0 else m.fb_other[y]


cdef inline double ll_bound(const LlTables *m, long long x, long long y) noexcept nogil:
    """ln of the bound of y after a context ending in x (x = -1: any context), over every
    left extension: LogLinearLM.log_bound's sum, the features first."""
    cdef double total = ll_feature_bound(m, x, y)
    cdef long long cx
    cdef int i
    for i in range(m.k):
        if m.map[i] == NULL:
            cx = x
            total = total + m.alpha[i] * ng_walk(m.t[i], &cx, 1, y, True)
        else:
            cx = m.map[i][x] if x >= 0 else -1
            total = total + m.alpha[i] * ng_walk(m.t[i], &cx, 1, m.map[i][y], True)
    return total


cdef inline bint ll_exception(const LlTables *m, long long x, long long y) noexcept nogil:
    """Whether y's bound after x is not the separable one (`ll_backward`): x y is a bigram
    of the component, or a feature ending in y names x just before it."""
    if ng_find(m.t[0], 2, <unsigned long long>y * <unsigned long long>m.vocab
               + <unsigned long long>x) >= 0:
        return True
    return ll_bsearch(m.named_y + m.named_off[x], m.named_off[x + 1] - m.named_off[x], y) >= 0


cdef inline double ll_walk_st(const LlTables *m, LlStates st, long long gid,
                             const long long *row, long long w) noexcept nogil:
    """`ll_walk` with one component's context walk kept for the state (`st.ctx_*`), as
    FullDP's StateCtx keeps a table's: ng_context then ng_walk_in, ng_walk's own steps."""
    cdef const NgramTables *t = m.t[0]
    cdef const long long *ctx = row
    cdef int cw = m.width
    if not m.sparse:
        return ll_walk(m, row, w)
    if cw > t.order - 1:
        ctx += cw - (t.order - 1)
        cw = t.order - 1
    if st.ctx_gid != gid:
        st.ctx_depth = ng_context(t, ctx, cw, &st.ctx_len, st.bows, &st.ctx_node)
        st.ctx_gid = gid
    return ll_features(m, row, w) + m.alpha[0] * ng_walk_in(
        t, ctx, cw, w, False, st.ctx_len, st.ctx_depth, st.bows, st.ctx_node)


cdef void ll_step(const LlTables *m, LlStates st, long long gid, long long w,
                  long long *nxt, double *lp) noexcept nogil:
    """(next state, ln phi) of w after state gid: the factor from the state's words, and the
    next state cut(words + w), the longest suffix that is some component's useful context
    (each component's `uc_cut_append` from its own state) or a proper prefix of a pattern.

    Why the state's words suffice: the states are prefix-closed, so a suffix of h + w in the
    set has its prefix, a suffix of h, in it too, hence within cut(h)."""
    cdef long long row[NG_MAX_ORDER]
    cdef long long nrow[NG_MAX_ORDER]
    cdef long long ncg[LL_MAX]
    cdef const LlShape *s
    cdef int width = m.width, i, j, length = 0, rlen
    cdef long long wi, code
    for j in range(width):  # a copy: find_or_add may move the table
        row[j] = st.rows[gid * width + j]
    rlen = st.lens[gid]
    lp[0] = ll_walk_st(m, st, gid, row, w)
    if width == 0:
        nxt[0] = 0
        return
    for i in range(m.k):
        wi = m.map[i][w] if m.map[i] != NULL else w
        ncg[i] = uc_cut_append(&m.u[i], m.fail[i], m.t[i].vocab, st.cg[gid * m.k + i], wi)
        if m.u[i].lens[ncg[i]] > length:
            length = m.u[i].lens[ncg[i]]
    for i in range(m.npre):  # longest first: the first that matches is the longest
        s = &m.pre[i]
        if s.span <= length:
            break
        if s.span > rlen + 1:
            continue
        code = ll_shape_code(s, row, width, w, m.vocab)
        if code >= 0 and ll_bsearch(s.codes, s.n, code) >= 0:
            length = s.span
            break
    if length > rlen + 1:  # cannot happen (the states are prefix-closed); kept total
        length = rlen + 1
    for j in range(width):
        nrow[j] = -1
    if length:
        nrow[width - 1] = w
        for j in range(1, length):
            nrow[width - 1 - j] = row[width - j]
    nxt[0] = st.find_or_add(nrow, length, ncg)
