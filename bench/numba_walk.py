"""The n-gram walk of maxarpa.model.Model._walk in numba (cache=True), for bench_compiled_choice.

Why it lives in bench/: numba was measured against the Cython extension and not chosen
(docs/performance.md); this is the prototype the measurement used, over the same flat tables
as arsdecode.native (NativeNgram.core.arrays).
"""

from __future__ import annotations

import numpy as np
from numba import njit

MIX = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True)
def _find(keys, slots, node_off, slot_off, bits, k, key):
    nslots = slot_off[k] - slot_off[k - 1]
    if nslots == 0 or node_off[k] == node_off[k - 1]:
        return -1
    b = bits[k - 1]
    mask = np.uint64(nslots - 1)
    pos = (key * MIX) >> np.uint64(64 - b)
    base = slot_off[k - 1]
    kbase = node_off[k - 1]
    while True:
        idx = slots[base + pos]
        if idx < 0:
            return -1
        if keys[kbase + idx] == key:
            return idx
        pos = (pos + np.uint64(1)) & mask


@njit(cache=True, nogil=True)
def walk(order, vocab, node_off, keys, slots, slot_off, bits, lp, lbow, lmf, lmbow,
         contexts, words, want_max):
    b, width0 = contexts.shape
    out = np.empty(b)
    n = order
    V = np.uint64(vocab)
    shift = width0 - (n - 1) if width0 > n - 1 else 0
    width = width0 - shift
    for i in range(b):
        ctx = contexts[i, shift:]
        word = words[i]
        ctx_len = 0
        for j in range(width):
            if ctx[j] >= 0:
                ctx_len += 1
        node = word
        depth = 1
        for j in range(1, width + 1):
            wj = ctx[width - j]
            if wj < 0:
                break
            found = _find(keys, slots, node_off, slot_off, bits, j + 1,
                          np.uint64(node) * V + np.uint64(wj))
            if found < 0:
                break
            node = found
            depth = j + 1
        matched = depth - 1
        base = lp[node_off[depth - 1] + node]
        mf = lmf[node_off[depth - 1] + node]
        bow_sum = 0.0
        ctx_node = -1
        ctx_depth = 0
        for j in range(1, width + 1):
            wj = ctx[width - j]
            if wj < 0:
                break
            if j == 1:
                found = wj
            else:
                found = _find(keys, slots, node_off, slot_off, bits, j,
                              np.uint64(ctx_node) * V + np.uint64(wj))
                if found < 0:
                    break
            ctx_node = found
            ctx_depth = j
            if matched < j:
                bow_sum += lbow[node_off[j - 1] + found]
        if not want_max:
            out[i] = base + bow_sum
        elif matched == ctx_len:
            out[i] = mf
        elif ctx_depth == ctx_len and ctx_len >= 1:
            k = ctx_len
            out[i] = (base + bow_sum) + (lmbow[node_off[k - 1] + ctx_node]
                                         - lbow[node_off[k - 1] + ctx_node])
        else:
            out[i] = (base + bow_sum) + 0.0
    return out


def numba_walk(core_arrays, order: int, vocab: int, contexts: np.ndarray, words: np.ndarray,
               want_max: bool) -> np.ndarray:
    node_off, keys, slots, slot_off, bits, lp, lbow, lmf, lmbow = (np.asarray(a) for a in
                                                                  core_arrays)
    return walk(order, vocab, node_off, keys, slots, slot_off, bits, lp, lbow, lmf, lmbow,
                np.ascontiguousarray(contexts, dtype=np.int64),
                np.ascontiguousarray(words, dtype=np.int64), want_max)
