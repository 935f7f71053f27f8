# Log10Core and MixCore: the Python-facing owners of a mixture's tables (what `L10Tables` and
# `MixTables` point into).
#
# Why a part of its own: _mixture.pxi holds the C-level walks and the bound pass the DP calls
# without the GIL; these are the objects that check every array they index unchecked, keep the
# buffers alive, and answer batched walks (InterpolatedLM's own queries, and the tests).
# FullDP (_fullmodel.pxi) takes a MixCore.


cdef class Log10Core:
    """One backoff model's tables read in place, in log10 (`L10Tables`): `walk` answers
    (context, word) rows in ln, the same numbers as NgramCore.walk on NativeNgram's copy.

    Per order k (lists of k arrays): keys (ascending, uint64: parent row * V + word for
    k >= 2), log10 p, backoff, mf and mbow (float64, e.g. read-only views of a mapped binary
    file). `ln10` is the factor every value is scaled by where read (NativeNgram.from_model's
    LN10). The children offsets of each order >= 2 are derived here, in one pass over its
    keys that also checks them (ModelError): every index the walk reads unchecked is valid."""

    cdef L10Tables t
    cdef readonly object arrays
    cdef readonly list children

    def __init__(self, long long vocab, double ln10, list keys, list lp, list lbow, list lmf,
                 list lmbow):
        cdef int order = <int>len(keys), k
        cdef long long m, i, parent, prev_rows, p
        cdef unsigned long long last
        cdef bint bad = False
        cdef const unsigned long long[::1] kv
        cdef const double[::1] a
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
            for dest, arrays in enumerate((lp, lbow, lmf, lmbow)):
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
                arr = np.empty(prev_rows + 1, dtype=np.int32)
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
                        while p <= parent:
                            ch[p] = <int>i
                            p += 1
                    while p <= prev_rows:
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


cdef class MixCore:
    """The components of a mixture for the full DP: their Log10Cores, the union -> component
    id maps, ln lambda_i (active components only). `walk` answers (context, word) rows as
    InterpolatedLM.log_prob / log_bound do (for tests and callers that check)."""

    cdef MixTables m
    cdef readonly list cores
    cdef readonly object arrays
    cdef readonly int order

    def __init__(self, list cores, list maps, list succ_offs, list succ_rows, list pred_offs,
                 list firsts, list succ_words,
                 double[::1] log_weights, double[::1] uni, double[::1] maxb):
        """Per component: its Log10Core, union -> component ids (`maps`), its bigram rows grouped by first word (`succ_offs`
        (V_i + 1), `succ_rows`, their last words `succ_words`) and by their last word
        (`pred_offs`, V_i + 1; `firsts`: each row's first word); then ln lambda_i, and per union word `uni` and `maxb` (see
        MixTables). Every index the DP reads unchecked is checked here (ModelError)."""
        cdef Py_ssize_t i, j
        cdef Log10Core core
        cdef long long V = uni.shape[0]
        cdef const long long[::1] mp
        cdef const long long[::1] so
        cdef const long long[::1] sr
        cdef const long long[::1] po
        cdef const int[::1] fw
        cdef const int[::1] sw
        cdef long long nb
        if not 1 <= len(cores) <= MIX_MAX:
            raise ModelError(f"MixCore: 1 to {MIX_MAX} components, not {len(cores)}")
        if not (len(maps) == len(succ_offs) == len(pred_offs) == len(firsts) == len(succ_words) == len(succ_rows)
                == log_weights.shape[0] == len(cores)) \
                or maxb.shape[0] != V or V < 1:
            raise ModelError("MixCore: one map, inverse and weight per component, one "
                             "unigram and backoff bound per union word")
        self.cores = list(cores)
        self.arrays = (list(maps), list(succ_offs), list(pred_offs), list(firsts),
                       list(succ_words), list(succ_rows), log_weights,
                       uni, maxb)
        self.m.k = <int>len(cores)
        self.m.vocab = V
        self.order = 1
        for i in range(len(cores)):
            core = cores[i]
            mp = maps[i]
            so = succ_offs[i]
            sr = succ_rows[i]
            po = pred_offs[i]
            fw = firsts[i]
            sw = succ_words[i]
            nb = core.t.rows[1] if core.t.order >= 2 else 0
            if so.shape[0] != core.t.vocab + 1 or sr.shape[0] != nb or so[0] != 0 \
                    or so[core.t.vocab] != nb:
                raise ModelError(f"MixCore: component {i}'s successor index does not match")
            if po.shape[0] != core.t.vocab + 1 or po[0] != 0 or po[core.t.vocab] != nb:
                raise ModelError(f"MixCore: component {i}'s predecessor index does not match")
            if fw.shape[0] != nb or sw.shape[0] != nb:
                raise ModelError(f"MixCore: component {i}'s bigram words do not match")
            for j in range(nb):
                if not (0 <= fw[j] < core.t.vocab and 0 <= sw[j] < core.t.vocab):
                    raise ModelError(f"MixCore: component {i}'s bigram words name no word")
            if core.t.vocab > V:
                raise ModelError(f"MixCore: component {i}'s vocabulary is larger than the union")
            for j in range(core.t.vocab):
                if so[j + 1] < so[j] or po[j + 1] < po[j]:
                    raise ModelError(f"MixCore: component {i}'s bigram offsets decrease")
            for j in range(nb):
                if sr[j] < 0 or sr[j] >= nb:
                    raise ModelError(f"MixCore: component {i}'s successor index names no row")
            if mp.shape[0] != V:
                raise ModelError(f"MixCore: component {i}'s maps do not match the vocabularies")
            for j in range(V):
                if mp[j] < -1 or mp[j] >= core.t.vocab:
                    raise ModelError(f"MixCore: component {i}'s map names no word")
            if not isfinite(log_weights[i]):
                raise ModelError("MixCore: a component's ln weight is not finite")
            self.m.t[i] = &core.t
            self.m.map[i] = &mp[0]
            self.m.succ_off[i] = &so[0]
            self.m.succ_row[i] = &sr[0] if nb else NULL
            self.m.pred_off[i] = &po[0]
            self.m.first[i] = &fw[0] if nb else NULL
            self.m.succ_word[i] = &sw[0] if nb else NULL
            self.m.width[i] = core.t.order - 1
            self.m.lw[i] = log_weights[i]
            if core.t.order > self.order:
                self.order = core.t.order
        self.m.uni = &uni[0]
        self.m.maxb = &maxb[0]

    @property
    def vocab(self) -> int:
        return self.m.vocab

    def walk(self, const long long[:, ::1] contexts, const long long[::1] words, bint want_max):
        """ln p (or, with `want_max`, the bigram bound `mix_bound` after each row's last word)
        of each row; contexts (B, k) union ids left-padded with -1, k <= NG_MAX_ORDER."""
        cdef Py_ssize_t b = words.shape[0], i, j
        cdef int width = <int>contexts.shape[1]
        if contexts.shape[0] != b or width > NG_MAX_ORDER:
            raise OptionError("contexts must be (B, k) with one row per word, k <= 64")
        for i in range(b):
            if not 0 <= words[i] < self.m.vocab:
                raise OptionError(f"word id {words[i]} out of range")
            for j in range(width):
                if contexts[i, j] >= self.m.vocab:
                    raise OptionError(f"context id {contexts[i, j]} out of range")
        out = np.empty(b, dtype=np.float64)
        cdef double[::1] o = out
        cdef long long dummy = -1
        with nogil:
            for i in range(b):
                if want_max:
                    o[i] = mix_bound(&self.m, contexts[i, width - 1] if width else -1, words[i])
                else:
                    o[i] = mix_walk(&self.m, &contexts[i, 0] if width else &dummy, width,
                                    words[i])
        return out
