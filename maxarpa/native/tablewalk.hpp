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
#include <cmath>
#include <cstdint>
#include <limits>
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

// The useful-context keys of one length j (maxarpa.contexts): for each member (an order-j
// node), gid(its prefix) * V + its last word, the last word found by j - 1 parent steps
// (keys[o] are order o+1's keys; gid_of[prefix[i]] the prefix's gid, none when j == 1).
// False on an index out of range or a prefix without a gid (a table that is not
// prefix-closed): nothing is read out of bounds.
inline bool level_keys(const int32_t* members, int64_t n, int j, const uint64_t* const* keys,
                       const int64_t* sizes, uint64_t v, const int32_t* prefix,
                       const int32_t* gid_of, int64_t gid_size, uint64_t* out) {
    for (int64_t i = 0; i < n; ++i) {
        int64_t idx = members[i];
        if (idx < 0 || idx >= sizes[j - 1]) return false;
        for (int o = j; o >= 2; --o) {
            idx = static_cast<int64_t>(keys[o - 1][idx] / v);
            if (idx >= sizes[o - 2]) return false;
        }
        uint64_t gid = 0;
        if (j > 1) {
            const int32_t p = prefix[i];
            if (p < 0 || p >= gid_size || gid_of[p] < 0) return false;
            gid = static_cast<uint64_t>(gid_of[p]);
        }
        out[i] = gid * v + static_cast<uint64_t>(idx);
    }
    return true;
}

// key / v for the table's keys, by a floating-point reciprocal corrected to the exact
// quotient (a 64-bit division per node cost more than the rest of a group maximum).
struct Divider {
    uint64_t v;
    double inverse;
    explicit Divider(uint64_t v_) : v(v_), inverse(1.0 / static_cast<double>(v_)) {}
    uint64_t operator()(uint64_t key) const {
        uint64_t q = static_cast<uint64_t>(static_cast<double>(key) * inverse);
        while (q > 0 && q * v > key) --q;  // (q * v cannot wrap: q <= key / v + 1)
        while ((q + 1) * v <= key && (q + 1) * v > q * v) ++q;
        return q;
    }
};

// out_a[p] = max(out_a[p], a[i]) (and the same for b, when given) over the order-k nodes i,
// p = keys[i] / v their parent: the max of each order-(k-1) node's children, as
// numpy's maximum.reduceat gives it (NaN propagates; on ties the first value stays). The
// outputs start at -inf (nodes without children keep it). False when a key names a parent
// past m_below (a corrupt table): nothing is written out of bounds.
template <typename A, typename B>
inline bool children_max(const uint64_t* keys, int64_t m, uint64_t v, int64_t m_below,
                         const A* a, double* out_a, const B* b, double* out_b) {
    const Divider divide(v);
    for (int64_t i = 0; i < m; ++i) {
        const uint64_t p = divide(keys[i]);
        if (p >= static_cast<uint64_t>(m_below)) return false;
        const double x = static_cast<double>(a[i]);
        if (x > out_a[p] || x != x) out_a[p] = x;
        if (b != nullptr) {
            const double y = static_cast<double>(b[i]);
            if (y > out_b[p] || y != y) out_b[p] = y;
        }
    }
    return true;
}

// The smallest float32 not below each float64 value (maxarpa.compact.round_up_f32): -0.0
// becomes +0.0, -inf stays, NaN stays NaN. The caller has checked that no value is above
// float32's largest finite value.
inline void round_up_f32(const double* x, int64_t m, float* out) {
    const float lowest = std::numeric_limits<float>::lowest();
    for (int64_t i = 0; i < m; ++i) {
        const double v = x[i];
        float y;
        if (v < static_cast<double>(lowest)) {
            y = v == -HUGE_VAL ? -HUGE_VALF : lowest;  // below -F32_MAX: -F32_MAX is above it
        } else {
            y = static_cast<float>(v);  // to nearest
            if (static_cast<double>(y) < v) y = std::nextafter(y, HUGE_VALF);
        }
        out[i] = y + 0.0f;
    }
}

}  // namespace mxa
