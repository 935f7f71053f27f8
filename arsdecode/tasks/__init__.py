"""Task front ends: turn a noisy observation into a `Lattice` of candidates with emissions.

Why separate from the decoder: the decoder only sees lattices and an n-gram model; everything
task-specific (which tokens are candidates, what the channel probabilities are) lives here.
"""
