# A linear interpolation of several n-gram tables, as the full DP's transition source.
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
# The components' tables are read in place, in log10 (`L10Tables`, _log10.pxi).

from libc.math cimport log1p
from libcpp.algorithm cimport lower_bound


cdef enum:
    MIX_MAX = 16  # the most components a MixCore takes (a fixed array in MixTables)


cdef struct MixTables:
    int k                                 # active components (lambda > 0)
    long long vocab                       # the union vocabulary
    const L10Tables *t[MIX_MAX]
    const long long *map[MIX_MAX]         # union id -> component id, -1: unseen
    const long long *succ_off[MIX_MAX]    # component word x -> its bigram rows x.y are
    const long long *succ_row[MIX_MAX]    #   succ_row[succ_off[x]:succ_off[x + 1]]
    const long long *pred_off[MIX_MAX]    # component word y -> its bigram rows z.y (keys
                                          #   y * V + z, sorted): pred_off[y]..pred_off[y + 1]
    const int *first[MIX_MAX]             # bigram row -> its first word (key % V, no division)
    const int *succ_word[MIX_MAX]         # succ_row's last words (key // V), in its order
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
            term = m.lw[i] + l10_walk(m.t[i], ctx, w, yi, False)
        acc = term if first else mix_add(acc, term)
        first = False
    return acc


cdef inline double mix_walk_gid(const MixTables *m, const UsefulTables *u, long long gid,
                                long long word) noexcept nogil:
    """mix_walk after the union context `gid`, its words read from the keys (parent gid * V
    + last word), right to left. Why: a mixture's FullDP keeps no rows of its contexts
    (issue 34: 8 (n - 1) bytes each, 110 MB for `-mix-lm`); n - 1 divisions a walk are
    little beside the components' bisections."""
    cdef long long row[NG_MAX_ORDER]
    cdef int j = u.width - 1, k
    cdef unsigned long long key, q, V = <unsigned long long>m.vocab
    cdef long long g = gid
    for k in range(u.width):
        row[k] = -1
    while g != 0 and j >= 0:
        key = u.keys[g]
        q = key // V
        row[j] = <long long>(key - q * V)
        g = <long long>q
        j -= 1
    return mix_walk(m, row, u.width, word)


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
            term = m.lw[i] + l10_walk(m.t[i], &ctx, 1, yi, True)
        else:
            ctx = m.map[i][x]
            if ctx < 0:
                term = m.lw[i] + l10_walk(m.t[i], &ctx, 1, yi, False)
            else:
                term = m.lw[i] + l10_walk(m.t[i], &ctx, 1, yi, True)
        acc = term if first else mix_add(acc, term)
        first = False
    return acc


ctypedef pair[long long, long long] IdCand  # (component word id, candidate index)


cdef struct Follow:
    long long c      # candidate at the current position
    long long c2     # candidate at the next position
    long long comp   # the component listing the bigram
    long long row    # its bigram row (within order 2)


cdef void mix_followers(const MixTables *m, int i, long long a0, long long a1, long long a2,
                        const long long *cand_ids, long long *stamp, long long *stamp_idx,
                        long long epoch, vector[Follow] *out) noexcept nogil:
    """Every (x, y) of the two positions whose bigram x_i.y_i component i lists, with its row.

    Why not a probe per pair: on a large component most pairs are probed in vain (the probes
    were most of a mixture's time). A y with few predecessors (bigram keys are y * V + x,
    sorted, so its predecessors are one range, `pred_off`) reads them and looks each up
    among the current position's words (`stamp`, by component id, chained through
    `same` where several candidates share one); the rest, for each x, read x's successors
    when they are few, else probe. `stamp` and `stamp_idx` are the worker's (at least the
    component's vocabulary long); `epoch` is new for this call."""
    cdef const L10Tables *t = m.t[i]
    cdef long long V = t.vocab, W1 = a1 - a0
    cdef long long c, c2, k, j, r, xi, yi, nlong
    cdef vector[IdCand] cur, longy
    cdef vector[IdCand].iterator it
    cdef vector[long long] same
    cdef Follow f
    if t.order < 2 or t.rows[1] == 0:
        return
    same.assign(W1, -1)
    for c in range(a0, a1):
        xi = m.map[i][cand_ids[c]]
        if xi < 0:
            continue
        cur.push_back(IdCand(xi, c))
        if stamp[xi] == epoch:
            same[c - a0] = stamp_idx[xi]
        stamp[xi] = epoch
        stamp_idx[xi] = c
    if cur.size() == 0:
        return
    f.comp = i
    for c2 in range(a1, a2):
        yi = m.map[i][cand_ids[c2]]
        if yi < 0:
            continue
        if m.pred_off[i][yi + 1] - m.pred_off[i][yi] > 4 * W1:
            longy.push_back(IdCand(yi, c2))
            continue
        f.c2 = c2
        for r in range(m.pred_off[i][yi], m.pred_off[i][yi + 1]):
            xi = m.first[i][r]
            if stamp[xi] != epoch:
                continue
            f.row = r
            c = stamp_idx[xi]
            while c >= 0:
                f.c = c
                out.push_back(f)
                c = same[c - a0]
    nlong = <long long>longy.size()
    if nlong == 0:
        return
    sort(longy.begin(), longy.end())
    sort(cur.begin(), cur.end())
    j = 0
    while j < <long long>cur.size():  # each distinct x, against the y with many predecessors
        xi = cur[j].first
        k = j
        while k < <long long>cur.size() and cur[k].first == xi:
            k += 1
        if m.succ_off[i][xi + 1] - m.succ_off[i][xi] <= 4 * nlong:
            for r in range(m.succ_off[i][xi], m.succ_off[i][xi + 1]):
                yi = m.succ_word[i][r]
                it = lower_bound(longy.begin(), longy.end(), IdCand(yi, -1))
                while it != longy.end() and deref(it).first == yi:
                    f.c2 = deref(it).second
                    f.row = m.succ_row[i][r]
                    for c in range(j, k):
                        f.c = cur[c].second
                        out.push_back(f)
                    it += 1
        else:
            for c2 in range(nlong):
                r = l10_find(t, 2, longy[c2].first, xi)
                if r >= 0:
                    f.c2 = longy[c2].second
                    f.row = r
                    for c in range(j, k):
                        f.c = cur[c].second
                        out.push_back(f)
        j = k


cdef inline double mix_term(const MixTables *m, int i, long long x, long long y,
                            long long row) noexcept nogil:
    """Component i's bigram bound of y after x (ln, before its weight): the bigram's max over
    left extensions when it is listed (`row` >= 0), else its unigram plus x's max backoff;
    its exact unigram when it cannot see x, -inf when it cannot see y (as `mix_bound`)."""
    cdef long long xi = m.map[i][x], yi = m.map[i][y]
    cdef const L10Tables *t = m.t[i]
    cdef double c = t.ln10
    if yi < 0:
        return -INFINITY
    if xi < 0:
        return c * t.lp[0][yi]
    if t.order < 2:
        return c * l10_mf(t, 0, yi)
    if row >= 0:
        return c * l10_mf(t, 1, row)
    return (c * t.lp[0][yi] + c * t.lbow[0][xi]) + (c * l10_mbow(t, 0, xi)
                                                     - c * t.lbow[0][xi])


cdef bint mix_backward(const MixTables *m, double lmw, long long a0, long long a1, long long a2,
                       const long long *cand_ids, const double *cand_emis, double *H,
                       long long base, long long *stamp, long long *stamp_idx,
                       long long *epoch) noexcept nogil:
    """_DPCaches._backward_sparse for a mixture: H of candidates a0..a1-1 from the next
    position a1..a2-1, without the product of the two widths.

    Why it holds: a word y that follows x in no component (no bigram x_i.y_i in any table)
    matches only its unigram in each, so component i's bound is ln p_i(y) + x's max backoff
    in i (its exact unigram where i cannot see x), and the mixture's is at most
    maxb(x) + uni(y) (each backoff replaced by the largest). The best such y is the first
    non-follower in one sort of the next position by uni(y) + emission + H. The followers
    (`mix_followers`, per component) take the exact mixed bound (`mix_term`), the same value
    as `mix_bound` up to rounding, which the pruning margin covers. Always True."""
    cdef long long c, c2, x, y, k, W1 = a1 - a0, W2 = a2 - a1
    cdef int i
    cdef double best, v, acc
    cdef vector[Ranked] ranked
    cdef vector[Follow] fol
    cdef vector[long long] mark, off, order, touched
    cdef vector[double] T
    for c2 in range(a1, a2):
        if isfinite(cand_emis[c2]) and isfinite(H[c2 - base]):
            v = lmw * m.uni[cand_ids[c2]] + cand_emis[c2] + H[c2 - base]
            if isfinite(v):
                ranked.push_back(Ranked(-v, c2))
    sort(ranked.begin(), ranked.end())
    for i in range(m.k):
        if m.t[i].order >= 2:
            epoch[0] += 1
            mix_followers(m, i, a0, a1, a2, cand_ids, stamp, stamp_idx, epoch[0], &fol)
    off.assign(W1 + 1, 0)  # the followers grouped by x (a counting sort)
    for k in range(<long long>fol.size()):
        off[fol[k].c - a0 + 1] += 1
    for c in range(W1):
        off[c + 1] += off[c]
    order.assign(fol.size(), 0)
    touched.assign(W1, 0)  # a fill pointer per x
    for k in range(<long long>fol.size()):
        c = fol[k].c - a0
        order[off[c] + touched[c]] = k
        touched[c] += 1
    mark.assign(W2, -1)
    T.assign(W2 * m.k, 0.0)
    for c in range(a0, a1):
        x = cand_ids[c]
        best = -INFINITY
        touched.clear()
        for k in range(off[c - a0], off[c - a0 + 1]):  # x's followers: each component's term
            c2 = fol[order[k]].c2
            y = cand_ids[c2]
            if mark[c2 - a1] != c:
                mark[c2 - a1] = c
                touched.push_back(c2)
                for i in range(m.k):
                    T[(c2 - a1) * m.k + i] = mix_term(m, i, x, y, -1)
            i = <int>fol[order[k]].comp
            T[(c2 - a1) * m.k + i] = mix_term(m, i, x, y, fol[order[k]].row)
        for k in range(<long long>touched.size()):
            c2 = touched[k]
            if not isfinite(cand_emis[c2]):
                continue
            acc = m.lw[0] + T[(c2 - a1) * m.k]
            for i in range(1, m.k):
                acc = mix_add(acc, m.lw[i] + T[(c2 - a1) * m.k + i])
            v = lmw * acc + cand_emis[c2] + H[c2 - base]
            if v > best:
                best = v
        for k in range(<long long>ranked.size()):  # the best word that follows x nowhere
            c2 = ranked[k].second
            if mark[c2 - a1] == c:
                continue
            v = lmw * (m.maxb[x] + m.uni[cand_ids[c2]]) + cand_emis[c2] + H[c2 - base]
            if v > best:
                best = v
            break
        H[c - base] = best
    return True
