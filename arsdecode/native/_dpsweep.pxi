# _DPWorker: the full-model DP sweeps themselves, over confusion networks and word lattices.
#
# Why a part of its own: these are the two long forward passes (run_checked: positions of many
# sentences, with exact pruning, k-best or posterior recording; dag_checked: (node, context)
# states of many DAGs), reading the model only through _DPCaches (_dpcache.pxi).


cdef Py_ssize_t PREFETCH_WORDS = 8  # a state's first candidates whose entries are prefetched


cdef class _DPWorker(_DPBounds):
    """The caches of _DPCaches plus the sweeps: what one `FullDP.run` or `run_dag` runs on
    (see FullDP for why each concurrent run has a worker of its own)."""

    cdef tuple run_checked(self, const long long[::1] sent_off, const long long[::1] pos_off,
                           const long long[::1] cand_ids, const double[::1] cand_emis,
                           long long bos, long long eos, bint viterbi, bint prune,
                           const long long[::1] max_pairs, const double[::1] known,
                           long long kbest=0, bint posteriors=False):
        """FullDP.run on arrays it has checked, with this worker's caches (a cdef method:
        not callable from Python, so nothing reaches the DP unchecked).

        Recording (`kbest` > 0 with viterbi, or `posteriors` without): every surviving
        (state, candidate) pair is kept as an edge of the sentence's layered graph, which
        `graph_kbest` / `graph_posteriors` (_graph.pxi) then read. For k-best, pruning uses
        `known` alone (a lower bound on the K-th best score; the greedy path bounds the best
        only), and the result's choice and score are the best path's. With `posteriors` the
        sweep keeps no sums of its own (`graph_posteriors` sums the recorded graph and gives
        ln Z): only the edges, saving an exp per pair (issue 34).
        """
        cdef Py_ssize_t S = sent_off.shape[0] - 1, P = pos_off.shape[0] - 1
        cdef bint record = kbest > 0 or posteriors
        cdef long long K = kbest if kbest > 0 else 0, kk, j
        kscores = np.full((S, K), -np.inf)
        kchoice = np.full((K, P), -1, dtype=np.int32)
        post = np.zeros(pos_off[P] if posteriors else 0)
        cdef double[:, ::1] ksc = kscores
        cdef int[:, ::1] kch = kchoice
        cdef double[::1] pst = post
        cdef vector[long long] g_layer, g_edge, g_pos
        cdef vector[int] e_src, e_dst, e_cand, kbuf
        cdef vector[double] e_w, g_final, kbest_sc
        choice = np.full(P, -1, dtype=np.int32)
        score = np.full(S, -np.inf)
        states = np.zeros(S, dtype=np.int64)
        widest = np.zeros(S, dtype=np.int64)
        pairs = np.zeros(S, dtype=np.int64)
        cdef int[::1] ch = choice
        cdef double[::1] sc = score
        cdef long long[::1] st = states, wd = widest, pr = pairs
        cdef vector[int] local_of = vector[int](self.u.n_ctx, -1)
        cdef vector[long long] cur_g, nxt_g, bp_prev
        cdef vector[long long] cur_w, nxt_w  # each state's last word (-1: the empty context)
        cdef vector[long long] try_words
        cdef vector[double] cur_a, nxt_a, nxt_s
        cdef vector[int] bp_cand
        cdef vector[long long] layer_off
        cdef vector[double] H
        cdef Py_ssize_t s, p, c, si, l, k, p0, p1
        cdef long long g, ng, state, last
        cdef double a, e, lp, tot, best, m, thr
        cdef bint dead
        cdef StateCtx sctx
        cdef vector[Ranked] ranked
        cdef Py_ssize_t n_try, r
        with nogil:
            for s in range(S):
                p0 = sent_off[s]
                p1 = sent_off[s + 1]
                thr = -INFINITY
                if self.u.width and bos >= 0:  # the start state, cut(<s>)
                    self._trans(0, bos, &g, &lp)
                else:  # no context (a unigram model, or no <s>)
                    g = 0
                if viterbi and prune and p1 > p0:
                    H.resize(pos_off[p1] - pos_off[p0])
                    thr = self._completion_bounds(p0, p1, &pos_off[0], &cand_ids[0],
                                                  &cand_emis[0], eos, g, H.data())
                    if record:
                        thr = -INFINITY
                    if isfinite(known[s]) and known[s] > thr:
                        thr = known[s]
                    if isfinite(thr):
                        thr = thr - 1e-9 * (1.0 + fabs(thr))
                cur_g.clear()
                cur_a.clear()
                bp_prev.clear()
                bp_cand.clear()
                layer_off.clear()
                cur_g.push_back(g)
                cur_w.clear()  # cut(c.w) ends with w unless empty: no read of the context
                cur_w.push_back(bos if g != 0 else -1)
                cur_a.push_back(0.0)
                if record:
                    g_layer.clear()
                    g_edge.clear()
                    e_src.clear()
                    e_dst.clear()
                    e_cand.clear()
                    e_w.clear()
                    g_final.clear()
                    g_layer.push_back(0)
                    g_layer.push_back(1)
                st[s] = 1
                wd[s] = 1
                dead = False
                for p in range(p0, p1):
                    nxt_g.clear()
                    nxt_w.clear()
                    nxt_a.clear()
                    nxt_s.clear()
                    if record:
                        g_edge.push_back(<long long>e_src.size())
                    layer_off.push_back(bp_prev.size())
                    # Pruning: the position's candidates by their best possible completion
                    # from any state (the unigram max-backoff bound, the emission, H), best
                    # first, so a state stops at the first one that cannot reach `thr`.
                    ranked.clear()
                    if thr > -INFINITY:
                        for c in range(pos_off[p], pos_off[p + 1]):
                            m = cand_emis[c] + H[c - pos_off[p0]]
                            if isfinite(m):
                                m = m + self._wbound(-1, cand_ids[c])
                                if isfinite(m):
                                    ranked.push_back(Ranked(-m, c))
                        sort(ranked.begin(), ranked.end())
                        n_try = <Py_ssize_t>ranked.size()
                    else:
                        n_try = pos_off[p + 1] - pos_off[p]
                    try_words.clear()  # the words a state tries first, for the prefetch
                    for r in range(n_try if n_try < PREFETCH_WORDS else PREFETCH_WORDS):
                        try_words.push_back(cand_ids[ranked[r].second if thr > -INFINITY
                                                     else pos_off[p] + r])
                    for si in range(<Py_ssize_t>cur_g.size()):
                        g = cur_g[si]
                        a = cur_a[si]
                        if self.dense and try_words.size():  # the next states' memory, early
                            if si + 2 < <Py_ssize_t>cur_g.size():
                                ARS_PREFETCH(self.block_of.data() + cur_g[si + 2])
                            if si + 1 < <Py_ssize_t>cur_g.size() \
                                    and self.block_of[cur_g[si + 1]] >= 0:
                                row_prefetch(self._row_ptr(self.block_of[cur_g[si + 1]]),
                                             try_words.data(), <Py_ssize_t>try_words.size())
                        sctx.ready = False
                        last = cur_w[si]
                        for r in range(n_try):
                            if thr > -INFINITY:
                                if a - ranked[r].first < thr:
                                    break  # and every later candidate
                                c = ranked[r].second
                            else:
                                c = pos_off[p] + r
                            e = cand_emis[c]
                            if not isfinite(e):
                                continue
                            pr[s] += 1
                            if thr > -INFINITY:
                                if self.dense and (a + self._wbound(last, cand_ids[c]) + e
                                                   + H[c - pos_off[p0]]) < thr:
                                    continue
                            if posteriors and not self.dense:  # no cache: see _walk
                                self._walk(g, cand_ids[c], &ng, &lp, &sctx)
                            else:
                                self._trans(g, cand_ids[c], &ng, &lp, &sctx)
                            lp = self.lmw * lp + e
                            if not isfinite(lp):
                                continue
                            tot = a + lp
                            if thr > -INFINITY and tot + H[c - pos_off[p0]] < thr:
                                continue
                            if ng >= <long long>local_of.size():  # a state made now (_loglinear)
                                local_of.resize(ng + 1, -1)
                            l = local_of[ng]
                            if record:
                                e_src.push_back(<int>(g_layer[p - p0] + si))
                                e_dst.push_back(<int>(g_layer[p - p0 + 1]
                                                      + (l if l >= 0 else <Py_ssize_t>nxt_g.size())))
                                e_cand.push_back(<int>(c - pos_off[p]))
                                e_w.push_back(lp)
                            if l < 0:
                                local_of[ng] = <int>nxt_g.size()
                                nxt_g.push_back(ng)
                                nxt_w.push_back(cand_ids[c] if ng != 0 else -1)
                                nxt_a.push_back(tot)
                                nxt_s.push_back(1.0)
                                bp_prev.push_back(si)
                                bp_cand.push_back(<int>(c - pos_off[p]))
                            elif viterbi:
                                if tot > nxt_a[l]:
                                    nxt_a[l] = tot
                                    bp_prev[layer_off.back() + l] = si
                                    bp_cand[layer_off.back() + l] = <int>(c - pos_off[p])
                            elif posteriors:
                                pass  # graph_posteriors sums the recorded graph: no sum here
                            else:  # streaming logsumexp: nxt_a is the max, nxt_s the scaled sum
                                m = nxt_a[l]
                                if tot > m:
                                    nxt_s[l] = nxt_s[l] * exp(m - tot) + 1.0
                                    nxt_a[l] = tot
                                else:
                                    nxt_s[l] = nxt_s[l] + exp(tot - m)
                        if 0 <= max_pairs[s] < pr[s]:  # over budget: abandoned, score NaN
                            sc[s] = NAN
                            dead = True
                            break
                    for l in range(<Py_ssize_t>nxt_g.size()):
                        local_of[nxt_g[l]] = -1
                    if dead or nxt_g.size() == 0:
                        dead = True
                        break
                    if not viterbi and not posteriors:
                        for l in range(<Py_ssize_t>nxt_g.size()):
                            nxt_a[l] = nxt_a[l] + log(nxt_s[l])
                    if record:
                        g_layer.push_back(g_layer.back() + <long long>nxt_g.size())
                    st[s] += nxt_g.size()
                    if <long long>nxt_g.size() > wd[s]:
                        wd[s] = nxt_g.size()
                    cur_g.swap(nxt_g)
                    cur_w.swap(nxt_w)
                    cur_a.swap(nxt_a)
                if dead:
                    continue
                best = -INFINITY
                state = -1
                m = -INFINITY
                nxt_a.clear()
                for si in range(<Py_ssize_t>cur_g.size()):
                    if eos >= 0:
                        self._step(cur_g[si], eos, &ng, &lp)
                    else:
                        lp = 0.0
                    tot = cur_a[si] + lp
                    if record:
                        g_final.push_back(lp)
                    if viterbi:
                        if tot > best:
                            best = tot
                            state = si
                    else:
                        nxt_a.push_back(tot)
                        if tot > m:
                            m = tot
                if record and p1 > p0:
                    g_edge.push_back(<long long>e_src.size())
                    g_pos.clear()
                    for j in range(p1 - p0 + 1):
                        g_pos.push_back(pos_off[p0 + j] - pos_off[p0])
                    if posteriors:
                        sc[s] = graph_posteriors(p1 - p0, g_layer.data(), g_edge.data(),
                                                 e_src.data(), e_dst.data(), e_cand.data(),
                                                 e_w.data(), g_final.data(), g_pos.data(),
                                                 &pst[pos_off[p0]])
                        continue
                    kbest_sc.resize(K)
                    kbuf.resize(K * (p1 - p0))
                    kk = graph_kbest(p1 - p0, g_layer.data(), g_edge.data(), e_src.data(),
                                     e_dst.data(), e_cand.data(), e_w.data(), g_final.data(),
                                     g_pos.data(), K, kbest_sc.data(), kbuf.data())
                    for k in range(kk):
                        ksc[s, k] = kbest_sc[k]
                        for j in range(p1 - p0):
                            kch[k, p0 + j] = kbuf[k * (p1 - p0) + j]
                if viterbi:
                    if state < 0:
                        continue
                    sc[s] = best
                    for k in range(p1 - p0 - 1, -1, -1):
                        l = layer_off[k] + state
                        ch[p0 + k] = bp_cand[l]
                        state = bp_prev[l]
                else:
                    if not isfinite(m):
                        continue
                    a = 0.0
                    for si in range(<Py_ssize_t>nxt_a.size()):
                        a = a + exp(nxt_a[si] - m)
                    sc[s] = m + log(a)
        if record:
            return choice, score, states, widest, pairs, kscores, kchoice, post
        return choice, score, states, widest, pairs


    cdef tuple dag_checked(self, const long long[::1] node_off, const long long[::1] arc_off,
                           const long long[::1] arc_dst, const long long[::1] arc_word,
                           const double[::1] arc_w, const double[::1] final_w, long long bos,
                           long long eos):
        """FullDP.run_dag on arrays it has checked (a cdef method, as run_checked).

        Per lattice s, its nodes are node_off[s]..node_off[s+1]-1 (global ids, topological
        within the lattice, the first is the start); node u's arcs are arc_off[u]..
        arc_off[u+1]-1, each to arc_dst (a global node id of the same lattice, > u), with a
        model word id (-1: epsilon) and an ln weight; final_w[u] is u's ln final weight (-inf:
        not final). States are (node, merged context gid), kept in a hash map per lattice."""
        cdef Py_ssize_t S = node_off.shape[0] - 1
        score = np.full(S, -np.inf)
        n_states = np.zeros(S, dtype=np.int64)
        n_trans = np.zeros(S, dtype=np.int64)
        path_len = np.zeros(S, dtype=np.int64)
        cdef double[::1] sc = score
        cdef long long[::1] ns = n_states, nt = n_trans, pl = path_len
        cdef vector[long long] st_node, st_gid, st_back_state, st_back_arc, path_all
        cdef vector[double] st_score
        cdef unordered_map[u64, long long] index
        cdef vector[long long] first_state  # per node of the lattice: its first state, in order
        cdef vector[vector[long long]] at_node
        cdef Py_ssize_t s, k
        cdef long long u, v, a, g, ng, st, key_state, n0, n1, best_state, nst
        cdef double lp, tot, best, lmw = self.lmw
        cdef u64 key
        # a state's key: node * kmul + gid (a log-linear target's gids are made on demand)
        cdef u64 kmul = <u64>(self.u.n_ctx) if self.ll == NULL else (<u64>1 << 32)
        cdef unordered_map[u64, long long].iterator it
        cdef vector[long long] rev
        with nogil:
            for s in range(S):
                n0 = node_off[s]
                n1 = node_off[s + 1]
                if n1 <= n0:
                    continue
                st_node.clear()
                st_gid.clear()
                st_back_state.clear()
                st_back_arc.clear()
                st_score.clear()
                index.clear()
                at_node.clear()
                at_node.resize(n1 - n0)
                if self.u.width and bos >= 0:
                    self._trans(0, bos, &g, &lp)
                else:
                    g = 0
                st_node.push_back(n0)
                st_gid.push_back(g)
                st_back_state.push_back(-1)
                st_back_arc.push_back(-1)
                st_score.push_back(0.0)
                at_node[0].push_back(0)
                index[<u64>(0) * kmul + <u64>g] = 0
                best = -INFINITY
                best_state = -1
                for u in range(n0, n1):
                    for k in range(<Py_ssize_t>at_node[u - n0].size()):
                        st = at_node[u - n0][k]
                        g = st_gid[st]
                        if isfinite(final_w[u]):
                            if eos >= 0:
                                self._trans(g, eos, &ng, &lp)
                                lp = lmw * lp
                            else:
                                lp = 0.0
                            tot = st_score[st] + final_w[u] + lp
                            if tot > best:
                                best = tot
                                best_state = st
                        for a in range(arc_off[u], arc_off[u + 1]):
                            v = arc_dst[a]
                            if arc_word[a] >= 0:
                                self._trans(g, arc_word[a], &ng, &lp)
                                lp = lmw * lp + arc_w[a]
                            else:
                                ng = g
                                lp = arc_w[a]
                            tot = st_score[st] + lp
                            if not isfinite(tot):
                                continue
                            nt[s] += 1
                            key = <u64>(v - n0) * kmul + <u64>ng
                            it = index.find(key)
                            if it == index.end():
                                nst = <long long>st_node.size()
                                index[key] = nst
                                st_node.push_back(v)
                                st_gid.push_back(ng)
                                st_back_state.push_back(st)
                                st_back_arc.push_back(a)
                                st_score.push_back(tot)
                                at_node[v - n0].push_back(nst)
                            else:
                                nst = deref(it).second
                                if tot > st_score[nst]:
                                    st_score[nst] = tot
                                    st_back_state[nst] = st
                                    st_back_arc[nst] = a
                ns[s] = <long long>st_node.size()
                if best_state < 0:
                    continue
                sc[s] = best
                rev.clear()
                st = best_state
                while st_back_arc[st] >= 0:
                    rev.push_back(st_back_arc[st])
                    st = st_back_state[st]
                pl[s] = <long long>rev.size()
                for k in range(<Py_ssize_t>rev.size() - 1, -1, -1):
                    path_all.push_back(rev[k])
        path = np.array([path_all[k] for k in range(<Py_ssize_t>path_all.size())],
                        dtype=np.int64)
        return score, path, path_len, n_states, n_trans
