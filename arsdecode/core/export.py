"""Exports of the q-automaton for inspection: networkx graphs and pynini (OpenFst) log64 Fsts.

Kept apart from `automaton.py` (the refinable bound itself): these are read-only views, and
pynini / networkx are imported only when an export is asked for. They are functions of the
automaton, not its methods, so that the automaton does not import its exports: the two modules
used to import each other (issue 30).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from arsdecode.core.automaton import QAutomaton


def state_ids(qa: QAutomaton) -> dict[tuple[int, int], int]:
    """A global number for each (node, state), node by node (a confusion network's layers)."""
    ids: dict[tuple[int, int], int] = {}
    for v, node in enumerate(qa.nodes):
        for s in range(len(node)):
            ids[(v, s)] = len(ids)
    return ids


def _edges(qa: QAutomaton):
    """Every edge of q: (source id, destination id, word or None for epsilon, ln weight)."""
    ids = state_ids(qa)
    for v, node in enumerate(qa.nodes):
        lo = int(qa.arc_lo[v])
        dsts = qa.arc_dst[v].tolist()
        for s in range(len(node)):
            for j, d in enumerate(dsts):
                yield (ids[(v, s)], ids[(d, int(node.targets[s, j]))], qa.arc_words[lo + j],
                       float(node.weights[s, j]))


def to_networkx(qa: QAutomaton):
    """The automaton as a networkx.MultiDiGraph: nodes carry their lattice node (`layer` on
    a confusion network) and context, edges carry token (None: epsilon) and ln weight;
    states of a final node carry `final_weight` (ln, </s> included)."""
    import networkx as nx

    g = nx.MultiDiGraph()
    for (v, s), node_id in state_ids(qa).items():
        attrs = {"layer": v, "context": " ".join(qa.context_tokens(v, s))}
        if qa.is_final[v]:
            attrs["final_weight"] = float(qa.nodes[v].final[s])
        g.add_node(node_id, **attrs)
    for src, dst, tok, w in _edges(qa):
        g.add_edge(src, dst, token=tok, weight=w)
    return g


def to_fst(qa: QAutomaton):
    """The automaton as a pynini Fst with log64 arcs (weight = -ln q, OpenFst's
    convention), input = output = token (epsilon arcs: label 0); symbol table attached.
    -inf edges are left out.
    """
    import pynini as _pynini

    pynini: Any = _pynini  # pynini's stubs do not re-export SymbolTable/Weight/Arc

    syms = pynini.SymbolTable()
    syms.add_symbol("<eps>")
    for tok in qa.arc_words:
        if tok is not None:
            syms.add_symbol(tok)
    fst = pynini.Fst(arc_type="log64")
    ids = state_ids(qa)
    for _ in ids:
        fst.add_state()
    fst.set_start(0)
    zero = pynini.Weight.zero("log64")
    for src, dst, tok, w in _edges(qa):
        if w == -np.inf:
            continue
        label = 0 if tok is None else syms.find(tok)
        fst.add_arc(src, pynini.Arc(label, label, pynini.Weight("log64", -w), dst))
    for (v, s), state in ids.items():
        if qa.is_final[v]:
            w = float(qa.nodes[v].final[s])
            fst.set_final(state, zero if w == -np.inf else pynini.Weight("log64", -w))
    fst.set_input_symbols(syms)
    fst.set_output_symbols(syms)
    return fst


def write_fst(qa: QAutomaton, path: str) -> None:
    """Write `to_fst(qa)` as an OpenFst binary file (inspect with fstprint/fstdraw)."""
    to_fst(qa).write(str(path))
