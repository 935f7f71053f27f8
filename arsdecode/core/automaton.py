"""The q-automaton: a deterministic weighted automaton over (lattice node, context) states,
refinable (Algorithm 2 of Carter, Dymetman & Bouchard 2012), for every lattice kind.

One engine, two layouts of one input. A word lattice (`WordLattice`, a DAG with epsilon arcs
and several final nodes) is the general case. A confusion network (`Lattice`) is the word
lattice whose node i has one out-arc per candidate of position i + 1, all into node i + 1, and
whose node L is the only final node (`WordLattice.from_confusion`): its nodes are the paper's
layers, and node i's (state x out-arc) matrices are layer i's (state x candidate) matrices.
The confusion network is read into that layout directly (no arc objects), and `layered` says
so: the incremental Viterbi (`viterbi.py`), the layered DP (`dp.py`, `inference.py`), column
pruning and the candidate-index path API are its fast paths.

A state is (node v, context c): c is a suffix of the history `<s> w_1 .. w_k` of every path
that reaches it, of at most order - 1 words; at every node the contexts are suffix-closed.
q^(0): node 0 holds `<s>` (cut to the model's order), every other node the empty context and,
with `first_words`, the one-word context of each word on an arc into it. For a state (u, c)
and an arc a: u -> v of ln weight w_a (a confusion network's emission):

    word arc x:   weight w_a + B(c, x), to the state at v whose context is the LONGEST suffix
                  of c + (x,) present at v (deterministic);
    epsilon arc:  weight w_a, to the state at v with the longest suffix of c;
    stop at a final node f:  final_f + B(c, </s>),

where B is `log_prob` if c is exact and `log_bound` otherwise. Why q >= p: the context of the
state a path reaches is a suffix of its true history (by induction), and `log_bound` covers
every left extension of its context. An exact state's weights are p's own factors (the very
query `Target` makes), so a path through exact states only has q = p bit for bit. When c is
exact: `is_exact`. The model is reached only through `arsdecode.model.TargetModel`.

Algorithm 2 (`refine_paths`; `refine_indices` on a confusion network): along a path, left to
right, where the state the path reaches has an inexact context and the path's previous state
can tell a longer suffix apart, create the state SUF(history, |c| + 1), move into it the edges
into that node for which it is now the longest suffix, and give it its own weights: in one
batched query, the whole row (variant "all-edges", default), or, as in the paper, only the
edge on the path (variant "paper"; a new state copies its suffix state's edges, valid looser
bounds). `listener` is told of every change (`q_states.AutomatonListener`).

One class, in three modules by job: `q_layout.QLayout` (the lattice's arcs by node, the
per-node `q_states.NodeStates`, reading q along paths), `q_weights.QWeights` (the rows' batched
model queries, pruning) and `QAutomaton` here (q^(0), exactness, Algorithm 2). float64
throughout; OpenFst's tropical and log arcs are float32, so pynini is used for export
(`arsdecode.core.export`, log64 arcs), not for the dynamic programs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arsdecode.core.q_layout import Step
from arsdecode.core.q_states import (
    ARS_HINT,
    DEFAULT_VARIANT,
    VARIANTS,
    AutomatonListener,
    Context,
    FillRequest,
    NodeStates,
    Variant,
    context_hash,
    extendable_contexts,
)
from arsdecode.core.q_weights import QWeights
from arsdecode.errors import AutomatonError, MemoryBudgetExceeded
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.model import TargetModel, ngram_tables

__all__ = ["ARS_HINT", "DEFAULT_VARIANT", "VARIANTS", "AutomatonListener", "FillRequest",
           "NodeStates", "QAutomaton", "Variant", "context_hash", "extendable_contexts"]


class QAutomaton(QWeights):
    """The refinable upper bound q on the target p over a lattice (module docstring)."""

    def __init__(self, model: TargetModel, lattice: Lattice | WordLattice,
                 variant: str = DEFAULT_VARIANT, *, fill: bool = True,
                 track_pointers: bool = True, first_words: bool | None = None,
                 shortcut: bool | None = None, max_bytes: int | None = None) -> None:
        """`fill=False` leaves q^(0)'s weights to the caller (`unfilled`, then `fill_pending`,
        or `fill_requests` / `apply_fill` batched across automata, as lockstep does).
        `track_pointers=False`: Viterbi always runs the full sweep and never attaches the
        incremental cache (a sampling-only automaton).
        `first_words` (default: on for a word lattice, off for a confusion network, whose
        q^(0) is the paper's): q^(0) also holds, at every node, the one-word context of each
        word on an arc into it. Why: the empty context's bound of a word is its best
        probability after any context, so loose that the first refinements would only create
        these states one path at a time (measured on 40-word x 50-arc ASR-like lattices with
        the embedded 5-gram: half the iterations, about the same states).
        `shortcut` (same default): a context of a backoff target that no useful context of
        the model extends is exact (`q_states.extendable_contexts`); off on a confusion
        network keeps the paper's states, which its tables count (Table 1).
        `max_bytes`: MemoryBudgetExceeded, before any state is built, when q^(0)'s matrices
        would pass it."""
        if variant not in VARIANTS:
            raise AutomatonError(f"unknown variant {variant!r}; choose from {VARIANTS}")
        super().__init__(model, lattice)
        self.variant = variant
        dag = not self.layered
        tables = ngram_tables(model) if (dag if shortcut is None else shortcut) else None
        self.extendable = (extendable_contexts(tables) if tables is not None
                           and tables.order == model.order else None)
        self._exact: dict[Context, bool] = {}  # the shortcut's answers
        self.track_pointers = track_pointers
        first = dag if first_words is None else first_words
        self._build_q0(first and self.width > 0, max_bytes)
        if fill:
            self.fill_pending()

    def _build_q0(self, first_words: bool, max_bytes: int | None) -> None:
        """q^(0): node 0 holds `<s>`, every other node () and (with `first_words`) the one-word
        context of each word into it; every row filled later (`unfilled`)."""
        firsts: list[list[int]] = [[] for _ in self.nodes]
        if first_words:
            for v in range(1, self.n_nodes):
                firsts[v] = sorted({w for w in self._into_node(v) if w >= 0})
        if max_bytes is not None:  # before any state: q^(0)'s rows, as `add` allocates them
            need = sum(NodeStates.capacity(1 + len(f)) * n.row_bytes()
                       for n, f in zip(self.nodes, firsts, strict=True))
            if need > max_bytes:
                raise MemoryBudgetExceeded.of(
                    f"{getattr(self.lattice, 'source', 'lattice')}: --method ars's first "
                    "q-automaton", need, max_bytes, ARS_HINT)
        start = self.cut((self.bos,))
        self.unfilled = rows = [(0, self._add(0, start))]
        for v in range(1, self.n_nodes):
            rows.append((v, self._add(v, ())))
            for w in firsts[v]:
                rows.append((v, self._add(v, (w,))))
        if first_words:
            self._first_word_targets()
        # every other target is 0: the empty context, the only state of a node but the start

    def _add(self, v: int, ctx: Context) -> int:
        """A q^(0) state: its row starts as the arcs' own weights (epsilon columns keep them)."""
        node = self.nodes[v]
        s = node.add(ctx, self.is_exact(v, ctx))
        if not self.all_words[v]:  # (a row of word arcs only is filled whole)
            node.weights[s] = self.base[v]
            node.own_weight[s] = self.eps_mask[v]
        return s

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
            word_columns, eps_columns, _ = self._out_node(u)
            for (d, w), cols in word_columns.items():
                node.targets[:k, cols] = self.nodes[d].index[(w,)]
            for j, d in eps_columns:
                index = self.nodes[d].index
                node.targets[:k, j] = [index.get(c, 0) if len(c) == 1 else 0
                                       for c in node.contexts]

    # ----- contexts ------------------------------------------------------------------------
    def is_exact(self, v: int, context: Context) -> bool:
        """Whether every path reaching node v with this context has p fixed by it: order - 1
        words, or the model says so at v's position (`TargetModel.is_exact`; on a confusion
        network, where node v is position v; on a word lattice only for the whole history: a
        context starting with `<s>`, which no arc holds), or the backoff shortcut
        (`shortcut`)."""
        if len(context) >= self.width or (self.layered and self.model.is_exact(v, context)):
            return True
        # Not by position on a word lattice, even where every path to v has the same length: a
        # context exact only by its position (WeightedLM without <s>) drops `<s>`, which a
        # later node reached by paths of several lengths needs.
        if (not self.layered and context and context[0] == self.bos
                and self.model.is_exact(len(context) - 1, context)):
            return True
        if self.extendable is None:
            return False
        if context not in self._exact:
            self._exact[context] = context_hash(context, self.width) not in self.extendable
        return self._exact[context]

    # ----- paths (candidate indices) -----------------------------------------------------
    def refine(self, tokens: Sequence[str]) -> bool:
        return self.refine_indices(self.indices(tokens))

    def refine_indices(self, idx: Sequence[int], pending: list | None = None) -> bool:
        """Algorithm 2 along a confusion network's path (candidate indices); with `pending`,
        the new rows are appended there for the caller to fill (variant "all-edges")."""
        if pending is not None:
            return self._refine(self.index_steps(idx), pending, 1, {})
        return self._refine_steps([self.index_steps(idx)], 1) > 0

    def refine_many(self, paths: Sequence[Sequence[int]]) -> int:
        """`refine_paths` on confusion-network paths (candidate indices)."""
        return self._refine_steps([self.index_steps(p) for p in paths], 1)

    # ----- Algorithm 2 ---------------------------------------------------------------------
    def refine_paths(self, paths: Sequence[Sequence[int]], depth: int | None = 1) -> int:
        """Refine along each path (arc numbers, start to its end), then give the new states
        their weights in one batched query (variant "all-edges"; "paper": path by path, the
        edge on the path only). Returns how many paths changed q.

        `depth`: words a context may gain per step of a path, 1 as in the paper's Algorithm 2;
        None: as many as the path's previous state tells apart (the path becomes exact in one
        pass, fewer iterations for more states). Deferring the fill is exact: a state created
        before its suffix state was filled copies that state's (older, larger) bounds, and is
        refilled itself before q is used again."""
        if depth is not None and depth < 1:
            raise AutomatonError(f"depth must be >= 1 or None, not {depth!r}")
        return self._refine_steps([self.steps(arcs) for arcs in paths], depth)

    def _refine_steps(self, paths: Sequence[Sequence[Step]], depth: int | None) -> int:
        pending: list[tuple[int, int]] = []
        changed = 0
        for steps in paths:
            only: dict[tuple[int, int], int] = {}
            changed += self._refine(steps, pending, depth, only)
            if self.variant == "paper" and pending:
                self.fill(pending, only)
                pending = []
        if pending:
            self.fill(pending)
        return changed

    def _refine(self, steps: Sequence[Step], pending: list[tuple[int, int]],
                depth: int | None, only: dict[tuple[int, int], int]) -> bool:
        """Algorithm 2 along one path (its `steps`). For each step u -> v (left to right,
        so the path's previous state is already refined): if the state t the path reaches
        at v has an inexact context c, create the states up to `depth` words longer than c (the next
        suffixes of the path's history) that the previous state tells apart; each copies its
        suffix state's weights until filled. Variant "paper": the next edge on the path
        joins `only` to be lowered, unless its row is filled in full (a new state that is
        exact or at a final node). Returns True if anything changed."""
        history = [self.bos, *[w for _, _, _, w in steps if w >= 0]]  # <s> x
        end = 1  # the history so far: history[:end]
        s = 0  # the path's state at the current node
        before = len(pending)
        paper = self.variant == "paper"
        nodes, width = self.nodes, self.width
        for k, (u, col, v, w) in enumerate(steps):
            if w >= 0:
                end += 1
            node, prev = nodes[v], nodes[u]
            t = int(prev.targets[s, col])
            if not node.exact[t]:
                have = len(node.contexts[t])  # |c| = ORDER(t)
                # the words of the previous state's context the path carries on (extend)
                most = len(prev.contexts[s])
                if w >= 0 and most < width:
                    most += 1
                goal = most if depth is None or most <= have + depth else have + depth
                while have < goal and not node.exact[t]:
                    have += 1  # SUF(history, ORDER(t) + 1), absent: t was the longest
                    pending.append((v, self._create(v, tuple(history[end - have:end]), t)))
                    t = int(prev.targets[s, col])  # the edge now leads to the new state
            s = t
            if paper and k + 1 < len(steps):  # lower the next edge of the path only
                nxt = steps[k + 1][1]
                if (not node.own_weight[s, nxt] and self.alive[v][nxt]  # a pruned edge: -inf
                        and (v, s) not in only):
                    only[(v, s)] = nxt
                    pending.append((v, s))
        if paper:
            for v, s in pending[before:]:  # exact states and final nodes are filled in full
                if (nodes[v].exact[s] or self.is_final[v]) and (v, s) in only:
                    del only[(v, s)]
        return len(pending) > before

    def _create(self, v: int, ctx: Context, suffix_state: int) -> int:
        """Create the state `ctx` at node v from its suffix state, and move into it every
        edge into v for which it is now the longest suffix: from states at the arc's source
        whose context ends with ctx[:-1], on a word arc of word ctx[-1], or with ctx, on an
        epsilon arc."""
        node = self.nodes[v]
        s = node.add(ctx, len(ctx) >= self.width or self.is_exact(v, ctx))
        node.weights[s] = node.weights[suffix_state]
        if self.is_final[v]:  # (elsewhere -inf, as the row was allocated)
            node.final[s] = node.final[suffix_state]
        if not self.all_words[v]:  # copied: not its own (False as allocated), but epsilon's
            node.own_weight[s] = self.eps_mask[v]
        if self.layered:  # node v + 1 has no context extending ctx (see `_set_targets`)
            node.targets[s] = node.targets[suffix_state]
        else:
            self._set_targets(v, s, suffix_state)
        if self.listener is not None:
            self.listener.state_created(v, s, node.targets[s])
        if self.layered:  # one source node, v - 1, and word arcs only
            sources = self.nodes[v - 1].by_suffix.get(ctx[:-1])
            if sources:
                self._move(v - 1, sources, self.columns_of(v - 1, ctx[-1]), node, ctx, s)
            return s
        into = self._into[v] or self._into_node(v)
        keys = (((ctx[-1], ctx[:-1]), (-1, ctx)) if -1 in into else ((ctx[-1], ctx[:-1]),))
        for key, need in keys:
            for u, cols in into.get(key, ()):
                sources = self.nodes[u].by_suffix.get(need)
                if sources:
                    self._move(u, sources, cols, node, ctx, s)
        return s

    def _move(self, u: int, sources: list[int], cols: Sequence[int], node: NodeStates,
              ctx: Context, s: int) -> None:
        """Point the edges of `sources` (states at node u) on `cols` at the new state s of
        context ctx (at `node`) where their target's context is shorter than ctx."""
        src = np.asarray(sources)
        source, listener = self.nodes[u], self.listener
        for col in cols:
            cur = source.targets[src, col]
            moved = src[node.ctx_len[cur] < len(ctx)]  # a shorter target: ctx is longer
            source.targets[moved, col] = s
            if listener is not None and len(moved):
                listener.edges_moved(u, moved, col, s)

    def _set_targets(self, v: int, s: int, suffix_state: int) -> None:
        """The out-edge targets of the new state s at node v, from those of its suffix state
        (context ctx[1:]): a suffix of ctx + w of at most len(ctx) words is a suffix of
        ctx[1:] + w, so the only longer target can be ctx + w itself (ctx for epsilon), when
        it is short enough to be a context and present at the arc's destination. Those are
        found from the destinations' contexts that extend ctx (few), not arc by arc.

        Never on a confusion network: a context c + (w,) at a node d is created only when c
        is present at the source node of the arc it came by (c is a suffix of the previous
        state's context, which the suffix-closed set holds), and node v + 1 has one source,
        v, where ctx was absent until now."""
        node = self.nodes[v]
        ctx = node.contexts[s]
        node.targets[s] = node.targets[suffix_state]
        if not node.width:
            return
        row = node.targets[s]
        if len(ctx) < self.width:  # ctx + w is not cut: it may be a context
            for d in self._out_node(v)[2]:
                longer = self.nodes[d].by_prefix.get(ctx)
                if longer:  # rare: the table of columns is built only then
                    columns = self._out_node(v)[0]
                    for w, t in longer:
                        for j in columns.get((d, w), ()):
                            row[j] = t
        if not self.all_words[v]:
            for j, d in self._out_node(v)[1]:
                same = self.nodes[d].index.get(ctx)
                if same is not None:
                    row[j] = same
