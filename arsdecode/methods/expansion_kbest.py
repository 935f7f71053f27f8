"""The k best paths of a word lattice (a DAG) on its merged expansion, within a memory budget.

Why its own module: the expansion (`methods.expansion_dp`) is shared by decode, sampling and
k-best; k-best alone keeps per-state lists (distinct paths) or a search tree (distinct word
sequences), whose memory grows with k and with the lattice's branching, so it also owns the
budget checks that refuse a request before its tables are allocated (issue 29).

Two searches, both exact in float64 (ties as `methods.expansion_dp`'s module docstring says):

- distinct paths (`kbest_paths`): Huang & Chiang's Algorithm 1 backward, every state keeping
  its k best suffixes: (states x k) tables, checked against the budget beforehand.
- distinct word sequences (`kbest_unique`): A* over word prefixes (the on-the-fly
  determinisation of Mohri & Riley 2002) with the exact best suffix h as heuristic. A prefix
  is expanded lazily: popping it pushes one entry per next word, scored max g + w + h over its
  transitions reading that word, and only a popped entry builds its child's states (the best
  score g of reaching each state by reading the prefix, epsilon closure included). The
  earlier version built every child's states and word tuple at every pop: on a 1,000-node,
  101k-arc DAG, 1.7 GB and 98 s for k = 10 (bench/bench_dag_memory.py).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from arsdecode.core.semiring import quiet
from arsdecode.errors import MemoryBudgetExceeded, NoPathError, OptionError
from arsdecode.lattice import WordLattice
from arsdecode.methods.expansion import RAISE_BUDGET, DagExpansion, dag_expand
from arsdecode.methods.expansion_dp import DagPath, best_suffixes
from arsdecode.model import ModelLike, as_target_model

__all__ = ["dag_kbest", "kbest_paths", "kbest_unique", "expansion_bytes"]

# Bytes per entry of the distinct-path tables (4 columns of 8 bytes per state and rank) and
# per candidate of a node's merge (a dozen 8-byte columns and the sort's permutations).
TABLE_BYTES = 32
CANDIDATE_BYTES = 120
# Bytes per entry of the unique search's heap (a tuple, its float, its word-chain link) and
# per state of a built prefix (numpy rows: state, g, transition in, from parent).
HEAP_ENTRY_BYTES = 240
PREFIX_STATE_BYTES = 40
PREFIX_BYTES = 600  # a built prefix's object and its four arrays' headers


def rank_in_groups(grp: np.ndarray) -> np.ndarray:
    """Each entry's position within its run of equal values of the sorted `grp`."""
    if len(grp) == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, grp[1:] != grp[:-1]])
    lengths = np.diff(np.r_[starts, len(grp)])
    return np.arange(len(grp)) - np.repeat(starts, lengths)


def expansion_bytes(ex: DagExpansion) -> int:
    """The memory the expansion's arrays hold."""
    return sum(a.nbytes for a in (ex.node_start, ex.contexts, ex.final, ex.src, ex.dst,
                                  ex.arc, ex.weight, ex.out_start))


def kbest_paths(ex: DagExpansion, wl: WordLattice, k: int,
                max_bytes: int | None = None) -> list[DagPath]:
    """Huang & Chiang's Algorithm 1 backward: every state keeps its k best suffixes, ordered by
    score, then lexicographically by arc indices (the stop first). A suffix through transition
    e is e + a kept suffix of dst(e); same e means same dst, so the lexicographic order of two
    candidates is (arc, the rank of the dst's suffix in lexicographic order), which each state
    keeps for its k entries (`lex`).

    Raises MemoryBudgetExceeded, before allocating, when the tables and the largest node's
    candidates would pass `max_bytes` with the expansion."""
    s_count = ex.n_states
    if max_bytes is not None:
        widest = int(np.diff(ex.out_start[ex.node_start]).max(initial=0))
        need = (expansion_bytes(ex) + s_count * k * TABLE_BYTES
                + (widest * k + s_count) * CANDIDATE_BYTES)
        if need > max_bytes:
            raise MemoryBudgetExceeded.of(
                f"{wl.source}: --nbest {k} on {s_count} expanded states", need, max_bytes,
                f"give a smaller --nbest or {RAISE_BUDGET}")
    vals = np.full((s_count, k), -np.inf)
    nxt_e = np.full((s_count, k), -1, dtype=np.int64)  # first transition (-1: stop)
    nxt_r = np.full((s_count, k), -1, dtype=np.int64)  # rank of the rest in dst's list
    lex = np.zeros((s_count, k), dtype=np.int64)
    for u in range(len(ex.node_start) - 2, -1, -1):
        lo, hi = ex.node_states(u)
        elo, ehi = ex.node_transitions(u)
        m = hi - lo
        e = np.arange(elo, ehi)
        cand_state = np.concatenate([np.arange(m), np.repeat(ex.src[e] - lo, k)])
        cand_e = np.concatenate([np.full(m, -1, dtype=np.int64), np.repeat(e, k)])
        cand_r = np.concatenate([np.full(m, -1, dtype=np.int64), np.tile(np.arange(k), len(e))])
        with quiet():
            cand_v = np.concatenate([ex.final[lo:hi],
                                     (ex.weight[e][:, None] + vals[ex.dst[e]]).ravel()])
        cand_arc = np.concatenate([np.full(m, -1, dtype=np.int64), np.repeat(ex.arc[e], k)])
        dst_lex = np.concatenate([np.zeros(m, dtype=np.int64),
                                  lex[ex.dst[e]].ravel() if len(e) else np.zeros(0, np.int64)])
        live = cand_v > -np.inf
        cand_state, cand_e, cand_r, cand_v, cand_arc, dst_lex = (
            a[live] for a in (cand_state, cand_e, cand_r, cand_v, cand_arc, dst_lex))
        order = np.lexsort((dst_lex, cand_arc, -cand_v, cand_state))
        cand_state, cand_e, cand_r, cand_v, cand_arc, dst_lex = (
            a[order] for a in (cand_state, cand_e, cand_r, cand_v, cand_arc, dst_lex))
        pos = rank_in_groups(cand_state)
        top = pos < k
        st, ps = cand_state[top] + lo, pos[top]
        vals[st, ps] = cand_v[top]
        nxt_e[st, ps] = cand_e[top]
        nxt_r[st, ps] = cand_r[top]
        # the kept entries' lexicographic rank within their state
        kept_arc, kept_lex, kept_state = cand_arc[top], dst_lex[top], cand_state[top]
        lorder = np.lexsort((kept_lex, kept_arc, kept_state))
        rank = np.empty(len(lorder), dtype=np.int64)
        rank[lorder] = rank_in_groups(kept_state[lorder])
        lex[st, ps] = rank
    if vals[0, 0] == -np.inf:
        raise NoPathError(f"{wl.source}: every path has probability zero")
    out = []
    for r in range(k):
        if vals[0, r] == -np.inf:
            break
        arcs: list[int] = []
        state, rr = 0, r
        while (e_ := int(nxt_e[state, rr])) >= 0:
            arcs.append(int(ex.arc[e_]))
            state, rr = int(ex.dst[e_]), int(nxt_r[state, rr])
        out.append(DagPath(wl.path_words(arcs), tuple(arcs), float(vals[0, r])))
    return out


class _Words:
    """A word prefix as a link to its parent's (word codes; code order = string order), so a
    heap entry costs one link, not a copy of the prefix. Compared (heap ties only) by the
    tuples of codes, which is the word tuples' order."""

    __slots__ = ("code", "parent")

    def __init__(self, parent: _Words | None, code: int) -> None:
        self.parent = parent
        self.code = code

    def codes(self) -> tuple[int, ...]:
        out: list[int] = []
        cur: _Words | None = self
        while cur is not None and cur.code >= 0:
            out.append(cur.code)
            cur = cur.parent
        return tuple(reversed(out))

    def __lt__(self, other: _Words) -> bool:
        return self.codes() < other.codes()


@dataclass
class _Prefix:
    """A built word prefix: for every state some path reading exactly these words reaches
    (`states`, increasing), its best score `g` and how (`via`: the transition into it, -1 at
    the root; `from_parent`: whether that transition read the prefix's last word)."""

    words: _Words
    states: np.ndarray
    g: np.ndarray
    via: np.ndarray
    from_parent: np.ndarray
    parent: _Prefix | None


class _UniqueSearch:
    """The A* of `kbest_unique` (module docstring) over one expansion."""

    def __init__(self, ex: DagExpansion, wl: WordLattice, h: np.ndarray) -> None:
        self.ex, self.wl, self.h = ex, wl, h
        words = [w if w is not None else "" for w in wl.words]
        self.vocab, arc_code = np.unique(np.array(words, dtype=object).astype(str),
                                         return_inverse=True)
        arc_code = arc_code.astype(np.int64)
        arc_code[[w is None for w in wl.words]] = -1
        self.code = arc_code[ex.arc]  # word code per transition, -1 for epsilon
        eps = np.flatnonzero(self.code < 0)
        self.eps = eps
        self.eps_start = np.searchsorted(ex.src[eps], np.arange(ex.n_states + 1))

    def transitions(self, p: _Prefix) -> tuple[np.ndarray, np.ndarray]:
        """The word transitions leaving p's states, in (state, transition) order, and the
        index in p.states of each one's source."""
        lo, hi = self.ex.out_start[p.states], self.ex.out_start[p.states + 1]
        counts = hi - lo
        src = np.repeat(np.arange(len(p.states)), counts)
        t = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        t = t + np.repeat(lo, counts)
        word = self.code[t] >= 0
        return t[word], src[word]

    def child_scores(self, p: _Prefix) -> tuple[np.ndarray, np.ndarray]:
        """Each next word's code and the best g + w + h over its transitions (the closure of
        the child adds no more: h is the exact best suffix)."""
        t, src = self.transitions(p)
        ex = self.ex
        with quiet():
            f = p.g[src] + ex.weight[t] + self.h[ex.dst[t]]
        codes, inv = np.unique(self.code[t], return_inverse=True)
        best = np.full(len(codes), -np.inf)
        np.maximum.at(best, inv.ravel(), f)
        return codes, best

    def build(self, p: _Prefix, code: int, words: _Words) -> _Prefix:
        """The child of p by the word `code`: per state reached, the best g (ties: the first
        in (state, transition) order), then the epsilon closure."""
        ex = self.ex
        t, src = self.transitions(p)
        pick = self.code[t] == code
        t, src = t[pick], src[pick]
        v = p.g[src] + ex.weight[t]
        dst = ex.dst[t]
        order = np.lexsort((np.arange(len(t)), -v, dst))
        first = np.ones(len(order), dtype=bool)
        first[1:] = dst[order][1:] != dst[order][:-1]
        keep = order[first]
        best = {int(d): (float(g), int(e), True)
                for d, g, e in zip(dst[keep].tolist(), v[keep].tolist(), t[keep].tolist(),
                                   strict=True)}
        self.close(best)
        states = np.array(sorted(best), dtype=np.int64)
        rows = [best[s] for s in states.tolist()]
        return _Prefix(words, states, np.array([r[0] for r in rows]),
                       np.array([r[1] for r in rows], dtype=np.int64),
                       np.array([r[2] for r in rows], dtype=bool), p)

    def close(self, best: dict[int, tuple[float, int, bool]]) -> None:
        """Epsilon closure, states in increasing id (every epsilon transition goes up)."""
        if not len(self.eps):
            return
        ex, eps, start = self.ex, self.eps, self.eps_start
        todo = list(best)
        heapq.heapify(todo)
        while todo:
            s = heapq.heappop(todo)
            g = best[s][0]
            for e in eps[start[s]:start[s + 1]].tolist():
                d, v = int(ex.dst[e]), g + float(ex.weight[e])
                if d not in best:
                    heapq.heappush(todo, d)
                    best[d] = (v, e, False)
                elif v > best[d][0]:
                    best[d] = (v, e, False)

    def root(self) -> _Prefix:
        best = {0: (0.0, -1, False)}
        self.close(best)
        states = np.array(sorted(best), dtype=np.int64)
        rows = [best[s] for s in states.tolist()]
        return _Prefix(_Words(None, -1), states, np.array([r[0] for r in rows]),
                       np.array([r[1] for r in rows], dtype=np.int64),
                       np.array([r[2] for r in rows], dtype=bool), None)

    def arcs(self, p: _Prefix, state: int) -> tuple[int, ...]:
        """The arcs of the best path reading p's words and ending at `state`."""
        out: list[int] = []
        cur: _Prefix | None = p
        while cur is not None:
            i = int(np.searchsorted(cur.states, state))
            e = int(cur.via[i])
            if e < 0:
                break
            out.append(int(self.ex.arc[e]))
            state = int(self.ex.src[e])
            if cur.from_parent[i]:
                cur = cur.parent
        return tuple(reversed(out))


def kbest_unique(ex: DagExpansion, wl: WordLattice, k: int, h: np.ndarray,
                 max_bytes: int | None = None) -> list[DagPath]:
    """The k best distinct word sequences, each scored by its best path (module docstring):
    `h` is the exact best suffix of every state (`expansion_dp.best_suffixes`).

    Heap entries are (-priority, words, 0 complete / 1 prefix to build, id, prefix, state or
    word code); ties by the smaller word tuple, a complete sequence before a longer prefix.
    Raises MemoryBudgetExceeded when the search's heap and built prefixes would take it past
    `max_bytes` with the expansion."""
    search = _UniqueSearch(ex, wl, h)
    base = expansion_bytes(ex) + 3 * ex.n_transitions * 8  # + the search's per-transition rows
    final = ex.final
    heap: list[tuple[float, _Words, int, int, _Prefix, int]] = []
    counter = 0
    held = 0  # bytes of the built prefixes

    def expand(p: _Prefix) -> None:
        nonlocal counter
        with quiet():
            stop = p.g + final[p.states]
        if len(stop) and stop.max() > -math.inf:
            i = int(np.argmax(stop))  # the first best: the smallest state
            heapq.heappush(heap, (-float(stop[i]), p.words, 0, counter, p, int(p.states[i])))
            counter += 1
        codes, best = search.child_scores(p)
        for code, f in zip(codes.tolist(), best.tolist(), strict=True):
            if f > -math.inf:
                heapq.heappush(heap, (-f, _Words(p.words, code), 1, counter, p, code))
                counter += 1

    root = search.root()
    with quiet():
        if (root.g + h[root.states]).max() == -math.inf:
            raise NoPathError(f"{wl.source}: every path has probability zero")
    expand(root)
    out: list[DagPath] = []
    while heap and len(out) < k:
        negf, words, kind, _, p, what = heapq.heappop(heap)
        if kind == 0:
            out.append(DagPath([str(search.vocab[c]) for c in words.codes()],
                               search.arcs(p, what), -negf))
            continue
        child = search.build(p, what, words)
        held += PREFIX_BYTES + len(child.states) * PREFIX_STATE_BYTES
        expand(child)
        if max_bytes is not None:
            need = base + held + len(heap) * HEAP_ENTRY_BYTES
            if need > max_bytes:
                raise MemoryBudgetExceeded.of(
                    f"{wl.source}: --nbest {k} --unique (after {len(out)} word sequences)",
                    need, max_bytes, f"give a smaller --nbest or {RAISE_BUDGET}")
    return out


def dag_kbest(lm: ModelLike, wl: WordLattice, k: int, *, unique: bool = False,
              minimize: bool = True, max_states: int | None = None,
              max_bytes: int | None = None) -> list[DagPath]:
    """The k best paths, best first, exact in float64 (fewer if fewer have p > 0), by
    `kbest_paths` / `kbest_unique` on the expansion.

    unique=False: distinct paths (arc sequences), ties by the smaller arc-index sequence.
    unique=True: distinct word sequences, each scored by its best path (several paths can
    carry the same words: epsilon arcs, parallel arcs), ties by the smaller word tuple.

    Raises:
        OptionError: k < 1.
        NoPathError: every path has probability zero.
        MemoryBudgetExceeded: the expansion or the k-best search would pass `max_bytes`
            (refused before the memory is allocated).
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise OptionError(f"k (the number of paths) must be an integer >= 1, not {k!r}")
    ex = dag_expand(as_target_model(lm), wl, minimize=minimize, max_states=max_states,
                    max_bytes=max_bytes)
    k = min(int(k), wl.num_paths())  # each lattice path is at most one expansion path
    if unique:
        best = best_suffixes(ex)
        if best[0] == -np.inf:
            raise NoPathError(f"{wl.source}: every path has probability zero")
        return kbest_unique(ex, wl, int(k), best, max_bytes)
    return kbest_paths(ex, wl, int(k), max_bytes)
