"""Other inputs written as tree automata: a confusion network as a right-branching chain.

Why: a string lattice is the special case of a tree automaton whose trees are chains, so the
tree methods must give the lattice methods' answers on it (the tests check the best path,
k-best and ln Z against `arsdecode.decode` and the lattice's exact marginals). The chain for
positions 0 .. m-1 is

    P0! -> c(W0, P1),  P1 -> c(W1, P2), ...,  P{m-1} -> c(W{m-1}, END),  END -> null
    Wi -> token [emission]   (one leaf rule per candidate; ln weight = its ln emission)

so a derivation is a path, its yield the path's tokens, its weight the path's ln p.
"""

from __future__ import annotations

from arsdecode.lattice import Lattice

from .automaton import NULL, TreeAutomaton


def right_branching(lattice: Lattice, source: str = "<lattice>") -> TreeAutomaton:
    """The chain automaton of a confusion network (module docstring)."""
    m = len(lattice.tokens)
    rules: list[tuple[str, str, list[str], float]] = []
    for i in range(m):
        rules.append((f"P{i}", "c", [f"W{i}", f"P{i + 1}" if i + 1 < m else "END"], 0.0))
    rules.append(("END" if m else "P0", NULL, [], 0.0))
    for i, (toks, ws) in enumerate(zip(lattice.tokens, lattice.log_emissions, strict=True)):
        rules.extend((f"W{i}", t, [], float(w)) for t, w in zip(toks, ws, strict=True))
    return TreeAutomaton.from_rules("P0", rules, source)
