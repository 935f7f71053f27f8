# Exact forward-backward and K-best over one sentence's recorded layered graph.
#
# The full-model DP (_core.pyx) can record the graph it builds; these kernels then answer, from
# that graph alone, ln Z with each candidate's exact posterior (log semiring), and the K best
# paths (Huang & Chiang 2005, "Better k-best parsing", lazy Algorithm 3). Both run in
# O(E + V) plus, for K-best, O(K log) heap steps per state a top-K path actually needs, so they
# can be called on graphs of a million edges. Natural log, float64.
#
# The graph (all arrays contiguous, states numbered layer by layer):
#   layer_off (L+2): layer j's states are [layer_off[j], layer_off[j+1]); layer 0 = {0}, the start
#   edge_off (L+1): edges layer j -> j+1 (reading position j) are [edge_off[j], edge_off[j+1])
#   src, dst, cand (int32), w (float64, finite): per edge; (src, cand) unique (deterministic)
#   final_w (float64): per state of layer L, the ln weight of ending there (-inf: cannot end)
#   pos_off (int64, L+1): position j's candidates are [pos_off[j], pos_off[j+1])
# A path's score is the sum of its edge weights then its final weight, added left to right.
#
# Ties (equal float64 scores) are broken lexicographically by the candidate sequence, position 0
# first, as arsdecode's other K-best methods do (arsdecode/methods/kbest.py, full.py). Every
# state keeps its derivations sorted by (score desc, prefix lexicographic); comparing two
# prefixes walks back along both derivations until they share one (only on exact score ties).
# One caveat: two prefixes with different scores at a state can round to equal scores after
# the same edge weight is added; they then keep their order by the earlier, larger score.
#
# The kernels keep no state between calls (scratch is local std::vector), so threads may call
# them at once; they do not check their inputs (the def wrappers at the end do).


cdef struct KbDeriv:
    double score
    long long edge  # < E: a graph edge; >= E: the final edge of state F + (edge - E); -1: start
    long long rank  # the rank of the derivation taken at the edge's source state


cdef struct KbGraph:
    long long E        # graph edges; the sink's in-edges are E .. E + n_final - 1
    long long F        # first state of layer L
    const int *src
    const int *cand
    const double *w
    const double *final_w
    const double *best         # per state (sink = V last): the 1-best score (rank 0)
    const long long *best_edge  # its in-edge (-1: the start state, or unreachable)
    vector[vector[KbDeriv]] *more  # per state: ranks 1, 2, ... found so far


cdef inline long long kb_src(const KbGraph *g, long long e) noexcept nogil:
    return g.src[e] if e < g.E else g.F + (e - g.E)


cdef inline double kb_w(const KbGraph *g, long long e) noexcept nogil:
    return g.w[e] if e < g.E else g.final_w[e - g.E]


cdef inline long long kb_have(const KbGraph *g, long long v) noexcept nogil:
    """How many derivations of v are known (rank 0 is the Viterbi pass's)."""
    return (1 if g.best[v] > -INFINITY else 0) + <long long>deref(g.more)[v].size()


cdef inline KbDeriv kb_get(const KbGraph *g, long long v, long long r) noexcept nogil:
    cdef KbDeriv d
    if r == 0:
        d.score = g.best[v]
        d.edge = g.best_edge[v]
        d.rank = 0
        return d
    return deref(g.more)[v][r - 1]


cdef int kb_lex(const KbGraph *g, long long ea, long long ra, long long eb,
                long long rb) noexcept nogil:
    """-1 / 0 / 1: the candidate sequence of derivation (edge ea, source rank ra) against
    (eb, rb), both ending at one state, compared position 0 first. Walks back along both until
    they reach one shared derivation (the start state at the latest); the earliest difference
    seen on the way decides."""
    cdef int diff = 0
    cdef long long ua, ub
    cdef KbDeriv da, db
    while not (ea == eb and ra == rb):
        if ea < g.E and g.cand[ea] != g.cand[eb]:
            diff = -1 if g.cand[ea] < g.cand[eb] else 1
        ua = kb_src(g, ea)
        ub = kb_src(g, eb)
        if ua == 0:
            break
        da = kb_get(g, ua, ra)
        db = kb_get(g, ub, rb)
        ea = da.edge
        ra = da.rank
        eb = db.edge
        rb = db.rank
    return diff


cdef inline bint kb_before(const KbGraph *g, const KbDeriv &a, const KbDeriv &b) noexcept nogil:
    """a ranks before b: a higher score, or the same score and a lexicographically smaller
    candidate sequence."""
    if a.score != b.score:
        return a.score > b.score
    return kb_lex(g, a.edge, a.rank, b.edge, b.rank) < 0


cdef void kb_sift_down(const KbGraph *g, vector[KbDeriv] &h, size_t i) noexcept nogil:
    cdef size_t n = h.size(), c
    cdef KbDeriv x = h[i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and kb_before(g, h[c + 1], h[c]):
            c += 1
        if not kb_before(g, h[c], x):
            break
        h[i] = h[c]
        i = c
    h[i] = x


cdef void kb_push(const KbGraph *g, vector[KbDeriv] &h, KbDeriv x) noexcept nogil:
    cdef size_t i = h.size(), p
    h.push_back(x)
    while i > 0:
        p = (i - 1) // 2
        if not kb_before(g, x, h[p]):
            break
        h[i] = h[p]
        i = p
    h[i] = x


cdef KbDeriv kb_pop(const KbGraph *g, vector[KbDeriv] &h) noexcept nogil:
    cdef KbDeriv top = h[0]
    h[0] = h.back()
    h.pop_back()
    if h.size():
        kb_sift_down(g, h, 0)
    return top


cdef double graph_lse_layer(long long lo, long long hi, const int *frm, const int *to,
                            const double *w, double *val, long long out_lo, long long out_hi,
                            double *mx, double *acc) noexcept nogil:
    """val[to[e]] = log-sum-exp over edges e in [lo, hi) of val[frm[e]] + w[e], for the states
    [out_lo, out_hi) (-inf without a finite term), then shifted so the layer's largest is 0;
    returns that shift (-inf: the whole layer is -inf, nothing shifted). Two passes: the
    maximum per state, then the sum of exp(term - maximum), so no term overflows."""
    cdef long long e, v
    cdef double x, top = -INFINITY
    for v in range(out_lo, out_hi):
        mx[v] = -INFINITY
        acc[v] = 0.0
    for e in range(lo, hi):
        x = val[frm[e]] + w[e]
        if x > mx[to[e]]:
            mx[to[e]] = x
    for e in range(lo, hi):
        x = val[frm[e]] + w[e]
        if x > -INFINITY:
            acc[to[e]] += exp(x - mx[to[e]])
    for v in range(out_lo, out_hi):
        val[v] = mx[v] + log(acc[v]) if mx[v] > -INFINITY else -INFINITY
        if val[v] > top:
            top = val[v]
    if top > -INFINITY:
        for v in range(out_lo, out_hi):
            val[v] -= top
    return top


cdef double graph_posteriors(long long L, const long long *layer_off, const long long *edge_off,
                             const int *src, const int *dst, const int *cand, const double *w,
                             const double *final_w, const long long *pos_off,
                             double *post) noexcept nogil:
    """ln Z, the log-sum-exp of every path's score (-inf: no path), and into `post` (zeroed by
    the caller, pos_off[L] long) each candidate's posterior: the sum over the paths choosing it
    of exp(score - ln Z).

    Forward (alpha) and backward (beta) passes in the log semiring, each layer shifted so its
    largest value is 0 (ln Z is the sum of the forward shifts): the values stay the size of
    one position's weights however long the sentence, so rounding does not grow with |ln Z|.
    An edge's posterior is exp(alpha[src] + w + beta[dst]) up to a factor common to its layer;
    the edges of a layer partition the paths, so that factor is their sum (max-shifted)."""
    cdef long long V = layer_off[L + 1], F = layer_off[L], j, e, v
    cdef double ln_z = 0.0, x, top, total
    cdef vector[double] alpha, beta, mx, acc
    alpha.assign(V, -INFINITY)
    beta.assign(V, -INFINITY)
    mx.assign(V, -INFINITY)
    acc.assign(V, 0.0)
    alpha[0] = 0.0
    for j in range(L):
        top = graph_lse_layer(edge_off[j], edge_off[j + 1], src, dst, w, alpha.data(),
                              layer_off[j + 1], layer_off[j + 2], mx.data(), acc.data())
        if not top > -INFINITY:
            return -INFINITY
        ln_z += top
    top = -INFINITY
    for v in range(F, V):
        beta[v] = final_w[v - F]
        if alpha[v] + beta[v] > top:
            top = alpha[v] + beta[v]
    if not top > -INFINITY:
        return -INFINITY
    total = 0.0
    for v in range(F, V):
        if alpha[v] + beta[v] > -INFINITY:
            total += exp(alpha[v] + beta[v] - top)
    ln_z += top + log(total)
    top = -INFINITY
    for v in range(F, V):
        if beta[v] > top:
            top = beta[v]
    for v in range(F, V):
        beta[v] -= top
    for j in range(L - 1, -1, -1):
        graph_lse_layer(edge_off[j], edge_off[j + 1], dst, src, w, beta.data(),
                        layer_off[j], layer_off[j + 1], mx.data(), acc.data())
    for j in range(L):
        top = -INFINITY
        for e in range(edge_off[j], edge_off[j + 1]):
            x = alpha[src[e]] + w[e] + beta[dst[e]]
            if x > top:
                top = x
        total = 0.0
        for e in range(edge_off[j], edge_off[j + 1]):
            x = alpha[src[e]] + w[e] + beta[dst[e]]
            if x > -INFINITY:
                total += exp(x - top)
        for e in range(edge_off[j], edge_off[j + 1]):
            x = alpha[src[e]] + w[e] + beta[dst[e]]
            if x > -INFINITY:
                post[pos_off[j] + cand[e]] += exp(x - top) / total
    return ln_z


cdef long long graph_kbest(long long L, const long long *layer_off, const long long *edge_off,
                           const int *src, const int *dst, const int *cand, const double *w,
                           const double *final_w, const long long *pos_off, long long k,
                           double *scores, int *choices) noexcept nogil:
    """The k best paths with a finite score, best first (ties: see the top of this file):
    returns their number k' <= k, writes scores[r] and choices[r * L + j] (the candidate index
    at position j) for r < k'.

    Lazy K-best (Huang & Chiang's Algorithm 3) on the graph plus a sink whose in-edges are the
    final weights: a Viterbi pass gives every state's best derivation; the r-th best of a state
    is then popped from a heap over its in-edges (edge, rank at the source), asked for only when
    a better-ranked derivation further right needs it. An explicit stack of (state, rank wanted)
    replaces the recursion, so long sentences cannot overflow the C stack."""
    cdef long long V = layer_off[L + 1], F = layer_off[L], E = edge_off[L]
    cdef long long n_final = V - F, sink = V, e, v, u, t, have, j, r, i
    cdef double x
    cdef KbGraph g
    cdef KbDeriv last, d
    cdef vector[double] best
    cdef vector[long long] best_edge, in_off, in_edge
    cdef vector[vector[KbDeriv]] more, heaps
    cdef vector[char] status  # 0: heap not built, 1: heap built, 2: exhausted
    cdef vector[pair[i64, i64]] stack
    if k <= 0:
        return 0
    best.assign(V + 1, -INFINITY)
    best_edge.assign(V + 1, -1)
    more.resize(V + 1)
    heaps.resize(V + 1)
    status.assign(V + 1, 0)
    g.E = E
    g.F = F
    g.src = src
    g.cand = cand
    g.w = w
    g.final_w = final_w
    g.best = best.data()
    g.best_edge = best_edge.data()
    g.more = &more
    # Viterbi, rank 0 of every state: the edges are grouped by layer, so one pass in edge order
    # sees each source's best before it is used.
    best[0] = 0.0
    status[0] = 2
    for e in range(E + n_final):
        u = kb_src(&g, e)
        v = dst[e] if e < E else sink
        x = best[u] + kb_w(&g, e)
        if x > best[v] or (x == best[v] and x > -INFINITY
                           and kb_lex(&g, e, 0, best_edge[v], 0) < 0):
            best[v] = x
            best_edge[v] = e
    if not best[sink] > -INFINITY:
        return 0
    # In-edges per state (a counting sort by destination), for the heaps.
    in_off.assign(V + 2, 0)
    in_edge.resize(E + n_final)
    for e in range(E):
        in_off[dst[e] + 1] += 1
    in_off[sink + 1] = n_final
    for v in range(V + 1):
        in_off[v + 1] += in_off[v]
    for e in range(E):
        in_edge[in_off[dst[e]]] = e
        in_off[dst[e]] += 1
    for e in range(E, E + n_final):
        in_edge[in_off[sink]] = e
        in_off[sink] += 1
    for v in range(V, 0, -1):  # the fill advanced each start to the next one's
        in_off[v] = in_off[v - 1]
    in_off[0] = 0
    stack.push_back(pair[i64, i64](sink, k - 1))
    while stack.size():
        v = stack.back().first
        t = stack.back().second
        have = kb_have(&g, v)
        if have > t or status[v] == 2:
            stack.pop_back()
            continue
        last = kb_get(&g, v, have - 1)
        u = kb_src(&g, last.edge)
        if kb_have(&g, u) <= last.rank + 1 and status[u] != 2:
            stack.push_back(pair[i64, i64](u, last.rank + 1))  # its successor first
            continue
        if status[v] == 0:  # every in-edge at rank 0 but the best one, already taken
            for i in range(in_off[v], in_off[v + 1]):
                e = in_edge[i]
                u = kb_src(&g, e)
                if e == best_edge[v] or not best[u] > -INFINITY:
                    continue
                d.score = best[u] + kb_w(&g, e)
                d.edge = e
                d.rank = 0
                if d.score > -INFINITY:
                    heaps[v].push_back(d)
            for i in range(<long long>heaps[v].size() // 2 - 1, -1, -1):
                kb_sift_down(&g, heaps[v], <size_t>i)
            status[v] = 1
            u = kb_src(&g, last.edge)
        if kb_have(&g, u) > last.rank + 1:  # the last one's successor: next rank at its source
            d.score = kb_get(&g, u, last.rank + 1).score + kb_w(&g, last.edge)
            d.edge = last.edge
            d.rank = last.rank + 1
            kb_push(&g, heaps[v], d)
        if heaps[v].empty():
            status[v] = 2
            continue
        more[v].push_back(kb_pop(&g, heaps[v]))
    have = kb_have(&g, sink)
    if have > k:
        have = k
    for r in range(have):
        d = kb_get(&g, sink, r)
        scores[r] = d.score
        v = kb_src(&g, d.edge)
        for j in range(L - 1, -1, -1):
            d = kb_get(&g, v, d.rank)
            choices[r * L + j] = cand[d.edge]
            v = src[d.edge]
    return have


cdef _graph_array(str name, object a, object dtype):
    """`a` as a contiguous 1-d array of `dtype`, refusing what would be silently cast (floats
    as ids, ids as weights)."""
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise LatticeError(f"layered graph: {name} must be one-dimensional, got shape {arr.shape}")
    kind = np.dtype(dtype).kind
    if arr.size and not (arr.dtype.kind == kind or (kind == "f" and arr.dtype.kind in "iu")
                         or (kind == "i" and arr.dtype.kind == "u")):
        raise LatticeError(f"layered graph: {name} must be {np.dtype(dtype).name}, "
                           f"got {arr.dtype}")
    if kind == "i" and arr.size and (arr.min() < np.iinfo(dtype).min
                                     or arr.max() > np.iinfo(dtype).max):
        raise LatticeError(f"layered graph: {name} holds values outside {np.dtype(dtype).name}")
    return np.ascontiguousarray(arr, dtype=dtype)


cdef tuple _graph_checked(layer_off, edge_off, src, dst, cand, w, final_w, pos_off):
    """The graph arrays, converted and checked so the nogil kernels may index without bounds
    checks (LatticeError otherwise): offsets start right, never decrease and match the array
    lengths; each edge goes from its layer to the next, reads a candidate of its position, and
    no (src, cand) repeats; edge weights are finite, final weights finite or -inf."""
    lo = _graph_array("layer_off", layer_off, np.int64)
    eo = _graph_array("edge_off", edge_off, np.int64)
    s = _graph_array("src", src, np.int32)
    d = _graph_array("dst", dst, np.int32)
    c = _graph_array("cand", cand, np.int32)
    wt = _graph_array("w", w, np.float64)
    fw = _graph_array("final_w", final_w, np.float64)
    po = _graph_array("pos_off", pos_off, np.int64)
    L = eo.shape[0] - 1
    if L < 1:
        raise LatticeError("layered graph: needs at least one position (edge_off of L+1 >= 2)")
    if lo.shape[0] != L + 2 or po.shape[0] != L + 1:
        raise LatticeError(f"layered graph: {L} positions need layer_off of {L + 2} and "
                           f"pos_off of {L + 1} entries, got {lo.shape[0]} and {po.shape[0]}")
    if lo[0] != 0 or lo[1] != 1:
        raise LatticeError("layered graph: layer 0 must hold the start state alone "
                           "(layer_off must begin 0, 1)")
    if eo[0] != 0 or po[0] != 0:
        raise LatticeError("layered graph: edge_off and pos_off must start at 0")
    for name, off in (("layer_off", lo), ("edge_off", eo), ("pos_off", po)):
        bad = np.flatnonzero(np.diff(off) < 0)
        if bad.size:
            raise LatticeError(f"layered graph: {name} decreases after entry {bad[0]}")
    E = eo[L]
    if not s.shape[0] == d.shape[0] == c.shape[0] == wt.shape[0] == E:
        raise LatticeError(f"layered graph: edge_off ends at {E} edges but src, dst, cand, w "
                           f"have {s.shape[0]}, {d.shape[0]}, {c.shape[0]}, {wt.shape[0]}")
    if fw.shape[0] != lo[L + 1] - lo[L]:
        raise LatticeError(f"layered graph: final_w has {fw.shape[0]} entries for the "
                           f"{lo[L + 1] - lo[L]} states of the last layer")
    layer = np.repeat(np.arange(L, dtype=np.int64), np.diff(eo))  # each edge's position
    s64 = s.astype(np.int64)
    c64 = c.astype(np.int64)
    checks = (
        ((s64 < lo[layer]) | (s64 >= lo[layer + 1]), "src outside its layer"),
        ((d < lo[layer + 1]) | (d >= lo[layer + 2]), "dst outside the next layer"),
        ((c64 < 0) | (c64 >= po[layer + 1] - po[layer]), "cand outside its position's width"),
        (~np.isfinite(wt), "weight w not finite"),
    )
    for bad, what in checks:
        where = np.flatnonzero(bad)
        if where.size:
            e = int(where[0])
            raise LatticeError(f"layered graph: edge {e} (position {int(layer[e])}): {what}")
    key = s64 * (int(c64.max()) + 1 if E else 1) + c64
    uniq, first = np.unique(key, return_index=True)
    if uniq.shape[0] != E:
        dup = int(np.setdiff1d(np.arange(E), first)[0])
        raise LatticeError(f"layered graph: edge {dup} repeats (src {int(s[dup])}, cand "
                           f"{int(c[dup])}): the graph must be deterministic")
    bad = np.flatnonzero(np.isnan(fw) | (fw == np.inf))
    if bad.size:
        raise LatticeError(f"layered graph: final_w[{int(bad[0])}] is {fw[bad[0]]} "
                           f"(finite or -inf only)")
    return L, lo, eo, s, d, c, wt, fw, po


def layered_posteriors(layer_off, edge_off, src, dst, cand, w, final_w, pos_off):
    """(ln_z, post): ln Z of a recorded layered graph (-inf: no path) and every candidate's
    exact posterior, float64 (pos_off[L],), zeros when there is no path. See _graph.pxi for the
    format; the arrays are checked first (LatticeError)."""
    cdef long long L
    cdef const long long[::1] lo, eo, po
    cdef const int[::1] s, d, c
    cdef const double[::1] wt, fw
    L, lo, eo, s, d, c, wt, fw, po = _graph_checked(layer_off, edge_off, src, dst, cand, w,
                                                    final_w, pos_off)
    post_arr = np.zeros(po[L], dtype=np.float64)
    cdef double[::1] post = post_arr
    cdef double ln_z
    cdef double dummy = 0.0
    with nogil:
        ln_z = graph_posteriors(L, &lo[0], &eo[0], &s[0] if s.shape[0] else NULL,
                                &d[0] if d.shape[0] else NULL, &c[0] if c.shape[0] else NULL,
                                &wt[0] if wt.shape[0] else NULL,
                                &fw[0] if fw.shape[0] else NULL, &po[0],
                                &post[0] if post.shape[0] else &dummy)
    return ln_z, post_arr


def layered_kbest(layer_off, edge_off, src, dst, cand, w, final_w, pos_off, long long k):
    """(scores (k',) float64, choices (k', L) int32): the k' = min(k, paths with a finite score)
    best paths of a recorded layered graph, best first, ties lexicographic by candidate
    sequence. See _graph.pxi for the format; the arrays are checked first (LatticeError)."""
    cdef long long L, E, got, cap, j
    cdef const long long[::1] lo, eo, po
    cdef const int[::1] s, d, c
    cdef const double[::1] wt, fw
    if k < 1:
        raise OptionError(f"layered_kbest: k must be at least 1, not {k}")
    L, lo, eo, s, d, c, wt, fw, po = _graph_checked(layer_off, edge_off, src, dst, cand, w,
                                                    final_w, pos_off)
    E = eo[L]
    if k > (2 ** 62) // (E + fw.shape[0] + L + 1):
        raise OptionError(f"layered_kbest: k = {k} is too large for this graph")
    # Allocate for at most the number of paths (float64 path counts; inf is fine here).
    src_a = np.asarray(s)
    dst_a = np.asarray(d)
    count = np.zeros(lo[L + 1], dtype=np.float64)
    count[0] = 1.0
    with np.errstate(over="ignore"):
        for j in range(L):
            np.add.at(count, dst_a[eo[j]:eo[j + 1]], count[src_a[eo[j]:eo[j + 1]]])
    n_paths = float(count[lo[L]:][np.asarray(fw) > -np.inf].sum())
    cap = int(min(float(k), n_paths))
    scores_arr = np.empty(cap, dtype=np.float64)
    choices_arr = np.empty((cap, L), dtype=np.int32)
    if cap == 0:
        return scores_arr, choices_arr
    cdef double[::1] sc = scores_arr
    cdef int[:, ::1] ch = choices_arr
    with nogil:
        got = graph_kbest(L, &lo[0], &eo[0], &s[0], &d[0], &c[0], &wt[0], &fw[0], &po[0], cap,
                          &sc[0], &ch[0, 0])
    return scores_arr[:got], choices_arr[:got]
