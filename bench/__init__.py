"""Benchmarks that print ratios: each runs as a module from the repository root,
`python -m bench.<name>`, so this checkout's arsdecode, data_prep and bench are the ones imported.
They import neither experiments/ nor each other's insides beyond bench's own helpers: `record`
(every bench's figures, peak RSS beside each time), `compare` (a new run against the stored
previous one in bench/history) and `ab` (the A/B table between two revisions)."""
