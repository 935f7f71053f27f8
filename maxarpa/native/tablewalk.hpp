// Walks of the n-gram table's sorted keys (maxarpa.keywalk, maxarpa.contexts), compiled.
//
// Why: the useful-context tables of `convert --binary` find, for every node a1..ak, the row
// of its prefix a1..a(k-1) one order down, and deduplicate node indices in order of first
// occurrence. In numpy that was a sort and a search of 6M queries and a scatter-minimum
// (1.2 s of the 6M-n-gram conversion, issue 34); here it is one pass over the nodes.
// An order-k key is parent * V + first word, parent = the row of the suffix at order k-1;
// keys are sorted, so the children of one parent are contiguous.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace mxa {

// For each order-k node (keys, m), the order-(k-1) row of its prefix, or -1 where the prefix
// is no node. `below`: the same for each order-(k-1) node (its prefix's row at order k-2);
// keys_below: order k-1's sorted keys; m_below2: order k-2's node count. The prefix of
// a1..ak has the key q * V + a1 at order k-1, q = below[parent]: it is searched among q's
// children only (contiguous, found through a start array). Returns false when a key names a
// row that does not exist (a corrupt table): nothing is read out of bounds.
inline bool prefix_rows(const uint64_t* keys, int64_t m, const uint64_t* keys_below,
                        int64_t m_below, const int32_t* below, int64_t m_below2, uint64_t v,
                        int32_t* out) {
    std::vector<int64_t> start(m_below2 + 2, 0);  // children of order-(k-2) node q: [start[q], start[q+1])
    for (int64_t i = 0; i < m_below; ++i) {
        uint64_t q = keys_below[i] / v;
        if (q >= static_cast<uint64_t>(m_below2)) return false;
        ++start[q + 1];
    }
    for (int64_t q = 0; q <= m_below2; ++q) start[q + 1] += start[q];
    for (int64_t i = 0; i < m; ++i) {
        uint64_t p = keys[i] / v;
        if (p >= static_cast<uint64_t>(m_below)) return false;
        int32_t q = below[p];
        if (q < 0 || q >= m_below2) {
            out[i] = -1;
            continue;
        }
        const uint64_t target = static_cast<uint64_t>(q) * v + keys[i] % v;
        const uint64_t* lo = keys_below + start[q];
        const uint64_t* hi = keys_below + start[q + 1];
        const uint64_t* at = std::lower_bound(lo, hi, target);
        out[i] = (at != hi && *at == target) ? static_cast<int32_t>(at - keys_below) : -1;
    }
    return true;
}

// The distinct values of values[0..n) (each in [0, size)), in order of first occurrence,
// written to out; returns how many, or -1 when a value is out of range.
inline int64_t first_occurrences(const int32_t* values, int64_t n, int64_t size, int32_t* out) {
    std::vector<uint8_t> seen(size, 0);
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) {
        int32_t x = values[i];
        if (x < 0 || x >= size) return -1;
        if (!seen[x]) {
            seen[x] = 1;
            out[count++] = x;
        }
    }
    return count;
}

}  // namespace mxa
