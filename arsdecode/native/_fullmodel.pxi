# FullDP: the exact full-model DP's shared tables, its checked entry points and its workers.
#
# Why a part of its own: FullDP is what Python sees (run on confusion networks, run_dag on word
# lattices): it checks every array before the DP reads it unchecked, then lends the work to a
# _DPWorker (_dpcache.pxi, _dpsweep.pxi), one per concurrent run, so threads share the tables
# and never a cache. The constants here bound those caches.


cdef long long DENSE_MAX_VOCAB = 4096  # dense transition rows up to this vocabulary size
DEFAULT_MAX_BYTES = 1 << 29  # FullDP's cache bound per worker, 512 MiB (see FullDP)
SPARSE_CACHE_BYTES = 1 << 21  # the large-vocabulary transition cache: 2 MiB at most (65,536
# slots, 1.5 MiB). Why not 32 MiB as before (issue 34): a table larger than the CPU's caches
# misses on every lookup, and on word lattices few transitions repeat, so the walk it saves
# is cheaper than the miss: on disambig's 100 top-100 lattices, same run, pruned Viterbi
# 0.19 -> 0.10-0.15 s against the 24 MiB table (embedded 5-gram); with a 5.4M-n-gram model a
# 0.8 MiB table was 5% faster than 24 MiB. (The unpruned forward-backward skips it: _walk.)
cdef long long SPARSE_CACHE_BYTES_C = SPARSE_CACHE_BYTES
cdef long long SPARSE_ENTRY_BYTES = 24  # one slot of that cache: key, next state, ln p
cdef long long CACHE_FIRST_SLOTS = 1 << 12  # its first size (96 KiB); it grows 4x when full


def dense_row_bytes(long long vocab, int width) -> int:
    """Bytes one visited state's dense row may hold (_dprows: V entries of ln p and next
    state; for a context shorter than `width` = n - 1 words also V of node, its order and ln
    p, and its walk B): what the byte bound counts per row, the most a row takes."""
    return ((<long long>sizeof(RowEntry) + <long long>sizeof(RowNode)) * vocab
            + 8 * width + <long long>sizeof(RowCtx) + 8)


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
    of at most SPARSE_CACHE_BYTES (2 MiB) and at most `max_bytes`, allocated on first use
    at 4096 slots and grown fourfold whenever a run stores more transitions than it has.
    Why not a growing hash map: on word lattices few transitions repeat (2.6 M computed for
    3.3 M pairs on 100 SMS sentences), so a map grew to 146 MB for a 20% hit rate, while the
    fixed table keeps most of the hits in a fifth of the memory. A small (dense) vocabulary
    keeps `dense_row_bytes(V, n - 1)` (25 V + 8 n + 16) per state it visits or whose row a
    visited state's row is filled from (its failure chain, _dprows.pxi) and 8 V per word
    whose row of bigram bounds the pruning computed; when the next row would pass the bound,
    the worker empties these caches and starts again: they are memos, so no answer changes,
    and a long-lived process stays within its bound (rows are stored in chunks of up to 512,
    each at most 1/16 of the bound, so their memory may pass it by one chunk of rows and one
    of their nodes). The default is about 4 times what tagging WSJ section 20 at n = 9 fills
    (1.9 M transitions, 139 MiB in one worker, before the rows of issue 34; the largest
    workload measured, see docs/performance.md), so the bound costs
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
    cdef readonly MixCore mix    # a mixture's components (None: `core` is the model)
    cdef readonly VpCore vp      # a VPYLM's context tree (None: `core` is the model)
    cdef readonly LlCore ll      # a log-linear target (None); its states are made on demand
    cdef vector[long long] child_off  # dense: the useful-context trie's children (_dprows)
    cdef vector[int] child_word
    cdef vector[int] child_gid
    cdef vector[int] child         # a mixture's union without a hash: gid block -> 1st child

    def __init__(self, NgramCore core, long long[:, ::1] rows, int[::1] lens,
                 unsigned long long[::1] keys, int[::1] slots, int bits, dense=None,
                 long long max_bytes=DEFAULT_MAX_BYTES, MixCore mix=None,
                 VpCore vp=None, LlCore ll=None):
        """`dense` (default: vocabulary <= DENSE_MAX_VOCAB) picks the transition store and
        the bound pass; the tests force each on small models. `max_bytes` bounds each
        worker's caches (see the class docstring); it must hold one dense row and one hash-map
        entry at least.

        `mix` (a mixture of several tables, `MixCore`): every probability and bound comes
        from its components; `core` then only carries the union vocabulary and the order
        (the useful contexts are the union's), and the store is the sparse one (the dense
        row walks one table).

        A mixture's union (issue 34) may come without `rows` and without the hash (`slots`
        None, `bits` 0): its contexts are then read from the keys (`mix_walk_gid`) and found
        by bisecting each context's children (`uc_child`), which needs gids in key order
        within each length, so keys[1:] strictly ascending (checked). Then `lens` may be None
        too: each context's length follows from its parent's (`uc_cut_append` asks only
        whether a context has n - 1 words: whether its gid is past the last shorter one)."""
        cdef long long n_ctx = keys.shape[0], width = core.t.order - 1
        cdef Py_ssize_t i, j
        cdef long long level
        if rows is None or slots is None or lens is None:
            if mix is None or rows is not None or slots is not None:
                raise ModelError("FullDP: only a mixture goes without rows, and then also "
                                 "without a hash")
        if lens is not None and lens.shape[0] != n_ctx:
            raise ModelError("FullDP: useful-context arrays disagree")
        if rows is not None and (rows.shape[0] != n_ctx or rows.shape[1] != width):
            raise ModelError("FullDP: useful-context rows must be (contexts, order - 1)")
        if n_ctx < 1:
            raise ModelError("FullDP: no useful contexts (gid 0, the empty one, at least)")
        if slots is not None and (bits < 1 or bits > 62 or slots.shape[0] != (1 << bits)):
            raise ModelError("FullDP: hash slots must number 2**bits")
        row_bytes = dense_row_bytes(core.t.vocab, <int>width)
        if max_bytes < row_bytes + SPARSE_ENTRY_BYTES:
            raise OptionError(f"FullDP: max_bytes ({max_bytes}) must be at least "
                              f"{row_bytes + SPARSE_ENTRY_BYTES} for this model")
        self.core = core
        self.arrays = (rows, lens, keys, slots)
        self.u.width = <int>width
        self.u.n_ctx = n_ctx
        self.u.rows = &rows[0, 0] if rows is not None and width else NULL
        self.u.lens = &lens[0] if lens is not None else NULL
        self.u.full_from = n_ctx  # set below when there are no lengths
        self.u.keys = &keys[0]
        self.u.slots = &slots[0] if slots is not None else NULL
        self.u.nslots = slots.shape[0] if slots is not None else 0
        self.u.bits = bits
        self.u.child = NULL
        self.dense = core.t.vocab <= DENSE_MAX_VOCAB if dense is None else bool(dense)
        if mix is not None:
            if mix.vocab != core.t.vocab or mix.order != core.t.order:
                raise ModelError("FullDP: the mixture's vocabulary or order is not the core's")
            self.dense = False
        self.mix = mix
        if vp is not None:  # as a mixture: `core` carries the vocabulary and the order only
            if mix is not None or vp.vocab != core.t.vocab or vp.order != core.t.order:
                raise ModelError("FullDP: the VPYLM's vocabulary or order is not the core's")
            self.dense = False
        self.vp = vp
        if ll is not None:  # as a mixture; the tables hold the empty context only (_loglinear)
            if mix is not None or vp is not None or ll.vocab != core.t.vocab \
                    or ll.order != core.t.order or n_ctx != 1:
                raise ModelError("FullDP: the log-linear target's vocabulary or order is not "
                                 "the core's, or its tables hold more than the empty context")
            self.dense = False
        self.ll = ll
        self.max_bytes = max_bytes
        self.row_bytes = row_bytes
        self._idle = []
        self._workers = []
        for i in range(1, n_ctx):  # gids must ascend with length for the failure links
            if lens is not None and (lens[i] < lens[i - 1] or lens[i] < 1 or lens[i] > width):
                raise ModelError("FullDP: useful contexts must be ordered by length")
            if keys[i] // <unsigned long long>core.t.vocab >= <unsigned long long>i:
                raise ModelError("FullDP: a useful context's parent must come before it")
        if lens is not None and lens[0] != 0:
            raise ModelError("FullDP: gid 0 must be the empty context")
        if rows is not None:
            for i in range(n_ctx):  # the DP walks the model with these ids, unchecked
                for j in range(width):
                    if rows[i, j] >= core.t.vocab:
                        raise ModelError("FullDP: a useful context names a word id out of "
                                         "range")
        if slots is not None:
            for i in range(slots.shape[0]):
                if slots[i] < -1 or slots[i] >= n_ctx:
                    raise ModelError("FullDP: a hash slot names no useful context")
        else:  # bisection instead of a hash: each gid block's children (uc_child)
            self.child = vector[int]((n_ctx >> UC_SHIFT) + 2, 0)
            with nogil:
                level = uc_blocks(&self.u, core.t.vocab, self.child.data(), lens is None)
            if level < 0:
                raise ModelError("FullDP: without a hash, the useful contexts' keys must "
                                 "ascend, and name at most n - 1 words")
            self.u.child = self.child.data()
        self.fail = vector[int](n_ctx, 0)
        with nogil:
            uc_fail_links(&self.u, core.t.vocab, self.fail.data())
            if self.dense:
                useful_children(&self.u, core.t.vocab, self.child_off, self.child_word,
                                self.child_gid)

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
        if self.ll is not None:
            worker.ll_start()
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

    def transitions(self, const long long[::1] gids, const long long[::1] words):
        """(next gids, ln p) of each (gid, word) pair, as the DP's sweeps get them (dense rows
        or the sparse store, by this FullDP's `dense`); LM weight 1. Why public: the tests hold
        the dense rows (filled from their failure links' rows) to the walks from scratch of a
        sparse FullDP on the same tables, pair by pair, bit for bit. Ids are checked
        (OptionError)."""
        cdef Py_ssize_t m = gids.shape[0], i
        cdef _DPWorker worker
        if words.shape[0] != m:
            raise OptionError("FullDP.transitions: gids and words differ in length")
        for i in range(m):
            if not (0 <= gids[i] < self.u.n_ctx and 0 <= words[i] < self.core.t.vocab):
                raise OptionError(f"FullDP.transitions: pair {i} ({gids[i]}, {words[i]}) "
                                  "out of range")
        nxt = np.empty(m, dtype=np.int64)
        lp = np.empty(m)
        cdef long long[::1] nx = nxt
        cdef double[::1] lv = lp
        worker = self._take_worker(1.0)
        try:
            with nogil:
                for i in range(m):
                    worker._trans(gids[i], words[i], &nx[i], &lv[i])
        finally:
            self._idle.append(worker)
        return nxt, lp

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
