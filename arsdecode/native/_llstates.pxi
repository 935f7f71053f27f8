# A log-linear target's states made on demand (`LlStates`, one table per DP worker) and its
# sparse backward bound pass (`ll_backward`), which reads the words the lattice holds before
# each position through those tables' marks.
#
# Why a part of its own: _loglinear.pxi holds the factor, the bound and the cut; this the
# per-worker memory they fill and the pass that prunes with it (`_DPBounds` calls it).


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
    # the context walk (ng_context) of the last state whose factors were asked, one
    # component's: the sweeps ask a state's candidates one after another (`ll_walk_st`)
    cdef long long ctx_gid
    cdef int ctx_len
    cdef int ctx_depth
    cdef long long ctx_node
    cdef double bows[NG_MAX_ORDER]

    def __init__(self, int width, int k, long long vocab):
        self.width = width
        self.k = k
        self.mark.assign(vocab, 0)
        self.mark_epoch = 0
        self.reset()

    cdef void reset(self) noexcept nogil:
        cdef int j
        self.ctx_gid = -1
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
