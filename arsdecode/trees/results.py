"""What the tree methods return: the project's result types with the tree added.

Why subclasses of `methods.results`' types: the CLI and `batch` print a DecodeResult's and a
SampleResult's fields already (tokens, log_p, certified, method, log_Z with its interval);
a tree result is one of them plus the bracketed tree (`f(the,g(cat,sat))`) and the rule ids
of the derivation, so the printing code needs only the extra fields. Natural logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from arsdecode.methods.results import DecodeResult, Paths, SampleResult


@dataclass(frozen=True)
class TreeDecodeResult(DecodeResult):
    """The exact best derivation: `tree` bracketed, `tokens` its yield, `rules` its rule ids
    in pre-order; `states` counts the intersection's nodes (the last one, for ARS)."""

    tree: str = ""
    rules: tuple[int, ...] = ()

    def to_json(self) -> dict:
        return {"tree": self.tree, "rules": list(self.rules), **super().to_json()}


@dataclass(frozen=True)
class TreePath:
    """One derivation of a k-best list or a sample (natural log)."""

    tree: str
    tokens: list[str]
    rules: tuple[int, ...]
    log_p: float

    def to_json(self) -> dict:
        return {"tree": self.tree, "tokens": self.tokens, "rules": list(self.rules),
                "log_p": self.log_p}


def tree_paths(paths: list[TreePath], method: str, certified: bool = True) -> Paths:
    """A k-best list (`Paths`: a list that says its method and whether each is exact)."""
    return Paths(paths, method=method, certified=certified)


@dataclass(frozen=True)
class TreeSampleResult(SampleResult):
    """Exact i.i.d. derivations: `trees` bracketed and `rules` beside SampleResult's fields
    (`samples` are the yields); `method` "full" (exact forest, ln Z exact with a zero-width
    interval) or "ars" (adaptive rejection, ln Z estimated with its 95% interval)."""

    trees: list[str] = field(default_factory=list)
    rules: list[tuple[int, ...]] = field(default_factory=list)
    method: str = "ars"

    def to_json(self) -> dict:
        return {**super().to_json(), "trees": self.trees,
                "rules": [list(r) for r in self.rules], "method": self.method}


@dataclass(frozen=True)
class RuleMarginal:
    """A rule's posterior: expected uses per derivation (its probability of use when a
    derivation uses it at most once), with a 95% interval (zero width when exact)."""

    rule: int
    lhs: str
    label: str
    children: tuple[str, ...]
    p: float
    lo: float
    hi: float

    def to_json(self) -> dict:
        return {"rule": self.rule, "lhs": self.lhs, "label": self.label,
                "children": list(self.children), "p": self.p, "ci": [self.lo, self.hi]}


@dataclass(frozen=True)
class TreeMarginalsResult:
    """Rule posteriors and ln Z with its interval; `exact` when computed on the forest."""

    marginals: list[RuleMarginal]
    log_Z: float
    log_Z_ci: tuple[float, float]
    exact: bool
    method: str
    seconds: float
    draws: TreeSampleResult | None = field(default=None, repr=False)

    @property
    def p(self) -> np.ndarray:
        return np.array([m.p for m in self.marginals])

    def to_json(self) -> dict:
        return {"marginals": [m.to_json() for m in self.marginals], "log_Z": self.log_Z,
                "log_Z_ci": list(self.log_Z_ci), "exact": self.exact, "method": self.method,
                "trials": self.draws.trials if self.draws else 0,
                "timing": {"seconds": self.seconds}}
