"""The `arsdecode` command line: `main` (the command table and the error boundary),
`options` (the parser class, shared flags and their checks), `output` (how results, warnings
and files are written) and one module per command group: `lattice` (decode, sample),
`marginals`, `sms`, `tag`, `batch`."""
