"""arsdecode: exact decoding and exact sampling in high-order HMMs.

Adaptive rejection sampling (ARS) over a refined q-automaton, after Carter, Dymetman &
Bouchard (2012), "Exact Sampling and Decoding in High-Order HMMs". Results are natural log.
"""

__version__ = "0.1.0"
