# Max-plus row maxima of the q-automaton, for arsdecode.inference.incremental_best_values.
#
# For each requested row r: max over columns c of weights[r, c] + values[targets[r, c]], and the
# first column reaching it. The same float64 additions as numpy's `weights[rows] +
# values[targets[rows]]` followed by `argmax(axis=1)`, fused into one pass with no temporaries:
# the values are identical, bit for bit, and so is the column (numpy's argmax keeps the first
# maximum, and returns the first NaN if a row has one).


def best_rows(const double[:, ::1] weights, const int[:, ::1] targets,
              const double[::1] values, const long long[::1] rows):
    """(best (R,) float64, col (R,) int64) of `rows`; see the comment above."""
    cdef Py_ssize_t R = rows.shape[0], W = weights.shape[1], k, c
    cdef long long r, n_values = values.shape[0], n_rows = weights.shape[0]
    cdef double best, s
    cdef long long col
    cdef const double *wrow
    cdef const int *trow
    if targets.shape[0] != n_rows or targets.shape[1] != W or W < 1:
        raise ValueError("best_rows: weights and targets must have the same shape, width >= 1")
    for k in range(R):
        if rows[k] < 0 or rows[k] >= n_rows:
            raise ValueError(f"best_rows: row {rows[k]} out of range")
        for c in range(W):
            if targets[rows[k], c] < 0 or targets[rows[k], c] >= n_values:
                raise ValueError(f"best_rows: target {targets[rows[k], c]} out of range")
    out = np.empty(R, dtype=np.float64)
    out_col = np.empty(R, dtype=np.int64)
    cdef double[::1] ov = out
    cdef long long[::1] oc = out_col
    with nogil:
        for k in range(R):
            r = rows[k]
            wrow = &weights[r, 0]
            trow = &targets[r, 0]
            best = wrow[0] + values[trow[0]]
            col = 0
            if best == best:
                for c in range(1, W):
                    s = wrow[c] + values[trow[c]]
                    if s > best:
                        best = s
                        col = c
                    elif s != s:  # NaN: numpy's argmax stops at the first one
                        best = s
                        col = c
                        break
            ov[k] = best
            oc[k] = col
    return out, out_col
