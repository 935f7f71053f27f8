"""The engine's core: semirings, the one layered DP, the target p and the q-automaton.

Nothing here chooses a method or knows a task; it only needs a `arsdecode.model.TargetModel`
and a lattice.
"""
