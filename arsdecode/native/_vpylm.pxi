# A variable-order Pitman-Yor LM (arsdecode.model.vpylm) as the full DP's transition source.
#
# Why a part of its own: a VPYLM's factor p(w | h) depends on h only through the path of its
# context tree that h walks (u_0 .. u_D), so its useful contexts are a fixed finite set (the
# prefixes of the node contexts, VpylmLM.minimal_context), like an ARPA table's, and the DP's
# sweeps, caches and pruning are FullDP's. Only the places that read the model (the transition
# and the bigram bound) ask this part when a FullDP has a VpCore; the sparse bound pass is
# skipped (`_backward_plain` runs, every pair through `vp_bound`). Every value is computed in
# VpylmLM's float64 operations in VpylmLM's order (prob, node_p, bound), so the factors are
# its values bit for bit, which the tests check, and against brute force.


cdef struct VpHash:
    # open addressing (Fibonacci hashing, linear probing) over keys node * V + word, the
    # layout of `build_hash`: slots[pos] is an index into the entry arrays, or -1
    const unsigned long long *keys
    const int *slots
    long long nslots
    int bits


cdef inline long long vp_find(const VpHash *h, unsigned long long key) noexcept nogil:
    cdef unsigned long long mask = <unsigned long long>(h.nslots - 1)
    cdef unsigned long long pos = (key * ARS_MIX) >> (64 - h.bits)
    cdef int idx
    while True:
        idx = h.slots[pos]
        if idx < 0:
            return -1
        if h.keys[idx] == key:
            return idx
        pos = (pos + 1) & mask


cdef struct VpTables:
    long long vocab
    long long n_nodes
    int max_depth
    long long bos
    double base              # 1 / (V - 1), the uniform base below the root
    VpHash child             # (node, word) -> child node: child_node[idx]
    const long long *child_node
    VpHash rest              # (node, word) -> restaurant entry: its c_uw, t_uw
    const double *cw
    const double *tw
    VpHash tail              # (node of depth <= 1, word) -> M_v(w) (VpylmLM.tail_max)
    const double *tail_val
    const unsigned char *has_child  # node -> whether it has a child (tail_max()[v] not None)
    const double *q          # node -> q_v, the stop probability's posterior mean
    const double *c          # node -> c_u (customers), t_u (tables), as float64
    const double *t
    const double *d          # node -> the discount and strength of its depth
    const double *th
    # the sparse bound pass (vp_backward), per word x: its child of the root (-1: none),
    # ln K (below), and the words whose bound after x is not K * P_root (ex_off/ex_word, CSR);
    # per word y: ln P_root(y)
    const long long *child0
    const double *lnk
    const long long *ex_off
    const long long *ex_word
    const double *lp0


cdef inline double vp_node_p(const VpTables *m, long long v, long long w,
                             double lower) noexcept nogil:
    """P_v(w) given P_parent(w) = `lower` (VpylmLM.node_p, the same operations)."""
    cdef long long r
    cdef double cwv = 0.0, twv = 0.0
    if m.c[v] == 0:
        return lower
    r = vp_find(&m.rest, <unsigned long long>v * <unsigned long long>m.vocab
                + <unsigned long long>w)
    if r >= 0:
        cwv = m.cw[r]
        twv = m.tw[r]
    return (cwv - m.d[v] * twv + (m.th[v] + m.d[v] * m.t[v]) * lower) / (m.th[v] + m.c[v])


cdef inline double vp_prob(const VpTables *m, const long long *nodes, int D,
                           long long w, double *s_out, double *reach_out) noexcept nogil:
    """P_{u_D}(w) along the path nodes[0..D]; sets (S_D, R_D) as VpylmLM._prefix does."""
    cdef double s = 0.0, reach = 1.0, p = m.base
    cdef int j
    if w == m.bos:  # never predicted: P = 0 at every node, so p and the bound are 0
        s_out[0] = 0.0
        reach_out[0] = 1.0
        return 0.0
    for j in range(D + 1):
        p = vp_node_p(m, nodes[j], w, p)
        if j < D:
            s += reach * m.q[nodes[j]] * p
            reach *= 1.0 - m.q[nodes[j]]
    s_out[0] = s
    reach_out[0] = reach
    return p


cdef double vp_walk(const VpTables *m, const long long *row, int width,
                           long long word) noexcept nogil:
    """ln p(word | row) (VpylmLM.log_prob); `row` holds `width` ids, left-padded with -1."""
    cdef long long nodes[NG_MAX_ORDER + 1]
    cdef long long v = 0, u, ch
    cdef int D = 0, j, lo
    cdef double s, reach, p
    nodes[0] = 0
    lo = width - m.max_depth if width > m.max_depth else 0
    for j in range(width - 1, lo - 1, -1):
        u = row[j]
        if u < 0:
            break
        ch = vp_find(&m.child, <unsigned long long>v * <unsigned long long>m.vocab
                     + <unsigned long long>u)
        if ch < 0:
            break
        v = m.child_node[ch]
        D += 1
        nodes[D] = v
    p = vp_prob(m, nodes, D, word, &s, &reach)
    p = s + reach * p
    return log(p) if p > 0 else -INFINITY


cdef double vp_bound(const VpTables *m, long long x, long long y) noexcept nogil:
    """ln of VpylmLM.bound([x], y) (x = -1: bound((), y)): the max of p(y | z x) over every
    left extension z, the same operations."""
    cdef long long nodes[2]
    cdef long long ch, r, v
    cdef int D = 0, k = 0
    cdef double s, reach, p, tail
    nodes[0] = 0
    if x >= 0 and m.max_depth >= 1:
        k = 1
        ch = vp_find(&m.child, <unsigned long long>x + 0ULL)  # node 0: key 0 * V + x
        if ch >= 0:
            nodes[1] = m.child_node[ch]
            D = 1
    p = vp_prob(m, nodes, D, y, &s, &reach)
    v = nodes[D]
    if D < k:
        p = s + reach * p
    else:
        tail = p
        if m.has_child[v]:
            r = vp_find(&m.tail, <unsigned long long>v * <unsigned long long>m.vocab
                        + <unsigned long long>y)
            if r >= 0:
                tail = m.tail_val[r]
        p = s + reach * tail
    return log(p) if p > 0 else -INFINITY


cdef inline bint vp_exception(const VpTables *m, long long node, long long y) noexcept nogil:
    """Whether y stands in node's restaurant or below it (its tail maximum is stored)."""
    cdef unsigned long long key = <unsigned long long>node * <unsigned long long>m.vocab \
        + <unsigned long long>y
    return vp_find(&m.rest, key) >= 0 or vp_find(&m.tail, key) >= 0


cdef bint vp_backward(const VpTables *m, double lmw, long long a0, long long a1, long long a2,
                      const long long *cand_ids, const double *cand_emis, double *H,
                      long long base, long long *stamp, long long *stamp_idx,
                      long long *epoch) noexcept nogil:
    """_DPCaches._backward_sparse for a VPYLM: H of candidates a0..a1-1 from the next
    position a1..a2-1, without the product of the two widths.

    Why it holds: the bound of y after x (`vp_bound`) is ln P_root(y) when x has no child of
    the root (the walk stops there, exactly), else q_0 P_root(y) + (1 - q_0) M_c(y) with c =
    child(x); for a word y in neither c's restaurant nor below c, M_c(y) = P_c(y) = beta_c
    P_root(y), so the bound is K(x) P_root(y), K = q_0 + (1 - q_0) beta_c (`lnk`, ln K
    rounded up by 1e-13, more than the few ulps by which the two products may differ). The
    best such y is the first word of one sort of the next position by ln P_root(y) + emission
    + H that is not one of x's exceptions (`ex_word`); the exceptions take `vp_bound`.
    Always True."""
    cdef long long c, c2, x, y, k, node, W2 = a2 - a1
    cdef double best, v
    cdef vector[Ranked] ranked
    cdef vector[long long] same
    epoch[0] += 1
    same.assign(W2, -1)
    for c2 in range(a1, a2):
        y = cand_ids[c2]
        if stamp[y] == epoch[0]:
            same[c2 - a1] = stamp_idx[y]
        stamp[y] = epoch[0]
        stamp_idx[y] = c2
        if isfinite(cand_emis[c2]) and isfinite(H[c2 - base]):
            v = lmw * m.lp0[y] + cand_emis[c2] + H[c2 - base]
            if isfinite(v):
                ranked.push_back(Ranked(-v, c2))
    sort(ranked.begin(), ranked.end())
    for c in range(a0, a1):
        x = cand_ids[c]
        best = -INFINITY
        node = m.child0[x]
        if node < 0:  # exactly ln P_root(y): the first ranked
            if ranked.size():
                best = -ranked[0].first
            H[c - base] = best
            continue
        if m.ex_off[x + 1] - m.ex_off[x] <= W2:  # x's exceptions at the next position
            for k in range(m.ex_off[x], m.ex_off[x + 1]):
                y = m.ex_word[k]
                if stamp[y] != epoch[0]:
                    continue
                c2 = stamp_idx[y]
                while c2 >= 0:
                    if isfinite(cand_emis[c2]):
                        v = lmw * vp_bound(m, x, y) + cand_emis[c2] + H[c2 - base]
                        if v > best:
                            best = v
                    c2 = same[c2 - a1]
        else:  # the next position's words that are x's exceptions
            for c2 in range(a1, a2):
                y = cand_ids[c2]
                if not isfinite(cand_emis[c2]) or not vp_exception(m, node, y):
                    continue
                v = lmw * vp_bound(m, x, y) + cand_emis[c2] + H[c2 - base]
                if v > best:
                    best = v
        for k in range(<long long>ranked.size()):  # the best word that is no exception
            c2 = ranked[k].second
            y = cand_ids[c2]
            if vp_exception(m, node, y):
                continue
            v = lmw * (m.lnk[x] + m.lp0[y]) + cand_emis[c2] + H[c2 - base]
            if v > best:
                best = v
            break
        H[c - base] = best
    return True


cdef _vp_check_hash(const unsigned long long[::1] keys, const int[::1] slots, int bits,
                    long long vocab, long long n):
    """ModelError unless `slots` is a `build_hash` table over `keys` naming nodes < n."""
    cdef Py_ssize_t i
    if bits < 1 or bits > 62 or slots.shape[0] != (1 << bits):
        raise ModelError("VpCore: hash slots must number 2**bits")
    for i in range(slots.shape[0]):
        if slots[i] < -1 or slots[i] >= keys.shape[0]:
            raise ModelError("VpCore: a hash slot names no entry")
    for i in range(keys.shape[0]):
        if keys[i] // <unsigned long long>vocab >= <unsigned long long>n:
            raise ModelError("VpCore: a hash key names no node")


cdef class VpCore:
    """A trained VPYLM's tables for the full DP (arsdecode.methods.fast_vpylm builds them from
    a VpylmLM): the checked owner of the arrays `VpTables` points into. `walk` answers
    (context, word) rows as VpylmLM.log_prob / log_bound (after one word) do, for the tests."""

    cdef VpTables m
    cdef readonly object arrays
    cdef readonly int order

    def __init__(self, long long vocab, int max_depth, long long bos, double base,
                 unsigned long long[::1] child_keys, int[::1] child_slots, int child_bits,
                 long long[::1] child_node,
                 unsigned long long[::1] rest_keys, int[::1] rest_slots, int rest_bits,
                 double[::1] cw, double[::1] tw,
                 unsigned long long[::1] tail_keys, int[::1] tail_slots, int tail_bits,
                 double[::1] tail_val, unsigned char[::1] has_child,
                 double[::1] q, double[::1] c, double[::1] t, double[::1] d, double[::1] th,
                 long long[::1] child0, double[::1] lnk, long long[::1] ex_off,
                 long long[::1] ex_word):
        """Hashes as `build_hash` lays them out (keys node * V + word) with their entries;
        per node q, c, t and its depth's discount d and strength th; per word its child of
        the root, ln K and its exceptions (VpTables, `vp_backward`). Every index the DP reads
        unchecked is checked here (ModelError)."""
        cdef long long n = q.shape[0]
        cdef Py_ssize_t i
        if vocab < 2 or not 0 <= bos < vocab or n < 1 or not 0 <= max_depth < NG_MAX_ORDER:
            raise ModelError("VpCore: vocabulary, <s> or depth out of range")
        if not (c.shape[0] == t.shape[0] == d.shape[0] == th.shape[0] == has_child.shape[0]
                == n):
            raise ModelError("VpCore: one q, c, t, d, th and has_child per node")
        if child_node.shape[0] != child_keys.shape[0] or cw.shape[0] != rest_keys.shape[0] \
                or tw.shape[0] != rest_keys.shape[0] or tail_val.shape[0] != tail_keys.shape[0]:
            raise ModelError("VpCore: one entry per hash key")
        _vp_check_hash(child_keys, child_slots, child_bits, vocab, n)
        _vp_check_hash(rest_keys, rest_slots, rest_bits, vocab, n)
        _vp_check_hash(tail_keys, tail_slots, tail_bits, vocab, n)
        for i in range(child_node.shape[0]):
            if not 0 < child_node[i] < n:
                raise ModelError("VpCore: a child names no node")
        for i in range(n):
            if not (c[i] >= 0 and t[i] >= 0 and th[i] + c[i] > 0 and isfinite(q[i])):
                raise ModelError("VpCore: a node's counts or strength are out of range")
        if child0.shape[0] != vocab or lnk.shape[0] != vocab or ex_off.shape[0] != vocab + 1 \
                or ex_off[0] != 0 or ex_off[vocab] != ex_word.shape[0]:
            raise ModelError("VpCore: one child, ln K and exception list per word")
        for i in range(vocab):
            if not -1 <= child0[i] < n or ex_off[i + 1] < ex_off[i]:
                raise ModelError("VpCore: a word's child or exception offsets are out of range")
        for i in range(ex_word.shape[0]):
            if not 0 <= ex_word[i] < vocab:
                raise ModelError("VpCore: an exception names no word")
        lp0 = np.empty(vocab, dtype=np.float64)
        self.arrays = (child_keys, child_slots, child_node, rest_keys, rest_slots, cw, tw,
                       tail_keys, tail_slots, tail_val, has_child, q, c, t, d, th, child0, lnk, ex_off, ex_word, lp0)
        self.order = max_depth + 1
        self.m.vocab = vocab
        self.m.n_nodes = n
        self.m.max_depth = max_depth
        self.m.bos = bos
        self.m.base = base
        self.m.child.keys = &child_keys[0] if child_keys.shape[0] else NULL
        self.m.child.slots = &child_slots[0]
        self.m.child.nslots = child_slots.shape[0]
        self.m.child.bits = child_bits
        self.m.child_node = &child_node[0] if child_node.shape[0] else NULL
        self.m.rest.keys = &rest_keys[0] if rest_keys.shape[0] else NULL
        self.m.rest.slots = &rest_slots[0]
        self.m.rest.nslots = rest_slots.shape[0]
        self.m.rest.bits = rest_bits
        self.m.cw = &cw[0] if cw.shape[0] else NULL
        self.m.tw = &tw[0] if tw.shape[0] else NULL
        self.m.tail.keys = &tail_keys[0] if tail_keys.shape[0] else NULL
        self.m.tail.slots = &tail_slots[0]
        self.m.tail.nslots = tail_slots.shape[0]
        self.m.tail.bits = tail_bits
        self.m.tail_val = &tail_val[0] if tail_val.shape[0] else NULL
        self.m.has_child = &has_child[0]
        self.m.q = &q[0]
        self.m.c = &c[0]
        self.m.t = &t[0]
        self.m.d = &d[0]
        self.m.th = &th[0]
        self.m.child0 = &child0[0]
        self.m.lnk = &lnk[0]
        self.m.ex_off = &ex_off[0]
        self.m.ex_word = &ex_word[0] if ex_word.shape[0] else NULL
        cdef double[::1] l0 = lp0
        cdef double p
        for i in range(vocab):  # ln P_root(y), as vp_bound computes it with no child
            p = vp_node_p(&self.m, 0, i, self.m.base) if i != bos else 0.0
            l0[i] = log(p) if p > 0 else -INFINITY
        self.m.lp0 = &l0[0]

    @property
    def vocab(self) -> int:
        return self.m.vocab

    def walk(self, const long long[:, ::1] contexts, const long long[::1] words, bint want_max):
        """ln p of each row (or, with `want_max`, `vp_bound` after each row's last word, -1:
        none); contexts (B, k) ids left-padded with -1, k <= NG_MAX_ORDER."""
        cdef Py_ssize_t b = words.shape[0], i, j
        cdef int width = <int>contexts.shape[1]
        cdef long long dummy = -1
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
        with nogil:
            for i in range(b):
                if want_max:
                    o[i] = vp_bound(&self.m, contexts[i, width - 1] if width else -1, words[i])
                else:
                    o[i] = vp_walk(&self.m, &contexts[i, 0] if width else &dummy, width,
                                   words[i])
        return out
