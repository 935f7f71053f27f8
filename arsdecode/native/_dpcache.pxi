# _DPCaches: one worker's memo of transitions, within a byte budget.
#
# Why a part of its own: every transition the DP sweeps (_dpsweep.pxi) ask of the model goes
# through here: (state, word) -> (next state, ln p), cached in a dense row per state (small
# vocabularies) or a direct-mapped table (large ones). The pruning bounds are _DPBounds'
# (_dpbounds.pxi), its subclass, and the sweeps _DPWorker's, theirs: Cython cannot include a
# file inside a class body, so the split by job is a chain of classes, the worker is one.


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
    cdef const LlTables *ll      # a log-linear target's tables (_loglinear.pxi), or NULL
    cdef LlStates lls            # its states, this worker's (None without `ll`)

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
        self.ll = &dp.ll.m if dp.ll is not None else NULL
        if dp.ll is not None:
            self.lls = LlStates(self.u.width, dp.ll.m.k, self.core.t.vocab)
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

    cdef void ll_start(self):
        """Before a run of a log-linear target: past LL_RESET_STATES states, empty them and
        the transition table (which holds their ids) together; both are memos."""
        if self.lls.lens.size() > LL_RESET_STATES:
            self.lls.reset()
            if self.cache.size():
                self._size_cache(<long long>self.cache.size())

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
        cdef const long long *row = &dummy
        if self.ll != NULL:  # a log-linear target: its own states (_loglinear.pxi)
            ll_step(self.ll, self.lls, gid, word, nxt, lp)
            self.n_trans += 1
            return
        if self.u.width and self.mix == NULL:  # a mixture keeps no rows (_mixture.pxi)
            row = self.u.rows + gid * self.u.width
        if self.mix != NULL:  # a mixture's factor, its context read from the keys
            lp[0] = mix_walk_gid(self.mix, &self.u, gid, word)
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
