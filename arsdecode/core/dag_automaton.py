"""The q-automaton over a word lattice (a DAG): states (lattice node, context), refinable.

Why its own module: `automaton.QAutomaton` is layered by position (every path of a confusion
network has one word per position), but the paths of a `WordLattice` have different lengths,
epsilon arcs and several final nodes, so a state must be tied to a lattice node, not to a
position. The paper's construction carries over unchanged otherwise (issue 21).

A state is (lattice node v, context c): c is a tuple of at most order - 1 word ids, a suffix of
the history `<s> w_1 .. w_k` of every path that reaches the state. At every node the contexts
form a suffix-closed set. Initially the start node 0 holds the start context (`<s>`, cut to the
model's order) and every other node the empty context and (unless `first_words=False`) the
one-word context of each word on an arc into it. For a state (u, c) and an arc a: u -> v:

    word arc w:   weight log_weights[a] + B(c, w), to the state at v whose context is the
                  LONGEST suffix of c + (w,) present at v (deterministic);
    epsilon arc:  weight log_weights[a], to the state at v with the longest suffix of c;
    stop at a final node f:  finals[f] + B(c, </s>),

where B is `log_prob` if c is exact and `log_bound` otherwise. Why q >= p: the context of the
state a path reaches is a suffix of its true history (by induction: a suffix of c + w is a
suffix of the history + w), and `log_bound` covers every left extension of its context. A
context is exact (it fixes p) when it has order - 1 words, or when it starts with `<s>`: `<s>`
is never an arc's word (`WordLattice` refuses it), so such a context is the whole history; the
model confirms with `is_exact(len(c) - 1, c)` (a `WeightedLM` may score it differently). For a
target with n-gram tables (`ngram_tables`), also when c is no proper suffix of a useful context
of the model (`extendable_contexts`): no left extension can change p then, which is what keeps
the states of a sparse model few (the merged expansion relies on the same fact). An exact
state's weights are p's own factors, so a path through exact states only has q = p.

Refinement (Algorithm 2, `refine_paths`): along a path, left to right, where the state the path
reaches has an inexact context c and the path's previous state can tell a longer suffix apart,
create the state whose context is the next longer suffix of the path's history, move into it
the edges into that node for which it is now the longest suffix (only edges into that node can
change), and give its out-edges their own (tighter) weights, in one batched model query for
all the states a refinement pass creates.

Storage: per node, dense float64 weight and int32 target matrices (state x outgoing arc, in the
lattice's arc order), plus a final-weight vector; targets are state numbers local to the arc's
destination node. `offsets()` gives every node's first state in a global numbering, for the
dynamic programs in `arsdecode.methods.dag_ars`.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np

from arsdecode.core.semiring import quiet
from arsdecode.errors import AutomatonError, MemoryBudgetExceeded
from arsdecode.lattice import WordLattice
from arsdecode.model import TargetModel, context_rows, ngram_tables
from maxarpa.contexts import useful_context_tables
from maxarpa.model import Model
from maxarpa.table import row_hashes

Context = tuple[int, ...]

ARS_HINT = "use --method full (the merged expansion, compiled) or raise --memory-budget"


_EXTENDABLE: weakref.WeakKeyDictionary[Model, frozenset[int]] = weakref.WeakKeyDictionary()


def extendable_contexts(ngram: Model) -> frozenset[int]:
    """Hashes (`maxarpa.table.row_hashes` of the -1 left-padded row) of every context that is
    a PROPER suffix of a useful context of the backoff model (`maxarpa.contexts`).

    Why: a context c that is not one is exact wherever it stands. Every history h ending with
    c has its longest useful suffix cut(h) inside c (a longer one would end with c, making c
    its proper suffix), so cut(h) = cut(c) and p(w | h) = p(w | cut(c)) = p(w | c) for every
    w. A hash collision only makes a context look extendable: it stays inexact (safe).
    Cached per model."""
    if ngram not in _EXTENDABLE:
        rows, lens, _ = useful_context_tables(ngram)
        width = rows.shape[1]
        parts = []
        for n in range(1, width + 1):  # contexts of n words: drop their k oldest words
            sel = rows[lens == n]
            for k in range(1, n + 1) if len(sel) else ():
                cut = sel.copy()
                cut[:, :width - n + k] = -1
                parts.append(cut)
        hashes = row_hashes(np.concatenate(parts)) if parts else np.zeros(0, np.uint64)
        _EXTENDABLE[ngram] = frozenset(np.unique(hashes).tolist())
    return _EXTENDABLE[ngram]


_MASK = (1 << 64) - 1
_MIX = 0x9E3779B97F4A7C15  # maxarpa.table's multiplier


def context_hash(context: Context, width: int) -> int:
    """`maxarpa.table.row_hashes` of the context's -1 left-padded row of `width` words, in
    Python integers: one context at a time, several times faster than a numpy call."""
    h = 0
    row = (-1,) * (width - len(context)) + tuple(context)
    for j, x in enumerate(row):
        h = (((h ^ (x & _MASK)) * _MIX) + j + 1) & _MASK
    return h


class NodeStates:
    """The states of one lattice node: contexts, out-edge weights and targets, final weights."""

    def __init__(self, width: int) -> None:
        self.width = width  # outgoing arcs of the node
        self.contexts: list[Context] = []
        self.index: dict[Context, int] = {}
        self.by_suffix: dict[Context, list[int]] = {}  # suffix -> states whose context ends so
        self.by_prefix: dict[Context, list[tuple[int, int]]] = {}  # c[:-1] -> (c[-1], state)
        self.exact: list[bool] = []
        self.ctx_len = np.zeros(4, dtype=np.int64)
        self.weights = np.zeros((4, width))
        self.targets = np.zeros((4, width), dtype=np.int32)
        self.final = np.full(4, -np.inf)

    def __len__(self) -> int:
        return len(self.contexts)

    @staticmethod
    def capacity(states: int) -> int:
        """The rows `add` has allocated once it holds `states` states (it doubles from 4)."""
        rows = 4
        while rows < states:
            rows *= 2
        return rows

    def row_bytes(self) -> int:
        """Bytes of one allocated row: weights (8) and targets (4) per arc, final, length."""
        return self.width * 12 + 16

    def add(self, context: Context, exact: bool) -> int:
        s = len(self.contexts)
        if s == len(self.final):
            grow = max(4, s)
            self.weights = np.concatenate([self.weights, np.zeros((grow, self.width))])
            self.targets = np.concatenate(
                [self.targets, np.zeros((grow, self.width), dtype=np.int32)])
            self.final = np.concatenate([self.final, np.full(grow, -np.inf)])
            self.ctx_len = np.concatenate([self.ctx_len, np.zeros(grow, dtype=np.int64)])
        self.contexts.append(context)
        self.index[context] = s
        self.exact.append(exact)
        self.ctx_len[s] = len(context)
        for k in range(len(context) + 1):
            self.by_suffix.setdefault(context[len(context) - k:], []).append(s)
        if context:
            self.by_prefix.setdefault(context[:-1], []).append((context[-1], s))
        return s


class DagQAutomaton:
    """The refinable upper bound q on the target p over a word lattice (module docstring)."""

    def __init__(self, model: TargetModel, wl: WordLattice, *, first_words: bool = True,
                 max_bytes: int | None = None) -> None:
        """`first_words`: q^(0) also holds, at every node, the one-word context of each word
        on an arc into it (so every edge's bound already knows the word before it), built in
        the same batched query. Why: the empty context's bound of a word is its best
        probability after any context, so loose that the first refinements would only
        create these states one path at a time (measured on 40-word x 50-arc ASR-like
        lattices with the embedded 5-gram: half the iterations, about the same states).
        False: the paper's q^(0) (empty contexts). `max_bytes`: MemoryBudgetExceeded, before
        any state is built, when q^(0)'s per-node matrices would pass it."""
        self.model = model
        self.wl = wl
        self.order = model.order
        self.width = max(model.order - 1, 0)  # words a context keeps
        tables = ngram_tables(model)  # the shortcut needs the target's own contexts' tables
        self.extendable = (extendable_contexts(tables) if tables is not None
                           and tables.order == model.order else None)
        self._exact: dict[Context, bool] = {}  # is_exact's answers (contexts recur by node)
        word_arcs = [a for a, w in enumerate(wl.words) if w is not None]
        ids = np.full(wl.n_arcs, -1, dtype=np.int64)
        if word_arcs:
            ids[word_arcs] = model.ids([wl.words[a] for a in word_arcs])  # type: ignore[misc]
        self.arc_ids = ids  # model id of each arc's word, -1 for epsilon
        self.arc_lo = np.searchsorted(wl.src, np.arange(wl.n_nodes), side="left")
        self.arc_hi = np.searchsorted(wl.src, np.arange(wl.n_nodes), side="right")
        self.arc_dst = [wl.dst[lo:hi] for lo, hi in zip(self.arc_lo, self.arc_hi, strict=True)]
        # incoming arcs of each node, by word id (-1: epsilon), for moving edges
        self.into: list[dict[int, list[int]]] = [{} for _ in range(wl.n_nodes)]
        for a, (d, w) in enumerate(zip(wl.dst.tolist(), ids.tolist(), strict=True)):
            self.into[d].setdefault(w, []).append(a)
        # per node: its arcs' destination nodes, word arcs' columns by (destination, word id),
        # epsilon arcs' (column, destination)
        self.dst_nodes: list[list[int]] = []
        self.word_columns: list[dict[tuple[int, int], list[int]]] = []
        self.eps_columns: list[list[tuple[int, int]]] = []
        for u in range(wl.n_nodes):
            lo, hi = int(self.arc_lo[u]), int(self.arc_hi[u])
            dsts = wl.dst[lo:hi].tolist()
            self.dst_nodes.append(sorted(set(dsts)))
            cols: dict[tuple[int, int], list[int]] = {}
            eps: list[tuple[int, int]] = []
            for j, (d, w) in enumerate(zip(dsts, ids[lo:hi].tolist(), strict=True)):
                if w < 0:
                    eps.append((j, d))
                else:
                    cols.setdefault((d, w), []).append(j)
            self.word_columns.append(cols)
            self.eps_columns.append(eps)
        self.nodes = [NodeStates(int(hi - lo)) for lo, hi in zip(self.arc_lo, self.arc_hi,
                                                                   strict=True)]
        if max_bytes is not None:  # before any state: q^(0)'s rows, as `add` will allocate them
            need = 0
            for v, node in enumerate(self.nodes):
                words = (sum(1 for w in self.into[v] if w >= 0)
                         if first_words and self.width else 0)
                need += NodeStates.capacity(1 + words) * node.row_bytes()
            if need > max_bytes:
                raise MemoryBudgetExceeded.of(f"{wl.source}: --method ars's first q-automaton",
                                              need, max_bytes, ARS_HINT)
        start = self.cut((model.bos,))
        pending = [(0, self.nodes[0].add(start, self.is_exact(start)))]
        for v in range(1, wl.n_nodes):
            pending.append((v, self.nodes[v].add((), self.is_exact(()))))
        # every target is 0: the empty context, the only state of every node but the start
        if first_words and self.width:
            for v in range(1, wl.n_nodes):
                node = self.nodes[v]
                for w in self.into[v]:
                    if w >= 0 and (w,) not in node.index:
                        pending.append((v, node.add((w,), self.is_exact((w,)))))
            self._first_word_targets()
        self.fill(pending)

    def _first_word_targets(self) -> None:
        """q^(0)'s targets once every node holds () and its one-word contexts, a node's
        matrix at a time (what `_create` would give state by state, 3x slower on a 1,000-node
        lattice of 100 words per node): a word arc w goes to the state (w,) at its
        destination (longer contexts do not exist yet); an epsilon arc keeps a one-word
        context where the destination has it, else goes to ()."""
        for u, node in enumerate(self.nodes):
            k = len(node)
            if not node.width:
                continue
            for (d, w), cols in self.word_columns[u].items():
                node.targets[:k, cols] = self.nodes[d].index[(w,)]
            for j, d in self.eps_columns[u]:
                index = self.nodes[d].index
                node.targets[:k, j] = [index.get(c, 0) if len(c) == 1 else 0
                                       for c in node.contexts]

    # ----- contexts --------------------------------------------------------------------------
    def cut(self, history: Sequence[int]) -> Context:
        """The last order - 1 words of a history (what a context can hold)."""
        return tuple(history[max(0, len(history) - self.width):]) if self.width else ()

    def is_exact(self, context: Context) -> bool:
        """Whether every path reaching a state with this context has p fixed by it (module
        docstring): order - 1 words, or the whole history (it starts with `<s>`)."""
        if len(context) >= self.width:
            return True
        if context and context[0] == self.model.bos and self.model.is_exact(len(context) - 1,
                                                                            context):
            return True
        if self.extendable is None:
            return False
        if context not in self._exact:
            self._exact[context] = context_hash(context, self.width) not in self.extendable
        return self._exact[context]

    def extend(self, context: Context, arc: int) -> Context:
        """The context after `arc`: c + (w,) cut to order - 1 words, or c for epsilon."""
        w = int(self.arc_ids[arc])
        return context if w < 0 else self.cut((*context, w))

    # ----- weights ---------------------------------------------------------------------------
    def _set_targets(self, v: int, s: int, suffix_state: int) -> None:
        """The out-edge targets of the new state s at node v, from those of its suffix state
        (context ctx[1:]): a suffix of ctx + w of at most len(ctx) words is a suffix of
        ctx[1:] + w, so the only longer target can be ctx + w itself (ctx for epsilon), when
        it is short enough to be a context and present at the arc's destination. Those are
        found from the destinations' contexts that extend ctx (few), not arc by arc."""
        node = self.nodes[v]
        ctx = node.contexts[s]
        row = node.targets[suffix_state].copy()
        if len(ctx) < self.width:  # ctx + w is not cut: it may be a context
            columns = self.word_columns[v]
            for d in self.dst_nodes[v]:
                for w, t in self.nodes[d].by_prefix.get(ctx, ()):
                    for j in columns.get((d, w), ()):
                        row[j] = t
        for j, d in self.eps_columns[v]:
            same = self.nodes[d].index.get(ctx)
            if same is not None:
                row[j] = same
        node.targets[s] = row

    def fill(self, pending: Sequence[tuple[int, int]]) -> None:
        """Give the (node, state) rows their own weights: at most two batched model queries,
        `log_prob` for exact rows and `log_bound` for the others (every word arc, and `</s>`
        at a final node)."""
        wl = self.wl
        for exact in (True, False):
            rows = [(u, s) for u, s in pending if self.nodes[u].exact[s] == exact]
            if not rows:
                continue
            ctxs: list[Context] = []
            counts: list[int] = []
            words: list[np.ndarray] = []
            for u, s in rows:
                lo, hi = int(self.arc_lo[u]), int(self.arc_hi[u])
                w = self.arc_ids[lo:hi]
                w = w[w >= 0]
                if u in wl.finals:
                    w = np.append(w, self.model.eos)
                words.append(w)
                ctxs.append(self.nodes[u].contexts[s])
                counts.append(len(w))
            word_arr = np.concatenate(words).astype(np.int64)
            query = self.model.log_prob if exact else self.model.log_bound
            rows_ctx = np.repeat(context_rows(ctxs, self.width), counts, axis=0)
            values = (np.asarray(query(rows_ctx, word_arr),
                                 dtype=np.float64) if len(word_arr) else np.zeros(0))
            pos = 0
            with quiet():
                for (u, s), w in zip(rows, words, strict=True):
                    node = self.nodes[u]
                    lo, hi = int(self.arc_lo[u]), int(self.arc_hi[u])
                    is_word = self.arc_ids[lo:hi] >= 0
                    k = int(is_word.sum())
                    row = wl.log_weights[lo:hi].copy()
                    row[is_word] += values[pos:pos + k]
                    node.weights[s] = row
                    if u in wl.finals:
                        node.final[s] = wl.finals[u] + values[pos + k]
                    pos += len(w)

    # ----- paths -----------------------------------------------------------------------------
    def states_on_path(self, arcs: Sequence[int]) -> list[int]:
        """The state (local to its node) after each prefix of the path, the start first."""
        states = [0]
        for a in arcs:
            u = int(self.wl.src[a])
            states.append(int(self.nodes[u].targets[states[-1], a - int(self.arc_lo[u])]))
        return states

    def log_q(self, arcs: Sequence[int], final: int) -> float:
        """ln q of a path, summed in path order (as `path_log_p` sums p)."""
        states = self.states_on_path(arcs)
        total = 0.0
        with quiet():
            for a, s in zip(arcs, states, strict=False):
                u = int(self.wl.src[a])
                total += float(self.nodes[u].weights[s, a - int(self.arc_lo[u])])
            return total + float(self.nodes[final].final[states[-1]])

    # ----- Algorithm 2 -----------------------------------------------------------------------
    def refine_paths(self, paths: Sequence[Sequence[int]], depth: int | None = 1) -> int:
        """Refine along each path (arc indices, start to final), then give the new states their
        weights in one batched query. Returns how many paths changed q.

        `depth`: words a context may gain per step of a path, 1 as in the paper's Algorithm 2;
        None: as many as the path's previous state tells apart (the path becomes exact in one
        pass, fewer iterations for more states)."""
        if depth is not None and depth < 1:
            raise AutomatonError(f"depth must be >= 1 or None, not {depth!r}")
        pending: list[tuple[int, int]] = []
        changed = 0
        for arcs in paths:
            changed += self._refine(arcs, pending, depth)
        if pending:
            self.fill(pending)
        return changed

    def _refine(self, arcs: Sequence[int], pending: list[tuple[int, int]],
                depth: int | None) -> bool:
        """Algorithm 2 along one path: at every step whose state is inexact, create the states
        up to `depth` words longer (the next suffixes of the path's history) that the path's
        previous state determines; new states copy their suffix state's weights (valid,
        looser bounds) until `fill` gives them their own."""
        wl = self.wl
        history: list[int] = [self.model.bos]
        s = 0  # the path's state at the current node
        before = len(pending)
        for a in arcs:
            u, v = int(wl.src[a]), int(wl.dst[a])
            col = a - int(self.arc_lo[u])
            if self.arc_ids[a] >= 0:
                history.append(int(self.arc_ids[a]))
            node = self.nodes[v]
            t = int(self.nodes[u].targets[s, col])
            if not node.exact[t]:
                # the previous state tells apart the suffixes of its own context extended
                most = len(self.extend(self.nodes[u].contexts[s], a))
                goal = most if depth is None else min(most, len(node.contexts[t]) + depth)
                while len(node.contexts[t]) < goal and not node.exact[t]:
                    n = len(node.contexts[t]) + 1
                    ctx = tuple(history[max(0, len(history) - n):])
                    pending.append((v, self._create(v, ctx, t)))  # absent: t was the longest
                    t = int(self.nodes[u].targets[s, col])
                    assert node.contexts[t] == ctx
            s = t
        return len(pending) > before

    def _create(self, v: int, ctx: Context, suffix_state: int) -> int:
        """Create the state `ctx` at node v and move into it every edge into v for which it
        is now the longest suffix: from states at the arc's source whose context ends with
        ctx[:-1] on a word arc of word ctx[-1], or with ctx on an epsilon arc."""
        node = self.nodes[v]
        s = node.add(ctx, self.is_exact(ctx))
        node.weights[s] = node.weights[suffix_state]
        node.final[s] = node.final[suffix_state]
        self._set_targets(v, s, suffix_state)
        into = self.into[v]
        for key, arcs in ((ctx[-1], into.get(ctx[-1], [])), (-1, into.get(-1, []))):
            need = ctx[:-1] if key >= 0 else ctx
            for a in arcs:
                u = int(self.wl.src[a])
                sources = self.nodes[u].by_suffix.get(need)
                if not sources:
                    continue
                src = np.asarray(sources)
                col = a - int(self.arc_lo[u])
                cur = self.nodes[u].targets[src, col]
                moved = src[node.ctx_len[cur] < len(ctx)]
                self.nodes[u].targets[moved, col] = s
        return s

    # ----- facts -----------------------------------------------------------------------------
    def num_states(self) -> int:
        return sum(len(node) for node in self.nodes)

    def nbytes(self) -> int:
        """The bytes of the per-node matrices as allocated (the bulk of q's memory)."""
        return sum(len(node.final) * node.row_bytes() for node in self.nodes)

    def offsets(self) -> np.ndarray:
        """Each node's first state in a global numbering (node order), and the total last."""
        return np.concatenate([[0], np.cumsum([len(node) for node in self.nodes])]).astype(
            np.int64)
