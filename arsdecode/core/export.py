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
    """A global number for each (layer, state), layer by layer."""
    ids: dict[tuple[int, int], int] = {}
    for i, layer in enumerate(qa.layers):
        for s in range(len(layer)):
            ids[(i, s)] = len(ids)
    return ids


def to_networkx(qa: QAutomaton):
    """The automaton as a networkx.MultiDiGraph: nodes carry layer and context, edges
    carry token and ln weight; final states carry `final_weight` (the ln </s> bound)."""
    import networkx as nx

    g = nx.MultiDiGraph()
    ids = state_ids(qa)
    L = len(qa.lattice)
    for (i, s), node in ids.items():
        attrs = {"layer": i, "context": " ".join(qa.context_tokens(i, s))}
        if i == L:
            attrs["final_weight"] = float(qa.layers[L].weights[s, 0])
        g.add_node(node, **attrs)
    for i in range(L):
        layer = qa.layers[i]
        for s in range(len(layer)):
            for j, tok in enumerate(qa.lattice.tokens[i]):
                g.add_edge(ids[(i, s)], ids[(i + 1, int(layer.targets[s, j]))],
                           token=tok, weight=float(layer.weights[s, j]))
    return g


def to_fst(qa: QAutomaton):
    """The automaton as a pynini Fst with log64 arcs (weight = -ln q, OpenFst's
    convention), input = output = token; symbol table attached. -inf edges are left out.
    """
    import pynini as _pynini

    pynini: Any = _pynini  # pynini's stubs do not re-export SymbolTable/Weight/Arc

    syms = pynini.SymbolTable()
    syms.add_symbol("<eps>")
    for toks in qa.lattice.tokens:
        for t in toks:
            syms.add_symbol(t)
    fst = pynini.Fst(arc_type="log64")
    ids = state_ids(qa)
    for _ in ids:
        fst.add_state()
    fst.set_start(0)
    L = len(qa.lattice)
    zero = pynini.Weight.zero("log64")
    for i in range(L):
        layer = qa.layers[i]
        for s in range(len(layer)):
            src = ids[(i, s)]
            for j, tok in enumerate(qa.lattice.tokens[i]):
                w = float(layer.weights[s, j])
                if w == -np.inf:
                    continue
                label = syms.find(tok)
                dst = ids[(i + 1, int(layer.targets[s, j]))]
                fst.add_arc(src, pynini.Arc(label, label, pynini.Weight("log64", -w), dst))
    for s in range(len(qa.layers[L])):
        w = float(qa.layers[L].weights[s, 0])
        fst.set_final(ids[(L, s)], zero if w == -np.inf else pynini.Weight("log64", -w))
    fst.set_input_symbols(syms)
    fst.set_output_symbols(syms)
    return fst


def write_fst(qa: QAutomaton, path: str) -> None:
    """Write `to_fst(qa)` as an OpenFst binary file (inspect with fstprint/fstdraw)."""
    to_fst(qa).write(str(path))
