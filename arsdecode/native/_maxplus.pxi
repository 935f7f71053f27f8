# Max-plus row maxima of the q-automaton, for arsdecode.inference.incremental_best_values.
#
# For each requested row r: max over columns c of weights[r, c] + values[targets[r, c]], and the
# first column reaching it. The same float64 additions as numpy's `weights[rows] +
# values[targets[rows]]` followed by `argmax(axis=1)`, fused into one pass with no temporaries:
# the values are identical, bit for bit, and so is the column (numpy's argmax keeps the first
# maximum, and returns the first NaN if a row has one).


def best_rows(const double[:, ::1] weights, const int[:, ::1] targets,
              const double[::1] values, const long long[::1] rows, const long long[::1] cols):
    """(best (R,) float64, col (R,) int64, second (R,) float64) of `rows`, scanning only the
    columns `cols` (ascending; the others must be -inf, pruned candidates). See the comment
    above: a pruned column can never be the first maximum unless the row is all -inf, where
    numpy's argmax answers column 0, and so does this. `second` is the maximum over the other
    columns (equal to `best` on a tie; -inf with a single column)."""
    cdef Py_ssize_t R = rows.shape[0], W = weights.shape[1], C = cols.shape[0], k, c
    cdef long long r, n_values = values.shape[0], n_rows = weights.shape[0], j
    cdef double best, s, second
    cdef long long col
    cdef const double *wrow
    cdef const int *trow
    if targets.shape[0] != n_rows or targets.shape[1] != W:
        raise ValueError("best_rows: weights and targets must have the same shape")
    for c in range(C):
        if cols[c] < 0 or cols[c] >= W or (c and cols[c] <= cols[c - 1]):
            raise ValueError("best_rows: cols must ascend within the row width")
    for k in range(R):
        if rows[k] < 0 or rows[k] >= n_rows:
            raise ValueError(f"best_rows: row {rows[k]} out of range")
        for c in range(C):
            j = targets[rows[k], cols[c]]
            if j < 0 or j >= n_values:
                raise ValueError(f"best_rows: target {j} out of range")
    out = np.empty(R, dtype=np.float64)
    out_col = np.empty(R, dtype=np.int64)
    out_second = np.empty(R, dtype=np.float64)
    cdef double[::1] ov = out
    cdef long long[::1] oc = out_col
    cdef double[::1] os = out_second
    with nogil:
        for k in range(R):
            r = rows[k]
            wrow = &weights[r, 0]
            trow = &targets[r, 0]
            best = -INFINITY
            second = -INFINITY
            col = 0
            for c in range(C):
                j = cols[c]
                s = wrow[j] + values[trow[j]]
                if s > best:
                    second = best
                    best = s
                    col = j
                elif s != s:  # NaN: numpy's argmax stops at the first one
                    best = s
                    second = s
                    col = j
                    break
                elif s > second:
                    second = s
            ov[k] = best
            oc[k] = col
            os[k] = second
    return out, out_col, out_second
