"""Independent references to check a model or a decoder against: public, for your own models.

Why a package and not test helpers: the tests, the benchmarks and the experiments all need the
same oracles, and a user with their own ARPA file, converter or `TargetModel` needs them too.
Each one is written the slow, obvious way and shares no algorithm with what it checks:

- `brute`: every path of a small lattice enumerated and scored on its own (with a maxarpa
  model, any `TargetModel`, or KenLM), plus a chi-square test of samples against the exact
  distribution;
- `random_arpa`: random, structurally valid backoff ARPA files with positive backoffs, missing
  bow columns and IRSTLM-style missing prefixes: the models on which a bound or a state merge
  goes wrong first;
- `reference_arpa`: the textbook backoff model (dicts of word tuples) and the max over every
  left extension by brute force: the oracle of maxarpa's log10p and MAX-ARPA bounds;
- `reference_ars`: the readable pure-Python ARS (Algorithms 1 and 2, dicts, one query at a
  time): the oracle of `arsdecode.methods.ars` and the speed baseline of bench/.

Beyond numpy, nothing here is a runtime dependency: KenLM (`brute.brute_kenlm`,
`reference_arpa.kenlm_log10p`) and scipy (`brute.chi_square_pvalue`) are imported inside the
functions that use them; they come with the `test` extra (scipy) and the KenLM build of
`make install` (scripts/install.sh).
"""
