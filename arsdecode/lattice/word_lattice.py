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
from arsdecode.model.limits import too_large

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
        "source:line: ..." for an arc, the node's name for a node."""
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
        out: list[int] = []
        for i, (s, d, word, w) in enumerate(arcs):
            for node in (s, d):
                if not 0 <= node < n_nodes:
                    raise LatticeError(f"{where(i)}: the arc {s} -> {d} names the node {node}, "
                                       "which does not exist")
            if math.isnan(w) or w == math.inf:
                raise LatticeError(f"{where(i)}: the arc {names[s]} -> {names[d]} has the "
                                   f"weight {w}")
            if (big := too_large(w)) is not None:
                raise LatticeError(f"{where(i)}: the arc {names[s]} -> {names[d]} has the "
                                   f"weight {w!r}, {big}")
            if word in SENTENCE_MARKERS:
                raise LatticeError(f"{where(i)}: {word!r} is a sentence marker, not a "
                                   "word (a path's score adds <s> and </s> itself)")
            if word is not None and (bad := token_problem(word)) is not None:
                raise LatticeError(f"{where(i)}: the word {word!r} {bad}")
            if w > -math.inf:
                out.append(i)
        # A cycle before "no final node": a cyclic SLF without end= has no node that no link
        # leaves, and the cycle is what the user has to fix.
        order = _topological_order(n_nodes, arcs, out, names, where)
        if not finals:
            raise LatticeError(f"{source}: no final node")
        live = _useful_nodes(n_nodes, start, finals, arcs, out)
        if not live[start] or not any(live[f] for f in finals if finals[f] > -math.inf):
            raise LatticeError(f"{source}: no path from the start node {names[start]} to a "
                               "final node")
        kept_nodes = [v for v in order if live[v]]
        new_id = {v: k for k, v in enumerate(kept_nodes)}
        kept = sorted((i for i in out if live[arcs[i][0]] and live[arcs[i][1]]),
                      key=lambda i: (new_id[arcs[i][0]], i))
        return cls(
            n_nodes=len(kept_nodes),
            finals={new_id[f]: float(finals[f]) for f in sorted(
                (f for f, w in finals.items() if live[f] and w > -math.inf),
                key=lambda f: new_id[f])},
            src=np.array([new_id[arcs[i][0]] for i in kept], dtype=np.int64),
            dst=np.array([new_id[arcs[i][1]] for i in kept], dtype=np.int64),
            words=tuple(arcs[i][2] for i in kept),
            log_weights=np.array([float(arcs[i][3]) for i in kept], dtype=np.float64),
            node_names=tuple(names[v] for v in kept_nodes),
            source=source,
            node_times=(None if node_times is None
                        else tuple(float(node_times[v]) for v in kept_nodes)),
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


def _topological_order(n: int, arcs: Sequence[RawArc], live_arcs: list[int],
                       names: list[str], where) -> list[int]:
    """Kahn's algorithm over the arcs of finite weight, smallest node id first among the
    ready ones (so a lattice already numbered in order keeps it). A cycle raises LatticeError
    naming an arc that closes it (a back edge of a depth-first search of what is left)."""
    import heapq

    indeg = [0] * n
    out: list[list[int]] = [[] for _ in range(n)]
    for i in live_arcs:
        out[arcs[i][0]].append(i)
        indeg[arcs[i][1]] += 1
    ready = [v for v in range(n) if indeg[v] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        v = heapq.heappop(ready)
        order.append(v)
        for i in out[v]:
            d = arcs[i][1]
            indeg[d] -= 1
            if indeg[d] == 0:
                heapq.heappush(ready, d)
    if len(order) < n:
        i = _closing_arc(n, arcs, out, {v for v in range(n) if indeg[v] > 0})
        s, d = arcs[i][0], arcs[i][1]
        raise LatticeError(f"{where(i)}: the arc {names[s]} -> {names[d]} closes a cycle "
                           "(a lattice must be acyclic)")
    return order


def _closing_arc(n: int, arcs: Sequence[RawArc], out: list[list[int]], left: set[int]) -> int:
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
                d = arcs[i][1]
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


def _useful_nodes(n: int, start: int, finals: Mapping[int, float], arcs: Sequence[RawArc],
                  live_arcs: list[int]) -> list[bool]:
    """Nodes on some start-to-final path: reachable from the start and reaching a final node
    of finite weight."""
    fwd: list[list[int]] = [[] for _ in range(n)]
    bwd: list[list[int]] = [[] for _ in range(n)]
    for i in live_arcs:
        fwd[arcs[i][0]].append(arcs[i][1])
        bwd[arcs[i][1]].append(arcs[i][0])

    def closure(seeds: list[int], nxt: list[list[int]]) -> list[bool]:
        seen = [False] * n
        todo = list(seeds)
        for v in todo:
            seen[v] = True
        while todo:
            v = todo.pop()
            for u in nxt[v]:
                if not seen[u]:
                    seen[u] = True
                    todo.append(u)
        return seen

    reach = closure([start], fwd)
    back = closure([f for f, w in finals.items() if w > -math.inf], bwd)
    return [a and b for a, b in zip(reach, back, strict=True)]
