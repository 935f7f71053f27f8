"""What sampling and k-best return: frozen results (natural log).

Why apart from `methods.results`: a one-lattice decode, the start-up case of issue 34, builds
none of these, and each frozen dataclass costs about a millisecond to create at import. The
field names are `methods.results`' (a path's words are `tokens`; a word lattice's sample is a
`DagPath`). All logs are natural (ln).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from arsdecode.methods.results import DagPath


@dataclass(frozen=True)
class SampleTrace:
    """Per trial: the ratio p/q, acceptance, and the automaton size when it was drawn."""

    ratios: list[float]
    accepted: list[bool]
    states: list[int]
    log_Z_q: list[float]  # ln q_t(X) of the automaton each trial was drawn from
    # Index (into the lists above) of the first trial drawn from the final q, the one never
    # refined again; len(ratios) if q was refined after the last trial. Trials from there on
    # are i.i.d. given that q (e.g. for an importance-sampling estimate over them).
    frozen_from: int
    log_p: list[float] = field(default_factory=list)  # ln p(x_t) of each trial
    log_q: list[float] = field(default_factory=list)  # ln q_t(x_t) of each trial


@dataclass(frozen=True)
class SampleResult:
    """Exact i.i.d. samples of p, the trace of the run, and an unbiased estimate of p(X)."""

    samples: list[list[str]]
    log_p: list[float]
    trials: int
    acceptance_rate: float
    log_Z: float  # ln p(X), importance estimate from every trial (arsdecode.methods.evidence)
    log_Z_ci: tuple[float, float]  # 95% interval of log_Z
    log_Z_unweighted: float  # ln of the plain mean of q_t(X) 1[acc_t] (unbiased, noisy)
    states: int
    refinements: int
    seconds: float
    trace: SampleTrace = field(repr=False)
    # Trials drawn when the acceptance rate over the last `ar_window` trials first reached
    # `target_ar` (checked at the end of a batch; q is frozen from then on); None if never.
    adapted_at_trial: int | None
    log_Z_rejection: float = -math.inf  # from accepted trials only (evidence.rejection_estimate)
    log_Z_rejection_ci: tuple[float, float] = (-math.inf, math.inf)

    def ranked(self) -> list[tuple[list[str], int, float]]:
        """Distinct samples as (tokens, count, ln p), most frequent first (the paper's Table 4).

        Ties are broken by higher ln p, then by the tokens, so the order is reproducible.
        """
        counts: dict[tuple[str, ...], int] = {}
        score: dict[tuple[str, ...], float] = {}
        for tokens, log_p in zip(self.samples, self.log_p, strict=True):
            key = tuple(tokens)
            counts[key] = counts.get(key, 0) + 1
            score[key] = log_p
        order = sorted(counts, key=lambda k: (-counts[k], -score[k], k))
        return [(list(k), counts[k], score[k]) for k in order]

    def to_json(self) -> dict:
        """JSON-ready dict (natural logs). Only "timing" varies between runs with one seed."""
        return {
            "samples": self.samples,
            "log_p": self.log_p,
            "trials": self.trials,
            "acceptance_rate": self.acceptance_rate,
            "log_Z": self.log_Z,
            "log_Z_ci": list(self.log_Z_ci),
            "log_Z_unweighted": self.log_Z_unweighted,
            "log_Z_rejection": self.log_Z_rejection,
            "log_Z_rejection_ci": list(self.log_Z_rejection_ci),
            "states": self.states,
            "refinements": self.refinements,
            "timing": {"seconds": self.seconds},
        }


@dataclass(frozen=True)
class ScoredPath:
    """One path of the k-best list (natural log)."""

    tokens: list[str]
    indices: tuple[int, ...]
    log_p: float
    log_q: float


@dataclass(frozen=True)
class KBestResult:
    """The K best distinct paths of p, best first, and how they were certified."""

    paths: list[ScoredPath]
    iterations: int
    states: int
    seconds: float
    certified: bool
    method: str = "ars"  # which exact method produced it: "ars" (kbest) or "full" (full_kbest)


@dataclass(frozen=True)
class DagArsSampleResult:
    """Exact i.i.d. samples of a word lattice's paths by adaptive rejection (natural log).

    The fields of `SampleResult` (the confusion network's), except that each sample is a
    `DagPath` (tokens, arcs, ln p). `log_Z` is the importance estimate of ln Z with its 95%
    interval `log_Z_ci` (`evidence.importance_estimate`); `log_Z_rejection` uses the accepted
    trials only, `log_Z_unweighted` is the plain mean of q_t(X) 1[accepted_t]."""

    samples: list[DagPath]
    trials: int
    acceptance_rate: float
    log_Z: float
    log_Z_ci: tuple[float, float]
    log_Z_rejection: float
    log_Z_rejection_ci: tuple[float, float]
    states: int
    refinements: int
    adapted_at_trial: int | None
    seconds: float
    log_Z_unweighted: float = -math.inf
    trace: SampleTrace | None = field(default=None, repr=False)

    @property
    def log_p(self) -> list[float]:
        """ln p of each sample, as `SampleResult.log_p`."""
        return [p.log_p for p in self.samples]

    def to_json(self) -> dict:
        """JSON-ready dict (natural logs), with `SampleResult.to_json`'s fields; each sample
        is a path's JSON (`DagPath.to_json`). Only "timing" varies between runs with one seed."""
        return {"samples": [p.to_json() for p in self.samples], "log_p": self.log_p,
                "trials": self.trials, "acceptance_rate": self.acceptance_rate,
                "log_Z": self.log_Z, "log_Z_ci": list(self.log_Z_ci),
                "log_Z_unweighted": self.log_Z_unweighted,
                "log_Z_rejection": self.log_Z_rejection,
                "log_Z_rejection_ci": list(self.log_Z_rejection_ci), "states": self.states,
                "refinements": self.refinements, "method": "ars",
                "timing": {"seconds": self.seconds}}
