"""The way in for tree automata from `arsdecode.api` (issue 31): the same public functions as
for lattices (`decode`, `decode_kbest`, `sample`, `marginals`), each option checked before any
work, an option the tree methods do not take an OptionError naming it (as `methods.options`
does for lattices).
"""

from __future__ import annotations

from typing import Any

from arsdecode.errors import OptionError
from arsdecode.model import ModelLike

from . import api
from .automaton import TreeAutomaton

DECODE_OPTIONS = {"max_iterations", "max_queries"}
SAMPLE_OPTIONS = {"method", "max_queries", "target_ar", "max_trials"}
MARGINALS_OPTIONS = {"max_queries"}


def _check(options: dict[str, Any], allowed: set[str], what: str) -> None:
    for name in sorted(options):
        if name not in allowed:
            raise OptionError(f"{name}: not an option of {what} on a tree automaton (it takes "
                              f"{', '.join(sorted(allowed))})")


def decode(target: ModelLike, automaton: TreeAutomaton, method: str, k: int | None,
           options: dict[str, Any]) -> Any:
    """`arsdecode.decode` (and `decode_kbest`) on a tree automaton: the best derivation
    (a TreeDecodeResult), or with `k` the k best (`Paths` of `TreePath`)."""
    _check(options, DECODE_OPTIONS, "decode")
    if k is None:
        return api.decode(target, automaton, method, **options)
    return api.kbest(target, automaton, k, method, **options)


def sample(target: ModelLike, automaton: TreeAutomaton, n: int, seed: int | None,
           options: dict[str, Any]) -> Any:
    """`arsdecode.sample` on a tree automaton (a TreeSampleResult)."""
    _check(options, SAMPLE_OPTIONS, "sample")
    return api.sample(target, automaton, n, seed, **options)


def marginals(target: ModelLike, automaton: TreeAutomaton, n: int, seed: int | None,
              method: str, options: dict[str, Any]) -> Any:
    """`arsdecode.marginals` on a tree automaton: rule posteriors and ln Z. The lattice
    methods' names map onto the tree ones: "full" the exact forest, "sample" estimates from
    ARS's exact samples, "auto" the forest within its budget."""
    _check(options, MARGINALS_OPTIONS, "marginals")
    tree_method = {"full": "full", "sample": "ars", "auto": "auto"}[method]
    return api.marginals(target, automaton, n, seed, tree_method, **options)
