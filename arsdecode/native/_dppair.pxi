# _DPPairBounds: the completion bound by the last 2-3 words, a tighter admissible heuristic.
#
# Why a part of its own: _DPBounds (_dpbounds.pxi) bounds the rest of a sentence after a
# candidate by its last tag alone (H, a backward pass over bigram max-backoff bounds). At high
# order on tags that bound is loose: issue 34 measured 100.8 merged states per token at n = 9.
# This part bounds the rest by the last k = 2 or 3 tags (a backward pass over (k+1)-gram
# max-backoff bounds), which the DP's pair test and its state test then use (_dpsweep.pxi).
# It is the base class of _DPWorker for the reason _DPCaches is: Cython cannot include a file
# inside a class body (_DPCaches -> _DPBounds -> _DPPairBounds -> _DPWorker).


cdef long long PAIR_MAX_VOCAB = 256  # the pair bound's rows are indexed by (V + 1)^2 contexts
cdef long long TRIPLE_MAX_VOCAB = 64  # the same by the last three words: (V + 1)^3 contexts
cdef long long PAIR_MAX_WORK = 256  # a position's pass by 3 words at most this many terms


cdef class _DPPairBounds(_DPBounds):
    """_DPBounds plus the completion bound by the last k words (k = 2 or 3) of one sentence.

    H at position p (p0 <= p < p1), for candidates b_1 .. b_k of positions p - k + 1 .. p,
    bounds the score of positions p + 1 .. p1 - 1 and </s> from above, after any history
    that ends in their words:

        H_p[b_1..b_k] = max over d at p + 1 of  lmw w(d | b_1..b_k) + e(d) + H_{p+1}[...d]
        H_{p1-1}[b_1..b_k] = lmw w(</s> | b_1..b_k)   (0 without </s>)

    where H_{p+1}[...d] takes the last k_{p+1} words of (b_1..b_k, d), k_{p+1} being the
    next position's k (each position has its own, `_pair_bounds`),

    with w(d | ctx) the max-backoff bound: the max of p(d | z ctx) over every left extension
    z (maxarpa's lmf/lmbow tables), so each factor of the true path is at most its term, and
    the max over d covers the true next word. Positions before p0 are virtual, one candidate
    each: p0 - 1 the word <s> (or -1, any context, without <s>), earlier ones -1. Only words
    enter, so H is the same for every tuple of the same words. w(d | longer ctx) <= w(d |
    shorter ctx), hence H is at most the one-word bound up to rounding (the pruning margin
    covers rounding). With k = n - 1 it is the exact backward Viterbi of the model.

    Used only with dense rows (a small vocabulary: tags) and order >= 3: k = 3 from order 4
    with V <= TRIPLE_MAX_VOCAB, else 2 (hk), and 2 at a position where the pass by 3 would
    cost more than PAIR_MAX_WORK terms: the pass costs the product of k + 1 positions'
    widths. The bound rows, V per context of the vocabulary, are cached.
    """

    cdef int hk                   # k of this worker (0: no bound)
    cdef long long pair_work      # PAIR_MAX_WORK when the worker was made
    cdef vector[int] tb_row_of    # context (hk words, each + 1, base V + 1) -> its row, or -1
    cdef vector[double] tb_rows   # ln w(y | ctx) for every y, V per row
    cdef bint tb_stale            # `_clear` was called: drop the rows at the next _bound_row
    cdef vector[double] h2        # this sentence's H blocks, position by position
    cdef vector[long long] h2_off  # p - p0 -> its block's start in h2
    cdef vector[long long] w2c_epoch  # (j - 1) * V + word -> the position stamped
    cdef vector[long long] w2c_idx    # (j - 1) * V + word -> its candidate there
    cdef vector[int] h2_k         # p - p0 -> the words its H is conditioned on (2 .. hk)
    cdef long long h2_p0          # the sentence's first position; -1: no H for it
    cdef long long h2_p1
    cdef long long h2_stamped     # the position p whose p - 1 .. p - k + 1 are stamped
    cdef long long h2_stamp_epoch
    cdef vector[long long] nx_word  # _pair_bounds: the next position's finite candidates
    cdef vector[double] nx_emis
    cdef vector[long long] nx_cand

    def __init__(self, FullDP dp):
        _DPCaches.__init__(self, dp)
        cdef long long V = self.core.t.vocab
        self.h2_p0 = -1
        self.h2_stamped = -1
        self.h2_stamp_epoch = 0
        self.tb_stale = False
        self.hk = 0
        self.pair_work = PAIR_MAX_WORK
        if self.dense and self.mix == NULL and self.core.t.order >= 3 and V <= PAIR_MAX_VOCAB:
            self.hk = 3 if self.core.t.order >= 4 and V <= TRIPLE_MAX_VOCAB else 2
        # Its row index, (V + 1)^k ints (1.1 MiB at most), is a fixed table of the worker, as
        # `block_of` is, outside the byte bound: the bound only decides what the caches hold,
        # never which bound prunes (the DP's counts do not depend on it).

    cdef void _clear(self) noexcept nogil:
        """_DPBounds._clear, and the bound rows with the rest (a memo too), at the next
        `_bound_row`: a row the caller holds stays valid until then (counted while held)."""
        _DPCaches._clear(self)
        self.tb_stale = True
        self.used_bytes += 8 * <long long>self.tb_rows.size()

    cdef const double *_bound_row(self, const long long *ctx) noexcept nogil:
        """The row of ln w(. | ctx) (not times the LM weight), entry y for word y: ctx
        holds hk words, -1 for any word there. The whole row is filled when first asked for,
        by one context walk (walk B) shared by the V words' walks A, and kept within the byte
        bound, as the bigram rows of `_bound`. Why whole rows: the contexts asked for are a
        few thousand over a corpus, each read many times, and a row filled at once costs the
        context walk once, where an entry filled on first read cost a full walk each (the
        same numbers: ng_walk is ng_context then ng_walk_in). The pointer is valid until the
        next call."""
        cdef long long V = self.core.t.vocab, key = 0, r, y, ctx_node
        cdef int j, ctx_len, ctx_depth
        cdef double bows[NG_MAX_ORDER]
        cdef double *out
        if self.tb_stale:
            self.used_bytes -= 8 * <long long>self.tb_rows.size()
            self.tb_rows.clear()
            self.tb_row_of.assign(self.tb_row_of.size(), -1)
            self.tb_stale = False
        if self.tb_row_of.size() == 0:
            r = 1
            for j in range(self.hk):
                r *= V + 1
            self.tb_row_of.assign(r, -1)
        for j in range(self.hk):
            key = key * (V + 1) + ctx[j] + 1
        r = self.tb_row_of[key]
        if r < 0:
            if self.used_bytes + 8 * V > self.max_bytes:
                self._clear()
                return self._bound_row(ctx)
            self.used_bytes += 8 * V
            r = <long long>(self.tb_rows.size() // V)
            self.tb_row_of[key] = <int>r
            self.tb_rows.resize((r + 1) * V)
            out = self.tb_rows.data() + r * V
            ctx_depth = ng_context(&self.core.t, ctx, self.hk, &ctx_len, bows, &ctx_node)
            for y in range(V):
                out[y] = ng_walk_in(&self.core.t, ctx, self.hk, y, True, ctx_len, ctx_depth,
                                    bows, ctx_node)
        return self.tb_rows.data() + r * V

    cdef inline long long _word_at(self, long long q, long long i, long long p0, long long bos,
                                   const long long *pos_off,
                                   const long long *cand_ids) noexcept nogil:
        """The word of candidate i of position q (virtual before p0: <s>, then -1)."""
        if q >= p0:
            return cand_ids[pos_off[q] + i]
        return bos if q == p0 - 1 else -1

    cdef void _pair_bounds(self, long long p0, long long p1, const long long *pos_off,
                           const long long *cand_ids, const double *cand_emis, long long bos,
                           long long eos) noexcept nogil:
        """H of positions p0..p1-1 (see the class docstring) into h2 / h2_off / h2_k, or
        nothing (h2_p0 = -1) when the bound does not apply.

        k per position: hk, unless the pass there (the product of the widths of positions
        p - hk + 1 .. p + 1) would cost more than PAIR_MAX_WORK, then 2. Why: an unknown word
        has some 20 candidate tags, and the product of four positions' widths made the pass
        cost more than the pruning it bought (issue 34: 1,588 terms per token at k = 3 on EWT
        against 201 at k = 2). Any k is admissible, H_{p+1} being read with the last k_{p+1}
        words of (b_1..b_k, d), which k_{p+1} <= 3 <= k_p + 1 makes possible."""
        cdef long long p, q, t, d, kd, size = 0, prod, rest, nd, i, work
        cdef long long ctx[3]
        cdef long long widths[3]
        cdef long long idx[3]
        cdef double *out
        cdef const double *hn
        cdef int j, k, pad, kn
        cdef double best, v, lmw = self.lmw
        cdef const double *row
        self.h2_p0 = -1
        self.h2_stamped = -1
        if self.hk == 0 or p1 <= p0:
            return
        self.h2_off.resize(p1 - p0 + 1)
        self.h2_k.resize(p1 - p0)
        for p in range(p0, p1):
            k = self.hk
            work = (pos_off[p + 2] - pos_off[p + 1]) if p + 1 < p1 else 1
            for j in range(k):
                q = p - k + 1 + j
                work *= (pos_off[q + 1] - pos_off[q]) if q >= p0 else 1
            if k > 2 and work > self.pair_work:
                k = 2
            self.h2_k[p - p0] = k
            self.h2_off[p - p0] = size
            prod = 1
            for j in range(k):
                q = p - k + 1 + j
                prod *= (pos_off[q + 1] - pos_off[q]) if q >= p0 else 1
            size += prod
        self.h2_off[p1 - p0] = size
        self.h2.resize(size)
        for p in range(p1 - 1, p0 - 1, -1):
            k = self.h2_k[p - p0]
            pad = self.hk - k  # the row's context: hk words, the oldest pad of them -1 (any)
            for j in range(pad):
                ctx[j] = -1
            prod = 1
            for j in range(k):
                q = p - k + 1 + j
                widths[j] = (pos_off[q + 1] - pos_off[q]) if q >= p0 else 1
                idx[j] = 0
                prod *= widths[j]
            kd = (pos_off[p + 2] - pos_off[p + 1]) if p + 1 < p1 else 0
            kn = self.h2_k[p + 1 - p0] if p + 1 < p1 else 1
            rest = 1  # H_{p+1} is indexed by the tuple's last kn - 1 words, then d
            for j in range(k - kn + 1, k):
                rest *= widths[j]
            self.nx_word.clear()  # the next position's candidates that can be chosen
            self.nx_emis.clear()
            self.nx_cand.clear()
            for d in range(kd):
                if isfinite(cand_emis[pos_off[p + 1] + d]):
                    self.nx_word.push_back(cand_ids[pos_off[p + 1] + d])
                    self.nx_emis.push_back(cand_emis[pos_off[p + 1] + d])
                    self.nx_cand.push_back(d)
            nd = <long long>self.nx_word.size()
            out = self.h2.data() + self.h2_off[p - p0]
            for t in range(prod):  # the tuples, last index fastest (an odometer in idx)
                for j in range(k):
                    ctx[pad + j] = self._word_at(p - k + 1 + j, idx[j], p0, bos, pos_off,
                                                 cand_ids)
                row = self._bound_row(ctx)
                if p == p1 - 1:
                    best = lmw * row[eos] if eos >= 0 else 0.0
                else:
                    hn = self.h2.data() + self.h2_off[p + 1 - p0] + (t % rest) * kd
                    best = -INFINITY
                    for i in range(nd):
                        v = lmw * row[self.nx_word[i]] + self.nx_emis[i] + hn[self.nx_cand[i]]
                        if v > best:
                            best = v
                out[t] = best
                j = k - 1
                while j >= 0:
                    idx[j] += 1
                    if idx[j] < widths[j]:
                        break
                    idx[j] = 0
                    j -= 1
        self.h2_p0 = p0
        self.h2_p1 = p1

    cdef const double *_pair_row(self, long long p, long long g, const long long *pos_off,
                                 const long long *cand_ids) noexcept nogil:
        """H_p[b_1..b_{k-1}] for the state `g` at position p (its candidates' bounds, indexed
        from pos_off[p]), b_j being the candidates of p - k + j whose words end g's context
        (k: position p's); NULL when there is no H, or g's context is too short (those words
        are not known), so the caller falls back to the one-word bound."""
        cdef long long V = self.core.t.vocab, x, q, idx = 0, w
        cdef long long kc = pos_off[p + 1] - pos_off[p]
        cdef int j, k
        if self.h2_p0 < 0 or p < self.h2_p0 or p >= self.h2_p1:
            return NULL
        k = self.h2_k[p - self.h2_p0]
        if self.h2_stamped != p:  # stamp the words of p - 1 .. p - k + 1 once per position
            if self.w2c_epoch.size() == 0:
                self.w2c_epoch.assign(2 * V, -1)
                self.w2c_idx.assign(2 * V, -1)
            self.h2_stamp_epoch += 1
            for j in range(1, k):
                if p - j < self.h2_p0:
                    break
                for q in range(pos_off[p - j], pos_off[p - j + 1]):
                    self.w2c_epoch[(j - 1) * V + cand_ids[q]] = self.h2_stamp_epoch
                    self.w2c_idx[(j - 1) * V + cand_ids[q]] = q - pos_off[p - j]
            self.h2_stamped = p
        for j in range(k - 1, 0, -1):  # b_1 (oldest) first: mixed radix, last fastest
            q = p - j
            if q < self.h2_p0:
                w = 0
            else:
                if self.u.width < j or self.u.lens[g] < j:
                    return NULL
                x = self.u.rows[g * self.u.width + self.u.width - j]
                if self.w2c_epoch[(j - 1) * V + x] != self.h2_stamp_epoch:
                    return NULL
                w = self.w2c_idx[(j - 1) * V + x]
            idx = idx * ((pos_off[q + 1] - pos_off[q]) if q >= self.h2_p0 else 1) + w
        return self.h2.data() + self.h2_off[p - self.h2_p0] + idx * kc

    cdef inline void _prefetch_pair_row(self, long long g) noexcept nogil:
        """Ask the memory for what `_pair_row` reads of state g (its length and last words,
        a cache miss per state otherwise: 6-9% of a 9-gram tagger's run); the sweep calls
        it two states ahead. A hint only."""
        if self.h2_p0 >= 0:
            ARS_PREFETCH(self.u.lens + g)
            ARS_PREFETCH(self.u.rows + g * self.u.width + self.u.width - 1)

    cdef const double *_state_bounds(self, long long g, long long p) noexcept nogil:
        """The `_bound_row` of the last k words of g's context (k: position p's; -1, any
        word, where g is shorter, and in the oldest hk - k places): the pair test's bound of
        any candidate after g. The sweep reads it over g's candidates, between which nothing
        asks for another row."""
        cdef long long ctx[3]
        cdef int j, W = self.u.width, k = self.h2_k[p - self.h2_p0], pad = self.hk - k
        for j in range(self.hk):
            ctx[j] = self.u.rows[g * W + W - self.hk + j] \
                if j >= pad and W - self.hk + j >= 0 else -1
        return self._bound_row(ctx)


def pair_completion_bounds(FullDP dp, const long long[::1] pos_off,
                           const long long[::1] cand_ids, const double[::1] cand_emis,
                           long long bos, long long eos, double lm_weight=1.0):
    """H of one sentence (see _DPPairBounds), for the tests that check it against brute force:
    one array per position p, of shape (K_{p-k+1}, .., K_p) with k position p's (K before the
    first: 1, the word `bos` then -1), or None
    when the pair bound does not apply to `dp` (large vocabulary, order < 3). The arrays are
    checked first, as `FullDP.run` checks them (LatticeError)."""
    cdef Py_ssize_t P = pos_off.shape[0] - 1, C = cand_ids.shape[0], i
    cdef long long V = dp.core.t.vocab, p
    cdef _DPPairBounds w
    if P < 1 or pos_off[0] != 0 or pos_off[P] != C or cand_emis.shape[0] != C:
        raise LatticeError("pair_completion_bounds: offsets disagree with the array lengths")
    for i in range(P):
        if pos_off[i + 1] <= pos_off[i]:
            raise LatticeError(f"pair_completion_bounds: position {i} has no candidate")
    for i in range(C):
        if not 0 <= cand_ids[i] < V:
            raise LatticeError(f"pair_completion_bounds: word id {cand_ids[i]} out of range")
    _check_scoring("pair_completion_bounds", V, bos, eos, lm_weight)
    w = _DPPairBounds(dp)
    w.lmw = lm_weight
    w._pair_bounds(0, P, &pos_off[0], &cand_ids[0], &cand_emis[0], bos, eos)
    if w.h2_p0 < 0:
        return None
    out = []
    for p in range(P):
        shape = [pos_off[q + 1] - pos_off[q] if q >= 0 else 1
                 for q in range(p - w.h2_k[p] + 1, p + 1)]
        out.append(np.array([w.h2[k] for k in range(w.h2_off[p], w.h2_off[p + 1])],
                            dtype=np.float64).reshape(shape))
    return out



def set_pair_max_work(long long work) -> int:
    """Set PAIR_MAX_WORK (the largest pass by 3 words at one position, in terms) for the
    workers made from now on; returns the previous value. For the tests, which force the
    mixed passes (3 words at some positions, 2 at others) on small lattices."""
    global PAIR_MAX_WORK
    old = PAIR_MAX_WORK
    PAIR_MAX_WORK = work
    return old
