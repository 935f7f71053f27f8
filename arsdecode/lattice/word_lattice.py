"""`WordLattice`: a word lattice as users hold it, a DAG of word arcs (issue 21).

Why a second lattice type: speech recognisers, OCR and segmenters write lattices whose paths
have different lengths, with epsilon (no-word) arcs, parallel arcs and several final nodes; a
confusion network (`Lattice`) is the special case of one arc per candidate between consecutive
nodes (`WordLattice.from_confusion`).

A path goes from the start node to a final node; its score (natural log) is the sum of its arcs'
ln weights, the final node's ln weight, and the LM's ln probability of its words (epsilon arcs
have none) with `<s>` before and `</s>` after.

Canonical form (every `WordLattice` is in it, `WordLattice.build` makes it): the nodes are
numbered 0..n-1 in a topological order with the start node 0, so every arc goes from a lower
number to a higher one; only nodes and arcs on some start-to-final path are kept (unreachable
and dead parts are dropped, as lattice-tool does); arcs of ln weight -inf are dropped; arcs are
sorted by source node, then in input order. `node_names` keeps each node's id in the file it
came from, for messages and for writing it back.

Errors (LatticeError, one line naming the source and, when known, the line): an arc to or from
a node that does not exist, a start node that does not exist, no final node, a weight that is
NaN, +inf or too large to add up (`arsdecode.model.limits`), a word holding white space or a
lone surrogate (`confusion.token_problem`), `<s>` or `</s>` as an arc's word (the score adds
them; so in a history `<s>` is always first, which ARS's exactness rule relies on), a cycle
(naming an arc that closes it), no path from the start to a final node.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from arsdecode.errors import LatticeError
from arsdecode.lattice.confusion import SENTENCE_MARKERS, Lattice, token_problem
from arsdecode.model.limits import LARGEST_LN, too_large

RawArc = tuple[int, int, "str | None", float]
"""An arc as a reader gives it: (source node, destination node, word or None, ln weight)."""


@dataclass(frozen=True, eq=False)
class WordLattice:
    """A word lattice in canonical form (module docstring): arrays of one entry per arc."""

    n_nodes: int
    finals: Mapping[int, float]  # final node -> ln final weight (finite)
    src: np.ndarray  # (A,) int64, src < dst
    dst: np.ndarray  # (A,) int64
    words: tuple[str | None, ...]  # (A,) None: an epsilon arc
    log_weights: np.ndarray  # (A,) float64 ln weight, finite
    node_names: tuple[str, ...]  # each node's id in its source
    source: str = "lattice"

    start: int = 0  # always 0 in canonical form
    node_times: tuple[float, ...] | None = None  # seconds, from SLF t= (CTM output)

    @property
    def n_arcs(self) -> int:
        return len(self.words)

    @classmethod
    def build(cls, n_nodes: int, start: int, finals: Mapping[int, float],
              arcs: Sequence[RawArc], *, source: str = "lattice",
              node_names: Sequence[str] | None = None,
              arc_lines: Sequence[int] | None = None,
              node_times: Sequence[float] | None = None) -> WordLattice:
        """Check a lattice as read (node ids 0..n_nodes-1) and bring it to canonical form.

        `arc_lines` (one per arc) and `node_names` only make messages point at the file:
        "source:line: ..." for an arc, the node's name for a node. The arcs become arrays
        (words interned) and `from_arrays` does the work."""
        vocab: dict[str, int] = {}
        word_ids = np.array([-1 if w is None else vocab.setdefault(w, len(vocab))
                             for _, _, w, _ in arcs], dtype=np.int64)
        return cls.from_arrays(
            n_nodes, start, finals, np.array([a[0] for a in arcs], dtype=np.int64),
            np.array([a[1] for a in arcs], dtype=np.int64), word_ids, list(vocab),
            np.array([float(a[3]) for a in arcs], dtype=np.float64), source=source,
            node_names=node_names, arc_lines=arc_lines, node_times=node_times)

    @classmethod
    def from_arrays(cls, n_nodes: int, start: int, finals: Mapping[int, float],
                    src: np.ndarray, dst: np.ndarray, word_ids: np.ndarray,
                    vocab: Sequence[str], weights: np.ndarray, *, source: str = "lattice",
                    node_names: Sequence[str] | None = None,
                    arc_lines: Sequence[int] | np.ndarray | None = None,
                    node_times: Sequence[float] | np.ndarray | None = None) -> WordLattice:
        """`build` on arcs held as arrays: `src`, `dst` (int64), `word_ids` (an index into
        `vocab`, -1 for epsilon) and `weights` (float64 ln), one entry per arc. Why arrays:
        a reader of a large lattice (SLF) then holds no Python object per arc, and the checks
        and the canonical form run over the arrays; the errors are `build`'s, for the first
        bad arc in input order."""
        names = [str(i) for i in range(n_nodes)] if node_names is None else list(node_names)

        def where(i: int) -> str:
            return f"{source}:{arc_lines[i]}" if arc_lines is not None else f"{source}: arc {i}"

        if not 0 <= start < n_nodes:
            raise LatticeError(f"{source}: the start node {start} does not exist")
        for node, weight in finals.items():
            if not 0 <= node < n_nodes:
                raise LatticeError(f"{source}: the final node {node} does not exist")
            if math.isnan(weight) or weight == math.inf:
                raise LatticeError(f"{source}: final node {names[node]} has the weight {weight}")
            if (big := too_large(weight)) is not None:
                raise LatticeError(f"{source}: final node {names[node]} has the weight "
                                   f"{weight!r}, {big}")
        bad = ((src < 0) | (src >= n_nodes) | (dst < 0) | (dst >= n_nodes) | np.isnan(weights)
               | (weights > LARGEST_LN))
        if len(vocab):
            bad_word = np.array([w in SENTENCE_MARKERS or token_problem(w) is not None
                                 for w in vocab], dtype=bool)
            bad |= (word_ids >= 0) & bad_word[np.maximum(word_ids, 0)]
        if bad.any():
            i = int(np.argmax(bad))
            w_id = int(word_ids[i])
            _refuse_arc(int(src[i]), int(dst[i]), None if w_id < 0 else vocab[w_id],
                        float(weights[i]), n_nodes, names, where(i))
        out = np.flatnonzero(weights > -math.inf)
        # A cycle before "no final node": a cyclic SLF without end= has no node that no link
        # leaves, and the cycle is what the user has to fix.
        order = _topological_order(n_nodes, src, dst, out, names, where)
        if not finals:
            raise LatticeError(f"{source}: no final node")
        live = _useful_nodes(n_nodes, start, finals, src[out], dst[out], order)
        if not live[start] or not any(live[f] for f in finals if finals[f] > -math.inf):
            raise LatticeError(f"{source}: no path from the start node {names[start]} to a "
                               "final node")
        kept_nodes = order[live[order]]
        new_id = np.full(n_nodes, -1, dtype=np.int64)
        new_id[kept_nodes] = np.arange(len(kept_nodes), dtype=np.int64)
        kept = out[live[src[out]] & live[dst[out]]]
        kept = kept[np.argsort(new_id[src[kept]], kind="stable")]  # by source, then input
        kept_list = kept_nodes.tolist()
        return cls(
            n_nodes=len(kept_list),
            finals={int(new_id[f]): float(finals[f]) for f in sorted(
                (f for f, w in finals.items() if live[f] and w > -math.inf),
                key=lambda f: int(new_id[f]))},
            src=new_id[src[kept]],
            dst=new_id[dst[kept]],
            words=tuple(np.array([*vocab, None], dtype=object)[word_ids[kept]]),  # -1: None
            log_weights=np.array(weights[kept], dtype=np.float64),
            node_names=tuple(names[v] for v in kept_list),
            source=source,
            node_times=(None if node_times is None
                        else tuple(float(node_times[v]) for v in kept_list)),
        )

    @classmethod
    def from_confusion(cls, lattice: Lattice) -> WordLattice:
        """The confusion network as a word lattice: node i -> i + 1 per candidate of position
        i (weight its ln emission), the last node final with weight 0."""
        arcs: list[RawArc] = [
            (i, i + 1, tok, float(e))
            for i, (toks, emis) in enumerate(zip(lattice.tokens, lattice.log_emissions,
                                                 strict=True))
            for tok, e in zip(toks, emis.tolist(), strict=True)]
        return cls.build(len(lattice) + 1, 0, {len(lattice): 0.0}, arcs)

    # ----- JSON DAG: {"start": 0, "finals": {"5": 0.0}, "arcs": [[src, dst, word|null, ln_w]]}

    @classmethod
    def from_json_obj(cls, obj: object, *, source: str = "lattice") -> WordLattice:
        """A JSON DAG (node ids: any integers or strings; finals: id -> ln weight)."""
        if not isinstance(obj, dict) or "arcs" not in obj or "finals" not in obj:
            raise LatticeError(f"{source}: a JSON DAG is an object with \"start\", \"finals\" "
                               "and \"arcs\"")
        arcs_in, finals_in = obj["arcs"], obj["finals"]
        if not isinstance(arcs_in, list) or not isinstance(finals_in, dict):
            raise LatticeError(f"{source}: \"arcs\" must be a list and \"finals\" an object")
        ids: dict[str, int] = {}

        def node(x: object, what: str) -> int:
            if isinstance(x, bool) or not isinstance(x, (int, str)):
                raise LatticeError(f"{source}: {what}: a node id must be an integer or a "
                                   f"string, not {x!r}")
            return ids.setdefault(str(x), len(ids))

        start = node(obj.get("start", 0), "start")
        arcs: list[RawArc] = []
        for i, a in enumerate(arcs_in):
            if not (isinstance(a, list) and len(a) == 4):
                raise LatticeError(f"{source}: arc {i}: expected [src, dst, word or null, "
                                   f"ln_weight], got {a!r}")
            s, d, word, w = a
            if word is not None and (not isinstance(word, str) or not word.strip()
                                     or word != word.strip()):
                raise LatticeError(f"{source}: arc {i}: the word must be a non-blank string "
                                   f"without surrounding spaces, or null, not {word!r}")
            arcs.append((node(s, f"arc {i}"), node(d, f"arc {i}"), word,
                         _number(w, f"{source}: arc {i}")))
        finals = {node(k, "finals"): _number(v, f"{source}: final {k}")
                  for k, v in finals_in.items()}
        names = list(ids)
        return cls.build(len(names), start, finals, arcs, source=source, node_names=names)

    def to_json_obj(self) -> dict:
        """The JSON DAG of this lattice (canonical node numbers; `from_json_obj` reads it back
        to an equal lattice)."""
        return {"start": 0,
                "finals": {str(k): v for k, v in self.finals.items()},
                "arcs": [[int(s), int(d), w, float(x)] for s, d, w, x in
                         zip(self.src.tolist(), self.dst.tolist(), self.words,
                             self.log_weights.tolist(), strict=True)]}

    # ----- structure ---------------------------------------------------------------------------

    def arcs_from(self, node: int) -> range:
        """The arc indices leaving `node` (arcs are sorted by source node)."""
        lo = int(np.searchsorted(self.src, node, side="left"))
        hi = int(np.searchsorted(self.src, node, side="right"))
        return range(lo, hi)

    def with_word_penalty(self, penalty: float) -> WordLattice:
        """The same lattice with `penalty` (ln) added to every word arc's weight (HTK's and
        lattice-tool's word insertion penalty; epsilon arcs are not words)."""
        if not math.isfinite(penalty):
            raise LatticeError(f"{self.source}: the word penalty must be finite, not {penalty}")
        is_word = np.array([w is not None for w in self.words], dtype=bool)
        weights = self.log_weights + np.where(is_word, penalty, 0.0)
        return dataclasses.replace(self, log_weights=weights)

    def with_words(self, mapping: Mapping[str, str | None]) -> WordLattice:
        """The same lattice with each arc word in `mapping` replaced by its value (None: the
        arc becomes epsilon). Why: the vocabulary conventions of lattice tools (pauses and HTK's
        sentence markers that the LM never scores, `-map-unk`) are relabellings; the topology,
        the weights and so the canonical form are unchanged."""
        if not any(w in mapping for w in self.words if w is not None):
            return self
        words = tuple(mapping.get(w, w) if w is not None else None for w in self.words)
        for w in {m for m in mapping.values() if m is not None}:
            if w in SENTENCE_MARKERS or (bad := token_problem(w)) is not None:
                why = "is a sentence marker" if w in SENTENCE_MARKERS else bad
                raise LatticeError(f"{self.source}: cannot relabel words as {w!r}: it {why}")
        return dataclasses.replace(self, words=words)

    def num_paths(self) -> int:
        """The number of start-to-final paths (exact, a Python int)."""
        count = [0] * self.n_nodes
        count[0] = 1
        for s, d in zip(self.src.tolist(), self.dst.tolist(), strict=True):
            count[d] += count[s]
        return sum(count[f] for f in self.finals)

    def paths(self) -> Iterator[tuple[tuple[int, ...], int]]:
        """Every start-to-final path as (its arc indices, its final node): for brute force on
        small lattices (their number can be exponential)."""
        def walk(node: int, prefix: tuple[int, ...]) -> Iterator[tuple[tuple[int, ...], int]]:
            if node in self.finals:
                yield prefix, node
            for a in self.arcs_from(node):
                yield from walk(int(self.dst[a]), (*prefix, a))
        yield from walk(0, ())

    def path_words(self, arcs: Sequence[int]) -> list[str]:
        """The words of a path (epsilon arcs have none)."""
        return [w for a in arcs if (w := self.words[a]) is not None]


def _number(x: object, where: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise LatticeError(f"{where}: expected a number (ln weight), got {x!r}")
    return float(x)


def _refuse_arc(s: int, d: int, word: str | None, w: float, n: int, names: list[str],
                where: str) -> None:
    """Raise the LatticeError of a bad arc: a node that does not exist, a weight that is NaN,
    +inf or too large, a sentence marker or an unusable word (checked in that order)."""
    for node in (s, d):
        if not 0 <= node < n:
            raise LatticeError(f"{where}: the arc {s} -> {d} names the node {node}, which does "
                               "not exist")
    if math.isnan(w) or w == math.inf:
        raise LatticeError(f"{where}: the arc {names[s]} -> {names[d]} has the weight {w}")
    if (big := too_large(w)) is not None:
        raise LatticeError(f"{where}: the arc {names[s]} -> {names[d]} has the weight {w!r}, "
                           f"{big}")
    if word in SENTENCE_MARKERS:
        raise LatticeError(f"{where}: {word!r} is a sentence marker, not a word (a path's score "
                           "adds <s> and </s> itself)")
    if word is not None and (bad := token_problem(word)) is not None:
        raise LatticeError(f"{where}: the word {word!r} {bad}")
    raise AssertionError(f"{where}: the arc was flagged but passes every check")


def _topological_order(n: int, src: np.ndarray, dst: np.ndarray, live_arcs: np.ndarray,
                       names: list[str], where) -> np.ndarray:
    """Kahn's algorithm over the arcs of finite weight, smallest node id first among the
    ready ones (so a lattice already numbered in order keeps it: then every arc goes up and
    the order is 0..n-1 without the heap). A cycle raises LatticeError naming an arc that
    closes it (a back edge of a depth-first search of what is left)."""
    import heapq

    s_live, d_live = src[live_arcs], dst[live_arcs]
    if bool(np.all(s_live < d_live)):
        return np.arange(n, dtype=np.int64)
    by_src = np.argsort(s_live, kind="stable")
    first = np.searchsorted(s_live[by_src], np.arange(n + 1)).tolist()
    targets = d_live[by_src].tolist()
    indeg = np.bincount(d_live, minlength=n).tolist()
    ready = [v for v in range(n) if indeg[v] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        v = heapq.heappop(ready)
        order.append(v)
        for d in targets[first[v]:first[v + 1]]:
            indeg[d] -= 1
            if indeg[d] == 0:
                heapq.heappush(ready, d)
    if len(order) < n:
        arc_ids = live_arcs[by_src].tolist()
        out = [arc_ids[first[v]:first[v + 1]] for v in range(n)]
        i = _closing_arc(n, dst.tolist(), out, {v for v in range(n) if indeg[v] > 0})
        s, d = int(src[i]), int(dst[i])
        raise LatticeError(f"{where(i)}: the arc {names[s]} -> {names[d]} closes a cycle "
                           "(a lattice must be acyclic)")
    return np.array(order, dtype=np.int64)


def _closing_arc(n: int, dst: list[int], out: list[list[int]], left: set[int]) -> int:
    """An arc that closes a cycle among the nodes `left` (iterative DFS, first back edge)."""
    state = [0] * n  # 0 new, 1 on the stack, 2 done
    for root in sorted(left):
        if state[root]:
            continue
        stack = [(root, iter(out[root]))]
        state[root] = 1
        while stack:
            v, it = stack[-1]
            for i in it:
                d = dst[i]
                if d not in left:
                    continue
                if state[d] == 1:
                    return i
                if state[d] == 0:
                    state[d] = 1
                    stack.append((d, iter(out[d])))
                    break
            else:
                state[v] = 2
                stack.pop()
    raise AssertionError("no cycle among the nodes left by Kahn's algorithm")


def _useful_nodes(n: int, start: int, finals: Mapping[int, float], src: np.ndarray,
                  dst: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Nodes on some start-to-final path (a bool array): reachable from the start and
    reaching a final node of finite weight. One pass each way over the arcs sorted by their
    source's place in the topological `order` (every arc into a node comes before every arc
    out of it)."""
    place = np.empty(n, dtype=np.int64)
    place[order] = np.arange(n, dtype=np.int64)
    by_place = np.argsort(place[src], kind="stable")
    # memoryviews, not lists: each int is made as it is read, not 2 x 36 bytes per arc at once
    s_view, d_view = src[by_place].data, dst[by_place].data
    reach = [False] * n
    reach[start] = True
    for s, d in zip(s_view, d_view, strict=True):
        if reach[s]:
            reach[d] = True
    back = [False] * n
    for f, w in finals.items():
        if w > -math.inf:
            back[f] = True
    for s, d in zip(reversed(s_view), reversed(d_view), strict=True):
        if back[d]:
            back[s] = True
    return np.array(reach, dtype=bool) & np.array(back, dtype=bool)
