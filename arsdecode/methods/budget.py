"""The memory budget of the exact DPs: how much memory auto (and the word-lattice k-best,
posteriors and ARS) may use, in bytes, from the environment so that a batch run's worker
processes inherit it. `methods.dispatch` re-exports these names; it turns the budget into
pair budgets for its method choice.
"""

from __future__ import annotations

import os

from arsdecode.errors import OptionError
from arsdecode.methods import fast_full

# The memory auto lets the compiled DP use (bytes): its transition cache, plus
# BYTES_PER_PAIR for every (state, candidate) pair it tries (the states, and the graph that
# k-best and posteriors keep). auto never runs the DP past it: the pair budget of every
# lattice is at most (budget - cache) / BYTES_PER_PAIR, and a lattice past its budget goes to
# ARS (decode, k-best) or to sampling (marginals). It lives in the environment variable
# MEMORY_BUDGET_ENV (MiB), so the worker processes of a batch run inherit it; set it with
# `set_memory_budget` or the CLI's --memory-budget.
DEFAULT_MEMORY_BUDGET = 1 << 30
MEMORY_BUDGET_ENV = "ARSDECODE_MEMORY_BUDGET_MB"
BYTES_PER_PAIR = 40  # a recorded edge is 24 bytes; a state 36; pairs >= states


def set_memory_budget(nbytes: int) -> None:
    """The memory auto lets the compiled full DP use, in bytes (default 1 GiB), for this
    process and the processes it starts."""
    if nbytes < 64 << 20:
        raise OptionError(f"the memory budget must be at least 64 MiB, not {nbytes} bytes")
    os.environ[MEMORY_BUDGET_ENV] = str(nbytes >> 20)


def memory_budget() -> int:
    """The memory budget in bytes (MEMORY_BUDGET_ENV, else DEFAULT_MEMORY_BUDGET)."""
    text = os.environ.get(MEMORY_BUDGET_ENV)
    if text is None:
        return DEFAULT_MEMORY_BUDGET
    try:
        mib = int(text)
    except ValueError:
        mib = 0
    if mib < 64:
        raise OptionError(f"{MEMORY_BUDGET_ENV}={text!r}: give a whole number of MiB, >= 64")
    return mib << 20


def memory_pairs_budget() -> int:
    """The most pairs the compiled DP may try on one lattice within the memory budget."""
    return max(0, (memory_budget() - fast_full.SPARSE_CACHE_BYTES) // BYTES_PER_PAIR)
