# _DPCaches: one worker's memo of transitions and its pruning bounds, within a byte budget.
#
# Why a part of its own: everything the DP sweeps (_dpsweep.pxi) ask of the model goes through
# here: (state, word) -> (next state, ln p), cached in a dense row per state (small
# vocabularies) or a direct-mapped table (large ones), the max-backoff bounds, and the
# backward bound pass that makes pruning exact. It is the base class of _DPWorker because
# Cython cannot include a file inside a class body: the split is by job, the class is one.
# Its cdef inline methods are still called directly (no vtable) from the subclass.


cdef struct CacheSlot:
    unsigned long long key  # gid * V + word, plus 1 (0: empty)
    long long nxt
    double lp


cdef struct StateCtx:
    # What every transition out of one state shares (walk B of its context, `ng_context`),
    # computed on the state's first cache miss.
    bint ready
    int ctx_len
    int ctx_depth
    long long ctx_node
    double bows[NG_MAX_ORDER]


cdef class _DPCaches:
    """The caches of one `FullDP.run` at a time (see FullDP): transitions, bigram bounds and
    the sparse bound pass's stamps, filled without the GIL, at most `max_bytes` of them."""

    cdef NgramCore core
    cdef FullDP dp               # the shared tables: kept alive while the worker is
    cdef UsefulTables u          # a copy of dp.u (its pointers are into dp.arrays)
    cdef const int *fail         # dp.fail
    cdef bint dense
    cdef long long max_bytes
    cdef long long row_bytes
    cdef readonly long long used_bytes  # what the caches hold now, counted as in FullDP
    cdef readonly long long n_trans   # transitions computed since the worker was made
    cdef readonly long long clears    # times the caches were emptied at the bound
    cdef vector[CacheSlot] cache  # (gid, word) -> (next gid, ln p) for large vocabularies
    cdef int cache_shift         # 64 - log2(its slots): Fibonacci hashing's top bits
    cdef long long cache_cap     # the most slots it may grow to (SPARSE_CACHE_BYTES, max_bytes)
    cdef long long cache_misses  # transitions stored since it was last sized
    cdef vector[int] block_of    # gid -> its row in drow, or -1
    cdef long long chunk_rows    # dense rows a chunk of drow and dnode (see __init__)
    cdef vector[vector[RowEntry]] drow  # chunk_rows blocks a chunk, V entries a block:
    # every word's transition (_row). Why chunks: a vector of all rows doubled as it grew
    # (a copy of hundreds of MiB, and both copies held at once: the run's peak memory)
    cdef vector[int] dext        # per block: its extension block, or -1 (a context of n - 1
    # words is no failure link, so no longer row is filled from it: it keeps none)
    cdef vector[vector[RowNode]] dnode  # per extension block (chunk_rows a chunk), V
    # entries: what longer rows extend
    cdef vector[double] dbows    # per extension block, n - 1: its context's walk B backoffs
    cdef vector[RowCtx] dctx     # per extension block: that walk's end
    cdef const long long *child_off  # dp.child_off: gid's useful children are child_*[a:b]
    cdef const int *child_word
    cdef const int *child_gid
    cdef readonly long long n_rows   # dense rows filled since the worker was made
    cdef vector[int] ub_row_of   # dense: x + 1 -> its row of bigram bounds in ub_rows, or -1
    cdef vector[double] ub_rows  # dense: ln w(y | x), the max-backoff bound, for every y
    cdef vector[long long] stamp      # sparse bound pass: word -> epoch of the position it is at
    cdef vector[long long] stamp_idx  # sparse bound pass: word -> its candidate there
    cdef long long epoch
    cdef double lmw              # this run's LM weight (NgramScoring.lm_weight)
    cdef const MixTables *mix    # a mixture's components (_mixture.pxi), or NULL
    cdef const VpTables *vp      # a VPYLM's tables (_vpylm.pxi), or NULL

    def __init__(self, FullDP dp):
        self.dp = dp
        self.core = dp.core
        self.u = dp.u
        self.fail = dp.fail.data()
        self.dense = dp.dense
        self.max_bytes = dp.max_bytes
        self.row_bytes = dp.row_bytes
        self.used_bytes = 0
        self.n_trans = 0
        self.clears = 0
        self.epoch = 0
        self.n_rows = 0
        self.lmw = 1.0
        self.mix = &dp.mix.m if dp.mix is not None else NULL
        self.vp = &dp.vp.m if dp.vp is not None else NULL
        if self.dense:
            # A chunk is allocated whole: at most 1/16 of the byte bound, so that the rows
            # stored stay within it but for that much (1/8 for drow and dnode together).
            self.chunk_rows = min(ROW_CHUNK,
                                  max(1, self.max_bytes // (16 * self.row_bytes)))
            self.block_of = vector[int](self.u.n_ctx, -1)
            self.child_off = dp.child_off.data()
            self.child_word = dp.child_word.data()
            self.child_gid = dp.child_gid.data()
            self.ub_row_of = vector[int](self.core.t.vocab + 1, -1)

    cdef void _clear(self) noexcept nogil:
        """Empty the transition and bound caches (at the bound): they are memos, so no answer
        changes. The vectors keep their capacity, which is within the bound."""
        if self.dense:
            self.block_of.assign(self.u.n_ctx, -1)
            self.drow.clear()
            self.dext.clear()
            self.dnode.clear()
            self.dbows.clear()
            self.dctx.clear()
            self.ub_row_of.assign(self.core.t.vocab + 1, -1)
            self.ub_rows.clear()
        self.used_bytes = <long long>self.cache.size() * SPARSE_ENTRY_BYTES
        self.clears += 1

    cdef inline double _bound(self, long long x, long long y) noexcept nogil:
        """ln w(y | x): the max-backoff bound of y after a context ending in x (x = -1: any
        context), i.e. the max of p(y | z x) over every left extension z. A dense vocabulary
        keeps x's whole row, computed on first use."""
        cdef long long ctx = x, V = self.core.t.vocab, r, k, ctx_node
        cdef int ctx_len, ctx_depth
        cdef double bows[NG_MAX_ORDER]
        if self.mix != NULL:
            return mix_bound(self.mix, x, y)
        if self.vp != NULL:
            return vp_bound(self.vp, x, y)
        if not self.dense:
            return ng_walk(&self.core.t, &ctx, 1, y, True)
        r = self.ub_row_of[x + 1]
        if r < 0:
            if self.used_bytes + 8 * V > self.max_bytes:
                self._clear()
            self.used_bytes += 8 * V
            r = <long long>(self.ub_rows.size() // V)
            self.ub_row_of[x + 1] = <int>r
            self.ub_rows.resize((r + 1) * V)
            if self.core.t.order >= 2:
                ctx_depth = ng_context(&self.core.t, &ctx, 1, &ctx_len, bows, &ctx_node)
                for k in range(V):
                    self.ub_rows[r * V + k] = ng_walk_in(&self.core.t, &ctx, 1, k, True,
                                                         ctx_len, ctx_depth, bows, ctx_node)
            else:
                for k in range(V):
                    self.ub_rows[r * V + k] = ng_walk(&self.core.t, &ctx, 1, k, True)
        return self.ub_rows[r * V + y]

    cdef inline double _wbound(self, long long x, long long y) noexcept nogil:
        """`_bound` times this run's LM weight (a weight > 0 keeps it a bound)."""
        return self.lmw * self._bound(x, y)

    cdef inline void _step(self, long long gid, long long word, long long *nxt,
                           double *lp) noexcept nogil:
        """`_trans` with its ln p times this run's LM weight (the cache holds plain ln p)."""
        self._trans(gid, word, nxt, lp)
        lp[0] = self.lmw * lp[0]

    cdef void _backward_plain(self, long long a0, long long a1, long long a2,
                              const long long *cand_ids, const double *cand_emis, double *H,
                              long long base) noexcept nogil:
        """One step of the backward bound pass: H of candidates a0..a1-1 from those of the
        next position a1..a2-1, every pair through `_bound`."""
        cdef long long c, c2
        cdef double best, v
        for c in range(a0, a1):
            best = -INFINITY
            for c2 in range(a1, a2):
                if not isfinite(cand_emis[c2]):
                    continue
                v = self._wbound(cand_ids[c], cand_ids[c2]) + cand_emis[c2] + H[c2 - base]
                if v > best:
                    best = v
            H[c - base] = best

    cdef bint _backward_sparse(self, long long a0, long long a1, long long a2,
                               const long long *cand_ids, const double *cand_emis, double *H,
                               long long base) noexcept nogil:
        """`_backward_plain` for a large vocabulary, without the product of the two widths.

        Why it holds: a word y that never follows x (no bigram x.y in the table, which is
        suffix-closed) matches only its unigram, so its bound after x is the unigram's ln p
        plus x's backoff terms (ng_walk_in with matched = 0), the same for every such y. The
        best such y is the first non-successor of x in one sort of the next position by
        unigram ln p + emission + H; only x's successors take the walk. The grouping may move
        the maximum by rounding, which the pruning margin covers. Returns False (nothing done)
        when a word repeats at the next position.
        """
        cdef const NgramTables *t = &self.core.t
        cdef long long V = t.vocab, c, c2, x, y, k, r, nsucc
        cdef double best, v
        cdef vector[Ranked] ranked  # (-(ln p1(y) + e + H), candidate)
        self.epoch += 1
        if self.stamp.size() == 0:
            self.stamp.assign(V, -1)
            self.stamp_idx.assign(V, -1)
        if self.mix != NULL:
            return mix_backward(self.mix, self.lmw, a0, a1, a2, cand_ids, cand_emis, H, base,
                                self.stamp.data(), self.stamp_idx.data(), &self.epoch)
        if self.vp != NULL:
            return vp_backward(self.vp, self.lmw, a0, a1, a2, cand_ids, cand_emis, H, base,
                               self.stamp.data(), self.stamp_idx.data(), &self.epoch)
        for c2 in range(a1, a2):
            y = cand_ids[c2]
            if self.stamp[y] == self.epoch:
                return False
            self.stamp[y] = self.epoch
            self.stamp_idx[y] = c2
            if isfinite(cand_emis[c2]) and isfinite(H[c2 - base]):
                v = self.lmw * t.lp[y] + cand_emis[c2] + H[c2 - base]
                if isfinite(v):
                    ranked.push_back(Ranked(-v, c2))
        sort(ranked.begin(), ranked.end())
        for c in range(a0, a1):
            x = cand_ids[c]
            best = -INFINITY
            nsucc = self.core.next_off[x + 1] - self.core.next_off[x]
            if nsucc <= a2 - a1:  # x's successors that stand at the next position
                for k in range(self.core.next_off[x], self.core.next_off[x + 1]):
                    y = self.core.next_word[k]
                    if self.stamp[y] != self.epoch:
                        continue
                    c2 = self.stamp_idx[y]
                    if not isfinite(cand_emis[c2]):
                        continue
                    v = self._wbound(x, y) + cand_emis[c2] + H[c2 - base]
                    if v > best:
                        best = v
            else:  # the next position's words that follow x
                for c2 in range(a1, a2):
                    y = cand_ids[c2]
                    if not isfinite(cand_emis[c2]) or ng_find(
                            t, 2, <unsigned long long>y * <unsigned long long>V
                            + <unsigned long long>x) < 0:
                        continue
                    v = self._wbound(x, y) + cand_emis[c2] + H[c2 - base]
                    if v > best:
                        best = v
            for r in range(<long long>ranked.size()):  # the best word that does not follow x
                c2 = ranked[r].second
                y = cand_ids[c2]
                if ng_find(t, 2, <unsigned long long>y * <unsigned long long>V
                           + <unsigned long long>x) >= 0:
                    continue
                v = self.lmw * ((t.lp[y] + t.lbow[x]) + (t.lmbow[x] - t.lbow[x])) \
                    + cand_emis[c2] + H[c2 - base]
                if v > best:
                    best = v
                break
            H[c - base] = best
        return True

    cdef double _completion_bounds(self, long long p0, long long p1,
                                   const long long *pos_off, const long long *cand_ids,
                                   const double *cand_emis, long long eos, long long start,
                                   double *H) noexcept nogil:
        """Bounds for exact pruning of one sentence (positions p0..p1-1); returns a lower
        bound on its best score (-inf: none, do not prune).

        H[c - pos_off[p0]] is an upper bound on the score of the rest of the sentence after
        candidate c: the best path through the lattice when each transition weighs its bigram
        max-backoff bound (a backward max-plus pass). Whatever longer context precedes c, the
        true factors are at most these bounds. The lower bound is the exact score of one path,
        the greedy one that picks, position by position, the candidate with the best exact
        score so far plus H.
        """
        cdef long long p, c, base = pos_off[p0], g, ng, bc, bg
        cdef double best, v, lp, tot, bt
        for c in range(pos_off[p1 - 1], pos_off[p1]):
            H[c - base] = self._wbound(cand_ids[c], eos) if eos >= 0 else 0.0
        for p in range(p1 - 2, p0 - 1, -1):
            if self.dense or self.core.t.order < 2 or not self._backward_sparse(
                    pos_off[p], pos_off[p + 1], pos_off[p + 2], cand_ids, cand_emis, H, base):
                self._backward_plain(pos_off[p], pos_off[p + 1], pos_off[p + 2], cand_ids,
                                     cand_emis, H, base)
        g = start
        tot = 0.0
        for p in range(p0, p1):
            best = -INFINITY
            bc = -1
            bg = 0
            bt = 0.0
            for c in range(pos_off[p], pos_off[p + 1]):
                if not isfinite(cand_emis[c]) or not isfinite(H[c - base]):
                    continue
                self._step(g, cand_ids[c], &ng, &lp)
                v = tot + (lp + cand_emis[c])
                if isfinite(v) and v + H[c - base] > best:
                    best = v + H[c - base]
                    bc = c
                    bg = ng
                    bt = v
            if bc < 0:
                return -INFINITY
            g = bg
            tot = bt
        if eos < 0:  # no </s> factor
            return tot
        self._step(g, eos, &ng, &lp)
        return tot + lp

    cdef inline void _trans(self, long long gid, long long word, long long *nxt,
                            double *lp, StateCtx *sc=NULL) noexcept nogil:
        """(next state, ln p) of `word` after state `gid`, cached. `sc` (large vocabularies):
        the state's shared context walk, filled on its first miss and reused by the next."""
        cdef CacheSlot *slot
        cdef StateCtx local
        cdef const RowEntry *e
        cdef long long V = self.core.t.vocab
        cdef long long b
        cdef unsigned long long key = <unsigned long long>gid * <unsigned long long>V \
            + <unsigned long long>word
        if self.dense:
            b = self.block_of[gid]
            if b < 0:
                b = self._row(gid)
            e = self._row_ptr(b) + word
            nxt[0] = e.nxt
            lp[0] = e.lp
            return
        if self.cache.size() == 0:
            self._allocate_cache()
        slot = &self.cache[(key * ARS_MIX) >> self.cache_shift]
        if slot.key == key + 1:
            nxt[0] = slot.nxt
            lp[0] = slot.lp
            return
        if sc == NULL:
            local.ready = False
            sc = &local
        self._walk(gid, word, nxt, lp, sc)
        slot.key = key + 1
        slot.nxt = nxt[0]
        slot.lp = lp[0]
        self.cache_misses += 1
        if self.cache_misses > <long long>self.cache.size() and \
                <long long>self.cache.size() < self.cache_cap:
            self._size_cache(4 * <long long>self.cache.size())

    cdef inline RowEntry *_row_ptr(self, long long b) noexcept nogil:
        """Block b's row (V entries)."""
        return self.drow[b // self.chunk_rows].data() \
            + (b % self.chunk_rows) * self.core.t.vocab

    cdef inline RowNode *_node_ptr(self, long long x) noexcept nogil:
        """Extension block x's nodes (V entries)."""
        return self.dnode[x // self.chunk_rows].data() \
            + (x % self.chunk_rows) * self.core.t.vocab

    cdef long long _row(self, long long gid) noexcept nogil:
        """The block of gid's dense row, filled now with those of its failure chain that are
        missing (`row_from_fail`, shortest first). When they would pass the byte bound the
        caches are emptied first; when the whole chain cannot fit in it, gid's row alone is
        filled by the walks (`row_direct`): the same entries either way."""
        if self.used_bytes + rows_missing(self.fail, self.block_of.data(), gid) \
                * self.row_bytes > self.max_bytes:
            self._clear()  # then every row of the chain is missing
            if self.used_bytes + rows_missing(self.fail, self.block_of.data(), gid) \
                    * self.row_bytes > self.max_bytes:
                return self._new_row(gid, -1)
        return self._chain_row(gid)

    cdef long long _chain_row(self, long long gid) noexcept nogil:
        """`_row` once the chain fits: the failure link's row first (recursively), then gid's."""
        cdef long long b = self.block_of[gid]
        if b >= 0:
            return b
        if gid == 0:
            return self._new_row(0, -1)
        return self._new_row(gid, self._chain_row(self.fail[gid]))

    cdef long long _new_row(self, long long gid, long long fb) noexcept nogil:
        """A new block for gid's row, from block fb (its failure link's) or, if fb < 0, by the
        walks; counted in the byte bound and as V transitions computed. A context shorter
        than n - 1 words also keeps what longer rows extend (an extension block)."""
        cdef long long V = self.core.t.vocab, W = self.u.width if self.u.width else 1
        cdef long long b = <long long>self.dext.size(), x = -1, fx
        cdef RowNode *nodes = NULL
        cdef double *bows = NULL
        cdef RowCtx *rc = NULL
        if b % self.chunk_rows == 0:
            self.drow.push_back(vector[RowEntry](self.chunk_rows * V))
        if self.u.lens[gid] < self.u.width:
            x = <long long>self.dctx.size()
            if x % self.chunk_rows == 0:
                self.dnode.push_back(vector[RowNode](self.chunk_rows * V))
            self.dbows.resize((x + 1) * W)
            self.dctx.resize(x + 1)
            nodes = self._node_ptr(x)
            bows = &self.dbows[x * W]
            rc = &self.dctx[x]
        self.dext.push_back(x)
        self.block_of[gid] = <int>b
        self.used_bytes += self.row_bytes
        self.n_rows += 1
        self.n_trans += V
        if fb < 0:
            row_direct(&self.core.t, &self.u, self.fail, gid, self._row_ptr(b), nodes, bows,
                       rc)
        else:
            fx = self.dext[fb]  # a failure link is shorter than n - 1 words: it has one
            row_from_fail(&self.core.t, &self.u, self.child_off, self.child_word,
                          self.child_gid, gid, self.u.lens[self.fail[gid]], self._row_ptr(fb),
                          self._node_ptr(fx), &self.dbows[fx * W], &self.dctx[fx],
                          self._row_ptr(b), nodes, bows, rc)
        return b

    cdef inline void _walk(self, long long gid, long long word, long long *nxt, double *lp,
                           StateCtx *sc) noexcept nogil:
        """`_trans` for a large vocabulary without its cache: the walk `_trans` makes on a
        miss (this function), nothing looked up or stored. Why (issue 34): the unpruned forward-backward
        meets each (state, word) about once (2% repeats on disambig's lattices), so the
        cache's slot, a miss in the CPU's caches, cost more than the walks it saved: perf put
        58% of the transition function on that load."""
        cdef long long dummy = -1
        cdef const long long *row = (self.u.rows + gid * self.u.width) if self.u.width \
            else &dummy
        if self.mix != NULL:  # a mixture's factor, as _trans computes it on a miss
            lp[0] = mix_walk(self.mix, row, self.u.width, word)
        elif self.vp != NULL:  # a VPYLM's factor (_vpylm.pxi)
            lp[0] = vp_walk(self.vp, row, self.u.width, word)
        else:
            if not sc.ready:
                sc.ctx_depth = ng_context(&self.core.t, row, self.u.width, &sc.ctx_len,
                                          sc.bows, &sc.ctx_node)
                sc.ready = True
            lp[0] = ng_walk_in(&self.core.t, row, self.u.width, word, False, sc.ctx_len,
                               sc.ctx_depth, sc.bows, sc.ctx_node)
        nxt[0] = uc_cut_append(&self.u, self.fail, self.core.t.vocab, gid, word)
        self.n_trans += 1

    cdef void _allocate_cache(self) noexcept nogil:
        """The direct-mapped transition table, first CACHE_FIRST_SLOTS slots; it may grow to
        the most power-of-two slots within SPARSE_CACHE_BYTES and max_bytes (see FullDP), two
        at least. Why it starts small: a short run (one small lattice per process, issue 34)
        computes a few hundred transitions, and filling 32 MiB of empty slots cost it more
        time and peak memory than its whole DP; a run that stores more transitions than the
        table has slots grows it fourfold (`_size_cache`), so a long run reaches the full
        size after a few hundred thousand transitions, as before."""
        cdef long long slots = 2  # at least two (Fibonacci hashing keeps >= 1 bit)
        cdef long long cap = SPARSE_CACHE_BYTES_C if SPARSE_CACHE_BYTES_C < self.max_bytes \
            else self.max_bytes
        while 2 * slots * SPARSE_ENTRY_BYTES <= cap:
            slots *= 2
        self.cache_cap = slots
        self._size_cache(CACHE_FIRST_SLOTS)

    cdef void _size_cache(self, long long want) noexcept nogil:
        """Empty the transition table and give it `want` slots (a power of two, at most
        cache_cap): it is a memo, so dropping its entries changes no answer."""
        cdef long long slots = 2, old = <long long>self.cache.size()
        cdef int bits = 1
        cdef CacheSlot empty
        while slots < want and slots < self.cache_cap:
            slots *= 2
            bits += 1
        empty.key = 0
        empty.nxt = 0
        empty.lp = 0.0
        self.cache.assign(slots, empty)
        self.cache_shift = 64 - bits
        self.cache_misses = 0
        self.used_bytes += (slots - old) * SPARSE_ENTRY_BYTES
