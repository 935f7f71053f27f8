"""The full model F over a confusion network: exact dynamic programs over n-gram context
states, the baseline for ARS.

Why it exists: adaptive rejection sampling claims to find the same optimum and to sample the same
distribution as the full high-order HMM while building a small fraction of its states. This module
is that full HMM, written independently of the q-automaton so the two can check each other:
Viterbi (`full_decode`), exact k-best (`full_kbest`), the forward algorithm
(`full_log_partition`), exact sampling (`full_sample`) and posterior marginals
(`full_marginals`), all in natural log with the same target as `Target.log_p`:

    log p(x) = sum_i ln p(x_i | <s> x_1..x_{i-1}) + ln p(</s> | <s> x) + sum_i e_i(x_i)

One engine (issue 30). A confusion network is a word lattice (`WordLattice.from_confusion`:
node i -> i + 1 per candidate of finite emission, the last node final), and its full model is
that lattice's merged (node, context) expansion (`methods.expansion_dp`), swept by the package's one
semiring DP (`core.dag_dp`); k-best is `expansion_kbest.kbest_paths` and the marginals
`expansion_posteriors.stored_posteriors`. This module is the confusion network's entry points: it
lays the network out as a word lattice (`ConfusionLayout`) and maps the answers back to
confusion-network form (tokens per position, candidate indices, per-position marginals).
Nothing here imports the q-automaton (`core.automaton`, `core.dag_automaton`), so the
reference stays independent.

States. The full model's state after i tokens is the last n - 1 tokens of `<s> x_1 .. x_i` (fewer
near the start); `full_state_count` reports that count, the paper's measure of F. The expansion
by default merges states the way KenLM does, which cannot change any score: a context is cut to
the model's `minimal_context` (for a backoff model, its longest *useful* suffix; see
`arsdecode.model`), so p(w | c) equals p(w | cut(c)) for every w, and cutting commutes with
appending a word. Without the cut, n = 5 with 100 candidates a position would need 10^8 states
per position; `minimize=False` keeps the literal state space for tests on small lattices.

Ties (float64 equal scores) are broken as the expansion breaks them: the lexicographically
smallest arc sequence, which on this layout is the smallest candidate-index sequence (the arcs
of position i are its finite candidates, in order); k-best lists are ordered by ln p, then by
candidate indices, as `kbest` documents. The compiled merged DP over many confusion networks
is `methods.fast_full` (the same states; its own tie rule).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from arsdecode.errors import NoPathError, OptionError
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.methods.expansion_dp import (
    StatesBudgetExceeded,
    dag_decode,
    dag_expand,
    dag_log_partition,
    sample_arcs,
)
from arsdecode.methods.expansion_kbest import kbest_paths
from arsdecode.methods.expansion_posteriors import stored_posteriors
from arsdecode.methods.results import KBestResult, ScoredPath
from arsdecode.model import ModelLike, TargetModel, as_target_model

__all__ = ["ConfusionLayout", "FullDecodeResult", "NoPathError", "StatesBudgetExceeded",
           "full_decode", "full_kbest", "full_log_partition", "full_marginals",
           "full_ngrams_by_order", "full_sample", "full_state_count"]


@dataclass(frozen=True)
class FullDecodeResult:
    """The best path of the full model.

    `states` is the size of the full model (`full_state_count`, unmerged contexts) so it can be
    compared with the number of states ARS builds; `dp_states` is what the dynamic program
    actually expanded after merging equivalent contexts.
    """

    tokens: list[str]
    log_p: float
    states: int
    seconds: float
    dp_states: int = 0


# ----- the confusion network as a word lattice -----------------------------------------------
@dataclass(frozen=True)
class ConfusionLayout:
    """A confusion network laid out as the word lattice the engine runs on, and the way back:
    arc a of `wl` is candidate `cand[a]` of position `pos[a]`.

    Why a position with no finite candidate is refused here: the word lattice would have no
    path (a `LatticeError` from its builder), while on a confusion network that is the
    answer "no path of nonzero probability" (NoPathError; ln Z = -inf)."""

    lattice: Lattice
    wl: WordLattice
    pos: np.ndarray  # (A,) int64 position of each arc
    cand: np.ndarray  # (A,) int64 candidate index of each arc

    @classmethod
    def of(cls, lattice: Lattice) -> ConfusionLayout:
        finite = [np.flatnonzero(np.asarray(e, dtype=np.float64) > -np.inf)
                  for e in lattice.log_emissions]
        for i, live in enumerate(finite):
            if not len(live):
                raise NoPathError(f"no path through position {i} has nonzero probability")
        pos = np.repeat(np.arange(len(finite), dtype=np.int64), [len(f) for f in finite])
        cand = np.concatenate(finite).astype(np.int64) if finite else np.zeros(0, np.int64)
        # The lattice `WordLattice.from_confusion(lattice)` builds (its finite candidates,
        # position by position, in order), made directly: its builder re-checks every arc in
        # Python (a tenth of the decode's time on SMS lattices), and the Lattice's tokens and
        # emissions were checked when it was made; tests assert the two are equal.
        toks = lattice.tokens
        n = len(toks)
        wl = WordLattice(
            n_nodes=n + 1, finals={n: 0.0}, src=pos, dst=pos + 1,
            words=tuple(t[j] for t, f in zip(toks, finite, strict=True) for j in f.tolist()),
            log_weights=np.concatenate([np.asarray(e, dtype=np.float64)[f] for e, f in zip(
                lattice.log_emissions, finite, strict=True)]) if n else np.zeros(0),
            node_names=tuple(str(i) for i in range(n + 1)))
        return cls(lattice, wl, pos, cand)

    def indices(self, arcs: tuple[int, ...] | list[int]) -> tuple[int, ...]:
        """The candidate index per position of a path (one arc per position)."""
        return tuple(self.cand[list(arcs)].tolist())


# ----- public API --------------------------------------------------------------------------
# Each takes a maxarpa Model or any TargetModel and converts it once, here at the entry.
def full_decode(lm: ModelLike, lattice: Lattice, *, minimize: bool = True
                ) -> FullDecodeResult:
    """The best path of the full model (Viterbi on the expansion), with its ln p including
    </s> and emissions. Ties: the smallest candidate-index sequence (module docstring).
    Raises NoPathError if every path has probability zero.
    """
    t0 = time.perf_counter()
    model = as_target_model(lm)
    layout = ConfusionLayout.of(lattice)
    best = dag_decode(model, layout.wl, minimize=minimize)
    return FullDecodeResult(
        tokens=best.tokens,  # the layout's arc words are the candidates' tokens
        log_p=best.log_p,
        states=full_state_count(model, lattice),
        seconds=time.perf_counter() - t0,
        dp_states=best.states,
    )


def full_kbest(lm: ModelLike, lattice: Lattice, k: int, *, minimize: bool = True
               ) -> KBestResult:
    """The k most probable distinct paths of p by the merged full DP, exact in float64.

    Huang & Chiang (2005)'s Algorithm 1 on the expansion (`expansion_kbest.kbest_paths`: every
    state keeps its K best suffixes). A path is one expansion path (the merged states are a
    deterministic function of the candidates), so the K paths are distinct.

    Ties are broken as `kbest` documents: ordered by ln p (the DP's float64 sum), then by
    candidate indices lexicographically. Zero-probability paths are never returned, so fewer
    than K come back when fewer than K paths have p > 0. `certified` is True,
    `log_q = log_p`, `method = "full"`, `states` the merged states.

    Raises:
        OptionError: k < 1.
        NoPathError: every path has probability zero.
    """
    if k < 1:
        raise OptionError("k (the number of paths) must be >= 1")
    t0 = time.perf_counter()
    model = as_target_model(lm)
    layout = ConfusionLayout.of(lattice)
    ex = dag_expand(model, layout.wl, minimize=minimize)
    found = kbest_paths(ex, layout.wl, min(int(k), lattice.num_paths()))
    paths = [ScoredPath(p.tokens, layout.indices(p.arcs), p.log_p, p.log_p)
             for p in found]
    return KBestResult(paths, 1, ex.n_states, time.perf_counter() - t0, True, method="full")


def full_log_partition(lm: ModelLike, lattice: Lattice, *, minimize: bool = True
                       ) -> float:
    """ln Z = ln of the sum over all paths of p(x) (the expansion's backward sums); -inf if
    no path."""
    try:
        layout = ConfusionLayout.of(lattice)
    except NoPathError:
        return -math.inf
    return dag_log_partition(as_target_model(lm), layout.wl, minimize=minimize)


def full_sample(
    lm: ModelLike, lattice: Lattice, n: int, rng: np.random.Generator, *,
    minimize: bool = True,
) -> list[list[str]]:
    """`n` independent exact samples from p(x)/Z: backward filtering on the expansion, then
    forward sampling (`expansion_dp.dag_sample`, the package's one sampler).

    Why this and not enumeration: it is exact for any lattice the expansion can hold, and it
    draws all `n` samples together, one vectorised step per position.
    Raises NoPathError if every path has probability zero.
    """
    model = as_target_model(lm)
    layout = ConfusionLayout.of(lattice)
    if n == 0:  # nothing to draw, but a lattice without a path is still an error
        if dag_log_partition(model, layout.wl, minimize=minimize) == -math.inf:
            raise NoPathError("every path has probability zero")
        return []
    paths, _ = sample_arcs(model, layout.wl, n, rng, minimize=minimize)
    words = layout.wl.words  # the layout's arc words are the candidates' tokens
    return [[words[a] for a in p] for p in paths]  # type: ignore[misc]  # no epsilon arc


def full_marginals(
    lm: ModelLike, lattice: Lattice, *, minimize: bool = True, max_states: int | None = None,
) -> tuple[list[np.ndarray], float]:
    """Exact posterior marginals and ln Z: forward-backward in the log semiring over the
    merged states (`expansion_posteriors.stored_posteriors`: arc posteriors of the layout,
    summed per candidate).

    Returns, per position, an array of p(x_i = candidate k) over that position's candidates
    (0 for a candidate with emission -inf or on no path; each array sums to 1), and ln Z, all
    float64. Raises NoPathError if every path has probability zero, StatesBudgetExceeded when
    the merged states pass `max_states`.
    """
    layout = ConfusionLayout.of(lattice)
    post, log_z = stored_posteriors(as_target_model(lm), layout.wl, minimize=minimize,
                                    max_states=max_states)
    if log_z == -math.inf:
        raise NoPathError("every path has probability zero")
    out: list[np.ndarray] = []
    for i, toks in enumerate(lattice.tokens):
        here = layout.pos == i
        out.append(np.bincount(layout.cand[here], weights=post[here], minlength=len(toks)))
    return out, float(log_z)


def full_state_count(lm: ModelLike, lattice: Lattice, *, minimized: bool = False
                     ) -> int:
    """States of the full model over the lattice: the start state plus, for every position i, the
    distinct last-(n-1)-token contexts of `<s> x_1..x_i` (the same layers as `QAutomaton`).

    Counted exactly without building them (the product of the distinct candidate ids with a finite
    emission over the last n - 1 positions), since the literal count is what ARS is compared
    with and can be astronomically large. `minimized=True` instead counts the merged states the
    dynamic program builds (and does build them).
    """
    model = as_target_model(lm)
    if minimized:
        return dag_expand(model, ConfusionLayout.of(lattice).wl, minimize=True).n_states
    w = max(model.order - 1, 0)
    distinct = _distinct_candidates(model, lattice)
    total = 1
    for i in range(1, len(lattice) + 1):
        total += math.prod(distinct[max(0, i - w) : i]) if w else 1
    return total


def full_ngrams_by_order(lm: ModelLike, lattice: Lattice) -> dict[int, int]:
    """(context, word) weights of the full model over the lattice, by n-gram order (Table 1).

    The word at position i (1-based; i = L + 1 is </s>) is predicted from the last n - 1
    tokens of `<s> x_1..x_{i-1}`: order min(n, i + 1), one weight per choice of the last
    min(n - 1, i - 1) words and of the word itself (<s> and </s> have one choice). Counted
    over the same distinct candidates as `full_state_count`, so the two describe one model.
    """
    model = as_target_model(lm)
    n = model.order
    choices = _distinct_candidates(model, lattice) + [1]
    counts: dict[int, int] = {}
    for i in range(1, len(choices) + 1):
        real_ctx = min(n - 1, i - 1)
        order = min(n, i + 1)
        counts[order] = counts.get(order, 0) + math.prod(choices[i - 1 - real_ctx : i])
    return dict(sorted(counts.items()))


def _distinct_candidates(model: TargetModel, lattice: Lattice) -> list[int]:
    """Per position, the distinct LM ids among candidates with a finite emission."""
    return [
        len(set(model.ids(list(t))[np.asarray(e) > -np.inf].tolist()))
        for t, e in zip(lattice.tokens, lattice.log_emissions, strict=True)
    ]
