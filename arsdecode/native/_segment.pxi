# The segmentation lattice's builder (issue 33): every vocabulary word and every priced
# unknown-word span of many texts, in one call, straight into the flat layout of
# FullDP.run_dag. Why compiled: in Python the prefix walk and one dict look-up per arc (about
# a dozen arcs per character) cost more than the exact decode itself.
#
# The vocabulary is a character trie over Unicode code points (seg_build_trie), so a text is
# walked from each offset with no string made; arcs come out in the reference builder's
# order (arsdecode.tasks.segment.lattice.reference_segmentation_lattice): per source, the
# word arcs by end offset (each surface's words in index order), then the unknown arcs by
# length.

from libcpp.vector cimport vector


def seg_build_trie(const int[::1] chars, const long long[::1] offs):
    """The trie of `n` surface forms given as code points (`chars`, surface k is
    chars[offs[k]:offs[k + 1]]), sorted (as Python sorts str) and distinct, none empty.

    Returns (parent, sym, node_surface): node 0 is the root; node t > 0 hangs below
    parent[t] by code point sym[t] (the nodes in preorder, so each node's children come in
    increasing sym); node_surface[t] is the surface ending at node t, or -1."""
    cdef Py_ssize_t n = offs.shape[0] - 1, k, d, lo, hi, plen, depth
    cdef vector[int] parent, sym, node_surf, path
    parent.push_back(-1)
    sym.push_back(-1)
    node_surf.push_back(-1)
    path.push_back(0)  # path[d]: the node at depth d of the previous surface
    cdef Py_ssize_t prev_lo = 0, prev_hi = 0
    for k in range(n):
        lo, hi = offs[k], offs[k + 1]
        if hi <= lo:
            raise ValueError(f"seg_build_trie: surface {k} is empty")
        plen = 0
        while plen < hi - lo and plen < prev_hi - prev_lo and \
                chars[lo + plen] == chars[prev_lo + plen]:
            plen += 1
        if k and (plen == hi - lo or (plen < prev_hi - prev_lo
                                      and chars[lo + plen] < chars[prev_lo + plen])):
            raise ValueError(f"seg_build_trie: surfaces not sorted and distinct at {k}")
        path.resize(plen + 1)
        for d in range(plen, hi - lo):
            parent.push_back(path[d])
            sym.push_back(chars[lo + d])
            node_surf.push_back(-1)
            path.push_back(<int>(parent.size() - 1))
        node_surf[path[hi - lo]] = <int>k
        prev_lo, prev_hi = lo, hi
    m = parent.size()
    p_arr = np.empty(m, dtype=np.int32)
    s_arr = np.empty(m, dtype=np.int32)
    f_arr = np.empty(m, dtype=np.int32)
    cdef int[::1] pv = p_arr, sv = s_arr, fv = f_arr
    for k in range(<Py_ssize_t>m):
        pv[k] = parent[k]
        sv[k] = sym[k]
        fv[k] = node_surf[k]
    return p_arr, s_arr, f_arr


cdef inline int _seg_child(const long long[::1] child_off, const int[::1] child_sym,
                           const int[::1] child_node, int node, int c) noexcept nogil:
    """The child of `node` by code point `c`, or -1 (binary search over sorted children)."""
    cdef long long lo = child_off[node], hi = child_off[node + 1], mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if child_sym[mid] < c:
            lo = mid + 1
        else:
            hi = mid
    if lo < child_off[node + 1] and child_sym[lo] == c:
        return child_node[lo]
    return -1


def seg_lattice_batch(const int[::1] text, const long long[::1] text_off,
                      const unsigned char[::1] cut_before,
                      const long long[::1] child_off, const int[::1] child_sym,
                      const int[::1] child_node, const int[::1] node_surface,
                      const long long[::1] surf_word_off, int longest_word,
                      int unknown_max_length, int spelled, double penalty,
                      double scale, double per_word, const long long[::1] spell_codes,
                      const double[::1] spell_lp, long long n_symbols, long long boundary,
                      const double[::1] bonus):
    """The segmentation lattices of S texts, in FullDP.run_dag's flat layout.

    text: the texts' code points, concatenated, text s being text[text_off[s]:text_off[s+1]];
    cut_before[g] = 1 where a hard break stands before character g (no arc crosses it);
    the trie of `seg_build_trie` in CSR (child_off over its nodes, child_sym sorted within a
    node, child_node) with node_surface, and surf_word_off: surface f's words are the index
    words surf_word_off[f] .. surf_word_off[f + 1] - 1. Word arcs are looked up to
    `longest_word` characters, unknown arcs made up to `unknown_max_length`; an unknown arc's
    ln weight is -penalty * length (spelled = 0) or scale * ln p_spell - per_word (spelled = 1:
    the character trigram table spell_lp[(a * n_symbols + b) * n_symbols + c] over
    spell_codes, `boundary` padding the word). bonus (one per node, or empty) is added to every
    arc ending at a node that is not its text's last.

    Returns (node_off (S+1), arc_off (N+1), arc_dst (global node), arc_word (index word, -1:
    unknown), arc_w, arc_len); text s has nodes node_off[s] .. node_off[s] + its length."""
    cdef Py_ssize_t S = text_off.shape[0] - 1, s, i, j, g, n, base, L, t
    cdef long long total = text_off[S] if S >= 0 else 0
    if text.shape[0] != total or cut_before.shape[0] != total:
        raise ValueError("seg_lattice_batch: text and cut_before disagree with text_off")
    if spelled and (spell_codes.shape[0] != total
                    or spell_lp.shape[0] != n_symbols * n_symbols * n_symbols):
        raise ValueError("seg_lattice_batch: spelling codes or table of the wrong size")
    if bonus.shape[0] != 0 and bonus.shape[0] != total + S:
        raise ValueError("seg_lattice_batch: bonus needs one value per node")
    if unknown_max_length < 1:
        raise ValueError("seg_lattice_batch: unknown_max_length must be at least 1")
    cdef vector[long long] dst, word, arc_len
    cdef vector[double] wgt
    cdef long long n_nodes = total + S
    node_off_arr = np.empty(S + 1, dtype=np.int64)
    arc_off_arr = np.empty(n_nodes + 1, dtype=np.int64)
    cdef long long[::1] node_off = node_off_arr, arc_off = arc_off_arr
    cdef vector[unsigned char] found
    cdef vector[long long] nbv
    found.resize(unknown_max_length + 1)
    cdef int node, f, limit, ulimit
    cdef long long nb, w, p0, p1, p2, node_g
    cdef double sp, add
    cdef bint has_bonus = bonus.shape[0] != 0
    with nogil:
        for s in range(S):
            base = text_off[s]
            n = text_off[s + 1] - base
            node_g = base + s  # global node of offset 0
            node_off[s] = node_g
            nbv.resize(n + 1)
            nbv[n] = n
            for i in range(n - 1, -1, -1):  # the first break after i, or the end
                nbv[i] = i + 1 if i + 1 >= n or cut_before[base + i + 1] else nbv[i + 1]
            for i in range(n):
                arc_off[node_g + i] = <long long>dst.size()
                nb = nbv[i]
                limit = <int>min(<long long>longest_word, nb - i)
                ulimit = <int>min(<long long>unknown_max_length, nb - i)
                for L in range(unknown_max_length + 1):
                    found[L] = 0
                node = 0
                for L in range(1, limit + 1):
                    node = _seg_child(child_off, child_sym, child_node, node,
                                      text[base + i + L - 1])
                    if node < 0:
                        break
                    f = node_surface[node]
                    if f < 0:
                        continue
                    if L <= unknown_max_length:
                        found[L] = 1
                    add = bonus[node_g + i + L] if has_bonus and i + L < n else 0.0
                    for w in range(surf_word_off[f], surf_word_off[f + 1]):
                        dst.push_back(node_g + i + L)
                        word.push_back(w)
                        wgt.push_back(0.0 + add)
                        arc_len.push_back(L)
                for L in range(1, ulimit + 1):
                    if found[L]:
                        continue
                    if spelled:
                        sp = 0.0
                        for t in range(L + 1):
                            p0 = spell_codes[base + i + t] if t < L else boundary
                            p1 = spell_codes[base + i + t - 1] if t >= 1 else boundary
                            p2 = spell_codes[base + i + t - 2] if t >= 2 else boundary
                            sp = sp + spell_lp[(p2 * n_symbols + p1) * n_symbols + p0]
                        sp = scale * sp - per_word
                    else:
                        sp = -penalty * L
                    add = bonus[node_g + i + L] if has_bonus and i + L < n else 0.0
                    dst.push_back(node_g + i + L)
                    word.push_back(-1)
                    wgt.push_back(sp + add)
                    arc_len.push_back(L)
            arc_off[node_g + n] = <long long>dst.size()  # the final node: no arcs
        node_off[S] = n_nodes
        arc_off[n_nodes] = <long long>dst.size()
    A = dst.size()
    dst_arr = np.empty(A, dtype=np.int64)
    word_arr = np.empty(A, dtype=np.int64)
    w_arr = np.empty(A, dtype=np.float64)
    len_arr = np.empty(A, dtype=np.int64)
    cdef long long[::1] dv = dst_arr, wv = word_arr, lv = len_arr
    cdef double[::1] gv = w_arr
    cdef Py_ssize_t a
    for a in range(<Py_ssize_t>A):
        dv[a] = dst[a]
        wv[a] = word[a]
        gv[a] = wgt[a]
        lv[a] = arc_len[a]
    return node_off_arr, arc_off_arr, dst_arr, word_arr, w_arr, len_arr
