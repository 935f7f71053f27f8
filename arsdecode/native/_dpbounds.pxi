# _DPBounds: the pruning bounds of _DPCaches' transitions -- the max-backoff bound of a word
# after a context, the backward bound pass (dense and sparse) and the completion bounds that
# make the sweeps' pruning exact.
#
# Why a part of its own: the bounds are one job (what a state can still score), the memo of
# transitions another (_dpcache.pxi). Cython cannot include a file inside a class body, so
# the split is a class between them: _DPCaches -> _DPBounds -> _DPWorker (_dpsweep.pxi); its
# fields (ub_rows, stamp, epoch, ...) stay declared in _DPCaches, which clears them.


cdef class _DPBounds(_DPCaches):
    """_DPCaches plus the pruning bounds (the methods only: the state is _DPCaches')."""

    cdef inline double _bound(self, long long x, long long y) noexcept nogil:
        """ln w(y | x): the max-backoff bound of y after a context ending in x (x = -1: any
        context), i.e. the max of p(y | z x) over every left extension z. A dense vocabulary
        keeps x's whole row, computed on first use."""
        cdef long long ctx = x, V = self.core.t.vocab, r, k, ctx_node
        cdef int ctx_len, ctx_depth
        cdef double bows[NG_MAX_ORDER]
        if self.mix != NULL:
            return mix_bound(self.mix, x, y)
        if self.vp != NULL:
            return vp_bound(self.vp, x, y)
        if self.ll != NULL:
            return ll_bound(self.ll, x, y)
        if not self.dense:
            return ng_walk(&self.core.t, &ctx, 1, y, True)
        r = self.ub_row_of[x + 1]
        if r < 0:
            if self.used_bytes + 8 * V > self.max_bytes:
                self._clear()
            self.used_bytes += 8 * V
            r = <long long>(self.ub_rows.size() // V)
            self.ub_row_of[x + 1] = <int>r
            self.ub_rows.resize((r + 1) * V)
            if self.core.t.order >= 2:
                ctx_depth = ng_context(&self.core.t, &ctx, 1, &ctx_len, bows, &ctx_node)
                for k in range(V):
                    self.ub_rows[r * V + k] = ng_walk_in(&self.core.t, &ctx, 1, k, True,
                                                         ctx_len, ctx_depth, bows, ctx_node)
            else:
                for k in range(V):
                    self.ub_rows[r * V + k] = ng_walk(&self.core.t, &ctx, 1, k, True)
        return self.ub_rows[r * V + y]

    cdef inline double _wbound(self, long long x, long long y) noexcept nogil:
        """`_bound` times this run's LM weight (a weight > 0 keeps it a bound)."""
        return self.lmw * self._bound(x, y)

    cdef inline void _step(self, long long gid, long long word, long long *nxt,
                           double *lp) noexcept nogil:
        """`_trans` with its ln p times this run's LM weight (the cache holds plain ln p)."""
        self._trans(gid, word, nxt, lp)
        lp[0] = self.lmw * lp[0]

    cdef void _backward_plain(self, long long a0, long long a1, long long a2,
                              const long long *cand_ids, const double *cand_emis, double *H,
                              long long base) noexcept nogil:
        """One step of the backward bound pass: H of candidates a0..a1-1 from those of the
        next position a1..a2-1, every pair through `_bound`."""
        cdef long long c, c2
        cdef double best, v
        for c in range(a0, a1):
            best = -INFINITY
            for c2 in range(a1, a2):
                if not isfinite(cand_emis[c2]):
                    continue
                v = self._wbound(cand_ids[c], cand_ids[c2]) + cand_emis[c2] + H[c2 - base]
                if v > best:
                    best = v
            H[c - base] = best

    cdef bint _backward_sparse(self, long long a0, long long a1, long long a2,
                               const long long *cand_ids, const double *cand_emis, double *H,
                               long long base) noexcept nogil:
        """`_backward_plain` for a large vocabulary, without the product of the two widths.

        Why it holds: a word y that never follows x (no bigram x.y in the table, which is
        suffix-closed) matches only its unigram, so its bound after x is the unigram's ln p
        plus x's backoff terms (ng_walk_in with matched = 0), the same for every such y. The
        best such y is the first non-successor of x in one sort of the next position by
        unigram ln p + emission + H; only x's successors take the walk. The grouping may move
        the maximum by rounding, which the pruning margin covers. Returns False (nothing done)
        when a word repeats at the next position.
        """
        cdef const NgramTables *t = &self.core.t
        cdef long long V = t.vocab, c, c2, x, y, k, r, nsucc
        cdef double best, v
        cdef vector[Ranked] ranked  # (-(ln p1(y) + e + H), candidate)
        self.epoch += 1
        if self.stamp.size() == 0:
            self.stamp.assign(V, -1)
            self.stamp_idx.assign(V, -1)
        if self.mix != NULL:
            return mix_backward(self.mix, self.lmw, a0, a1, a2, cand_ids, cand_emis, H, base,
                                self.stamp.data(), self.stamp_idx.data(), &self.epoch)
        if self.ll != NULL:
            return ll_backward(self.ll, self.lls, self.lmw, a0, a1, a2, cand_ids, cand_emis, H,
                               base, self.stamp.data(), self.stamp_idx.data(), &self.epoch)
        if self.vp != NULL:
            return vp_backward(self.vp, self.lmw, a0, a1, a2, cand_ids, cand_emis, H, base,
                               self.stamp.data(), self.stamp_idx.data(), &self.epoch)
        for c2 in range(a1, a2):
            y = cand_ids[c2]
            if self.stamp[y] == self.epoch:
                return False
            self.stamp[y] = self.epoch
            self.stamp_idx[y] = c2
            if isfinite(cand_emis[c2]) and isfinite(H[c2 - base]):
                v = self.lmw * t.lp[y] + cand_emis[c2] + H[c2 - base]
                if isfinite(v):
                    ranked.push_back(Ranked(-v, c2))
        sort(ranked.begin(), ranked.end())
        for c in range(a0, a1):
            x = cand_ids[c]
            best = -INFINITY
            nsucc = self.core.next_off[x + 1] - self.core.next_off[x]
            if nsucc <= a2 - a1:  # x's successors that stand at the next position
                for k in range(self.core.next_off[x], self.core.next_off[x + 1]):
                    y = self.core.next_word[k]
                    if self.stamp[y] != self.epoch:
                        continue
                    c2 = self.stamp_idx[y]
                    if not isfinite(cand_emis[c2]):
                        continue
                    v = self._wbound(x, y) + cand_emis[c2] + H[c2 - base]
                    if v > best:
                        best = v
            else:  # the next position's words that follow x
                for c2 in range(a1, a2):
                    y = cand_ids[c2]
                    if not isfinite(cand_emis[c2]) or ng_find(
                            t, 2, <unsigned long long>y * <unsigned long long>V
                            + <unsigned long long>x) < 0:
                        continue
                    v = self._wbound(x, y) + cand_emis[c2] + H[c2 - base]
                    if v > best:
                        best = v
            for r in range(<long long>ranked.size()):  # the best word that does not follow x
                c2 = ranked[r].second
                y = cand_ids[c2]
                if ng_find(t, 2, <unsigned long long>y * <unsigned long long>V
                           + <unsigned long long>x) >= 0:
                    continue
                v = self.lmw * ((t.lp[y] + t.lbow[x]) + (t.lmbow[x] - t.lbow[x])) \
                    + cand_emis[c2] + H[c2 - base]
                if v > best:
                    best = v
                break
            H[c - base] = best
        return True

    cdef double _completion_bounds(self, long long p0, long long p1,
                                   const long long *pos_off, const long long *cand_ids,
                                   const double *cand_emis, long long eos, long long start,
                                   double *H) noexcept nogil:
        """Bounds for exact pruning of one sentence (positions p0..p1-1); returns a lower
        bound on its best score (-inf: none, do not prune).

        H[c - pos_off[p0]] is an upper bound on the score of the rest of the sentence after
        candidate c: the best path through the lattice when each transition weighs its bigram
        max-backoff bound (a backward max-plus pass). Whatever longer context precedes c, the
        true factors are at most these bounds. The lower bound is the exact score of one path,
        the greedy one that picks, position by position, the candidate with the best exact
        score so far plus H.
        """
        cdef long long p, c, base = pos_off[p0], g, ng, bc, bg
        cdef double best, v, lp, tot, bt
        for c in range(pos_off[p1 - 1], pos_off[p1]):
            H[c - base] = self._wbound(cand_ids[c], eos) if eos >= 0 else 0.0
        for p in range(p1 - 2, p0 - 1, -1):
            if self.ll != NULL:  # its pass also reads the words before (skips, _loglinear)
                self.lls.prev0 = pos_off[p - 1] if p > p0 else -1
                self.lls.prev1 = pos_off[p] if p > p0 else -1
                self.lls.first = self.lls.last_word(start)
            if self.dense or self.core.t.order < 2 or not self._backward_sparse(
                    pos_off[p], pos_off[p + 1], pos_off[p + 2], cand_ids, cand_emis, H, base):
                self._backward_plain(pos_off[p], pos_off[p + 1], pos_off[p + 2], cand_ids,
                                     cand_emis, H, base)
        g = start
        tot = 0.0
        for p in range(p0, p1):
            best = -INFINITY
            bc = -1
            bg = 0
            bt = 0.0
            for c in range(pos_off[p], pos_off[p + 1]):
                if not isfinite(cand_emis[c]) or not isfinite(H[c - base]):
                    continue
                self._step(g, cand_ids[c], &ng, &lp)
                v = tot + (lp + cand_emis[c])
                if isfinite(v) and v + H[c - base] > best:
                    best = v + H[c - base]
                    bc = c
                    bg = ng
                    bt = v
            if bc < 0:
                return -INFINITY
            g = bg
            tot = bt
        if eos < 0:  # no </s> factor
            return tot
        self._step(g, eos, &ng, &lp)
        return tot + lp
