"""A word mesh (confusion network) from a lattice's exact arc posteriors, and its consensus
hypothesis (issue 32).

Why: consensus decoding (Mangu, Brill & Stolcke 2000) picks, slot by slot, the word of highest
posterior, which minimises the expected word error rather than the sentence error, and the
mesh's posteriors are the confidences downstream tools (lattice-tool `-write-mesh`, Kaldi's
sausages) pass on. Every posterior here is exact (forward-backward under the rescoring target);
what is not exact, in any tool, is the alignment of competing words into slots. This one is the
pivot alignment (Hakkani-Tür et al. 2006), on the lattice's times:

1. The slots are the word arcs of the pivot path (the exact best path), in order, each with its
   time span (SLF `t=`; without times, a node's depth: the most words on a path to it).
2. Every other word arc goes to the pivot slot its span overlaps most; an arc that overlaps no
   pivot word (a word between two pivot words) opens, or joins, an insertion slot there.
3. In a slot, arcs of the same word add their posteriors; `*DELETE*` (SRILM's deletion token)
   gets 1 minus the slot's mass. A slot's mass can pass 1 only when one path puts two words
   in it (a pivot word spanning two shorter ones); it is then scaled back to 1 (`clipped`
   counts those slots), the one approximation beyond the alignment itself.

On a confusion network (one arc per candidate between consecutive nodes) the mesh is exactly
the per-position posterior marginals: every path has one word per slot.

Written as SRILM's word-mesh format (wlat-format(5)): `name`, `numaligns`, `posterior 1`, then
`align k word p word p ...` per slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from arsdecode.lattice.word_lattice import WordLattice

DELETE = "*DELETE*"


@dataclass
class Slot:
    """One slot: its time span and its words' posterior mass (insertion slots have no pivot)."""

    start: float
    end: float
    pivot: bool
    words: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class WordMesh:
    """The slots in order, each as [(word, posterior)] best first, `*DELETE*` included."""

    slots: list[list[tuple[str, float]]]
    clipped: int

    def consensus(self) -> list[str]:
        """The consensus hypothesis: each slot's most probable entry, deletions dropped."""
        return [slot[0][0] for slot in self.slots if slot and slot[0][0] != DELETE]

    def to_srilm(self, name: str) -> str:
        """SRILM's word-mesh text (module docstring)."""
        lines = [f"name {name}", f"numaligns {len(self.slots)}", "posterior 1"]
        for k, slot in enumerate(self.slots):
            lines.append(f"align {k} " + " ".join(f"{w} {p!r}" for w, p in slot))
        return "\n".join(lines) + "\n"


def node_spans(wl: WordLattice) -> np.ndarray:
    """Each node's time (SLF `t=`), or its depth (the most words on a path from the start),
    which orders the words of every path as times do."""
    if wl.node_times is not None:
        return np.asarray(wl.node_times, dtype=np.float64)
    depth = np.zeros(wl.n_nodes)
    for a in range(wl.n_arcs):  # arcs are sorted by source node, a topological order
        d = depth[wl.src[a]] + (wl.words[a] is not None)
        depth[wl.dst[a]] = max(depth[wl.dst[a]], d)
    return depth


def build_mesh(wl: WordLattice, posteriors: Sequence[float], pivot: Sequence[int],
               min_posterior: float = 0.0) -> WordMesh:
    """The mesh of `wl` around the pivot path (arc indices; the exact best path), from the arcs'
    exact posteriors (module docstring). Arcs below `min_posterior` are left out."""
    span = node_spans(wl)
    post = np.asarray(posteriors, dtype=np.float64)
    slots = [Slot(float(span[wl.src[a]]), float(span[wl.dst[a]]), True)
             for a in pivot if wl.words[a] is not None]
    for a in range(wl.n_arcs):
        word = wl.words[a]
        if word is None or post[a] <= min_posterior:
            continue
        start, end = float(span[wl.src[a]]), float(span[wl.dst[a]])
        k = _best_overlap(slots, start, end)
        if k is None:
            k = _insertion_slot(slots, start, end)
        slot = slots[k]
        slot.words[word] = slot.words.get(word, 0.0) + float(post[a])
    out: list[list[tuple[str, float]]] = []
    clipped = 0
    for slot in slots:
        mass = sum(slot.words.values())
        if mass > 1.0 + 1e-9:
            clipped += 1
            slot.words = {w: p / mass for w, p in slot.words.items()}
            mass = 1.0
        entries = sorted(slot.words.items(), key=lambda wp: (-wp[1], wp[0]))
        if mass < 1.0 - 1e-12:
            entries.append((DELETE, 1.0 - mass))
            entries.sort(key=lambda wp: -wp[1])
        if entries:
            out.append(entries)
    return WordMesh(out, clipped)


def _best_overlap(slots: list[Slot], start: float, end: float) -> int | None:
    """The pivot slot whose span overlaps [start, end] most (a zero-length span: the slot
    containing it), or None."""
    best, best_overlap = None, 0.0
    for k, slot in enumerate(slots):
        if not slot.pivot:
            continue
        overlap = min(end, slot.end) - max(start, slot.start)
        if end == start and slot.start <= start < slot.end:
            overlap = 1e-12
        if overlap > best_overlap:
            best, best_overlap = k, overlap
    return best


def _insertion_slot(slots: list[Slot], start: float, end: float) -> int:
    """The insertion slot for a word between pivot words: the one already at its place (its
    midpoint between the same two pivot slots), else a new one inserted there."""
    mid = (start + end) / 2
    k = 0
    while k < len(slots) and (slots[k].start + slots[k].end) / 2 <= mid:
        k += 1
    for j in (k - 1, k):  # a neighbour that is an insertion slot at this place
        if 0 <= j < len(slots) and not slots[j].pivot:
            return j
    slots.insert(k, Slot(start, end, False))
    return k
