# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# distutils: language = c++
"""arsdecode's compiled core: the batched n-gram walk and the merged full-model DP.

Plain functions on arrays; arsdecode/native/__init__.py builds the tables from a maxarpa model.
Natural log throughout (the tables are converted from log10 once, by the wrapper).
"""

import numpy as np

from arsdecode.errors import LatticeError, ModelError, OptionError

include "_ngram.pxi"
include "_fulldp.pxi"
include "_maxplus.pxi"
include "_graph.pxi"

cdef long long DENSE_MAX_VOCAB = 4096  # dense transition rows up to this vocabulary size
cdef long long SHORTCUT_MIN_RUN = 32  # rows of one context before walk's unigram shortcut

MAX_ORDER = NG_MAX_ORDER  # the highest model order NgramCore takes (see _ngram.pxi)


cdef class NgramCore:
    """The tables of one n-gram model; `walk` answers a batch of (context, word) rows."""

    cdef NgramTables t
    cdef readonly object arrays  # keeps the buffers alive
    cdef vector[long long] next_off  # bigram successors: word x's are next_word[next_off[x]:..]
    cdef vector[int] next_word
    cdef readonly long long shortcut_rows  # rows walk answered by the unigram shortcut

    def __init__(self, int order, long long vocab, long long[::1] node_off,
                 unsigned long long[::1] keys, int[::1] slots, long long[::1] slot_off,
                 int[::1] bits, double[::1] lp, double[::1] lbow, double[::1] lmf,
                 double[::1] lmbow):
        if not 1 <= order <= NG_MAX_ORDER:
            raise ModelError(f"order {order} is above the compiled core's maximum of "
                             f"{NG_MAX_ORDER}" if order > 0 else f"order {order} is not positive")
        if node_off.shape[0] != order + 1 or slot_off.shape[0] != order + 1 \
                or bits.shape[0] != order:
            raise ModelError("NgramCore: offset arrays do not match the order")
        n = node_off[order]
        if not (keys.shape[0] == lp.shape[0] == lbow.shape[0] == lmf.shape[0]
                == lmbow.shape[0] == n) or slots.shape[0] != slot_off[order]:
            raise ModelError("NgramCore: value arrays do not match the offsets")
        _check_ngram_tables(order, vocab, node_off, keys, slots, slot_off, bits)
        self.arrays = (node_off, keys, slots, slot_off, bits, lp, lbow, lmf, lmbow)
        self.t.order = order
        self.t.vocab = vocab
        self.t.node_off = &node_off[0]
        self.t.keys = &keys[0] if n else NULL
        self.t.slots = &slots[0] if slots.shape[0] else NULL
        self.t.slot_off = &slot_off[0]
        self.t.bits = &bits[0]
        self.t.lp = &lp[0] if n else NULL
        self.t.lbow = &lbow[0] if n else NULL
        self.t.lmf = &lmf[0] if n else NULL
        self.t.lmbow = &lmbow[0] if n else NULL
        self._index_successors()

    cdef void _index_successors(self):
        """Group the bigram nodes x.w by their first word x (a counting sort of the keys,
        key = w * V + x): which words can follow x, for walk's unigram shortcut."""
        cdef long long V = self.t.vocab, lo, hi, i, x
        cdef unsigned long long key
        self.next_off.assign(V + 1, 0)
        if self.t.order < 2:
            return
        lo = self.t.node_off[1]
        hi = self.t.node_off[2]
        self.next_word.assign(hi - lo, 0)
        cdef vector[long long] fill
        fill.assign(V, 0)
        with nogil:
            for i in range(lo, hi):
                self.next_off[<long long>(self.t.keys[i] % <unsigned long long>V) + 1] += 1
            for x in range(V):
                self.next_off[x + 1] += self.next_off[x]
                fill[x] = self.next_off[x]
            for i in range(lo, hi):
                key = self.t.keys[i]
                x = <long long>(key % <unsigned long long>V)
                self.next_word[fill[x]] = <int>(key // <unsigned long long>V)
                fill[x] += 1

    @property
    def order(self) -> int:
        return self.t.order

    def walk(self, const long long[:, ::1] contexts, const long long[::1] words, bint want_max):
        """ln p (or the ln max-backoff bound) of each row; contexts (B, k) left-padded with -1.

        Every word id must be in [0, V) and every context id that is read (the last n - 1
        columns) below V, a negative one being padding: the walk indexes the tables with them
        without bounds checks, so they are checked before use (OptionError). The words before
        the GIL is released; a context once per run of rows that share it, where the walk
        meets it (on the batches of one context the q-automaton asks for, a separate pass
        over every row cost up to a fifth of the walk), stopping there and raising after.
        """
        cdef Py_ssize_t b = words.shape[0], i
        cdef int width = <int>contexts.shape[1]
        cdef long long V = self.t.vocab, rows_shortcut = 0
        if contexts.shape[0] != b:
            raise OptionError("contexts must be (B, k) with one row per word")
        out = np.empty(b, dtype=np.float64)
        cdef double[::1] o = out
        cdef long long dummy = -1
        cdef const long long *row
        # Rows with the context of the row before (a state's whole row of candidates, as the
        # q-automaton asks) reuse its context walk: same numbers, about half the probes.
        # A long run of one context takes the unigram shortcut: a word w that cannot follow
        # the context's last word x (no bigram x.w) matches only its unigram in walk A, so its
        # answer is ng_walk_in's own formula with matched = 0, from the unigram's ln p and
        # the context's backoff sum, added in the same order (bit-identical); only x's
        # successors take the walk. On a 54k vocabulary most candidates are not successors.
        cdef int w = width if width <= self.t.order - 1 else self.t.order - 1
        cdef int shift = width - w, ctx_len = 0, ctx_depth = 0, j
        cdef long long ctx_node = -1, run_end = 0, x, k, word, shortcut_start = -1
        cdef double bows[NG_MAX_ORDER]
        cdef long long bad_row = -1  # a row whose context holds an id >= V (see below)
        for i in range(b):
            if words[i] < 0 or words[i] >= V:
                raise OptionError(f"word id {words[i]} out of range (vocabulary of {V})")
        cdef double bow_sum0 = 0.0, extra = 0.0
        cdef bint same, shortcut = False
        cdef vector[long long] stamp
        if self.t.order >= 2 and b >= SHORTCUT_MIN_RUN:
            stamp.assign(self.t.vocab, -1)
        with nogil:
            for i in range(b):
                row = (&contexts[i, 0] + shift) if w else &dummy
                same = i > 0 and i < run_end
                if not same:
                    run_end = i + 1
                    while run_end < b and w:
                        for j in range(w):
                            if contexts[run_end, shift + j] != contexts[i, shift + j]:
                                break
                        else:
                            run_end += 1
                            continue
                        break
                    if not w:
                        run_end = b
                    for j in range(w):
                        if row[j] >= V:
                            bad_row = i
                    if bad_row >= 0:
                        break
                    ctx_depth = ng_context(&self.t, row, w, &ctx_len, bows, &ctx_node)
                    shortcut = False
                    if ctx_len >= 1 and stamp.size() and run_end - i >= SHORTCUT_MIN_RUN:
                        x = row[w - 1]
                        if x >= 0 and self.next_off[x + 1] - self.next_off[x] <= 8 * (run_end - i):
                            shortcut = True
                            for k in range(self.next_off[x], self.next_off[x + 1]):
                                stamp[self.next_word[k]] = i
                            bow_sum0 = 0.0
                            for j in range(1, ctx_depth + 1):
                                bow_sum0 += bows[j - 1]
                            extra = 0.0
                            if ctx_depth == ctx_len and ctx_len <= self.t.order - 1:
                                extra = (self.t.lmbow[self.t.node_off[ctx_len - 1] + ctx_node]
                                         - self.t.lbow[self.t.node_off[ctx_len - 1] + ctx_node])
                            shortcut_start = i
                word = words[i]
                if shortcut and stamp[word] != shortcut_start:
                    rows_shortcut += 1
                    o[i] = self.t.lp[word] + bow_sum0
                    if want_max:
                        o[i] = o[i] + extra
                else:
                    o[i] = ng_walk_in(&self.t, row, w, word, want_max, ctx_len, ctx_depth, bows,
                                      ctx_node)
        self.shortcut_rows += rows_shortcut  # with the GIL: walks may run in several threads
        if bad_row >= 0:
            for j in range(shift, width):
                if contexts[bad_row, j] >= V:
                    raise OptionError(f"context id {contexts[bad_row, j]} out of range "
                                      f"(vocabulary of {V})")
        return out


cdef _check_ngram_tables(int order, long long vocab, const long long[::1] node_off,
                         const unsigned long long[::1] keys, const int[::1] slots,
                         const long long[::1] slot_off, const int[::1] bits):
    """ModelError unless the walk can index NgramCore's tables blindly: order 1 has a row per
    word (its row is the word id), offsets ascend from 0, each order >= 2 has 2**bits hash
    slots holding -1 or one of its rows, and bigram keys x * V + w name words below V (the
    successor index divides them). Once per model, linear in its size."""
    cdef int k
    cdef long long i, lo, hi, m
    if vocab < 1 or node_off[0] != 0 or slot_off[0] != 0 or node_off[1] != vocab:
        raise ModelError("NgramCore: order 1 must have one row per word of the vocabulary")
    for k in range(1, order + 1):
        m = node_off[k] - node_off[k - 1]
        if m < 0 or slot_off[k] < slot_off[k - 1]:
            raise ModelError(f"NgramCore: offsets decrease at order {k}")
        if k >= 2 and (bits[k - 1] < 1 or bits[k - 1] > 62
                       or slot_off[k] - slot_off[k - 1] != (1LL << bits[k - 1])):
            raise ModelError(f"NgramCore: order {k} must have 2**bits hash slots")
        for i in range(slot_off[k - 1], slot_off[k]):
            if slots[i] < -1 or slots[i] >= m:
                raise ModelError(f"NgramCore: a hash slot of order {k} names no row")
    if order >= 2:
        lo, hi = node_off[1], node_off[2]
        for i in range(lo, hi):
            if keys[i] // <unsigned long long>vocab >= <unsigned long long>vocab:
                raise ModelError("NgramCore: a bigram key names a word id out of range")


DEFAULT_MAX_BYTES = 1 << 29  # FullDP's cache bound per worker, 512 MiB (see FullDP)
SPARSE_CACHE_BYTES = 1 << 25  # the large-vocabulary transition cache: 32 MiB at most
cdef long long SPARSE_CACHE_BYTES_C = SPARSE_CACHE_BYTES
cdef long long SPARSE_ENTRY_BYTES = 24  # one slot of that cache: key, next state, ln p


cdef struct CacheSlot:
    unsigned long long key  # gid * V + word, plus 1 (0: empty)
    long long nxt
    double lp


cdef struct StateCtx:
    # What every transition out of one state shares (walk B of its context, `ng_context`),
    # computed on the state's first cache miss.
    bint ready
    int ctx_len
    int ctx_depth
    long long ctx_node
    double bows[NG_MAX_ORDER]


def _check_scoring(str name, long long V, long long bos, long long eos, double lm_weight):
    """OptionError unless `bos`/`eos` are word ids or -1 (none) and `lm_weight` is finite and
    > 0: the scoring arguments `run` and `run_dag` share (`NgramScoring`)."""
    if not (-1 <= bos < V and -1 <= eos < V):
        raise OptionError(f"{name}: <s> or </s> id out of range")
    if not (lm_weight > 0 and isfinite(lm_weight)):
        raise OptionError(f"{name}: lm_weight must be a finite number > 0, not {lm_weight}")


cdef class FullDP:
    """Viterbi and log partition of the full model over merged states, for many lattices.

    Tie-breaking (deterministic): the states of a position are numbered in order of first
    creation, enumerating the previous position's states in their order and each state's
    candidates in lattice order; a state keeps the first predecessor pair reaching its maximum
    (a later pair replaces it only if strictly greater); the final state is the first maximum.

    Threads: `run` may be called on one FullDP from several threads at once (a Dask worker
    runs several, and `arsdecode.methods.fast_full.full_dp(lm)` is one object per model and process).
    The tables (the model's, the useful contexts, the failure links) are read-only once built
    and shared. The caches `run` fills without the GIL belong to a `_DPWorker`; each run takes
    an idle worker from a pool (or makes one) and gives it back, so two runs never share a
    cache and never wait for each other. Why not one lock around `run`: the DP is the whole
    work of a tagging thread, so a lock would run the threads one at a time; the pool costs one
    set of caches per concurrent run (as many as there are threads), each bounded as follows.

    Memory bound: a worker's caches hold at most `max_bytes` (default DEFAULT_MAX_BYTES,
    512 MiB). A large vocabulary caches its transitions (state, word) -> (next state, ln p) in
    one direct-mapped table of 24-byte slots (a new transition overwrites the one in its slot),
    of at most SPARSE_CACHE_BYTES (32 MiB) and at most `max_bytes`, allocated on first use.
    Why not a growing hash map: on word lattices few transitions repeat (2.6 M computed for
    3.3 M pairs on 100 SMS sentences), so a map grew to 146 MB for a 20% hit rate, while the
    fixed table keeps most of the hits in a fifth of the memory. A small (dense) vocabulary
    keeps 12 V + 8 n bytes per visited state (its row of V transitions and its context
    backoffs) and 8 V per word whose row of bigram bounds the pruning computed; when the next
    row would pass the bound, the worker empties these caches and starts again: they are
    memos, so no answer changes, and a long-lived process stays within its bound. The default
    is about 4 times what tagging WSJ section 20 at n = 9 fills (1.9 M transitions, 139 MiB in
    one worker; the largest workload measured, see docs/performance.md), so the bound costs
    nothing there.
    """

    cdef NgramCore core
    cdef UsefulTables u
    cdef readonly object arrays
    cdef bint dense              # small vocabulary (tags): one dense row of V per visited gid
    cdef vector[int] fail        # gid -> longest proper useful suffix (failure link)
    cdef readonly long long max_bytes
    cdef readonly long long row_bytes  # dense: one visited state's transitions and backoffs
    cdef list _idle              # workers not in a run
    cdef list _workers           # every worker made

    def __init__(self, NgramCore core, long long[:, ::1] rows, int[::1] lens,
                 unsigned long long[::1] keys, int[::1] slots, int bits, dense=None,
                 long long max_bytes=DEFAULT_MAX_BYTES):
        """`dense` (default: vocabulary <= DENSE_MAX_VOCAB) picks the transition store and
        the bound pass; the tests force each on small models. `max_bytes` bounds each
        worker's caches (see the class docstring); it must hold one dense row and one hash-map
        entry at least."""
        cdef long long n_ctx = lens.shape[0]
        cdef Py_ssize_t i, j
        if n_ctx < 1 or keys.shape[0] != n_ctx or rows.shape[0] != n_ctx:
            raise ModelError("FullDP: useful-context arrays disagree")
        if rows.shape[1] != core.t.order - 1:
            raise ModelError("FullDP: context width must be order - 1")
        if bits < 1 or bits > 62 or slots.shape[0] != (1 << bits):
            raise ModelError("FullDP: hash slots must number 2**bits")
        row_bytes = 12 * core.t.vocab + 8 * rows.shape[1] + 12
        if max_bytes < row_bytes + SPARSE_ENTRY_BYTES:
            raise OptionError(f"FullDP: max_bytes ({max_bytes}) must be at least "
                              f"{row_bytes + SPARSE_ENTRY_BYTES} for this model")
        self.core = core
        self.arrays = (rows, lens, keys, slots)
        self.u.width = <int>rows.shape[1]
        self.u.n_ctx = n_ctx
        self.u.rows = &rows[0, 0] if rows.shape[1] else NULL
        self.u.lens = &lens[0]
        self.u.keys = &keys[0]
        self.u.slots = &slots[0]
        self.u.nslots = slots.shape[0]
        self.u.bits = bits
        self.dense = core.t.vocab <= DENSE_MAX_VOCAB if dense is None else bool(dense)
        self.max_bytes = max_bytes
        self.row_bytes = row_bytes
        self._idle = []
        self._workers = []
        for i in range(1, n_ctx):  # gids must ascend with length for the failure links
            if lens[i] < lens[i - 1] or lens[i] < 1 or lens[i] > rows.shape[1]:
                raise ModelError("FullDP: useful contexts must be ordered by length")
            if keys[i] // <unsigned long long>core.t.vocab >= <unsigned long long>i:
                raise ModelError("FullDP: a useful context's parent must come before it")
        if lens[0] != 0:
            raise ModelError("FullDP: gid 0 must be the empty context")
        for i in range(n_ctx):  # the DP walks the model with these ids, unchecked
            for j in range(rows.shape[1]):
                if rows[i, j] >= core.t.vocab:
                    raise ModelError("FullDP: a useful context names a word id out of range")
        for i in range(slots.shape[0]):
            if slots[i] < -1 or slots[i] >= n_ctx:
                raise ModelError("FullDP: a hash slot names no useful context")
        self.fail = vector[int](n_ctx, 0)
        with nogil:
            uc_fail_links(&self.u, core.t.vocab, self.fail.data())

    cdef _DPWorker _take_worker(self, double lm_weight):
        """An idle worker for one run (or a new one), set to this run's LM weight; the caller
        gives it back to `_idle` in a `finally`. pop is atomic: two threads never get the
        same worker (see the class docstring)."""
        cdef _DPWorker worker
        try:
            worker = self._idle.pop()
        except IndexError:
            worker = _DPWorker(self)
            self._workers.append(worker)
        worker.lmw = lm_weight
        return worker

    def cache_bytes(self) -> int:
        """Bytes the caches hold now (as counted for the bound), over every worker; exact
        while no run is in progress."""
        return sum(w.used_bytes for w in self._workers)

    def cache_size(self) -> int:
        """Transitions computed so far, over every worker (each is then cached until its
        worker reaches the bound)."""
        return sum(w.n_trans for w in self._workers)

    @property
    def workers(self) -> int:
        """Workers made so far: the most runs that were in progress at once."""
        return len(self._workers)

    def run(self, const long long[::1] sent_off, const long long[::1] pos_off,
            const long long[::1] cand_ids, const double[::1] cand_emis, long long bos,
            long long eos, bint viterbi, bint prune=True, max_pairs=-1, double lm_weight=1.0,
            known=None, long long kbest=0, bint posteriors=False):
        """Decode (viterbi) or sum (log partition) every lattice; with `kbest` = K > 0
        (viterbi) also the K best paths, with `posteriors` (not viterbi) also every
        candidate's posterior probability.

        With `prune` (Viterbi only), a (state, candidate) pair is dropped when its score so far
        plus an upper bound on any completion (`_completion_bounds`) falls below the exact score
        of a known path, minus a relative margin of 1e-9 for rounding: no optimal path is ever
        dropped, so the best score is the same number as without pruning. Among exactly tied
        optimal paths the one returned may differ, since dropped pairs change the creation order
        of the surviving states. Each position's candidates are tried in order of their best
        possible completion from any state (unigram max-backoff bound + emission + completion
        bound), so a state stops at the first candidate that cannot reach the known score and
        never computes the transitions of the rest. With a dense vocabulary a pair is also
        tested before its transition is computed, using the bigram bound of the state's last
        word. `known` (one number, or one per sentence; NaN = none) is the exact score of a path
        the caller knows, or any lower bound on the best score: pruning uses the larger of it and
        the DP's own greedy path.

        `max_pairs` (one integer for every sentence, or one per sentence; -1 = no budget)
        abandons a sentence once its tried (state, candidate) pairs exceed its budget (checked
        after each state's candidates, so it may pass by one state's worth): its
        score is NaN and its choices -1 (the caller decodes it another way). One per sentence,
        because `auto` gives each lattice a budget by its size, and a corpus is one call.

        `bos` = -1 starts every sentence from the empty context (SRILM's -no-sos), `eos` = -1
        adds no final factor (-no-eos); every LM ln probability is multiplied by `lm_weight`
        (> 0; the bounds too, so pruning stays exact).

        sent_off (S+1) indexes positions, pos_off (P+1) indexes candidates; cand_ids are model
        word ids, cand_emis ln emissions (-inf = forbidden). Returns (choice, score, dp_states,
        max_states): choice (P,) int32 candidate index within its position (-1 where no path,
        or when summing), score (S,) the best ln p or ln Z (-inf: no path), dp_states (S,) the
        merged states built (start state included), max_states (S,) the widest position,
        pairs (S,) the (state, candidate) pairs tried (the DP's cost: with pruning, a state
        stops at its first candidate that cannot reach the known score, see below).
        With `kbest` or `posteriors` three more: kscores (S, K) the K best scores per sentence
        (-inf past the number of paths), kchoice (K, P) int32 the r-th best path's candidate
        per position, post (C,) each candidate's posterior (score is then ln Z). k-best prunes
        with `known` alone: pass a lower bound on each sentence's K-th best score (NaN: none,
        no pruning); posteriors never prune. Both keep the sentence's whole graph (about 24
        bytes per surviving pair) while it is processed.

        The DP indexes with these arrays without bounds checks and without the GIL, so they are
        checked first (LatticeError): both offset arrays start at 0, never decrease and end at
        the length they index; every word id is in [0, V). Safe to call from several threads
        (see the class docstring).
        """
        cdef Py_ssize_t S = sent_off.shape[0] - 1, P = pos_off.shape[0] - 1
        cdef Py_ssize_t C = cand_ids.shape[0], i
        cdef long long V = self.core.t.vocab
        cdef _DPWorker worker
        cdef const long long[::1] budgets
        if S < 0 or P < 0 or sent_off[S] != P or pos_off[P] != C or cand_emis.shape[0] != C:
            raise LatticeError("FullDP.run: offsets disagree with the array lengths")
        if sent_off[0] != 0 or pos_off[0] != 0:
            raise LatticeError("FullDP.run: offsets must start at 0")
        for i in range(S):
            if sent_off[i + 1] < sent_off[i]:
                raise LatticeError(f"FullDP.run: sentence offsets decrease after sentence {i}")
        for i in range(P):
            if pos_off[i + 1] < pos_off[i]:
                raise LatticeError(f"FullDP.run: position offsets decrease after position {i}")
        _check_scoring("FullDP.run", V, bos, eos, lm_weight)
        if kbest < 0 or (kbest > 0 and (not viterbi or posteriors)) or (posteriors and viterbi):
            raise OptionError("FullDP.run: kbest needs viterbi, posteriors needs viterbi=False")
        for i in range(C):
            if cand_ids[i] < 0 or cand_ids[i] >= V:
                raise LatticeError(f"FullDP.run: word id {cand_ids[i]} out of range "
                                   f"(vocabulary of {V})")
        given = np.asarray(max_pairs, dtype=np.int64)
        if given.ndim > 1 or (given.ndim == 1 and given.shape[0] != S):
            raise LatticeError(f"FullDP.run: max_pairs must be one budget or one per sentence "
                               f"({S}), got shape {given.shape}")
        budgets = np.ascontiguousarray(np.broadcast_to(given, (S,)))
        lows = np.ascontiguousarray(np.broadcast_to(
            np.asarray(np.nan if known is None else known, dtype=np.float64), (S,)))
        worker = self._take_worker(lm_weight)
        try:
            return worker.run_checked(sent_off, pos_off, cand_ids, cand_emis, bos, eos, viterbi,
                                      prune, budgets, lows, kbest, posteriors)
        finally:
            self._idle.append(worker)


    def run_dag(self, const long long[::1] node_off, const long long[::1] arc_off,
                const long long[::1] arc_dst, const long long[::1] arc_word,
                const double[::1] arc_w, const double[::1] final_w, long long bos,
                long long eos, double lm_weight=1.0):
        """The exact best path of every word lattice (a DAG) by Viterbi over (node, merged
        context) states: the exact expansion of `methods.dag_full`, compiled, no pruning.

        node_off (S+1) cuts the global nodes into lattices (each topologically numbered, its
        first node the start); arc_off (N+1) gives each node's arcs; arc_dst (> the source,
        same lattice), arc_word (model id, -1 = epsilon), arc_w (ln, finite); final_w (N,) ln
        (-inf: not final). `bos`/`eos` = -1 and `lm_weight` as in `run`. Returns (score (S,)
        ln p of the best path, -inf where none; path: the best paths' arc indices, concatenated;
        path_len (S,); states (S,); transitions (S,)). Ties: the first state reaching the
        maximum keeps it (nodes, then their states in creation order, then arcs in order).
        Arrays are checked first (LatticeError)."""
        cdef Py_ssize_t S = node_off.shape[0] - 1, N = arc_off.shape[0] - 1
        cdef Py_ssize_t A = arc_dst.shape[0], i, s
        cdef long long V = self.core.t.vocab, u, lo, hi
        cdef _DPWorker worker
        if S < 0 or N < 0 or node_off[0] != 0 or node_off[S] != N or arc_off[0] != 0 \
                or arc_off[N] != A or arc_word.shape[0] != A or arc_w.shape[0] != A \
                or final_w.shape[0] != N:
            raise LatticeError("FullDP.run_dag: offsets disagree with the array lengths")
        _check_scoring("FullDP.run_dag", V, bos, eos, lm_weight)
        for s in range(S):
            if node_off[s + 1] < node_off[s]:
                raise LatticeError(f"FullDP.run_dag: node offsets decrease after lattice {s}")
            lo, hi = node_off[s], node_off[s + 1]
            for u in range(lo, hi):
                if arc_off[u + 1] < arc_off[u]:
                    raise LatticeError(f"FullDP.run_dag: arc offsets decrease at node {u}")
                for i in range(arc_off[u], arc_off[u + 1]):
                    if not (u < arc_dst[i] < hi):
                        raise LatticeError(f"FullDP.run_dag: arc {i} goes from node {u} to "
                                           f"{arc_dst[i]}, not to a later node of its lattice")
                    if not (-1 <= arc_word[i] < V):
                        raise LatticeError(f"FullDP.run_dag: arc {i} has the word id "
                                           f"{arc_word[i]} (vocabulary of {V})")
                    if not isfinite(arc_w[i]):
                        raise LatticeError(f"FullDP.run_dag: arc {i} has the weight {arc_w[i]}")
        worker = self._take_worker(lm_weight)
        try:
            return worker.dag_checked(node_off, arc_off, arc_dst, arc_word, arc_w, final_w,
                                      bos, eos)
        finally:
            self._idle.append(worker)

cdef class _DPWorker:
    """The caches of one `FullDP.run` at a time (see FullDP): transitions, bigram bounds and
    the sparse bound pass's stamps, filled without the GIL, at most `max_bytes` of them."""

    cdef NgramCore core
    cdef FullDP dp               # the shared tables: kept alive while the worker is
    cdef UsefulTables u          # a copy of dp.u (its pointers are into dp.arrays)
    cdef const int *fail         # dp.fail
    cdef bint dense
    cdef long long max_bytes
    cdef long long row_bytes
    cdef readonly long long used_bytes  # what the caches hold now, counted as in FullDP
    cdef readonly long long n_trans   # transitions computed since the worker was made
    cdef readonly long long clears    # times the caches were emptied at the bound
    cdef vector[CacheSlot] cache  # (gid, word) -> (next gid, ln p) for large vocabularies
    cdef int cache_shift         # 64 - log2(its slots): Fibonacci hashing's top bits
    cdef vector[int] block_of    # gid -> its row in dnext/dlp, or -1
    cdef vector[int] dnext       # next gid, or -2 while not computed
    cdef vector[double] dlp
    cdef vector[double] dbows    # per block: the state's context backoffs (walk B, once)
    cdef vector[int] dctx_depth  # per block: how many context suffixes were found
    cdef vector[int] ub_row_of   # dense: x + 1 -> its row of bigram bounds in ub_rows, or -1
    cdef vector[double] ub_rows  # dense: ln w(y | x), the max-backoff bound, for every y
    cdef vector[long long] stamp      # sparse bound pass: word -> epoch of the position it is at
    cdef vector[long long] stamp_idx  # sparse bound pass: word -> its candidate there
    cdef long long epoch
    cdef double lmw              # this run's LM weight (NgramScoring.lm_weight)

    def __init__(self, FullDP dp):
        self.dp = dp
        self.core = dp.core
        self.u = dp.u
        self.fail = dp.fail.data()
        self.dense = dp.dense
        self.max_bytes = dp.max_bytes
        self.row_bytes = dp.row_bytes
        self.used_bytes = 0
        self.n_trans = 0
        self.clears = 0
        self.epoch = 0
        self.lmw = 1.0
        if self.dense:
            self.block_of = vector[int](self.u.n_ctx, -1)
            self.ub_row_of = vector[int](self.core.t.vocab + 1, -1)

    cdef void _clear(self) noexcept nogil:
        """Empty the transition and bound caches (at the bound): they are memos, so no answer
        changes. The vectors keep their capacity, which is within the bound."""
        if self.dense:
            self.block_of.assign(self.u.n_ctx, -1)
            self.dnext.clear()
            self.dlp.clear()
            self.dbows.clear()
            self.dctx_depth.clear()
            self.ub_row_of.assign(self.core.t.vocab + 1, -1)
            self.ub_rows.clear()
        self.used_bytes = <long long>self.cache.size() * SPARSE_ENTRY_BYTES
        self.clears += 1

    cdef inline double _bound(self, long long x, long long y) noexcept nogil:
        """ln w(y | x): the max-backoff bound of y after a context ending in x (x = -1: any
        context), i.e. the max of p(y | z x) over every left extension z. A dense vocabulary
        keeps x's whole row, computed on first use."""
        cdef long long ctx = x, V = self.core.t.vocab, r, k, ctx_node
        cdef int ctx_len, ctx_depth
        cdef double bows[NG_MAX_ORDER]
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

    cdef inline void _trans(self, long long gid, long long word, long long *nxt,
                            double *lp, StateCtx *sc=NULL) noexcept nogil:
        """(next state, ln p) of `word` after state `gid`, cached. `sc` (large vocabularies):
        the state's shared context walk, filled on its first miss and reused by the next."""
        cdef long long dummy = -1
        cdef CacheSlot *slot
        cdef StateCtx local
        cdef const long long *row
        cdef long long V = self.core.t.vocab
        cdef long long b, idx, node, ctx_node
        cdef int depth, j
        cdef double bow_sum
        cdef unsigned long long key = <unsigned long long>gid * <unsigned long long>V \
            + <unsigned long long>word
        if self.dense:
            b = self.block_of[gid]
            row = (self.u.rows + gid * self.u.width) if self.u.width else &dummy
            if b < 0:
                if self.used_bytes + self.row_bytes > self.max_bytes:
                    self._clear()
                self.used_bytes += self.row_bytes
                b = <long long>(self.dnext.size() // V)
                self.block_of[gid] = <int>b
                self.dnext.resize((b + 1) * V, -2)
                self.dlp.resize((b + 1) * V, 0.0)
                self.dbows.resize((b + 1) * (self.u.width + 1), 0.0)
                self.dctx_depth.push_back(ng_context_bows(
                    &self.core.t, row, self.u.width,
                    self.dbows.data() + b * (self.u.width + 1), &ctx_node))
            idx = b * V + word
            if self.dnext[idx] != -2:
                nxt[0] = self.dnext[idx]
                lp[0] = self.dlp[idx]
                return
            # ng_walk(.., want_max=False) with the state's walk B done once per state.
            node = ng_walk_a(&self.core.t, row, self.u.width, word, &depth)
            bow_sum = 0.0
            for j in range(depth, self.dctx_depth[b] + 1):
                bow_sum += self.dbows[b * (self.u.width + 1) + j - 1]
            lp[0] = self.core.t.lp[self.core.t.node_off[depth - 1] + node] + bow_sum
            nxt[0] = uc_cut_append(&self.u, self.fail, V, gid, word)
            self.n_trans += 1
            self.dnext[idx] = <int>nxt[0]
            self.dlp[idx] = lp[0]
            return
        if self.cache.size() == 0:
            self._allocate_cache()
        slot = &self.cache[(key * ARS_MIX) >> self.cache_shift]
        if slot.key == key + 1:
            nxt[0] = slot.nxt
            lp[0] = slot.lp
            return
        row = (self.u.rows + gid * self.u.width) if self.u.width else &dummy
        if sc == NULL:
            local.ready = False
            sc = &local
        if not sc.ready:
            sc.ctx_depth = ng_context(&self.core.t, row, self.u.width, &sc.ctx_len, sc.bows,
                                      &sc.ctx_node)
            sc.ready = True
        lp[0] = ng_walk_in(&self.core.t, row, self.u.width, word, False, sc.ctx_len,
                           sc.ctx_depth, sc.bows, sc.ctx_node)
        nxt[0] = uc_cut_append(&self.u, self.fail, V, gid, word)
        self.n_trans += 1
        slot.key = key + 1
        slot.nxt = nxt[0]
        slot.lp = lp[0]

    cdef void _allocate_cache(self) noexcept nogil:
        """The direct-mapped transition table: the most power-of-two slots within
        SPARSE_CACHE_BYTES and max_bytes (see FullDP), two at least."""
        cdef long long slots = 2  # at least two (Fibonacci hashing keeps >= 1 bit)
        cdef int bits = 1
        cdef long long cap = SPARSE_CACHE_BYTES_C if SPARSE_CACHE_BYTES_C < self.max_bytes \
            else self.max_bytes
        cdef CacheSlot empty
        while 2 * slots * SPARSE_ENTRY_BYTES <= cap:
            slots *= 2
            bits += 1
        empty.key = 0
        empty.nxt = 0
        empty.lp = 0.0
        self.cache.assign(slots, empty)
        self.cache_shift = 64 - bits
        self.used_bytes += slots * SPARSE_ENTRY_BYTES

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
        only), and the result's choice and score are the best path's.
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
                    for si in range(<Py_ssize_t>cur_g.size()):
                        g = cur_g[si]
                        a = cur_a[si]
                        sctx.ready = False
                        last = self.u.rows[g * self.u.width + self.u.width - 1] \
                            if self.u.width else -1
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
                            self._trans(g, cand_ids[c], &ng, &lp, &sctx)
                            lp = self.lmw * lp + e
                            if not isfinite(lp):
                                continue
                            tot = a + lp
                            if thr > -INFINITY and tot + H[c - pos_off[p0]] < thr:
                                continue
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
                                nxt_a.push_back(tot)
                                nxt_s.push_back(1.0)
                                bp_prev.push_back(si)
                                bp_cand.push_back(<int>(c - pos_off[p]))
                            elif viterbi:
                                if tot > nxt_a[l]:
                                    nxt_a[l] = tot
                                    bp_prev[layer_off.back() + l] = si
                                    bp_cand[layer_off.back() + l] = <int>(c - pos_off[p])
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
                    if not viterbi:
                        for l in range(<Py_ssize_t>nxt_g.size()):
                            nxt_a[l] = nxt_a[l] + log(nxt_s[l])
                    if record:
                        g_layer.push_back(g_layer.back() + <long long>nxt_g.size())
                    st[s] += nxt_g.size()
                    if <long long>nxt_g.size() > wd[s]:
                        wd[s] = nxt_g.size()
                    cur_g.swap(nxt_g)
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
                index[<u64>(0) * <u64>(self.u.n_ctx) + <u64>g] = 0
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
                            key = <u64>(v - n0) * <u64>(self.u.n_ctx) + <u64>ng
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

def build_hash(const unsigned long long[::1] keys):
    """Open-addressing slots for `keys` (row -> slot by Fibonacci hashing, linear probing), the
    layout of maxarpa.table.HashIndex (2**bits >= 2 * len(keys) slots); returns (slots, bits)."""
    cdef Py_ssize_t m = keys.shape[0], i
    cdef int bits = 4
    while (1 << bits) < 2 * m:
        bits += 1
    slots_arr = np.full(1 << bits, -1, dtype=np.int32)
    cdef int[::1] slots = slots_arr
    cdef unsigned long long mask = (1ULL << bits) - 1
    cdef unsigned long long pos
    with nogil:
        for i in range(m):
            pos = (keys[i] * ARS_MIX) >> (64 - bits)
            while slots[pos] >= 0:
                pos = (pos + 1) & mask
            slots[pos] = <int>i
    return slots_arr, bits
