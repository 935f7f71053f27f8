# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# distutils: language = c++
"""maxarpa's compiled text I/O: ARPA and MAX-ARPA lines parsed into arrays, and MAX-ARPA
lines formatted from arrays. The line grammar lives in textio.hpp; this module only passes
buffers and arrays across. `maxarpa.native` documents the calling convention."""

from libc.stdint cimport int32_t, int64_t, uint64_t
from libcpp.string cimport string
from libcpp.vector cimport vector

import numpy as np


cdef extern from "textio.hpp" namespace "mxa" nogil:
    cdef cppclass Vocab:
        size_t size() const
        string word(size_t i) const

    cdef cppclass Section:
        int k
        bint max_arpa
        bint defines_vocab
        int32_t* ids
        double* values[4]
        int64_t capacity
        int64_t filled
        int64_t lines
        bint keyed
        bint zeroed
        uint64_t* keys
        vector[const uint64_t*] lower_keys
        vector[int64_t] lower_len
        vector[int64_t] cursor

    cdef struct Result:
        int status
        int64_t pos

    Result parse_lines(const char* buf, int64_t length, int64_t pos, Section& s, Vocab& v)
    void append_log10(string& out, double v)

    cdef cppclass OrderView:
        const uint64_t* keys
        const int32_t* first
        int64_t first_stride

    int64_t scan_parents(const int32_t* rows, int64_t m, int k, const int32_t* below,
                         int64_t m_below, int64_t* parent)

    void append_words(string& out, const OrderView* orders, int k, int64_t i,
                      uint64_t vocab_size, const char* blob, const int64_t* offsets)


NEED_MORE = 0
AT_MARK = 1
FAILED = 2
DECLINED = 3


cdef class LineParser:
    """Parses the n-gram lines of one file, section by section, into caller-owned arrays.

    The vocabulary is built by the 1-gram section (word id = line order) and used by the
    sections after it, so one parser reads one file.
    """

    cdef Vocab vocab
    cdef Section section
    cdef object arrays  # the current section's arrays, kept alive while parsed into

    def start(self, int k, bint max_arpa, int32_t[:, ::1] ids, list values, keys=None,
              list lower=None):
        """Parse the next lines into `ids` (m, k) and `values` (2 float64 arrays for ARPA:
        log10 p, backoff; 4 for MAX-ARPA: log10 p, backoff, mf, mbow), from row 0.

        Keyed (ARPA, `keys` a uint64 array of m rows, `lower` the keys of orders 1..k-1,
        the backoff array all zeros, as np.zeros makes it, so a missing backoff is not written):
        each line's table key goes to `keys` instead of its words to `ids` (which order 1
        still fills; above it, `ids` may have no rows), and a line out of key order or whose
        suffix is not listed stops the parse with DECLINED (textio.hpp, line_key)."""
        cdef double[::1] column
        cdef uint64_t[::1] key_column
        cdef const uint64_t[::1] below
        if len(values) != (4 if max_arpa else 2) or (keys is None and (
                ids.shape[1] != k or ids.shape[0] != len(values[0]))):
            raise ValueError("LineParser.start: arrays do not match the section")
        self.arrays = (ids, values, keys, lower)
        self.section.keyed = keys is not None
        self.section.zeroed = keys is not None  # keyed: the caller passes np.zeros backoffs
        self.section.keys = NULL
        self.section.lower_keys.clear()
        self.section.lower_len.clear()
        self.section.cursor.assign(k + 1, 0)
        if keys is not None:
            key_column = keys
            if max_arpa or key_column.shape[0] != len(values[0]) or lower is None or len(
                    lower) != k - 1 or (k == 1 and ids.shape[0] != key_column.shape[0]):
                raise ValueError("LineParser.start: keyed arrays do not match the section")
            self.section.keys = &key_column[0] if key_column.shape[0] else NULL
            self.section.lower_keys.assign(k + 1, NULL)
            self.section.lower_len.assign(k + 1, 0)
            for j in range(2, k):
                below = lower[j - 1]
                self.section.lower_keys[j] = &below[0] if below.shape[0] else NULL
                self.section.lower_len[j] = below.shape[0]
        self.section.k = k
        self.section.max_arpa = max_arpa
        self.section.defines_vocab = k == 1
        self.section.capacity = len(values[0])
        self.section.filled = 0
        self.section.ids = &ids[0, 0] if ids.shape[0] and ids.shape[1] else NULL
        for c in range(4):
            self.section.values[c] = NULL
        for c, array in enumerate(values):
            column = array
            if column.shape[0] != self.section.capacity:
                raise ValueError("LineParser.start: value arrays do not match the rows")
            self.section.values[c] = &column[0] if column.shape[0] else NULL

    def parse(self, const unsigned char[::1] buf, Py_ssize_t pos):
        """Parse complete lines from `pos`: (status, offset). NEED_MORE: every complete line
        was parsed, `offset` is the first byte of the unfinished one; AT_MARK: `offset` is a
        line whose first non-blank byte is a backslash (a mark); FAILED: `offset` is the
        first bad line."""
        cdef Result r
        cdef int64_t length = buf.shape[0]
        if pos >= length:
            return NEED_MORE, pos
        with nogil:
            r = parse_lines(<const char*>&buf[0], length, pos, self.section, self.vocab)
        return r.status, r.pos

    @property
    def lines(self) -> int:
        """Lines consumed by `parse` so far, in every section (blank lines too, marks not)."""
        return self.section.lines

    @property
    def filled(self) -> int:
        """Rows of the current section parsed so far."""
        return self.section.filled

    def words(self) -> list:
        """The vocabulary (bytes), in id order."""
        return [self.vocab.word(i) for i in range(self.vocab.size())]


def format_lines(int k, list keys, list firsts, uint64_t vocab_size, const unsigned char[::1] blob,
                 const int64_t[::1] offsets, const int64_t[::1] sel, const double[::1] log10p,
                 const double[::1] log10bow, const double[::1] mf, const double[::1] mbow):
    """The MAX-ARPA lines (bytes) of the order-k nodes `sel`: "p<TAB>words<TAB>bow<TAB>mf<TAB>mbow".

    keys[j], firsts[j]: the key array and the first-word column of order j+1, for j < k
    (a node's words are its first word, then its parent's words, parent = key // V).
    blob, offsets: the vocabulary's bytes, word w at blob[offsets[w]:offsets[w+1]].
    Numbers are laid out as Python's repr (0 and -inf as "0" and "-inf"), so the output is
    byte for byte what the Python writer produced.
    """
    cdef vector[OrderView] views
    cdef OrderView view
    cdef const uint64_t[::1] key_column
    cdef const int32_t[:] first_column
    cdef list kept = []
    for j in range(k):
        key_column = keys[j]
        first_column = firsts[j]
        kept.append((key_column, first_column))
        view.keys = &key_column[0] if key_column.shape[0] else NULL
        view.first = &first_column[0] if first_column.shape[0] else NULL
        view.first_stride = first_column.strides[0] // sizeof(int32_t)
        views.push_back(view)
    cdef string out
    cdef Py_ssize_t m = sel.shape[0], j2
    cdef int64_t i
    cdef const char* words = <const char*>&blob[0] if blob.shape[0] else NULL
    with nogil:
        out.reserve(m * (24 + 16 * k))
        for j2 in range(m):
            i = sel[j2]
            append_log10(out, log10p[i])
            out.push_back(b'\t')
            append_words(out, views.data(), k, i, vocab_size, words, &offsets[0])
            out.push_back(b'\t')
            append_log10(out, log10bow[i])
            out.push_back(b'\t')
            append_log10(out, mf[i])
            out.push_back(b'\t')
            append_log10(out, mbow[i])
            out.push_back(b'\n')
    return <bytes>out


def repr_log10(double value) -> bytes:
    """One value as format_lines writes it (for tests against Python's repr)."""
    cdef string out
    append_log10(out, value)
    return <bytes>out


def parents_in_order(const int32_t[:, ::1] rows, const int32_t[:, ::1] below):
    """The row in `below` (m', k-1) of each row's suffix rows[i, 1:], found by one forward
    scan, which works when `rows` are in MAX-ARPA's written order; None when they are not
    (or a suffix is missing), and the caller looks the suffixes up instead."""
    cdef Py_ssize_t m = rows.shape[0]
    cdef int k = <int>rows.shape[1]
    if k < 2 or below.shape[1] != k - 1:
        raise ValueError("parents_in_order: rows must be (m, k) and below (m', k-1)")
    parent = np.empty(m, dtype=np.int64)
    if m == 0:
        return parent
    if below.shape[0] == 0:
        return None
    cdef int64_t[::1] out = parent
    cdef int64_t failed
    with nogil:
        failed = scan_parents(&rows[0, 0], m, k, &below[0, 0], below.shape[0], &out[0])
    return parent if failed < 0 else None


cdef extern from "tablewalk.hpp" namespace "mxa" nogil:
    bint c_prefix_rows "mxa::prefix_rows"(const uint64_t* keys, int64_t m,
                                          const uint64_t* keys_below, int64_t m_below,
                                          const int32_t* below, int64_t m_below2, uint64_t v,
                                          int32_t* out)
    int64_t c_first_occurrences "mxa::first_occurrences"(const int32_t* values, int64_t n,
                                                         int64_t size, int32_t* out)
    bint c_children_max "mxa::children_max"[A, B](const uint64_t* keys, int64_t m, uint64_t v,
                                                  int64_t m_below, const A* a, double* out_a,
                                                  const B* b, double* out_b)
    void c_round_up_f32 "mxa::round_up_f32"(const double* x, int64_t m, float* out)
    bint c_level_keys "mxa::level_keys"(const int32_t* members, int64_t n, int j,
                                        const uint64_t* const* keys, const int64_t* sizes,
                                        uint64_t v, const int32_t* prefix,
                                        const int32_t* gid_of, int64_t gid_size,
                                        uint64_t* out)

ctypedef fused bound_t:
    float
    double


def prefix_rows_sorted(const uint64_t[::1] keys, const uint64_t[::1] keys_below,
                       const int32_t[::1] below, int64_t m_below2, uint64_t vocab_size):
    """For each order-k node (k >= 3; `keys`), the int32 order-(k-1) row of its prefix, or -1
    (maxarpa.keywalk.prefix_rows; `below` is that array for order k-1, `m_below2` the node
    count of order k-2). ValueError on keys that name rows that do not exist."""
    cdef int64_t m = keys.shape[0]
    if below.shape[0] != keys_below.shape[0] or vocab_size == 0:
        raise ValueError("prefix_rows_sorted: arrays do not match")
    rows = np.empty(m, dtype=np.int32)
    cdef int32_t[::1] out = rows
    cdef bint ok
    cdef uint64_t dummy_key = 0
    cdef int32_t dummy_row = 0
    with nogil:
        ok = c_prefix_rows(&keys[0] if m else &dummy_key, m,
                           &keys_below[0] if keys_below.shape[0] else &dummy_key,
                           keys_below.shape[0],
                           &below[0] if below.shape[0] else &dummy_row, m_below2, vocab_size,
                           &out[0] if m else &dummy_row)
    if not ok:
        raise ValueError("prefix_rows_sorted: a key names a row that does not exist")
    return rows


def first_occurrences(const int32_t[::1] values, int64_t size):
    """The distinct values of `values` (ints in [0, size)) in order of first occurrence, as
    int32. ValueError on a value out of range."""
    out = np.empty(values.shape[0], dtype=np.int32)
    cdef int32_t[::1] view = out
    cdef int64_t count
    cdef int32_t dummy = 0
    with nogil:
        count = c_first_occurrences(&values[0] if values.shape[0] else &dummy,
                                    values.shape[0], size,
                                    &view[0] if values.shape[0] else &dummy)
    if count < 0:
        raise ValueError("first_occurrences: a value out of range")
    return out[:count].copy()


def children_max_sorted(const uint64_t[::1] keys, uint64_t vocab_size, int64_t m_below,
                        const bound_t[::1] a, const bound_t[::1] b=None):
    """The max of `a` (and of `b`) over each order-(k-1) node's children (the order-k nodes
    whose key // V is it), -inf where it has none, as float64 arrays of `m_below` values:
    maxarpa.bound.children_max without its temporaries (issue 34). ValueError on a key whose
    parent is past `m_below`."""
    cdef int64_t m = keys.shape[0]
    if a.shape[0] != m or (b is not None and b.shape[0] != m) or vocab_size == 0:
        raise ValueError("children_max_sorted: arrays do not match")
    out_a = np.full(m_below, -np.inf)
    out_b = np.full(m_below, -np.inf) if b is not None else None
    cdef double[::1] va = out_a
    cdef double[::1] vb
    cdef double* pb = NULL
    cdef const bound_t* bb = NULL
    if b is not None:
        vb = out_b
        if m_below:
            pb = &vb[0]
        if m:
            bb = &b[0]
    cdef bint ok = True
    if m:
        with nogil:
            ok = c_children_max(&keys[0], m, vocab_size, m_below, &a[0],
                                &va[0] if m_below else NULL, bb, pb)
    if not ok:
        raise ValueError("children_max_sorted: a key names a parent that does not exist")
    return (out_a, out_b) if b is not None else out_a


def round_up_f32_array(const double[::1] x):
    """The smallest float32 >= each value (see maxarpa.compact.round_up_f32, which checks the
    range first)."""
    out = np.empty(x.shape[0], dtype=np.float32)
    cdef float[::1] view = out
    if x.shape[0]:
        with nogil:
            c_round_up_f32(&x[0], x.shape[0], &view[0])
    return out


def level_keys(const int32_t[::1] members, list keys, uint64_t vocab_size,
               const int32_t[::1] prefix, const int32_t[::1] gid_of, uint64_t[::1] out):
    """The useful-context keys of the order-j nodes `members` (j = len(keys), keys[o] the
    keys of order o+1) into `out`: gid_of[prefix[i]] * V + the node's last word (prefix and
    gid_of unused when j == 1). ValueError on an index out of range or a prefix without a
    gid."""
    cdef int j = len(keys)
    cdef int64_t n = members.shape[0]
    if out.shape[0] != n or (j > 1 and prefix.shape[0] != n) or vocab_size == 0 or j < 1:
        raise ValueError("level_keys: arrays do not match")
    cdef vector[const uint64_t*] pointers
    cdef vector[int64_t] sizes
    cdef const uint64_t[::1] column
    cdef list kept = []
    for o in range(j):
        column = keys[o]
        kept.append(column)
        pointers.push_back(&column[0] if column.shape[0] else NULL)
        sizes.push_back(column.shape[0])
    cdef int32_t dummy = 0
    cdef bint ok = True
    if n:
        with nogil:
            ok = c_level_keys(&members[0], n, j, pointers.data(), sizes.data(), vocab_size,
                              &prefix[0] if j > 1 else &dummy,
                              &gid_of[0] if gid_of.shape[0] else &dummy, gid_of.shape[0],
                              &out[0])
    if not ok:
        raise ValueError("level_keys: an index out of range or a prefix without a gid")
