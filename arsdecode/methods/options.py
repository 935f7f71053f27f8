"""Which keyword options each operation takes, per lattice kind and method: the table
`methods.dispatch` checks before any work.

Why a table: the dispatcher hands `**options` to one of several engines (ARS or the full DP,
on a confusion network or a word lattice), and each takes a different set. Without one place
that says which, an option meant for another engine was silently dropped (`unique` on a
confusion network's k-best, `max_iterations` on the compiled DP) or died deep inside as a
TypeError. Here every (operation, lattice kind, method) lists the options it uses, each with
its default; `check_options` refuses any other, naming it and where it does apply.

An option given with its default value (or None) is accepted everywhere it is known: it asks
for nothing, so nothing is dropped (the CLI passes `variant=DEFAULT_VARIANT` and
`max_iterations=None` whatever the method). "auto" takes the options of every engine it may
run: ARS's options apply when auto falls back to ARS.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arsdecode.core.q_states import DEFAULT_VARIANT
from arsdecode.core.tolerances import CERTIFICATE_TOL
from arsdecode.errors import OptionError

KINDS = {"cn": "confusion network", "dag": "word lattice"}

# ARS on a confusion network (methods.ars.decode / kbest.decode_kbest / lockstep).
_ARS = {"variant": DEFAULT_VARIANT, "max_iterations": None, "tol": CERTIFICATE_TOL}
_ARS_DECODE = {**_ARS, "on_iteration": None, "keep_automaton": False, "prune": None}
_ARS_KBEST = {**_ARS, "on_iteration": None}
# ARS sampling on a confusion network (methods.ars.sample).
_ARS_SAMPLE = {"batch": 100, "target_ar": 0.2, "ar_window": 100, "variant": DEFAULT_VARIANT,
               "max_trials": None, "stop_when_adapted": False, "rng": None,
               "on_sample": None, "keep": True}
_MARGINALS_SAMPLE = {k: v for k, v in _ARS_SAMPLE.items() if k not in ("on_sample", "keep")}
_ADAPT = {"batch": 100, "target_ar": 0.2, "ar_window": 100, "variant": DEFAULT_VARIANT,
          "max_trials": None, "seed": None, "rng": None}
# ARS on a word lattice (methods.ars).
_DAG_ARS_DECODE = {"max_iterations": None, "tol": CERTIFICATE_TOL, "on_iteration": None}
_DAG_ARS_SAMPLE = {"batch": 100, "target_ar": 0.2, "ar_window": 100, "max_trials": None,
                   "depth": 1, "first_words": True}

# (operation, kind, method) -> the options it uses, with their defaults. A missing entry is a
# method the operation does not have on that lattice kind (`REFUSED_METHODS` says why).
TABLE: dict[tuple[str, str, str], Mapping[str, Any]] = {
    ("decode", "cn", "ars"): _ARS_DECODE,
    ("decode", "cn", "auto"): _ARS_DECODE,
    ("decode", "cn", "full"): {},
    ("decode", "dag", "ars"): _DAG_ARS_DECODE,
    ("decode", "dag", "auto"): {},  # auto is the expansion on word lattices (dispatch)
    ("decode", "dag", "full"): {},
    ("kbest", "cn", "ars"): _ARS_KBEST,
    ("kbest", "cn", "auto"): _ARS_KBEST,
    ("kbest", "cn", "full"): {},
    ("kbest", "dag", "auto"): {"unique": False},
    ("kbest", "dag", "full"): {"unique": False},
    ("decode_many", "cn", "ars"): _ARS,
    ("decode_many", "cn", "auto"): _ARS,
    ("decode_many", "cn", "full"): {},
    ("decode_many", "dag", "ars"): {"max_iterations": None, "tol": CERTIFICATE_TOL},
    ("decode_many", "dag", "auto"): {},
    ("decode_many", "dag", "full"): {},
    ("sample", "cn", "ars"): _ARS_SAMPLE,
    ("sample", "cn", "auto"): _ARS_SAMPLE,  # auto samples a confusion network by ARS
    ("sample", "cn", "full"): {"rng": None},
    ("sample", "dag", "ars"): _DAG_ARS_SAMPLE,
    ("sample", "dag", "auto"): {},  # auto samples a word lattice from its expansion
    ("sample", "dag", "full"): {},
    ("marginals", "cn", "auto"): _MARGINALS_SAMPLE,
    ("marginals", "cn", "sample"): _MARGINALS_SAMPLE,
    ("marginals", "cn", "full"): {},
    ("marginals", "dag", "auto"): {},
    ("marginals", "dag", "full"): {},
    ("adapt", "cn", "auto"): _ADAPT,
}

# (operation, kind, method) the engine has no way to run, with the reason.
REFUSED_METHODS: dict[tuple[str, str, str], str] = {
    ("kbest", "dag", "ars"): "a word lattice's k-best comes from its exact expansion; use "
                             "method 'full' or 'auto' (ARS decodes the single best path)",
    ("marginals", "dag", "sample"): "a word lattice gets exact arc posteriors (method 'full' "
                                    "or 'auto'); sampled marginals are per position of a "
                                    "confusion network",
    ("adapt", "dag", "auto"): "adapt refines a confusion network's q-automaton; on a word "
                              "lattice, sample(method='ars') adapts its own q and reports "
                              "adapted_at_trial",
}


def kind_of(lattice: object) -> str:
    """"dag" for a WordLattice, "cn" for a confusion network (`Lattice`)."""
    from arsdecode.lattice import WordLattice

    return "dag" if isinstance(lattice, WordLattice) else "cn"


def check_options(operation: str, kind: str, method: str, options: Mapping[str, Any]
                  ) -> dict[str, Any]:
    """OptionError unless `operation` runs on a `kind` lattice with `method` and uses every
    option of `options` given a value other than None or its default; the message names the
    option (or the method) and says why. Returns the options that engine takes (the others,
    at their defaults, ask for nothing)."""
    key = (operation, kind, method)
    where = f"{operation} on a {KINDS[kind]}"
    if key in REFUSED_METHODS:
        what = "the lattice" if operation == "adapt" else f"method {method!r}"
        raise OptionError(f"{where}: {what} is not available: {REFUSED_METHODS[key]}")
    if key not in TABLE:
        methods = sorted({m for (op, k, m) in TABLE if (op, k) == (operation, kind)})
        raise OptionError(f"{where}: unknown method {method!r}; choose from {methods}")
    takes = TABLE[key]
    for name, value in options.items():
        if name in takes:
            continue
        known = _default_anywhere(name)
        if known is _UNKNOWN:
            raise OptionError(f"{where}: unknown option {name!r}; with method {method!r} it "
                              f"takes {_listed(takes)}")
        if value is None or _same(value, known):
            continue  # the default: nothing asked for, nothing dropped
        raise OptionError(f"{where}: option {name!r} does not apply to method {method!r} "
                          f"(it takes {_listed(takes)}); {name!r} applies to "
                          f"{_homes(name)}")
    return {name: value for name, value in options.items() if name in takes}


_UNKNOWN = object()


def _default_anywhere(name: str) -> Any:
    for takes in TABLE.values():
        if name in takes:
            return takes[name]
    return _UNKNOWN


def _same(value: Any, default: Any) -> bool:
    try:
        return type(value) is type(default) and bool(value == default)
    except (TypeError, ValueError):  # an array, say: not a default
        return False


def _listed(takes: Mapping[str, Any]) -> str:
    return ", ".join(sorted(takes)) if takes else "no options"


def _homes(name: str) -> str:
    """Where an option applies, for the message: "decode on a confusion network (ars, auto),
    ...", grouped by operation and kind."""
    homes: dict[str, list[str]] = {}
    for (op, kind, method), takes in TABLE.items():
        if name in takes:
            homes.setdefault(f"{op} on a {KINDS[kind]}", []).append(method)
    return "; ".join(f"{where} (method {', '.join(ms)})" for where, ms in homes.items())
