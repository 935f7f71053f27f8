"""Benchmarks that print ratios: each runs as a module from the repository root,
`python -m bench.<name>`, so this checkout's arsdecode, data_prep and bench are the ones imported.
They import neither experiments/ nor each other's insides beyond bench's own helpers."""
