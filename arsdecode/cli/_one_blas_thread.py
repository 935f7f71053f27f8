"""Imported first by the `arsdecode` command, before anything loads numpy.

Why: the engine never calls BLAS (its arithmetic is numpy elementwise work and the compiled
core), but numpy's OpenBLAS starts one spinning thread per core when it loads: about 0.08 CPU
seconds on every CLI call on a 2-core machine, a sixth of tagging a whole WSJ section. One
thread removes that. Only defaults are set: a user's own setting wins, and a library user who
imports `arsdecode` is not affected (only the CLI entry point imports this module).
"""

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
