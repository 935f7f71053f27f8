# NgramCore: one n-gram model's tables, checked once, and the batched walk over them.
#
# Why a part of its own: the walk itself (_ngram.pxi) is one row in C with no checks; this is
# the Python-facing object that owns the arrays, refuses tables the walk could not index
# blindly (_check_ngram_tables), and answers a batch of rows with the GIL released. FullDP
# (_fullmodel.pxi) reads its tables.


cdef long long SHORTCUT_MIN_RUN = 32  # rows of one context before walk's unigram shortcut


cdef class NgramCore:
    """The tables of one n-gram model; `walk` answers a batch of (context, word) rows."""

    cdef NgramTables t
    cdef readonly object arrays  # keeps the buffers alive
    cdef vector[long long] next_off  # bigram successors: word x's are next_word[next_off[x]:..]
    cdef vector[int] next_word
    cdef readonly long long shortcut_rows  # rows walk answered by the unigram shortcut

    def __init__(self, int order, long long vocab, long long[::1] node_off,
                 unsigned long long[::1] keys, int[::1] slots, long long[::1] slot_off,
                 int[::1] bits, double[::1] lp, double[::1] lbow, double[::1] lmf,
                 double[::1] lmbow):
        if not 1 <= order <= NG_MAX_ORDER:
            raise ModelError(f"order {order} is above the compiled core's maximum of "
                             f"{NG_MAX_ORDER}" if order > 0 else f"order {order} is not positive")
        if node_off.shape[0] != order + 1 or slot_off.shape[0] != order + 1 \
                or bits.shape[0] != order:
            raise ModelError("NgramCore: offset arrays do not match the order")
        n = node_off[order]
        if not (keys.shape[0] == lp.shape[0] == lbow.shape[0] == lmf.shape[0]
                == lmbow.shape[0] == n) or slots.shape[0] != slot_off[order]:
            raise ModelError("NgramCore: value arrays do not match the offsets")
        _check_ngram_tables(order, vocab, node_off, keys, slots, slot_off, bits)
        self.arrays = (node_off, keys, slots, slot_off, bits, lp, lbow, lmf, lmbow)
        self.t.order = order
        self.t.vocab = vocab
        self.t.node_off = &node_off[0]
        self.t.keys = &keys[0] if n else NULL
        self.t.slots = &slots[0] if slots.shape[0] else NULL
        self.t.slot_off = &slot_off[0]
        self.t.bits = &bits[0]
        self.t.lp = &lp[0] if n else NULL
        self.t.lbow = &lbow[0] if n else NULL
        self.t.lmf = &lmf[0] if n else NULL
        self.t.lmbow = &lmbow[0] if n else NULL
        self._index_successors()

    cdef void _index_successors(self):
        """Group the bigram nodes x.w by their first word x (a counting sort of the keys,
        key = w * V + x): which words can follow x, for walk's unigram shortcut."""
        cdef long long V = self.t.vocab, lo, hi, i, x
        cdef unsigned long long key
        self.next_off.assign(V + 1, 0)
        if self.t.order < 2:
            return
        lo = self.t.node_off[1]
        hi = self.t.node_off[2]
        self.next_word.assign(hi - lo, 0)
        cdef vector[long long] fill
        fill.assign(V, 0)
        with nogil:
            for i in range(lo, hi):
                self.next_off[<long long>(self.t.keys[i] % <unsigned long long>V) + 1] += 1
            for x in range(V):
                self.next_off[x + 1] += self.next_off[x]
                fill[x] = self.next_off[x]
            for i in range(lo, hi):
                key = self.t.keys[i]
                x = <long long>(key % <unsigned long long>V)
                self.next_word[fill[x]] = <int>(key // <unsigned long long>V)
                fill[x] += 1

    @property
    def order(self) -> int:
        return self.t.order

    def walk(self, const long long[:, ::1] contexts, const long long[::1] words, bint want_max):
        """ln p (or the ln max-backoff bound) of each row; contexts (B, k) left-padded with -1.

        Every word id must be in [0, V) and every context id that is read (the last n - 1
        columns) below V, a negative one being padding: the walk indexes the tables with them
        without bounds checks, so they are checked before use (OptionError). The words before
        the GIL is released; a context once per run of rows that share it, where the walk
        meets it (on the batches of one context the q-automaton asks for, a separate pass
        over every row cost up to a fifth of the walk), stopping there and raising after.
        """
        cdef Py_ssize_t b = words.shape[0], i
        cdef int width = <int>contexts.shape[1]
        cdef long long V = self.t.vocab, rows_shortcut = 0
        if contexts.shape[0] != b:
            raise OptionError("contexts must be (B, k) with one row per word")
        out = np.empty(b, dtype=np.float64)
        cdef double[::1] o = out
        cdef long long dummy = -1
        cdef const long long *row
        # Rows with the context of the row before (a state's whole row of candidates, as the
        # q-automaton asks) reuse its context walk: same numbers, about half the probes.
        # A long run of one context takes the unigram shortcut: a word w that cannot follow
        # the context's last word x (no bigram x.w) matches only its unigram in walk A, so its
        # answer is ng_walk_in's own formula with matched = 0, from the unigram's ln p and
        # the context's backoff sum, added in the same order (bit-identical); only x's
        # successors take the walk. On a 54k vocabulary most candidates are not successors.
        cdef int w = width if width <= self.t.order - 1 else self.t.order - 1
        cdef int shift = width - w, ctx_len = 0, ctx_depth = 0, j
        cdef long long ctx_node = -1, run_end = 0, x, k, word, shortcut_start = -1
        cdef double bows[NG_MAX_ORDER]
        cdef long long bad_row = -1  # a row whose context holds an id >= V (see below)
        for i in range(b):
            if words[i] < 0 or words[i] >= V:
                raise OptionError(f"word id {words[i]} out of range (vocabulary of {V})")
        cdef double bow_sum0 = 0.0, extra = 0.0
        cdef bint same, shortcut = False
        cdef vector[long long] stamp
        if self.t.order >= 2 and b >= SHORTCUT_MIN_RUN:
            stamp.assign(self.t.vocab, -1)
        with nogil:
            for i in range(b):
                row = (&contexts[i, 0] + shift) if w else &dummy
                same = i > 0 and i < run_end
                if not same:
                    run_end = i + 1
                    while run_end < b and w:
                        for j in range(w):
                            if contexts[run_end, shift + j] != contexts[i, shift + j]:
                                break
                        else:
                            run_end += 1
                            continue
                        break
                    if not w:
                        run_end = b
                    for j in range(w):
                        if row[j] >= V:
                            bad_row = i
                    if bad_row >= 0:
                        break
                    ctx_depth = ng_context(&self.t, row, w, &ctx_len, bows, &ctx_node)
                    shortcut = False
                    if ctx_len >= 1 and stamp.size() and run_end - i >= SHORTCUT_MIN_RUN:
                        x = row[w - 1]
                        if x >= 0 and self.next_off[x + 1] - self.next_off[x] <= 8 * (run_end - i):
                            shortcut = True
                            for k in range(self.next_off[x], self.next_off[x + 1]):
                                stamp[self.next_word[k]] = i
                            bow_sum0 = 0.0
                            for j in range(1, ctx_depth + 1):
                                bow_sum0 += bows[j - 1]
                            extra = 0.0
                            if ctx_depth == ctx_len and ctx_len <= self.t.order - 1:
                                extra = (self.t.lmbow[self.t.node_off[ctx_len - 1] + ctx_node]
                                         - self.t.lbow[self.t.node_off[ctx_len - 1] + ctx_node])
                            shortcut_start = i
                word = words[i]
                if shortcut and stamp[word] != shortcut_start:
                    rows_shortcut += 1
                    o[i] = self.t.lp[word] + bow_sum0
                    if want_max:
                        o[i] = o[i] + extra
                else:
                    o[i] = ng_walk_in(&self.t, row, w, word, want_max, ctx_len, ctx_depth, bows,
                                      ctx_node)
        self.shortcut_rows += rows_shortcut  # with the GIL: walks may run in several threads
        if bad_row >= 0:
            for j in range(shift, width):
                if contexts[bad_row, j] >= V:
                    raise OptionError(f"context id {contexts[bad_row, j]} out of range "
                                      f"(vocabulary of {V})")
        return out


cdef _check_ngram_tables(int order, long long vocab, const long long[::1] node_off,
                         const unsigned long long[::1] keys, const int[::1] slots,
                         const long long[::1] slot_off, const int[::1] bits):
    """ModelError unless the walk can index NgramCore's tables blindly: order 1 has a row per
    word (its row is the word id), offsets ascend from 0, each order >= 2 has 2**bits hash
    slots holding -1 or one of its rows, and bigram keys x * V + w name words below V (the
    successor index divides them). Once per model, linear in its size."""
    cdef int k
    cdef long long i, lo, hi, m
    if vocab < 1 or node_off[0] != 0 or slot_off[0] != 0 or node_off[1] != vocab:
        raise ModelError("NgramCore: order 1 must have one row per word of the vocabulary")
    for k in range(1, order + 1):
        m = node_off[k] - node_off[k - 1]
        if m < 0 or slot_off[k] < slot_off[k - 1]:
            raise ModelError(f"NgramCore: offsets decrease at order {k}")
        if k >= 2 and (bits[k - 1] < 1 or bits[k - 1] > 62
                       or slot_off[k] - slot_off[k - 1] != (1LL << bits[k - 1])):
            raise ModelError(f"NgramCore: order {k} must have 2**bits hash slots")
        for i in range(slot_off[k - 1], slot_off[k]):
            if slots[i] < -1 or slots[i] >= m:
                raise ModelError(f"NgramCore: a hash slot of order {k} names no row")
    if order >= 2:
        lo, hi = node_off[1], node_off[2]
        for i in range(lo, hi):
            if keys[i] // <unsigned long long>vocab >= <unsigned long long>vocab:
                raise ModelError("NgramCore: a bigram key names a word id out of range")
