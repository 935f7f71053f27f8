"""Other inputs written as tree automata: a confusion network as a right-branching chain, and
the CKY chart over a confusion network (Teichmann et al.'s evaluation, with a lattice's words).

Why: a string lattice is the special case of a tree automaton whose trees are chains, so the
tree methods must give the lattice methods' answers on it (the tests check the best path,
k-best and ln Z against `arsdecode.decode` and the lattice's exact marginals). The chain for
positions 0 .. m-1 is

    P0! -> c(W0, P1),  P1 -> c(W1, P2), ...,  P{m-1} -> c(W{m-1}, END),  END -> null
    Wi -> token [emission]   (one leaf rule per candidate; ln weight = its ln emission)

so a derivation is a path, its yield the path's tokens, its weight the path's ln p.
"""

from __future__ import annotations

import math

import numpy as np

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


def cky_chart(lattice: Lattice, rng: np.random.Generator | None = None, gamma: float = 0.5,
              source: str = "<cky>") -> TreeAutomaton:
    """The CKY chart of Teichmann et al.'s evaluation over a confusion network: states
    <i,j> (spans), leaves <i,i+1> -> token [ln emission] and binary rules
    <i,j> -> *(<i,h>, <h,j>) whose weights, per span, are drawn from a symmetric
    Dirichlet(gamma) by `rng` (uniform when `rng` is None). Start <0,m>."""
    m = len(lattice.tokens)
    rules: list[tuple[str, str, list[str], float]] = []
    for width in range(m, 1, -1):
        for i in range(m - width + 1):
            j = i + width
            splits = list(range(i + 1, j))
            probs = rng.dirichlet([gamma] * len(splits)) if rng is not None and \
                len(splits) > 1 else np.full(len(splits), 1.0 / len(splits))
            for h, p in zip(splits, probs, strict=True):
                rules.append((f"<{i},{j}>", "*", [f"<{i},{h}>", f"<{h},{j}>"],
                              math.log(p) if p > 0 else -math.inf))
    for i, (toks, ws) in enumerate(zip(lattice.tokens, lattice.log_emissions, strict=True)):
        rules.extend((f"<{i},{i + 1}>", t, [], float(w)) for t, w in zip(toks, ws, strict=True))
    return TreeAutomaton.from_rules(f"<0,{m}>", rules, source)
