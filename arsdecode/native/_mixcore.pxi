# MixCore: the Python-facing owner of a mixture's tables (what `MixTables` points into).
#
# Why a part of its own: _mixture.pxi holds the C-level walks and the bound pass the DP calls
# without the GIL; this is the object that checks every array they index unchecked, keeps the
# buffers alive, and answers batched walks for the tests. FullDP (_fullmodel.pxi) takes one.


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
