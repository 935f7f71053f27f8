"""Every numerical tolerance of the engine, in one place (natural log, nats).

Why one module: the certificate, the pruning rule and the stopping rule compare float64 sums
of identical terms; a tolerance spelled differently in two places would let one part of the
engine certify what another refuses.
"""

CERTIFICATE_TOL = 1e-9
"""ln q(x*) - ln p(x*) at or below which x* is certified optimal (and p > q + this is a
broken bound). It absorbs only the last-bit differences between a max-backoff bound that
happens to be tight and the exact value: both are float64 sums of the same terms."""

FLOAT_NOISE = 1e-6
"""When refinement can change nothing more on x* (every state on its path is exact), a gap at
or below this is float rounding between two orders of summation, not a model difference."""

PRUNE_MARGIN = 1e-6
"""Candidates are pruned only when their best q-path is below the best p found by more than
this, so the rounding of two sums can never prune the optimum itself."""
