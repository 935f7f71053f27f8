"""The methods: what is computed on a lattice once the model and the q-automaton exist.

`dispatch` is the one place a method is chosen (auto, ars, full); `ars` is Algorithm 1,
`lockstep` runs its step over many lattices, `full`/`fast_full` are the merged full-model DP
(numpy reference, compiled), and `kbest`, `marginals`, `evidence`, `approx` build on them.
"""
