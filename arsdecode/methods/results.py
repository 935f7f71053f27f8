"""What the methods return: one frozen result type per operation, for every lattice kind.

Why a module of its own: the results are the methods' shared vocabulary. `dispatch` builds a
DecodeResult for the full DP, `lockstep` for ARS over many lattices, `kbest` a KBestResult,
and none of them needs the ARS module to do so.

One type per operation (issue 30), whatever the lattice and the method:

- decode: `DecodeResult`; sample: `SampleResult`; k-best: `KBestResult`; marginals:
  `MarginalsResult` (re-exported by `methods.marginals`, its home before).
- a path is a `ScoredPath`: `tokens` (its words), `arcs` and `log_p`. On a word lattice the
  arcs are its arc numbers; on a confusion network, the chosen candidate's index at each
  position (what `WordLattice.from_confusion` numbers as its arcs, column by column, when
  every candidate has nonzero weight).
- the names before issue 30 are kept as aliases of these types: `DagPath` (= ScoredPath),
  `DagDecodeResult` and `DagArsResult` (= DecodeResult), `DagArsSampleResult` (=
  SampleResult). So are the old field names: a path's or decode result's `words` (= tokens),
  a path's `indices` (= arcs), and, in JSON, "words" beside "tokens". A SampleResult's
  `samples` are token lists on every kind; a word lattice's old `DagPath` samples are its
  `paths` (and its JSON "samples" keeps the path objects it wrote before).

All logs are natural (ln).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from arsdecode.core.automaton import QAutomaton


class _TokensAlias:
    """The `words` alias of `tokens` (its name on word lattices before issue 30).

    Why a descriptor of its own and not a property: it only reads (a non-data descriptor),
    so a subclass whose own dataclass field is named `words` (`api.TagResult`: the tagged
    words, its tokens being the tags) stores and reads that field instead."""

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self if obj is None else obj.tokens


@dataclass(frozen=True)
class ScoredPath:
    """One path of a lattice (natural log): its words `tokens`, its `arcs` (a word lattice's
    arc numbers; on a confusion network the chosen candidate's index per position) and its
    score `log_p`; `log_q` is ARS's bound ln q(x) >= ln p(x) where a method reports one
    (k-best by ARS), else `log_p` (an exact path is its own bound).

    The one path type of k-best lists and samples on every lattice kind; `DagPath` is its
    kept name. `words` (of `tokens`) and `indices` (of `arcs`) are kept aliases."""

    tokens: list[str]
    arcs: tuple[int, ...]
    log_p: float
    log_q: float = math.nan  # nan: set to log_p

    def __post_init__(self) -> None:
        if math.isnan(self.log_q):
            object.__setattr__(self, "log_q", self.log_p)

    words = _TokensAlias()

    @property
    def indices(self) -> tuple[int, ...]:
        """Alias of `arcs` (a confusion network's candidate indices: their name before)."""
        return self.arcs

    def to_json(self) -> dict:
        """{"tokens", "arcs", "log_p"}, and "words" (= "tokens"), the name a word lattice's
        paths wrote before issue 30, kept."""
        return {"words": self.tokens, "tokens": self.tokens, "arcs": list(self.arcs),
                "log_p": self.log_p}


DagPath = ScoredPath
"""Kept name (before issue 30, a word lattice's path type): the one path type."""


@dataclass(frozen=True)
class DecodeResult:
    """The exact argmax of p, with the paper's Table 1 and Table 2 facts (natural log).

    One result for every lattice kind and every method. `arcs` is the path (a word lattice's
    arc numbers, a confusion network's candidate index per position; None only where no
    lattice path exists, a tree's derivation). `transitions` is the merged expansion's
    transition count where the full method on a word lattice built one (with `states` its
    states, what SRILM calls the expanded lattice's nodes and arcs), else None. The full
    method reports `log_q` = `log_p`, one iteration and an empty `ngrams_by_order` where it
    does not count them. The JSON carries every field on every kind ("transitions" null when
    unknown) and "words" (= "tokens", the word-lattice name before issue 30, kept)."""

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
    arcs: tuple[int, ...] | None = None  # the path: arc numbers, or candidate indices
    transitions: int | None = None  # the merged expansion's transitions (word lattice, full)

    words = _TokensAlias()

    def to_json(self) -> dict:
        """JSON-ready dict (natural logs). Only "timing" varies between identical runs."""
        return {
            "words": self.tokens,
            "tokens": self.tokens,
            "arcs": None if self.arcs is None else list(self.arcs),
            "log_p": self.log_p,
            "log_q": self.log_q,
            "certified": self.certified,
            "method": self.method,
            "iterations": self.iterations,
            "states": self.states,
            "transitions": self.transitions,
            "ngrams_by_order": {str(k): v for k, v in self.ngrams_by_order.items()},
            "trace": [{"log_q": q, "log_p": p} for q, p in self.trace],
            "timing": {"seconds": self.seconds},
        }


DagDecodeResult = DecodeResult
"""Kept name (before issue 30, a word lattice's full decode result)."""
DagArsResult = DecodeResult
"""Kept name (before issue 30, a word lattice's ARS decode result)."""


def exact_decode_result(tokens: list[str], log_p: float, states: int, seconds: float, *,
                        arcs: tuple[int, ...] | None = None,
                        transitions: int | None = None) -> DecodeResult:
    """A full-DP optimum as a DecodeResult, on either lattice kind: exact by construction,
    so log_q = log_p, one iteration whose trace is (log_p, log_p), certified."""
    return DecodeResult(tokens=tokens, log_p=log_p, log_q=log_p, iterations=1, states=states,
                        ngrams_by_order={}, trace=[(log_p, log_p)], seconds=seconds,
                        certified=True, method="full", arcs=arcs, transitions=transitions)


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


class _PathSequence:
    """A result that is also the sequence of its paths: `for p in result`, `result[0]`,
    `len(result)`. Why: a word lattice's k-best and samples were plain lists of paths
    (`Paths`) before issue 30, and callers index and iterate them. Always true in a boolean
    test, as the dataclass results always were (an empty list of paths is still a result)."""

    paths: list[ScoredPath]

    def __iter__(self) -> Iterator[ScoredPath]:
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    @overload
    def __getitem__(self, i: int) -> ScoredPath: ...
    @overload
    def __getitem__(self, i: slice) -> list[ScoredPath]: ...
    def __getitem__(self, i: int | slice) -> ScoredPath | list[ScoredPath]:
        return self.paths[i]

    def __bool__(self) -> bool:
        return True


@dataclass(frozen=True)
class SampleResult(_PathSequence):
    """Exact i.i.d. samples of p, the trace of the run, and an estimate of ln p(X) (exact,
    with a zero-width interval, from the full method), on every lattice kind.

    `samples` are the token lists and `arcs` the paths (a word lattice's arc numbers, a
    confusion network's candidate index per position; None where not recorded: a tree's
    derivations, see `rules`); `paths` puts each sample's tokens, arcs and ln p together
    (`ScoredPath`), and the result iterates over them. A word lattice's samples were `DagPath`s
    before issue 30: they are its `paths` now. `kind` ("cn" or "dag", `options.kind_of`) only
    says which JSON "samples" field to keep (below). `method`: "ars" or "full"."""

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
    arcs: list[tuple[int, ...]] | None = field(default=None, repr=False)
    method: str = "ars"  # which exact method drew them: "ars" or "full" (dispatch)
    kind: str = "cn"  # the lattice kind: "cn" or "dag" (the JSON "samples" shape kept)

    @cached_property
    def paths(self) -> list[ScoredPath]:  # type: ignore[override]
        """Each sample as a `ScoredPath` (tokens, arcs, ln p); arcs () where not recorded."""
        arcs: Iterable[tuple[int, ...]] = (
            self.arcs if self.arcs is not None else [()] * len(self.samples))
        return [ScoredPath(t, a, lp) for t, a, lp in zip(self.samples, arcs, self.log_p,
                                                         strict=True)]

    @property
    def certified(self) -> bool:
        """Always true: every sample is exact, whatever the method (kept: a word lattice's
        samples, a `Paths` list, said so before issue 30)."""
        return True

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
        """JSON-ready dict (natural logs). Only "timing" varies between runs with one seed.

        "paths" (each {"tokens", "arcs", "log_p"} and the kept "words") is the uniform field,
        on every lattice kind (absent where no arcs were recorded: a tree's derivations).
        "samples" is kept as each kind wrote it before issue 30: token lists on a confusion
        network, path objects (as "paths") on a word lattice."""
        paths = None if self.arcs is None else [p.to_json() for p in self.paths]
        return {
            "samples": paths if self.kind == "dag" and paths is not None else self.samples,
            **({} if paths is None else {"paths": paths}),
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
            "method": self.method,
            "timing": {"seconds": self.seconds},
        }


DagArsSampleResult = SampleResult
"""Kept name (before issue 30, a word lattice's ARS samples): the one sample result."""


def exact_sample_result(samples: list[list[str]], arcs: list[tuple[int, ...]],
                        log_p: list[float], log_z: float, seconds: float, kind: str
                        ) -> SampleResult:
    """Draws of the full method (exact forward filtering, backward sampling) as a
    SampleResult: every draw is accepted (trials = n, acceptance rate 1) and ln Z is exact
    (zero-width intervals), so code written for ARS's samples reads these unchanged."""
    n = len(samples)
    trace = SampleTrace(ratios=[1.0] * n, accepted=[True] * n, states=[0] * n,
                        log_Z_q=[log_z] * n, frozen_from=0, log_p=log_p, log_q=log_p)
    return SampleResult(
        samples=samples, log_p=log_p, trials=n, acceptance_rate=1.0 if n else 0.0,
        log_Z=log_z, log_Z_ci=(log_z, log_z), log_Z_unweighted=log_z, states=0,
        refinements=0, seconds=seconds, trace=trace, adapted_at_trial=None,
        log_Z_rejection=log_z if n else -math.inf,
        log_Z_rejection_ci=(log_z, log_z) if n else (-math.inf, math.inf), arcs=arcs,
        method="full", kind=kind)


@dataclass(frozen=True)
class KBestResult(_PathSequence):
    """The K best distinct paths of p, best first, and how they were found, on every
    lattice kind: each path a `ScoredPath` (on a word lattice, a list of `DagPath` before
    issue 30: the result still indexes and iterates as that list). `states` is the
    q-automaton's or the merged DP's size, 0 where the method does not count it."""

    paths: list[ScoredPath]
    iterations: int
    states: int
    seconds: float
    certified: bool
    method: str = "ars"  # which exact method produced it: "ars" (kbest) or "full" (full_kbest)

    def to_json(self) -> dict:
        """`decode --nbest K --json`'s fields: the best path's "words" (kept name), "tokens"
        and "log_p" at the top, as a single decode has them, then "nbest", every path's JSON
        (`ScoredPath.to_json`) best first. Only "timing" varies between identical runs."""
        best = self.paths[0] if self.paths else None
        return {"words": best.tokens if best else [], "tokens": best.tokens if best else [],
                "log_p": best.log_p if best else -math.inf, "certified": self.certified,
                "method": self.method, "iterations": self.iterations, "states": self.states,
                "nbest": [p.to_json() for p in self.paths],
                "timing": {"seconds": self.seconds}}


class Paths(list[Any]):
    """A list of paths (a tree automaton's k-best: `trees.results.TreePath`s) that also says
    how they were found: `method` ("full": the exact forest; "ars": adaptive rejection) and
    `certified` (each path exact). Why a list: callers index and iterate it; the two
    attributes let the CLI and `batch` report what the engine ran instead of writing it by
    hand. (A lattice's k-best is a `KBestResult`, which indexes and iterates the same way.)"""

    def __init__(self, paths: Iterable[Any] = (), *, method: str, certified: bool = True
                 ) -> None:
        super().__init__(paths)
        self.method = method
        self.certified = certified


@dataclass(frozen=True)
class Marginal:
    """One token's posterior marginal at a position: estimate and 95% interval."""

    token: str
    p: float
    lo: float
    hi: float

    def as_list(self) -> list:
        return [self.token, self.p, self.lo, self.hi]


def marginals_json(marginals: list[list[Marginal]]) -> list[list[list]]:
    return [[m.as_list() for m in pos] for pos in marginals]


@dataclass(frozen=True)
class MarginalsResult:
    """Per position, each token's posterior marginal with its 95% interval, and the evidence
    ln Z with its 95% interval, from one run of exact samples (kept in `draws`); or, with
    `exact`, the exact marginals and ln Z (zero-width intervals, `draws` None). The one
    marginals result of both lattice kinds (`methods.marginals.posterior_marginals`): a word
    lattice's positions are its arcs, one row each (the arc's word and posterior)."""

    marginals: list[list[Marginal]]
    log_Z: float
    log_Z_ci: tuple[float, float]
    draws: SampleResult | None
    exact: bool = False
    seconds: float = 0.0  # wall time of the exact computation (sampled: `draws.seconds`)

    def to_json(self) -> dict:
        """JSON-ready dict (natural logs), as `arsdecode marginals --json` prints it. Only
        "timing" varies between runs with one seed."""
        return {
            "marginals": marginals_json(self.marginals),
            "log_Z": self.log_Z,
            "log_Z_ci": list(self.log_Z_ci),
            "exact": self.exact,
            "samples": self.draws.samples if self.draws else [],
            "trials": self.draws.trials if self.draws else 0,
            "timing": {"seconds": self.draws.seconds if self.draws else self.seconds},
        }
