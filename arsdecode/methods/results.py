"""What the methods return: frozen results of decoding (natural log).

Why a module of its own: the results are the methods' shared vocabulary. `dispatch` builds a
DecodeResult for the full DP, `lockstep` for ARS over many lattices, and none of them needs
the ARS module to do so. A word lattice's results (`DagPath`, `DagDecodeResult`,
`DagArsResult`) use the same field names (a path's words are `tokens`; `words`, their name
before, is an alias property and a JSON field kept beside "tokens"), and add the path's
`arcs`. All logs are natural (ln). The results of sampling and k-best are in
`methods.sample_results`: a one-lattice decode does not build their classes (issue 34,
start-up: a frozen dataclass costs about a millisecond to create at import).
"""

from __future__ import annotations

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
