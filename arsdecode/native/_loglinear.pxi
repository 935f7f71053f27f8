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

cdef size_t LL_RESET_STATES = 1 << 20  # a worker's states kept between runs, at most (about
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


cdef inline double ll_fb(const LlTables *m, long long x, long long y,
                         double other) noexcept nogil:
    """The features' bound of y after x, given `other`, the bound after a word not named
    just before y (fb_other[y], or the lattice's tighter `ll_other_at`)."""
    cdef long long at = ll_bsearch(m.named_y + m.named_off[x],
                                   m.named_off[x + 1] - m.named_off[x], y)
    return m.named_fb[m.named_off[x] + at] if at >= 0 else other


cdef inline double ll_bound_fb(const LlTables *m, long long x, long long y,
                               double fb) noexcept nogil:
    """`ll_bound` with the features' part given (one component in the target's ids)."""
    cdef long long cx = x
    return fb + m.alpha[0] * ng_walk(m.t[0], &cx, 1, y, True)


cdef double ll_other_at(const LlTables *m, LlStates st, long long y) noexcept nogil:
    """fb_other[y] with the word two before y among the words the lattice holds there (`st`'s
    marks; `st.first`, the word before the sentence's first position, when that is the
    position; none: the history starts there).

    Why it is a bound: fb_other[y] is unigram(y) + B(OTHER, y), B the max over the word v two
    before y of the features it completes plus the rest of the recurrence (B_v, or rest[y]
    for a word no feature names there), and 0 for a history that ends. In a confusion
    network v is one of the lattice's words at that position, so the max over them bounds
    every path; only its first step is restricted, deeper ones keep the max over every
    extension."""
    cdef long long k, named = 0
    cdef double best = -INFINITY
    if st.marked == 0:  # no word there: the history starts, B = 0
        return m.uni[y]
    for k in range(m.two_off[y], m.two_off[y + 1]):
        if st.mark[m.two_v[k]] == st.mark_epoch:
            named += 1
            if m.two_val[k] > best:
                best = m.two_val[k]
    if named < st.marked and m.rest[y] > best:
        best = m.rest[y]
    return m.uni[y] + best


cdef bint ll_backward(const LlTables *m, LlStates st, double lmw, long long a0, long long a1,
                      long long a2, const long long *cand_ids, const double *cand_emis,
                      double *H, long long base, long long *stamp, long long *stamp_idx,
                      long long *epoch) noexcept nogil:
    """_DPCaches._backward_sparse for a log-linear target of one component: H of candidates
    a0..a1-1 from the next position a1..a2-1, without the product of the two widths.

    Why it holds: for a y that neither follows x in the component's bigrams nor is named
    with x by a feature, the bound is O(y) + alpha (lp(y) + lbow(x) + (lmbow(x) - lbow(x)))
    (ng_walk with nothing matched; O(y) the features' bound after a word not named just
    before y, restricted to the words at the position before x, `ll_other_at`): a function of
    y plus one of x. So the best such y is the first of one sort of the next position (by
    lmw (O(y) + alpha lp(y)) + emission + H) that is not one of x's exceptions; the
    exceptions take the bound pair by pair. The grouping may move the maximum by rounding,
    which the pruning margin covers (as the plain pass). False (nothing done) when a word
    repeats at the next position or the pass does not apply."""
    cdef const NgramTables *t = m.t[0]
    cdef long long c, c2, x, y, k, r, nx, W2 = a2 - a1
    cdef double best, v
    cdef vector[Ranked] ranked
    cdef vector[double] other
    if not m.sparse:
        return False
    st.mark_words(cand_ids, st.prev0, st.prev1, st.first)
    epoch[0] += 1
    other.resize(W2)
    for c2 in range(a1, a2):
        y = cand_ids[c2]
        if stamp[y] == epoch[0]:
            return False
        stamp[y] = epoch[0]
        stamp_idx[y] = c2
        other[c2 - a1] = ll_other_at(m, st, y)
        if isfinite(cand_emis[c2]) and isfinite(H[c2 - base]):
            v = lmw * (other[c2 - a1] + m.alpha[0] * t.lp[y]) + cand_emis[c2] + H[c2 - base]
            if isfinite(v):
                ranked.push_back(Ranked(-v, c2))
    sort(ranked.begin(), ranked.end())
    for c in range(a0, a1):
        x = cand_ids[c]
        best = -INFINITY
        nx = (m.next_off[x + 1] - m.next_off[x]) + (m.named_off[x + 1] - m.named_off[x])
        if nx <= W2:  # x's exceptions that stand at the next position
            for k in range(m.next_off[x], m.next_off[x + 1]):
                y = m.next_word[k]
                if stamp[y] == epoch[0] and isfinite(cand_emis[stamp_idx[y]]):
                    c2 = stamp_idx[y]
                    v = lmw * ll_bound_fb(m, x, y, ll_fb(m, x, y, other[c2 - a1])) \
                        + cand_emis[c2] + H[c2 - base]
                    if v > best:
                        best = v
            for k in range(m.named_off[x], m.named_off[x + 1]):
                y = m.named_y[k]
                if stamp[y] == epoch[0] and isfinite(cand_emis[stamp_idx[y]]):
                    c2 = stamp_idx[y]
                    v = lmw * ll_bound_fb(m, x, y, m.named_fb[k]) + cand_emis[c2] \
                        + H[c2 - base]
                    if v > best:
                        best = v
        else:  # the next position's words that are x's exceptions
            for c2 in range(a1, a2):
                y = cand_ids[c2]
                if not isfinite(cand_emis[c2]) or not ll_exception(m, x, y):
                    continue
                v = lmw * ll_bound_fb(m, x, y, ll_fb(m, x, y, other[c2 - a1])) \
                    + cand_emis[c2] + H[c2 - base]
                if v > best:
                    best = v
        for r in range(<long long>ranked.size()):  # the best word that is no exception
            c2 = ranked[r].second
            y = cand_ids[c2]
            if ll_exception(m, x, y):
                continue
            v = lmw * ll_bound_fb(m, x, y, other[c2 - a1]) + cand_emis[c2] + H[c2 - base]
            if v > best:
                best = v
            break
        H[c - base] = best
    return True


cdef class LlStates:
    """One worker's states of a log-linear target, made on demand: per state its words (the
    width, left-padded with -1), its length and each component's useful-context id; a hash
    from the words to the state. State 0 is the empty context. Why per worker: the DP's
    transition cache (gid, word) -> next gid is the worker's, so the ids it holds stay valid
    while this table is kept; both are emptied together (`reset`, between runs)."""

    cdef vector[long long] rows
    cdef vector[long long] cg
    cdef vector[int] lens
    cdef vector[long long] slots
    cdef int bits
    cdef int width
    cdef int k
    # the sparse bound pass's view of the position before (_DPBounds sets them): its
    # candidates prev0..prev1-1 (prev0 < 0: the sentence's first position, whose word before
    # is `first`, or none when -1); `mark` stamps those words with `mark_epoch`
    cdef long long prev0
    cdef long long prev1
    cdef long long first
    cdef vector[long long] mark
    cdef long long mark_epoch
    cdef long long marked

    def __init__(self, int width, int k, long long vocab):
        self.width = width
        self.k = k
        self.mark.assign(vocab, 0)
        self.mark_epoch = 0
        self.reset()

    cdef void reset(self) noexcept nogil:
        cdef int j
        self.rows.clear()
        self.cg.clear()
        self.lens.clear()
        self.bits = 10
        self.slots.assign(<size_t>1 << self.bits, -1)
        for j in range(self.width):
            self.rows.push_back(-1)
        for j in range(self.k):
            self.cg.push_back(0)
        self.lens.push_back(0)
        self._put(0)

    @property
    def size(self) -> int:
        return <long long>self.lens.size()

    cdef inline long long last_word(self, long long gid) noexcept nogil:
        """The last word of state gid (-1: the empty context)."""
        return self.rows[gid * self.width + self.width - 1] if self.width else -1

    cdef void mark_words(self, const long long *cand_ids, long long a, long long b,
                         long long first) noexcept nogil:
        """Mark the distinct words of candidates a..b-1 (a < 0: the word `first` alone, or
        none when it is -1); `marked` counts them."""
        cdef long long c, y
        self.mark_epoch += 1
        self.marked = 0
        if a < 0:
            if first >= 0:
                if <long long>self.mark.size() <= first:
                    self.mark.resize(first + 1, 0)
                self.mark[first] = self.mark_epoch
                self.marked = 1
            return
        for c in range(a, b):
            y = cand_ids[c]
            if <long long>self.mark.size() <= y:
                self.mark.resize(y + 1, 0)
            if self.mark[y] != self.mark_epoch:
                self.mark[y] = self.mark_epoch
                self.marked += 1

    cdef inline unsigned long long _hash(self, const long long *row) noexcept nogil:
        cdef unsigned long long h = 0
        cdef int j
        for j in range(self.width):
            h = (h ^ <unsigned long long>(row[j] + 2)) * ARS_MIX
        return h

    cdef void _put(self, long long gid) noexcept nogil:
        cdef unsigned long long mask = (<unsigned long long>1 << self.bits) - 1
        cdef unsigned long long pos = self._hash(self.rows.data() + gid * self.width) \
            >> (64 - self.bits)
        while self.slots[pos] >= 0:
            pos = (pos + 1) & mask
        self.slots[pos] = gid

    cdef long long find_or_add(self, const long long *row, int length,
                               const long long *cg) noexcept nogil:
        """The state of these words (made now if new, with its components' ids `cg`)."""
        cdef unsigned long long mask = (<unsigned long long>1 << self.bits) - 1
        cdef unsigned long long pos = self._hash(row) >> (64 - self.bits)
        cdef long long g, n
        cdef int j
        cdef bint same
        while True:
            g = self.slots[pos]
            if g < 0:
                break
            same = True
            for j in range(self.width):
                if self.rows[g * self.width + j] != row[j]:
                    same = False
                    break
            if same:
                return g
            pos = (pos + 1) & mask
        n = <long long>self.lens.size()
        for j in range(self.width):
            self.rows.push_back(row[j])
        for j in range(self.k):
            self.cg.push_back(cg[j])
        self.lens.push_back(length)
        if 2 * (n + 1) > (<long long>1 << self.bits):
            self.bits += 1
            self.slots.assign(<size_t>1 << self.bits, -1)
            for g in range(n + 1):
                self._put(g)
        else:
            self.slots[pos] = n
        return n


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
    lp[0] = ll_walk(m, row, w)
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


cdef class LlCore:
    """A log-linear target's tables for the full DP (arsdecode.methods.fast_loglinear builds
    them): the checked owner of what `LlTables` points into. `walk` answers (context, word)
    rows as LogLinearLM.log_prob / log_bound (after one word) do, for the tests."""

    cdef LlTables m
    cdef readonly object arrays
    cdef readonly int order
    cdef vector[LlShape] shapes
    cdef vector[LlShape] prefixes
    cdef vector[vector[int]] fails

    def __init__(self, long long vocab, int order, list cores, list maps,
                 const double[::1] alphas, list useful, list shapes, list prefixes,
                 const double[::1] fb_empty, const double[::1] fb_other,
                 const long long[::1] named_off, const long long[::1] named_y,
                 const double[::1] named_fb, const double[::1] uni,
                 const long long[::1] two_off, const long long[::1] two_v,
                 const double[::1] two_val, const double[::1] rest):
        """`cores`: each component's NgramCore; `maps`: target -> component ids (None: the
        same); `useful`: each component's (rows, lens, keys, slots, bits), FullDP's layout;
        `shapes`: (span, keep, codes, weights) in FeatureTable.shapes' order; `prefixes`:
        (span, keep, codes), longest first; the features' bound tables (LlTables). Every index
        the DP reads unchecked is checked here (ModelError)."""
        cdef Py_ssize_t i, j, n = len(cores)
        cdef NgramCore core
        cdef const long long[::1] mp
        cdef const long long[:, ::1] rows
        cdef const int[::1] lens
        cdef const unsigned long long[::1] keys
        cdef const int[::1] slots
        cdef const long long[::1] codes
        cdef const double[::1] weights
        cdef LlShape sh
        if not 1 <= n <= LL_MAX or len(maps) != n or alphas.shape[0] != n or len(useful) != n:
            raise ModelError(f"LlCore: 1 to {LL_MAX} components, each with a map, an alpha "
                             "and its useful contexts")
        if vocab < 1 or not 1 <= order <= NG_MAX_ORDER:
            raise ModelError("LlCore: vocabulary or order out of range")
        if fb_empty.shape[0] != vocab or fb_other.shape[0] != vocab \
                or named_off.shape[0] != vocab + 1 or named_off[0] != 0 \
                or named_off[vocab] != named_y.shape[0] or named_fb.shape[0] != named_y.shape[0]:
            raise ModelError("LlCore: one feature bound per word and named pair")
        for i in range(vocab):
            if named_off[i + 1] < named_off[i]:
                raise ModelError("LlCore: named offsets decrease")
            for j in range(named_off[i], named_off[i + 1]):
                if not 0 <= named_y[j] < vocab or (j > named_off[i]
                                                   and named_y[j] <= named_y[j - 1]):
                    raise ModelError("LlCore: a named pair's word is out of range or order")
        if uni.shape[0] != vocab or rest.shape[0] != vocab or two_off.shape[0] != vocab + 1 \
                or two_off[0] != 0 or two_off[vocab] != two_v.shape[0] \
                or two_val.shape[0] != two_v.shape[0]:
            raise ModelError("LlCore: one skip bound per word and named word")
        for i in range(vocab):
            if two_off[i + 1] < two_off[i]:
                raise ModelError("LlCore: skip offsets decrease")
        for j in range(two_v.shape[0]):
            if not 0 <= two_v[j] < vocab:
                raise ModelError("LlCore: a skip's word is out of range")
        keep_alive = [alphas, fb_empty, fb_other, named_off, named_y, named_fb, uni, two_off,
                      two_v, two_val, rest]
        self.order = order
        self.m.k = <int>n
        self.m.vocab = vocab
        self.m.width = order - 1
        self.fails.resize(n)
        for i in range(n):
            core = cores[i]
            if core.t.order > order:
                raise ModelError("LlCore: a component's order is above the target's")
            if maps[i] is None:
                if core.t.vocab != vocab:
                    raise ModelError("LlCore: a component without a map has another vocabulary")
                self.m.map[i] = NULL
            else:
                mp = maps[i]
                if mp.shape[0] != vocab:
                    raise ModelError("LlCore: a map has one entry per target word")
                for j in range(vocab):
                    if not 0 <= mp[j] < core.t.vocab:
                        raise ModelError("LlCore: a map names no word of its component")
                self.m.map[i] = &mp[0]
                keep_alive.append(maps[i])
            r_, l_, k_, s_, bits = useful[i]
            rows, lens, keys, slots = r_, l_, k_, s_
            if rows.shape[1] != core.t.order - 1 or lens.shape[0] != rows.shape[0] \
                    or keys.shape[0] != rows.shape[0] or lens[0] != 0 \
                    or not 1 <= bits <= 62 or slots.shape[0] != (1 << bits):
                raise ModelError("LlCore: a component's useful contexts disagree")
            for j in range(1, lens.shape[0]):
                if lens[j] < lens[j - 1] or lens[j] > rows.shape[1] \
                        or keys[j] // <unsigned long long>core.t.vocab >= <unsigned long long>j:
                    raise ModelError("LlCore: a component's useful contexts are out of order")
            for j in range(slots.shape[0]):
                if slots[j] < -1 or slots[j] >= lens.shape[0]:
                    raise ModelError("LlCore: a hash slot names no useful context")
            keep_alive.append((core, r_, l_, k_, s_))
            self.m.t[i] = &core.t
            self.m.alpha[i] = alphas[i]
            self.m.u[i].width = <int>rows.shape[1]
            self.m.u[i].n_ctx = lens.shape[0]
            self.m.u[i].rows = &rows[0, 0] if rows.shape[1] else NULL
            self.m.u[i].lens = &lens[0]
            self.m.u[i].keys = &keys[0]
            self.m.u[i].slots = &slots[0]
            self.m.u[i].nslots = slots.shape[0]
            self.m.u[i].bits = bits
            self.fails[i].assign(lens.shape[0], 0)
            uc_fail_links(&self.m.u[i], core.t.vocab, self.fails[i].data())
            self.m.fail[i] = self.fails[i].data()
        for group, out, with_weights in ((shapes, 0, True), (prefixes, 1, False)):
            for entry in group:
                span, keep, codes = entry[0], entry[1], entry[2]
                if not 1 <= span <= order or not 1 <= len(keep) <= LL_MAX_KEEP:
                    raise ModelError("LlCore: a pattern's span or words are out of range")
                sh.span = span
                sh.nkeep = len(keep)
                for j in range(len(keep)):
                    if not 0 <= keep[j] < span or (j and keep[j] <= keep[j - 1]):
                        raise ModelError("LlCore: a pattern's word positions are out of order")
                    sh.keep[j] = keep[j]
                if keep[0] != 0:
                    raise ModelError("LlCore: a pattern starts with a word")
                sh.n = codes.shape[0]
                sh.codes = &codes[0] if sh.n else NULL
                for j in range(1, sh.n):
                    if codes[j] <= codes[j - 1]:
                        raise ModelError("LlCore: a shape's codes must ascend")
                sh.weights = NULL
                if with_weights:
                    weights = entry[3]
                    if weights.shape[0] != sh.n:
                        raise ModelError("LlCore: one weight per code")
                    sh.weights = &weights[0] if sh.n else NULL
                keep_alive.append(entry)
                if out == 0:
                    self.shapes.push_back(sh)
                else:
                    if self.prefixes.size() and span > self.prefixes.back().span:
                        raise ModelError("LlCore: prefixes must come longest first")
                    self.prefixes.push_back(sh)
        self.m.nshape = <int>self.shapes.size()
        self.m.shape = self.shapes.data()
        self.m.npre = <int>self.prefixes.size()
        self.m.pre = self.prefixes.data()
        self.m.fb_empty = &fb_empty[0]
        self.m.fb_other = &fb_other[0]
        self.m.named_off = &named_off[0]
        self.m.named_y = &named_y[0] if named_y.shape[0] else NULL
        self.m.named_fb = &named_fb[0] if named_fb.shape[0] else NULL
        self.m.uni = &uni[0]
        self.m.rest = &rest[0]
        self.m.two_off = &two_off[0]
        self.m.two_v = &two_v[0] if two_v.shape[0] else NULL
        self.m.two_val = &two_val[0] if two_val.shape[0] else NULL
        core = cores[0]
        self.m.sparse = n == 1 and maps[0] is None and core.t.order >= 2
        self.m.next_off = core.next_off.data()
        self.m.next_word = core.next_word.data()
        self.arrays = keep_alive

    @property
    def vocab(self) -> int:
        return self.m.vocab

    def walk(self, const long long[:, ::1] contexts, const long long[::1] words, bint want_max):
        """ln phi of each row (or, with `want_max`, `ll_bound` after each row's last word, -1:
        none); contexts (B, order - 1) target ids left-padded with -1."""
        cdef Py_ssize_t b = words.shape[0], i, j
        cdef int width = <int>contexts.shape[1]
        cdef long long dummy = -1
        if contexts.shape[0] != b or width != self.m.width:
            raise OptionError("contexts must be (B, order - 1) with one row per word")
        for i in range(b):
            if not 0 <= words[i] < self.m.vocab:
                raise OptionError(f"word id {words[i]} out of range")
            for j in range(width):
                if contexts[i, j] >= self.m.vocab:
                    raise OptionError(f"context id {contexts[i, j]} out of range")
        out = np.empty(b, dtype=np.float64)
        cdef double[::1] o = out
        with nogil:
            for i in range(b):
                if want_max:
                    o[i] = ll_bound(&self.m, contexts[i, width - 1] if width else -1, words[i])
                else:
                    o[i] = ll_walk(&self.m, &contexts[i, 0] if width else &dummy, words[i])
        return out

    def states(self, const long long[::1] words):
        """The state ids and words of each prefix of `words` from the empty context, as the
        DP's transitions make them (a fresh table): for the tests of the cut."""
        cdef LlStates st = LlStates(self.m.width, self.m.k, self.m.vocab)
        cdef long long g = 0, ng
        cdef double lp
        cdef Py_ssize_t i, j
        out = []
        for i in range(words.shape[0]):
            if not 0 <= words[i] < self.m.vocab:
                raise OptionError(f"word id {words[i]} out of range")
            ll_step(&self.m, st, g, words[i], &ng, &lp)
            g = ng
            out.append((g, tuple(st.rows[g * self.m.width + j] for j in range(self.m.width)
                                 if st.rows[g * self.m.width + j] >= 0)))
        return out
