# Exact forward-backward over one sentence's recorded layered graph, and the checked wrappers.
#
# The full-model DP (_dpsweep.pxi) can record the graph it builds; these kernels then answer, from
# that graph alone, ln Z with each candidate's exact posterior (log semiring), and (_kbest.pxi)
# the K best paths. Both run in O(E + V) plus, for K-best, O(K log) heap steps per state a
# top-K path actually needs, so they can be called on graphs of a million edges. Natural log,
# float64.
#
# The graph (all arrays contiguous, states numbered layer by layer):
#   layer_off (L+2): layer j's states are [layer_off[j], layer_off[j+1]); layer 0 = {0}, the start
#   edge_off (L+1): edges layer j -> j+1 (reading position j) are [edge_off[j], edge_off[j+1])
#   src, dst, cand (int32), w (float64, finite): per edge; (src, cand) unique (deterministic)
#   final_w (float64): per state of layer L, the ln weight of ending there (-inf: cannot end)
#   pos_off (int64, L+1): position j's candidates are [pos_off[j], pos_off[j+1])
# A path's score is the sum of its edge weights then its final weight, added left to right.
#
# The kernels keep no state between calls (scratch is local std::vector), so threads may call
# them at once; they do not check their inputs (the def wrappers at the end of this file do,
# for both kernels: one check of the graph for posteriors and k-best alike).


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
    cdef vector[double] alpha, beta, mx, acc, ex
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
    for j in range(L):  # each edge's term once, kept (ex) for the sum and the division
        ex.resize(edge_off[j + 1] - edge_off[j])
        top = -INFINITY
        for e in range(edge_off[j], edge_off[j + 1]):
            x = alpha[src[e]] + w[e] + beta[dst[e]]
            ex[e - edge_off[j]] = x
            if x > top:
                top = x
        total = 0.0
        for e in range(edge_off[j + 1] - edge_off[j]):
            x = ex[e]
            ex[e] = exp(x - top) if x > -INFINITY else 0.0
            total += ex[e]
        if not total > 0.0:
            continue
        for e in range(edge_off[j], edge_off[j + 1]):  # an edge of term 0 adds 0.0: no change
            post[pos_off[j] + cand[e]] += ex[e - edge_off[j]] / total
    return ln_z


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
