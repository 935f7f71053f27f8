"""Names a module exports but imports on first use (PEP 562): `arsdecode`, `arsdecode.model`
and `arsdecode.api` each keep a table of name -> defining module and take their module's
`__getattr__` and `__dir__` from `lazy_names`.

Why: a one-lattice `arsdecode decode` pays for every module it imports (issue 34, start-up:
the imports were more than half of such a process beyond numpy's own), and a package that
re-exported its whole layer eagerly would import all of it: the VPYLM trainer, ARS, the
marginals, the sampling results. Why one helper: the three modules wrote the same two
functions each.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(module: str, exports: Mapping[str, str]
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of the module named `module`, whose public names
    `exports` maps to the modules defining them. A name is imported when first asked for and
    then stored in the module, so the next look-up is a plain attribute; any other name is
    an AttributeError, as for a module without the hook."""
    namespace = sys.modules[module].__dict__

    def __getattr__(name: str) -> Any:
        source = exports.get(name)
        if source is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        namespace[name] = value  # next time, a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
