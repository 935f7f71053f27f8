"""The targets the compiled full DP runs besides one n-gram table, and what it asks of each.

Why a table: `fast_full` used to ask "a mixture? a VPYLM? a log-linear target?" in six places,
and every new target added a branch to each. Here each kind is one row: the model class, found
through `sys.modules` (no object of a class can exist unless its module is loaded, so a plain
decode imports none of them: start-up, issue 34), and the module that compiles it, which
answers the same questions (`CompiledKind`). A new compiled target is a new row and a module
with those names; `fast_full` does not change.
"""

from __future__ import annotations

import importlib
import sys
import threading
import weakref
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from arsdecode.native import _core


class CompiledKind(Protocol):
    """What `fast_full` asks of the module compiling one kind of target (`fast_mixture`,
    `fast_vpylm`, `fast_loglinear`)."""

    ARS_TIME_FACTOR: float
    """auto's ARS time on this kind, relative to one n-gram table's (`cost_model`)."""
    PAIR_TIME_FACTOR: float
    """The full DP's time per (state, candidate) pair, relative to one n-gram table's."""

    def compilable(self, lm: Any) -> bool:
        """Whether the compiled DP can run `lm` at all (else ARS or the numpy DP)."""

    def setup_ngrams(self, lm: Any) -> int:
        """The set-up cost of `build_dp(lm)`, in n-grams of `cost_model.setup_seconds`."""

    def charge(self, lm: Any, seconds: float) -> float:
        """`seconds` of ARS about to run on `lm`, plus what earlier calls charged it (auto's
        ski rental: many one-lattice calls still pay for the set-up once)."""

    def is_built(self, lm: Any) -> bool:
        """Whether the tables `build_dp(lm)` needs are built in this process already."""

    def build_dp(self, lm: Any) -> _core.FullDP | None:
        """A new compiled DP for `lm`, or None when its states could not be exact."""


KINDS: tuple[tuple[str, str, str], ...] = (
    ("arsdecode.model.interpolated", "InterpolatedLM", "arsdecode.methods.fast_mixture"),
    ("arsdecode.model.vpylm", "VpylmLM", "arsdecode.methods.fast_vpylm"),
    ("arsdecode.model.loglinear", "LogLinearLM", "arsdecode.methods.fast_loglinear"),
)
"""(module of the model class, the class, the module compiling it), one row per kind."""


def kind_of(lm: object) -> CompiledKind | None:
    """The compiling module of `lm`'s kind, imported on first use; None for anything else
    (one n-gram table is `fast_full`'s own case)."""
    for model_module, class_name, kind_module in KINDS:
        module = sys.modules.get(model_module)
        if module is not None and isinstance(lm, getattr(module, class_name)):
            return cast(CompiledKind, importlib.import_module(kind_module))
    return None


class SkiRental:
    """auto's account of the ARS time it estimated on each model of one kind, over calls.

    Why: auto decides per call, and a user decoding one lattice per call would otherwise never
    set the DP up when one lattice's ARS costs less than the set-up. Charging every call sets
    it up once ARS has cost about the set-up (the ski-rental rule: at most about twice the
    better of never and at once). Kept per model (weakly: a model's account goes with it).
    """

    def __init__(self) -> None:
        self._charged: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def charge(self, lm: Any, seconds: float) -> float:
        """Add `seconds` of estimated ARS time to what `lm` was charged; return the sum."""
        with self._lock:
            total = self._charged.get(lm, 0.0) + seconds
            self._charged[lm] = total
        return total
