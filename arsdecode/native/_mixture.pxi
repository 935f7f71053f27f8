# MixCore: a linear interpolation of several n-gram tables, as the full DP's transition source.
#
# Why a part of its own: the full DP (FullDP, _DPCaches) runs on one table; a mixture
# p(w | h) = sum_i lambda_i p_i(w | h_i) (arsdecode.model.interpolated) is not a backoff
# n-gram, but each of its factors is the components' own walks, combined exactly in float64.
# The DP's states stay useful contexts (here: of the union vocabulary, the union of the
# components' useful contexts, built by arsdecode.methods.fast_mixture), so the sweeps, the
# caches and the pruning are FullDP's; only the three places that read the model (the
# transition, the bigram bound, the sparse bound pass) ask this part instead when a FullDP
# has a MixCore. Every value equals InterpolatedLM's (the same views, the same bounds, the
# same logaddexp in the same order), which the tests check against it and against brute force.

from libc.math cimport log1p


cdef enum:
    MIX_MAX = 16  # the most components a MixCore takes (a fixed array in MixTables)


cdef struct MixTables:
    int k                                 # active components (lambda > 0)
    long long vocab                       # the union vocabulary
    const NgramTables *t[MIX_MAX]
    const long long *map[MIX_MAX]         # union id -> component id, -1: unseen
    const long long *inv[MIX_MAX]         # component id -> its one union id, -2: several
    const long long *next_off[MIX_MAX]    # the component's bigram successors (NgramCore)
    const int *next_word[MIX_MAX]
    int width[MIX_MAX]                    # the component's order - 1
    double lw[MIX_MAX]                    # ln lambda_i
    const double *uni                     # union id -> ln sum_i lambda_i p_i(w) (unigrams)
    const double *maxb                    # union id x -> max_i of x's max backoff in i (0 unseen)


cdef inline double mix_add(double x, double y) noexcept nogil:
    """numpy's logaddexp, the same branches (InterpolatedLM combines with it)."""
    cdef double tmp
    if x == y:
        return x + 0.693147180559945309417232121458176568
    tmp = x - y
    if tmp > 0:
        return x + log1p(exp(-tmp))
    if tmp <= 0:
        return y + log1p(exp(tmp))
    return tmp  # NaN


cdef inline double mix_walk(const MixTables *m, const long long *row, int width,
                            long long word) noexcept nogil:
    """ln p(word | row) of the mixture; `row` holds `width` union ids, left-padded with -1.
    Component i sees its last width_i words mapped, ending at the last word it cannot see
    (InterpolatedLM._view); a word it cannot see has p_i = 0."""
    cdef long long ctx[NG_MAX_ORDER]
    cdef int i, j, w
    cdef long long yi, u, ci
    cdef double acc = -INFINITY, term
    cdef bint first = True
    for i in range(m.k):
        yi = m.map[i][word]
        if yi < 0:
            term = -INFINITY
        else:
            w = m.width[i]
            for j in range(w):
                ctx[j] = -1
            for j in range(1, w + 1):  # right to left
                if j > width:
                    break
                u = row[width - j]
                if u < 0:
                    break
                ci = m.map[i][u]
                if ci < 0:
                    break
                ctx[w - j] = ci
            term = m.lw[i] + ng_walk(m.t[i], ctx, w, yi, False)
        acc = term if first else mix_add(acc, term)
        first = False
    return acc


cdef inline double mix_bound(const MixTables *m, long long x, long long y) noexcept nogil:
    """An upper bound of the mixture's ln p(y | z x) over every left extension z (x = -1: over
    every context): the lambda-mix of the components' max-backoff bounds, a component that
    cannot see x giving its exact value after the empty context (InterpolatedLM.log_bound)."""
    cdef long long ctx, yi
    cdef int i
    cdef double acc = -INFINITY, term
    cdef bint first = True
    for i in range(m.k):
        yi = m.map[i][y]
        if yi < 0:
            term = -INFINITY
        elif x < 0:
            ctx = -1
            term = m.lw[i] + ng_walk(m.t[i], &ctx, 1, yi, True)
        else:
            ctx = m.map[i][x]
            if ctx < 0:
                term = m.lw[i] + ng_walk(m.t[i], &ctx, 1, yi, False)
            else:
                term = m.lw[i] + ng_walk(m.t[i], &ctx, 1, yi, True)
        acc = term if first else mix_add(acc, term)
        first = False
    return acc


cdef inline bint mix_follows(const MixTables *m, long long x, long long y) noexcept nogil:
    """Whether some component lists the bigram x.y (in its own ids)."""
    cdef int i
    cdef long long xi, yi
    for i in range(m.k):
        xi = m.map[i][x]
        yi = m.map[i][y]
        if xi >= 0 and yi >= 0 and m.t[i].order >= 2 and ng_find(
                m.t[i], 2, <unsigned long long>yi * <unsigned long long>m.t[i].vocab
                + <unsigned long long>xi) >= 0:
            return True
    return False


cdef bint mix_backward(const MixTables *m, double lmw, long long a0, long long a1, long long a2,
                       const long long *cand_ids, const double *cand_emis, double *H,
                       long long base, long long *stamp, long long *stamp_idx,
                       long long epoch) noexcept nogil:
    """_DPCaches._backward_sparse for a mixture: H of candidates a0..a1-1 from the next
    position a1..a2-1, without the product of the two widths.

    Why it holds: a word y that follows x in no component (no bigram x_i.y_i in any table)
    matches only its unigram in each, so component i's bound is ln p_i(y) + x's max backoff
    in i (0 where i cannot see x: its exact value), and the mixture's is at most
    maxb(x) + uni(y) (each backoff replaced by the largest). The best such y is the first
    non-follower in one sort of the next position by uni(y) + emission + H; the followers
    (each component's successors of x, found through its successor lists) and the words
    whose component id has several union ids take the exact bound `mix_bound`. Returns False
    (nothing done) when a word repeats at the next position."""
    cdef long long c, c2, x, y, xi, yi, u, k, nsucc
    cdef int i
    cdef double best, v
    cdef vector[Ranked] ranked
    cdef vector[long long] always  # next candidates whose component id is ambiguous
    for c2 in range(a1, a2):
        y = cand_ids[c2]
        if stamp[y] == epoch:
            return False
        stamp[y] = epoch
        stamp_idx[y] = c2
        for i in range(m.k):
            yi = m.map[i][y]
            if yi >= 0 and m.inv[i][yi] == -2:
                always.push_back(c2)
                break
        if isfinite(cand_emis[c2]) and isfinite(H[c2 - base]):
            v = lmw * m.uni[y] + cand_emis[c2] + H[c2 - base]
            if isfinite(v):
                ranked.push_back(Ranked(-v, c2))
    sort(ranked.begin(), ranked.end())
    for c in range(a0, a1):
        x = cand_ids[c]
        best = -INFINITY
        for k in range(<long long>always.size()):
            c2 = always[k]
            if isfinite(cand_emis[c2]):
                v = lmw * mix_bound(m, x, cand_ids[c2]) + cand_emis[c2] + H[c2 - base]
                if v > best:
                    best = v
        for i in range(m.k):
            xi = m.map[i][x]
            if xi < 0 or m.t[i].order < 2:
                continue
            nsucc = m.next_off[i][xi + 1] - m.next_off[i][xi]
            if nsucc <= a2 - a1:
                for k in range(m.next_off[i][xi], m.next_off[i][xi + 1]):
                    u = m.inv[i][m.next_word[i][k]]
                    if u < 0 or stamp[u] != epoch:
                        continue
                    c2 = stamp_idx[u]
                    if not isfinite(cand_emis[c2]):
                        continue
                    v = lmw * mix_bound(m, x, u) + cand_emis[c2] + H[c2 - base]
                    if v > best:
                        best = v
            else:
                for c2 in range(a1, a2):
                    y = cand_ids[c2]
                    yi = m.map[i][y]
                    if yi < 0 or not isfinite(cand_emis[c2]) or ng_find(
                            m.t[i], 2, <unsigned long long>yi * <unsigned long long>m.t[i].vocab
                            + <unsigned long long>xi) < 0:
                        continue
                    v = lmw * mix_bound(m, x, y) + cand_emis[c2] + H[c2 - base]
                    if v > best:
                        best = v
        for k in range(<long long>ranked.size()):  # the best word that follows x nowhere
            c2 = ranked[k].second
            y = cand_ids[c2]
            if mix_follows(m, x, y):
                continue
            v = lmw * (m.maxb[x] + m.uni[y]) + cand_emis[c2] + H[c2 - base]
            if v > best:
                best = v
            break
        H[c - base] = best
    return True


cdef class MixCore:
    """The components of a mixture for the full DP: their NgramCores, the union -> component
    id maps, ln lambda_i (active components only). `walk` answers (context, word) rows as
    InterpolatedLM.log_prob / log_bound do (for tests and callers that check)."""

    cdef MixTables m
    cdef readonly list cores
    cdef readonly object arrays
    cdef readonly int order

    def __init__(self, list cores, list maps, list invs, double[::1] log_weights,
                 double[::1] uni, double[::1] maxb):
        cdef Py_ssize_t i, j
        cdef NgramCore core
        cdef long long V = uni.shape[0]
        cdef const long long[::1] mp
        cdef const long long[::1] iv
        if not 1 <= len(cores) <= MIX_MAX:
            raise ModelError(f"MixCore: 1 to {MIX_MAX} components, not {len(cores)}")
        if not (len(maps) == len(invs) == log_weights.shape[0] == len(cores)) \
                or maxb.shape[0] != V or V < 1:
            raise ModelError("MixCore: one map, inverse and weight per component, one "
                             "unigram and backoff bound per union word")
        self.cores = list(cores)
        self.arrays = (list(maps), list(invs), log_weights, uni, maxb)
        self.m.k = <int>len(cores)
        self.m.vocab = V
        self.order = 1
        for i in range(len(cores)):
            core = cores[i]
            mp = maps[i]
            iv = invs[i]
            if mp.shape[0] != V or iv.shape[0] != core.t.vocab:
                raise ModelError(f"MixCore: component {i}'s maps do not match the vocabularies")
            for j in range(V):
                if mp[j] < -1 or mp[j] >= core.t.vocab:
                    raise ModelError(f"MixCore: component {i}'s map names no word")
            for j in range(core.t.vocab):
                if iv[j] < -2 or iv[j] >= V:
                    raise ModelError(f"MixCore: component {i}'s inverse names no union word")
            if not isfinite(log_weights[i]):
                raise ModelError("MixCore: a component's ln weight is not finite")
            self.m.t[i] = &core.t
            self.m.map[i] = &mp[0]
            self.m.inv[i] = &iv[0]
            self.m.next_off[i] = core.next_off.data()
            self.m.next_word[i] = core.next_word.data()
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
