// maxarpa's compiled text reader and writer (ARPA and MAX-ARPA lines <-> arrays).
//
// Why C++ and not numpy: the per-line work (splitting fields, one vocabulary lookup per word,
// one float per number, one float-to-text per value on writing) cost ~26 s of a 27 s
// conversion of a 5.4M-n-gram file in Python objects (docs/performance.md section 6).
// Here a line is parsed in place, straight into the preallocated result arrays.
//
// The reader follows the one ARPA grammar written down in maxarpa/arpa.py (SPACE, NUMBER_RE,
// MINUS_INFINITY; docs/max-arpa-format.md): ASCII decimal numbers and -inf/-Infinity,
// fields separated by ASCII whitespace, an optional ARPA backoff column. Anything else is a
// failure at a byte offset, and the Python side names the fault (ARPA: the streaming reader,
// which accepts exactly the same lines; MAX-ARPA: the line checker). Header, counts and
// section marks are not parsed here: Python judges them, the same code for both readers.
#pragma once
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace mxa {

inline bool is_space(unsigned char c) {
    // bytes.split()'s whitespace, so the compiled reader splits fields as Python did
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

inline bool equals_lower(const char* b, const char* e, const char* lower) {
    size_t n = std::strlen(lower);
    if (static_cast<size_t>(e - b) != n) return false;
    for (size_t i = 0; i < n; ++i)
        if ((b[i] | 0x20) != lower[i]) return false;
    return true;
}

// A number of the ARPA grammar (maxarpa/arpa.py NUMBER_RE): [+-]?(digits[.digits]|.digits)
// ([eE][+-]?digits)?, or minus infinity spelled -inf or -infinity in any case. False for
// anything else (+inf, nan, 1_0, non-ASCII digits) and for a value beyond float64's range;
// a value below it is 0 (with its sign), as Python's float() reads it.
inline bool parse_number(const char* b, const char* e, double* out) {
    if (equals_lower(b, e, "-inf") || equals_lower(b, e, "-infinity")) {
        *out = -HUGE_VAL;
        return true;
    }
    const char* p = b;
    bool neg = false;
    if (p < e && (*p == '-' || *p == '+')) {
        neg = *p == '-';
        ++p;
    }
    const char* q = p;
    bool digits = false;
    // The decimal exponent of the first nonzero digit, before the e part (to tell an
    // underflow from an overflow below); stays unset while only zeros have been seen.
    bool nonzero = false;
    long lead = 0, int_digits = 0;
    while (q < e && is_digit(*q)) {
        if (!nonzero && *q != '0') { nonzero = true; lead = int_digits; }
        ++int_digits; ++q; digits = true;
    }
    if (nonzero) lead = int_digits - 1 - lead;
    if (q < e && *q == '.') {
        ++q;
        long frac = 0;
        while (q < e && is_digit(*q)) {
            ++frac;
            if (!nonzero && *q != '0') { nonzero = true; lead = -frac; }
            ++q; digits = true;
        }
    }
    if (!digits) return false;
    const char* mantissa_end = q;  // where an exponent part would start
    bool exp_neg = false;
    long exp10 = 0;
    if (q < e && (*q == 'e' || *q == 'E')) {
        ++q;
        if (q < e && (*q == '+' || *q == '-')) exp_neg = *q++ == '-';
        const char* d = q;
        while (q < e && is_digit(*q)) {
            if (exp10 < 100000) exp10 = 10 * exp10 + (*q - '0');  // saturates: far out of range
            ++q;
        }
        if (q == d) return false;
    }
    if (q != e) return false;
    if (mantissa_end == e && e - p <= 16) {  // no exponent part, at most 16 characters
        // Clinger's fast path (issue 34: a fifth of the parse was here): at most 15 digits
        // make an integer m < 2^53 and at most 15 after the point a power 10^f < 2^53, both
        // exact in float64, so m / 10^f is one correctly rounded division: the value
        // from_chars gives, bit for bit (tests/test_maxarpa_native_io.py checks it).
        static const double pow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8,
                                       1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
        uint64_t m = 0;
        int n_digits = 0, frac = -1;
        for (const char* d = p; d < e; ++d) {
            if (*d == '.') { frac = 0; continue; }
            m = 10 * m + static_cast<uint64_t>(*d - '0');
            ++n_digits;
            if (frac >= 0) ++frac;
        }
        if (n_digits <= 15) {
            double value = static_cast<double>(m);
            if (frac > 0) value /= pow10[frac];
            *out = neg ? -value : value;
            return true;
        }
    }
    auto r = std::from_chars(p, e, *out);  // correctly rounded, as Python's float()
    if (r.ec == std::errc::result_out_of_range && r.ptr == e) {
        if (lead + (exp_neg ? -exp10 : exp10) >= 0) return false;  // too large: refused
        *out = 0.0;  // too small: 0, as float() reads it
    } else if (r.ec != std::errc() || r.ptr != e) {
        return false;
    }
    if (neg) *out = -*out;
    return true;
}

// The words of the 1-gram section, in file order; id = position. An open-addressing table
// over one byte arena: a lookup is one short hash and usually one memcmp (std::unordered_map
// took about a third of a parse).
struct Vocab {
    std::string arena;                  // every word's bytes, back to back
    std::vector<uint64_t> offsets{0};   // word i is arena[offsets[i], offsets[i + 1])
    std::vector<uint64_t> hashes;       // hash of word i
    std::vector<int32_t> slots = std::vector<int32_t>(1024, -1);  // word ids, -1 = empty

    static uint64_t hash(std::string_view w) {  // FNV-1a, then a final mix of the high bits
        uint64_t h = 0xcbf29ce484222325ULL;
        for (unsigned char c : w) h = (h ^ c) * 0x100000001b3ULL;
        return h ^ (h >> 29);
    }
    size_t size() const { return hashes.size(); }
    std::string word(size_t i) const {
        return arena.substr(offsets[i], offsets[i + 1] - offsets[i]);
    }
    bool equals(int32_t id, std::string_view w) const {
        uint64_t lo = offsets[id], n = offsets[id + 1] - lo;
        return n == w.size() && std::memcmp(arena.data() + lo, w.data(), n) == 0;
    }
    // The slot holding w, or the empty slot where it would go.
    size_t probe(std::string_view w, uint64_t h) const {
        const size_t mask = slots.size() - 1;
        size_t i = h & mask;
        while (slots[i] >= 0 && !(hashes[slots[i]] == h && equals(slots[i], w))) i = (i + 1) & mask;
        return i;
    }
    int32_t find(std::string_view w) const { return slots[probe(w, hash(w))]; }
    // The new word's id, or -1 if it is already there.
    int32_t add(std::string_view w) {
        uint64_t h = hash(w);
        size_t i = probe(w, h);
        if (slots[i] >= 0) return -1;
        int32_t id = static_cast<int32_t>(hashes.size());
        arena.append(w.data(), w.size());
        offsets.push_back(arena.size());
        hashes.push_back(h);
        slots[i] = id;
        if (2 * hashes.size() > slots.size()) {  // keep the load at most 1/2
            std::vector<int32_t> bigger(2 * slots.size(), -1);
            const size_t mask = bigger.size() - 1;
            for (size_t j = 0; j < hashes.size(); ++j) {
                size_t k = hashes[j] & mask;
                while (bigger[k] >= 0) k = (k + 1) & mask;
                bigger[k] = static_cast<int32_t>(j);
            }
            slots.swap(bigger);
        }
        return id;
    }
};

// Where the lines of one section go. ARPA: values[0] = log10 p, values[1] = backoff (0 when
// the column is missing). MAX-ARPA: values[0..3] = log10 p, backoff, mf, mbow, all required.
struct Section {
    int k = 1;
    bool max_arpa = false;
    bool defines_vocab = false;  // the 1-gram section: each word is new, id = its row
    int32_t* ids = nullptr;      // rows x k, oldest word first
    double* values[4] = {nullptr, nullptr, nullptr, nullptr};
    int64_t capacity = 0;        // rows the header announced
    int64_t filled = 0;
    int64_t lines = 0;  // every line parse_lines consumed, blank ones too, in every section
    // Keyed (ARPA only, maxarpa.keyed): instead of word rows, each line's table key (row of
    // its suffix one order down * V + first word) goes to keys[row], the suffix found by one
    // forward cursor per lower order over that order's sorted keys (lower_keys[j], j >= 2;
    // order 1's key is the word id). Valid only while the lines come in key order, each
    // suffix listed: the first line that breaks this stops the parse (DECLINED).
    bool keyed = false;
    bool zeroed = false;  // values[1] starts all zero: a missing backoff is not written
                          // (pages never written stay unallocated: the highest order's)
    uint64_t* keys = nullptr;
    std::vector<const uint64_t*> lower_keys;  // [j]: order j's keys, j = 2..k-1
    std::vector<int64_t> lower_len;
    std::vector<int64_t> cursor;
};

enum Status { NEED_MORE = 0, AT_MARK = 1, FAILED = 2, DECLINED = 3 };

struct Result {
    int status;
    int64_t pos;  // NEED_MORE: first unparsed byte; AT_MARK: the mark line; FAILED: the bad line
};

// The row one order down of a keyed section's line's suffix (words w[1..k-1], oldest first;
// its key is that row * V + w[0]), or false when the suffix is not where the forward
// cursors can find it (the lines are out of key order, or a suffix is not listed): a lower
// order's index of w[k-j..k-1] never decreases from one line to the next when the lines are
// sorted by key, which is their reversed-word order.
inline bool suffix_row(Section& s, const int32_t* w, uint64_t vocab_size, uint64_t* row) {
    const int k = s.k;
    uint64_t c = static_cast<uint64_t>(w[k - 1]);  // order 1: the word id is the row
    for (int j = 2; j < k; ++j) {
        const uint64_t target = c * vocab_size + static_cast<uint64_t>(w[k - j]);
        const uint64_t* keys = s.lower_keys[j];
        const int64_t n = s.lower_len[j];
        int64_t p = s.cursor[j];
        while (p < n && keys[p] < target) ++p;
        s.cursor[j] = p;
        if (p == n || keys[p] != target) return false;
        c = static_cast<uint64_t>(p);
    }
    *row = c;
    return true;
}

// Parse the complete lines of buf[pos, len) into the section, up to a line whose first non-blank
// byte is a backslash (a section mark, left to the caller) or the last newline.
inline Result parse_lines(const char* buf, int64_t len, int64_t pos, Section& s, Vocab& v) {
    const int max_fields = s.k + 4;
    std::vector<const char*> fb(max_fields), fe(max_fields);
    std::vector<int32_t> words(s.k);  // a keyed line's ids (no rows are stored)
    // The previous line's words and ids, by position: a sorted file repeats most of them
    // (lmplz's the last words, SRILM's the first), and comparing bytes is cheaper than hashing.
    std::vector<std::string_view> prev_word(s.k);
    std::vector<int32_t> prev_id(s.k, -1);
    const bool keyed = s.keyed && !s.defines_vocab;
    const uint64_t vocab_size = v.size();
    // Keyed: the previous line's suffix bytes (words 2..k with their separators) and its row.
    // In key order most lines share their suffix with the line before (a context's children
    // are adjacent), and then only the first word is looked up.
    const char* prev_suffix = nullptr;
    size_t prev_suffix_len = static_cast<size_t>(-1);
    uint64_t prev_row = 0;
    while (pos < len) {
        const char* line = buf + pos;
        const char* nl = static_cast<const char*>(std::memchr(line, '\n', len - pos));
        if (nl == nullptr) return {NEED_MORE, pos};
        int nf = 0;
        const char* p = line;
        while (true) {
            while (p < nl && is_space(*p)) ++p;
            if (p == nl) break;
            if (nf == 0 && *p == '\\') return {AT_MARK, pos};  // a section mark
            if (nf == max_fields) return {FAILED, pos};
            fb[nf] = p;
            while (p < nl && !is_space(*p)) ++p;
            fe[nf++] = p;
        }
        int64_t next = nl - buf + 1;
        if (nf == 0) {  // a blank line
            pos = next;
            ++s.lines;
            continue;
        }
        const int k = s.k;
        bool ok_width = s.max_arpa ? nf == k + 4 : (nf == k + 1 || nf == k + 2);
        if (!ok_width || s.filled == s.capacity) return {FAILED, pos};
        const int64_t row = s.filled;
        if (!parse_number(fb[0], fe[0], &s.values[0][row])) return {FAILED, pos};
        if (s.max_arpa) {
            for (int c = 1; c < 4; ++c)
                if (!parse_number(fb[k + c], fe[k + c], &s.values[c][row])) return {FAILED, pos};
        } else if (nf == k + 2) {
            if (!parse_number(fb[k + 1], fe[k + 1], &s.values[1][row])) return {FAILED, pos};
        } else if (!s.zeroed) {
            s.values[1][row] = 0.0;
        }
        int32_t* out = keyed ? words.data() : s.ids + row * k;
        int looked_up = k;  // the words to look up: all, or the first when the suffix repeats
        size_t suffix_len = 0;
        if (keyed) {
            suffix_len = static_cast<size_t>(fe[k] - fb[2]);
            if (suffix_len == prev_suffix_len && std::memcmp(fb[2], prev_suffix, suffix_len) == 0)
                looked_up = 1;
        }
        for (int j = 0; j < looked_up; ++j) {
            std::string_view w(fb[1 + j], fe[1 + j] - fb[1 + j]);
            int32_t id;
            if (s.defines_vocab) {
                id = v.add(w);
            } else if (prev_id[j] >= 0 && prev_word[j] == w) {
                id = prev_id[j];
            } else {
                id = v.find(w);
                prev_word[j] = w;
                prev_id[j] = id;
            }
            if (id < 0 || (s.defines_vocab && id != row)) return {FAILED, pos};
            out[j] = id;
        }
        if (keyed) {
            if (looked_up == k) {  // a new suffix: its row from the cursors
                if (!suffix_row(s, out, vocab_size, &prev_row)) return {DECLINED, pos};
                prev_suffix = fb[2];
                prev_suffix_len = suffix_len;
            }
            const uint64_t key = prev_row * vocab_size + static_cast<uint64_t>(out[0]);
            if (row > 0 && key <= s.keys[row - 1]) return {DECLINED, pos};
            s.keys[row] = key;
        } else if (s.keyed) {
            s.keys[row] = static_cast<uint64_t>(row);  // order 1: the key is the word id
        }
        s.filled = row + 1;
        ++s.lines;
        pos = next;
    }
    return {NEED_MORE, pos};
}

// Python's repr() of a float64 (the shortest text that reads back to the same value, laid
// out as Python does), with maxarpa's two special cases: 0 (either sign) is "0", -inf "-inf".
inline void append_log10(std::string& out, double v) {
    if (v == 0.0) { out += '0'; return; }
    if (std::isinf(v)) { out += v < 0 ? "-inf" : "inf"; return; }
    if (std::isnan(v)) { out += "nan"; return; }
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    *r.ptr = '\0';
    const char* p = buf;
    if (*p == '-') { out += '-'; ++p; }
    char digits[32];
    int nd = 0;
    digits[nd++] = *p++;
    if (*p == '.') {
        ++p;
        while (*p != 'e') digits[nd++] = *p++;
    }
    int exp10 = std::atoi(p + 1);  // after the 'e'; handles the sign
    int decpt = exp10 + 1;          // value = 0.DIGITS x 10^decpt
    if (decpt <= -4 || decpt > 16) {  // Python's 'r' format switches to an exponent here
        out += digits[0];
        if (nd > 1) {
            out += '.';
            out.append(digits + 1, nd - 1);
        }
        out += 'e';
        out += exp10 < 0 ? '-' : '+';
        int a = exp10 < 0 ? -exp10 : exp10;
        if (a < 10) out += '0';
        out += std::to_string(a);
    } else if (decpt <= 0) {
        out += "0.";
        out.append(-decpt, '0');
        out.append(digits, nd);
    } else if (decpt < nd) {
        out.append(digits, decpt);
        out += '.';
        out.append(digits + decpt, nd - decpt);
    } else {
        out.append(digits, nd);
        out.append(decpt - nd, '0');
        out += ".0";
    }
}

// One order of the table, for writing: a node's words are its first word followed by the
// words of its parent one order down (parent = key / V).
struct OrderView {
    const uint64_t* keys = nullptr;
    const int32_t* first = nullptr;
    int64_t first_stride = 1;  // rows[:, 0] is a strided column of the (m, k) rows
};

inline void append_words(std::string& out, const OrderView* orders, int k, int64_t i,
                         uint64_t vocab_size, const char* blob, const int64_t* offsets) {
    for (int order = k; order >= 1; --order) {
        const OrderView& o = orders[order - 1];
        int32_t w = o.first[i * o.first_stride];
        out.append(blob + offsets[w], offsets[w + 1] - offsets[w]);
        if (order > 1) {
            out += ' ';
            i = static_cast<int64_t>(o.keys[i] / vocab_size);
        }
    }
}

// The parent row (one order down) of each order-k row, when the rows are in the order
// MAX-ARPA writes them (sorted by key, so parents never decrease): one forward scan of the
// rows below, O(m + m_below) with no hashing. Returns -1, or the first row for which the scan
// fails (the rows are in another order, or a suffix is missing): the caller looks those up.
inline int64_t scan_parents(const int32_t* rows, int64_t m, int k, const int32_t* below,
                            int64_t m_below, int64_t* parent) {
    int64_t p = 0;
    const size_t width = sizeof(int32_t) * (k - 1);
    for (int64_t i = 0; i < m; ++i) {
        const int32_t* suffix = rows + i * k + 1;
        while (p < m_below && std::memcmp(below + p * (k - 1), suffix, width) != 0) ++p;
        if (p == m_below) return i;
        parent[i] = p;
    }
    return -1;
}

}  // namespace mxa
