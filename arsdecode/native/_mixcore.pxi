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

    Per order k (lists of k arrays): keys (sorted, uint64), log10 p, backoff, mf and mbow
    (float64, e.g. read-only views of a mapped binary file), hash slots and bits of orders
    >= 2 (`build_hash`'s layout; the entry of order 1 is ignored). `ln10` is the factor
    every value is scaled by where read (NativeNgram.from_model's LN10). Every index the walk
    reads unchecked is checked here (ModelError), linear in the slots."""

    cdef L10Tables t
    cdef readonly object arrays

    def __init__(self, long long vocab, double ln10, list keys, list lp, list lbow, list lmf,
                 list lmbow, list slots, list bits):
        cdef int order = <int>len(keys), k
        cdef long long m, i
        cdef const unsigned long long[::1] kv
        cdef const double[::1] a
        cdef const int[::1] sl
        if not 1 <= order <= NG_MAX_ORDER:
            raise ModelError(f"Log10Core: order {order} is outside 1..{NG_MAX_ORDER}")
        if not (len(lp) == len(lbow) == len(lmf) == len(lmbow) == len(slots) == len(bits)
                == order):
            raise ModelError("Log10Core: one array of each kind per order")
        self.arrays = (keys, lp, lbow, lmf, lmbow, slots)
        self.t.order = order
        self.t.vocab = vocab
        self.t.ln10 = ln10
        for k in range(1, order + 1):
            kv = keys[k - 1]
            m = kv.shape[0]
            if k == 1 and (m != vocab or vocab < 1):
                raise ModelError("Log10Core: order 1 must have one row per word of the "
                                 "vocabulary")
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
            self.t.slots[k - 1] = NULL
            self.t.bits[k - 1] = 0
            if k >= 2:
                sl = slots[k - 1]
                b = int(bits[k - 1])
                if b < 1 or b > 62 or sl.shape[0] != (1 << b) or (1 << b) <= m:
                    raise ModelError(f"Log10Core: order {k} must have 2**bits > rows hash slots")
                with nogil:
                    for i in range(sl.shape[0]):
                        if sl[i] < -1 or sl[i] >= m:
                            break
                    else:
                        i = -1
                if i >= 0:
                    raise ModelError(f"Log10Core: a hash slot of order {k} names no row")
                self.t.slots[k - 1] = &sl[0]
                self.t.bits[k - 1] = b
        if order >= 2:
            kv = keys[1]
            for i in range(kv.shape[0]):  # the followers' pass divides bigram keys by V
                if kv[i] // <unsigned long long>vocab >= <unsigned long long>vocab:
                    raise ModelError("Log10Core: a bigram key names a word id out of range")

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
