"""What the methods return: frozen results of decoding, k-best decoding and sampling.

Why a module of its own: the results are the methods' shared vocabulary. `dispatch` builds a
DecodeResult for the full DP, `lockstep` for ARS over many lattices, `kbest` a KBestResult,
and none of them needs the ARS module to do so. A word lattice's results (`DagPath`,
`DagDecodeResult`, `DagArsResult`, `DagArsSampleResult`) use the same field names (a path's
words are `tokens`; `words`, their name before, is an alias property and a JSON field kept
beside "tokens"), and add the path's `arcs`. All logs are natural (ln).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arsdecode.core.automaton import QAutomaton


@dataclass(frozen=True)
class DecodeResult:
    """The exact argmax of p, with the paper's Table 1 and Table 2 facts (natural log).

    One result for every lattice kind: on a word lattice (`ars.dag_ars_decode`, a
    `DagArsResult`, which adds only the alias `words` of `tokens`) `arcs` holds the path's arc
    numbers, `ngrams_by_order` is empty, and the JSON carries "words" (the name the
    word-lattice CLI wrote before "tokens"; the same list) and "arcs" besides the fields
    below."""

    tokens: list[str]
    log_p: float
    log_q: float
    iterations: int
    states: int
    ngrams_by_order: dict[int, int]
    trace: list[tuple[float, float]]  # per iteration: (log q(x*), log p(x*))
    seconds: float
    certified: bool = True
    automaton: QAutomaton | None = field(default=None, repr=False, compare=False)
    method: str = "ars"  # which exact method produced it: "ars" or "full" (dispatch)
    arcs: tuple[int, ...] | None = None  # a word lattice's path, as arc numbers

    def to_json(self) -> dict:
        """JSON-ready dict (natural logs). Only "timing" varies between identical runs."""
        path = {} if self.arcs is None else {"words": self.tokens, "arcs": list(self.arcs)}
        return {
            **path,
            "tokens": self.tokens,
            "log_p": self.log_p,
            "log_q": self.log_q,
            "certified": self.certified,
            "method": self.method,
            "iterations": self.iterations,
            "states": self.states,
            "ngrams_by_order": {str(k): v for k, v in self.ngrams_by_order.items()},
            "trace": [{"log_q": q, "log_p": p} for q, p in self.trace],
            "timing": {"seconds": self.seconds},
        }


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


class Paths(list[Any]):
    """A list of paths (a word lattice's k-best or samples, `DagPath`s) that also says how they
    were found: `method` ("full": the exact expansion; "ars": adaptive rejection) and
    `certified` (each path exact). Why a list: callers index and iterate it as the list it
    always was; the two attributes let the CLI and `batch` report what the engine ran
    instead of writing it by hand."""

    def __init__(self, paths: Iterable[Any] = (), *, method: str, certified: bool = True
                 ) -> None:
        super().__init__(paths)
        self.method = method
        self.certified = certified


# ----- word lattices: the same field names, with the path's arcs --------------------------------
@dataclass(frozen=True)
class DagPath:
    """One start-to-final path: its words (`tokens`, as every result names a path's words;
    `words` is an alias), its arc indices (into the `WordLattice`) and its score `log_p` (ln:
    arc and final weights plus the LM's ln p with `<s>` and `</s>`). Its JSON carries the
    words under "words" (the name before) and "tokens"."""

    tokens: list[str]
    arcs: tuple[int, ...]
    log_p: float

    @property
    def words(self) -> list[str]:
        """Alias of `tokens`."""
        return self.tokens

    def to_json(self) -> dict:
        return {"words": self.tokens, "tokens": self.tokens, "arcs": list(self.arcs),
                "log_p": self.log_p}


@dataclass(frozen=True)
class DagDecodeResult:
    """The best path of a word lattice by the exact expansion (natural log).

    `states` and `transitions` are the size of the merged expansion (what SRILM calls the
    expanded lattice's nodes and arcs), for comparison with the states ARS builds. `tokens`
    are the path's words (`words` an alias; the JSON carries both names)."""

    tokens: list[str]
    arcs: tuple[int, ...]
    log_p: float
    states: int
    transitions: int
    seconds: float
    certified: bool = True
    method: str = "full"

    @property
    def words(self) -> list[str]:
        """Alias of `tokens`."""
        return self.tokens

    def to_json(self) -> dict:
        """JSON-ready dict (natural logs). Only "timing" varies between identical runs."""
        return {"words": self.tokens, "tokens": self.tokens, "arcs": list(self.arcs),
                "log_p": self.log_p,
                "certified": self.certified, "method": self.method, "states": self.states,
                "transitions": self.transitions, "timing": {"seconds": self.seconds}}


@dataclass(frozen=True)
class DagArsResult(DecodeResult):
    """ARS's best path of a word lattice: a `DecodeResult` (the one decode result of every
    lattice kind) whose `arcs` are the path's arc numbers. `tokens` are the path's words
    (`words`, the name before, is an alias), `certified` False only when `max_iterations`
    stopped the run first (then `log_q` bounds the optimum from above); `states` is the size
    of the final q-automaton, to compare with the expansion's (`DagDecodeResult.states`)."""

    arcs: tuple[int, ...] = ()  # never None here: the path's arc numbers

    @property
    def words(self) -> list[str]:
        """Alias of `tokens`."""
        return self.tokens


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
