# Lazy K-best over one sentence's recorded layered graph (Huang & Chiang 2005, "Better k-best
# parsing", Algorithm 3): the graph's format, and its checks, are at the top of _graph.pxi.
#
# Why a part of its own: the derivation heap and its tie order are K-best's alone; the
# forward-backward beside the format does not use them.
#
# Ties (equal float64 scores) are broken lexicographically by the candidate sequence, position 0
# first, as arsdecode's other K-best methods do (arsdecode/methods/kbest.py, full.py). Every
# state keeps its derivations sorted by (score desc, prefix lexicographic); comparing two
# prefixes walks back along both derivations until they share one (only on exact score ties).
# One caveat: two prefixes with different scores at a state can round to equal scores after
# the same edge weight is added; they then keep their order by the earlier, larger score.
#
# Like the forward-backward, the kernel keeps no state between calls and checks nothing.


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
