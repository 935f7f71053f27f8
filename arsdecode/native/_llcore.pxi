# LlCore: the Python-facing owner of a log-linear target's tables (what `LlTables` points
# into): checks every array the DP reads unchecked, keeps the buffers alive, and answers
# batched walks and cuts for the tests. FullDP (_fullmodel.pxi) takes one.


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


def ll_reset_states(long long n) -> int:
    """Set how many states a worker keeps between runs of a log-linear target before it
    empties them with its transition table (`_DPCaches.ll_start`); returns the previous
    bound. Why public: the tests make it small, so that emptying runs on small lattices."""
    global LL_RESET_STATES
    cdef long long old = <long long>LL_RESET_STATES
    if n < 1:
        raise OptionError("ll_reset_states: the bound must be >= 1")
    LL_RESET_STATES = <size_t>n
    return old
