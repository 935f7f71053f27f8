"""The `arsdecode` command line: `main` (the command table and the error boundary),
`options` (shared flags and output helpers) and one module per command group."""
