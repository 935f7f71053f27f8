"""Tree automata with an n-gram target (issue 31): the pRTA input kind and its exact methods.

`automaton.TreeAutomaton` is the input (JSON and Alto/IRTG formats, checked); the exact
methods on it with any `TargetModel` are in the modules beside it.
"""

from .automaton import NULL, Derivation, Rule, TreeAutomaton, TreeSampler
from .counts import sample_counts

__all__ = ["NULL", "Derivation", "Rule", "TreeAutomaton", "TreeSampler", "sample_counts"]
