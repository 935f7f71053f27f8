"""The experiments behind docs/results-*.md: thin runners, with every page rendered in `report/`.

Run a runner as a module from the repository root, `python -m experiments.<name>`: the root is
then on sys.path, so this checkout's arsdecode, data_prep and experiments are the ones imported,
and the modules here import each other as `experiments.<module>`, the way the tests import them
too. No runner edits sys.path. The oracles they share with the tests and bench/ (brute force,
random ARPA models, the reference ARS) are the public `arsdecode.testing`; the data both make
(SMS test sets, ASR-like lattices) is `data_prep`'s. experiments/ and bench/ never import each
other (experiments/lattice_rescoring.py runs bench.bench_lattice as a command).
"""
