"""The one place an exact method is chosen: `decode`, `decode_many`, `decode_flat` and auto's
policy (`auto_budgets`).

The methods: "ars" is Algorithm 1 (`methods.ars`; many lattices advance in lockstep,
`methods.lockstep`); "full" is the merged full DP, on the compiled core (`methods.fast_full`)
when the target has n-gram tables (`HasNgramTables`), else the numpy reference
(`methods.full`); "auto" picks per lattice, below. Each result's `method` says which ran.

auto (`auto_budgets`). The full DP's cost is its (state, candidate) pairs, which its bound
pruning makes impossible to predict well beforehand (the unpruned count overestimated it by up
to 1000x on SMS). So auto measures instead of predicting: it runs the pruned full DP on every
lattice with a budget of pairs per lattice (`full_pairs_budgets`: the ARS time that
`cost_model.ars_seconds` estimates on that lattice, which grows with its positions x width,
converted to pairs), and a lattice that exceeds it is abandoned there and decoded by ARS. The
worst case is the budget plus ARS; the estimates are fit and validated in bench/bench_auto.py,
which times both methods on every lattice. One exception, decided before any work: when setting
up the full DP for a model (once per process; nearly free when the binary model file stores its
tables) would cost more than the estimated ARS time on every lattice of the call, ARS runs them
all. A target without compiled tables gets ARS from auto.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np

from arsdecode.core.automaton import DEFAULT_VARIANT, Variant
from arsdecode.core.tolerances import CERTIFICATE_TOL
from arsdecode.errors import NoPathError, OptionError
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.lattice.flat import FlatLattices
from arsdecode.methods import cost_model, dag_ars, dag_full, dag_kbest, dag_posteriors, fast_full
from arsdecode.methods.ars import decode as ars_decode
from arsdecode.methods.budget import (  # noqa: F401  (re-exported: dispatch's names)
    BYTES_PER_PAIR,
    DEFAULT_MEMORY_BUDGET,
    MEMORY_BUDGET_ENV,
    memory_budget,
    memory_pairs_budget,
    set_memory_budget,
)
from arsdecode.methods.cost_model import LatticeSizes
from arsdecode.methods.fast_full import BatchResult
from arsdecode.methods.full import (
    StatesBudgetExceeded,
    full_decode,
    full_kbest,
    full_marginals,
)
from arsdecode.methods.lockstep import DecodeManyInterrupted, ars_lockstep, lockstep_groups
from arsdecode.methods.options import check_options, kind_of
from arsdecode.methods.results import DecodeResult, Paths
from arsdecode.model import (
    ModelLike,
    TargetModel,
    as_target_model,
    ngram_scoring,
    ngram_tables,
)

Method = Literal["auto", "ars", "full"]
METHODS: tuple[str, ...] = ("auto", "ars", "full")
MarginalsMethod = Literal["auto", "full", "sample"]
MARGINALS_METHODS: tuple[str, ...] = ("auto", "full", "sample")

# auto's budget for exact marginals on the numpy reference DP (a target without compiled
# tables): merged full-model states (all layers, kept for the backward pass). Past it the
# forward pass is abandoned and the marginals are sampled (by ARS).
MARGINALS_FULL_STATES = 200_000

# auto's k-best: the compiled DP's k-best makes two or three passes and keeps the graph, and
# ARS's k-best runs many more iterations than its decode (bench_disambig: 0.7 s per SMS
# lattice at K = 10), so its pair budget is this multiple of the decode's.
KBEST_BUDGET_FACTOR = 4

# Floors of auto's pair budget, one per transition store of the compiled DP
# (cost_model.small_vocab): the budgets bench_auto's sweep validated for short lattices.
AUTO_FULL_PAIRS = 30_000  # large vocabularies (bench_auto sweep: 3e4 best of 1e3..1e9)
# Tags: every budget >= 1e4 was within 1% of the oracle on WSJ-20, but out-of-domain text
# (UD EWT, many unknown words with ~20 candidate tags each) reaches 2.6M pairs on 24-word
# sentences, which the DP finishes in 0.07 s against ARS's 0.1-1.5 s: 2**23 pairs, ~0.25 s.
AUTO_FULL_PAIRS_SMALL_VOCAB = 2**23


def check_method(method: str) -> None:
    """OptionError unless `method` is one of METHODS."""
    if method not in METHODS:
        raise OptionError(f"unknown method {method!r}; choose from {METHODS}")


# ----- auto's policy -------------------------------------------------------------------------

def full_pairs_budgets(vocab_size: int, sizes: LatticeSizes) -> np.ndarray:
    """Per lattice, the (state, candidate) pairs past which auto abandons its full DP for ARS:
    the ARS estimate in pairs rounded down to a power of 2**(1/4) (the estimate is coarse;
    finer steps would only pretend otherwise), at least the floor of the vocabulary kind, at
    most what the memory budget allows (`memory_pairs_budget`)."""
    floor = AUTO_FULL_PAIRS_SMALL_VOCAB if cost_model.small_vocab(vocab_size) else AUTO_FULL_PAIRS
    pairs = (cost_model.ars_seconds(vocab_size, sizes)
             / cost_model.full_seconds_per_pair(vocab_size))
    rounded = np.exp2(np.floor(4 * np.log2(np.maximum(pairs, 1.0))) / 4)
    return np.minimum(np.maximum(float(floor), np.floor(rounded)), float(memory_pairs_budget()))


def auto_budgets(model: TargetModel, sizes: LatticeSizes) -> np.ndarray | None:
    """auto's choice for lattices of `sizes`: the full DP's pair budget per lattice, or None
    when ARS runs them all (no compiled tables for this target, or setting them up would cost
    more than the estimated ARS time on every lattice: a one-off decode of a short lattice on
    a large model then takes milliseconds instead of seconds of table building)."""
    ngram = ngram_tables(model)
    if ngram is None:
        return None
    vocab_size = len(ngram.vocab)
    if not fast_full.setup_is_free(ngram):
        ars_total = float(cost_model.ars_seconds(vocab_size, sizes).sum())
        if ars_total < cost_model.setup_seconds(sum(ngram.counts)):
            return None
    return full_pairs_budgets(vocab_size, sizes)


# ----- running the choice --------------------------------------------------------------------

@dataclass(frozen=True)
class FlatDecodeResult:
    """`decode_flat`'s answer, per lattice of the FlatLattices it was given."""

    choice: np.ndarray  # (P,) the chosen candidate's index per position; -1 in `decoded`'s
    log_p: np.ndarray  # (S,) ln p of each lattice's best path
    methods: tuple[str, ...]  # (S,) "full" or "ars": the exact method that ran
    decoded: dict[int, DecodeResult]  # by lattice: those the compiled call did not solve
    compiled: BatchResult | None  # the compiled call (state and pair counts), if it ran
    compiled_seconds: float = 0.0  # its wall time


def decode_flat(lm: ModelLike, flat: FlatLattices,
                lattices: Callable[[list[int]], Sequence[Lattice]], *,
                method: Method = "auto", variant: Variant = DEFAULT_VARIANT,
                max_iterations: int | None = None, tol: float = CERTIFICATE_TOL,
                plan: Plan | None = None) -> FlatDecodeResult:
    """The exact argmax of p on every lattice of `flat` (natural log).

    The compiled full DP reads `flat`; the other decoders (ARS, the numpy full DP of a target
    without compiled tables) need `Lattice` objects, which `lattices(indices)` gives for the
    lattices they run on (in that order), so a caller with a faster way to build `flat`
    (`tasks.pos.tag_many`) builds the rest only when needed. ARS runs them in lockstep (the
    results of `ars.decode`, apart from `seconds`).

    Raises NoPathError naming the first lattice (by index) whose paths all have probability
    zero.
    """
    check_method(method)
    model = as_target_model(lm)
    n = flat.n_lattices
    compiled, seconds, rest = _compiled_full(model, flat, method, plan)
    decoded: dict[int, DecodeResult] = {}
    if rest:
        todo = list(lattices(rest))
        if method == "full":  # no compiled tables: the numpy reference DP
            decoded = dict(zip(rest, _reference_full(model, todo, rest), strict=True))
        else:
            try:
                decoded = dict(zip(rest, _ars_many(model, todo, rest, variant, max_iterations,
                                                   tol), strict=True))
            except DecodeManyInterrupted as stop:  # per lattice of `flat`, with the DP's
                partial: list[DecodeResult | None] = [None] * n
                for s, r in zip(rest, stop.results, strict=True):
                    partial[s] = r
                raise DecodeManyInterrupted(partial, compiled, seconds) from None
    if compiled is not None:
        choice, log_p = compiled.choice, compiled.score.copy()
    else:
        choice, log_p = np.full(len(flat.pos_off) - 1, -1, np.int32), np.full(n, np.nan)
    for s, r in decoded.items():
        log_p[s] = r.log_p
    methods = tuple(decoded[s].method if s in decoded else "full" for s in range(n))
    return FlatDecodeResult(choice, log_p, methods, decoded, compiled, seconds)


def decode_many(
    lm: ModelLike,
    lattices: Sequence[Lattice] | Sequence[WordLattice],
    *,
    method: Method = "auto",
    variant: Variant = DEFAULT_VARIANT,
    max_iterations: int | None = None,
    tol: float = CERTIFICATE_TOL,
    **options: Any,
) -> list[Any]:
    """The exact argmax of p on each lattice, in input order (natural log).

    Word lattices (all of `lattices`: one kind per call) are decoded as `decode` decodes
    each, the expansion in one compiled call (`decode_word_lattices`), ARS one by one.

    ARS results are identical to `ars.decode(lm, lattice, ...)` field by field, apart from
    `seconds` (here: the wall time from the start of the ARS batch until that lattice was
    done). Full-DP results have `method="full"`, `log_q = log_p`, one iteration and the merged
    DP's state count. Raises NoPathError naming the first lattice on which every path has
    probability zero. Ctrl-C raises `lockstep.DecodeManyInterrupted` with every lattice's
    result so far, in input order (the compiled DP's, ARS's best paths so far).
    """
    check_method(method)
    kinds = {kind_of(lat) for lat in lattices}
    if len(kinds) > 1:
        raise OptionError("decode_many: lattices mixes confusion networks and word lattices; "
                          "give one kind per call")
    check_options("decode_many", kinds.pop() if kinds else "cn", method,
                  {"variant": variant, "max_iterations": max_iterations, "tol": tol, **options})
    if lattices and isinstance(lattices[0], WordLattice):
        dags = cast("Sequence[WordLattice]", lattices)
        if method == "ars":
            return [decode_word_lattice(lm, wl, method="ars", max_iterations=max_iterations,
                                        tol=tol) for wl in dags]
        return decode_word_lattices(lm, dags, method=method)
    return _decode_many_cn(lm, cast("Sequence[Lattice]", lattices), method, variant,
                           max_iterations, tol)


def _decode_many_cn(lm: ModelLike, lattices: Sequence[Lattice], method: Method,
                    variant: Variant, max_iterations: int | None, tol: float
                    ) -> list[DecodeResult]:
    """`decode_many` on confusion networks: the compiled DP on their flat layout, ARS in
    lockstep on the rest."""
    model = as_target_model(lm)
    plan = _compiled_plan(model, method, LatticeSizes.of_widths([lat.widths for lat in lattices]))
    if not plan[0]:  # no compiled DP: no flat layout either
        everyone = list(range(len(lattices)))
        if method == "full":  # no compiled tables: the numpy reference DP
            return _reference_full(model, lattices, everyone)
        return _ars_many(model, lattices, everyone, variant, max_iterations, tol)
    flat = FlatLattices.from_lattices(model, lattices)
    try:
        res = decode_flat(model, flat, lambda ks: [lattices[k] for k in ks], method=method,
                          variant=variant, max_iterations=max_iterations, tol=tol, plan=plan)
    except DecodeManyInterrupted as stop:  # the compiled DP's results, and ARS's so far
        done = stop.compiled
        raise DecodeManyInterrupted(
            [r if r is not None or done is None or np.isnan(done.score[s])
             else _compiled_result(done, flat, s, lat, stop.compiled_seconds)
             for s, (r, lat) in enumerate(zip(stop.results, lattices, strict=True))]) from None
    if res.compiled is None:
        return [res.decoded[s] for s in range(len(lattices))]
    return [res.decoded[s] if s in res.decoded
            else _compiled_result(res.compiled, flat, s, lat, res.compiled_seconds)
            for s, lat in enumerate(lattices)]


def decode(lm: ModelLike, lattice: Lattice | WordLattice, *, method: Method = "auto",
           k: int | None = None, **options):
    """The exact argmax of p on one lattice by the method `method` picks (natural log).

    A `WordLattice` goes to `decode_word_lattice` (option `unique` with `k`).

    "ars" is Algorithm 1 (`arsdecode.methods.ars.decode`, which takes `options`: variant,
    max_iterations, tol, on_iteration, keep_automaton, prune); "full" is the merged full DP;
    "auto" runs the full DP within its `auto_budgets` budget, else ARS (the module docstring
    says why). Returns a DecodeResult whose `method` says which ran. With `k`, returns instead
    the K best distinct paths, each exact and certified (`arsdecode.methods.kbest.decode_kbest`,
    a KBestResult): method "full" runs the merged full DP's exact k-best
    (compiled given n-gram tables, else `arsdecode.methods.full.full_kbest`), "ars" ARS's,
    "auto" the compiled one within its budgets, else ARS's. Raises NoPathError if every path
    has probability zero.
    """
    check_method(method)
    options = check_options("decode" if k is None else "kbest", kind_of(lattice), method,
                            options)
    if isinstance(lattice, WordLattice):
        return decode_word_lattice(lm, lattice, method=method, k=k, **options)
    if k is not None:
        return _kbest(lm, lattice, k, method, options)
    needs_ars = [o for o in ("on_iteration", "keep_automaton") if options.get(o)]
    model = as_target_model(lm)
    if method != "ars" and not needs_ars:
        plan = _compiled_plan(model, method, LatticeSizes.of_widths([lattice.widths]))
        if plan[0]:
            flat = FlatLattices.from_lattices(model, [lattice])
            compiled, seconds, rest = _compiled_full(model, flat, method, plan)
            if compiled is not None and not rest:
                return _compiled_result(compiled, flat, 0, lattice, seconds)
        elif method == "full":  # no compiled tables: the numpy reference DP
            return _reference_full(model, [lattice], [0])[0]
    return ars_decode(model, lattice, **options)  # ARS takes every option


def decode_word_lattice(lm: ModelLike, wl: WordLattice, *, method: Method = "auto",
                        k: int | None = None, unique: bool = False,
                        max_iterations: int | None = None, tol: float = CERTIFICATE_TOL,
                        on_iteration: Callable[..., None] | None = None):
    """The exact best path of a word lattice (a DAG, issue 21), or with `k` its K best paths
    (distinct paths, or with `unique` distinct word sequences, each scored by its best path).

    "ars" is Algorithm 1 on the q-automaton over (node, context) states
    (`methods.dag_ars.dag_ars_decode`, a DagArsResult; `max_iterations` may stop it
    uncertified, `on_iteration` sees each iteration, Ctrl-C raises `ars.DecodeInterrupted`
    with the best path so far); "full" the merged expansion (`decode_word_lattices`:
    compiled given n-gram tables, else `methods.dag_full`); "auto" the expansion: on every
    ASR-like lattice measured (docs/results-lattice.md) the compiled expansion is several
    times faster than ARS, whose states are not merged. k-best comes from the expansion
    (`dag_kbest.dag_kbest`), for every method. k-best and ARS stay within `memory_budget()`.
    Raises NoPathError if every path has probability zero, MemoryBudgetExceeded (before
    allocating) past the budget."""
    check_method(method)
    check_options("decode" if k is None else "kbest", "dag", method,
                  {"unique": unique, "max_iterations": max_iterations, "tol": tol,
                   "on_iteration": on_iteration})
    if k is not None:
        return Paths(dag_kbest.dag_kbest(lm, wl, k, unique=unique, max_bytes=memory_budget()),
                     method="full")
    if method == "ars":
        return dag_ars.dag_ars_decode(lm, wl, max_iterations=max_iterations, tol=tol,
                                      on_iteration=on_iteration, max_bytes=memory_budget())
    return decode_word_lattices(lm, [wl], method=method)[0]


def decode_word_lattices(lm: ModelLike, lattices: Sequence[WordLattice], *,
                         method: Method = "auto"
                         ) -> list[dag_full.DagDecodeResult] | list[dag_ars.DagArsResult]:
    """The exact best path of every word lattice, in order: "full" and "auto" run one compiled
    call over all of them given n-gram tables (`fast_full.run_dag`, each result's `seconds` the
    call's mean), else the numpy reference lattice by lattice; "ars" runs
    `dag_ars.dag_ars_decode` on each. Raises NoPathError naming the first lattice with no path
    of nonzero probability."""
    check_method(method)
    if method == "ars":
        return [dag_ars.dag_ars_decode(lm, wl, max_bytes=memory_budget())
                for wl in lattices]
    model = as_target_model(lm)
    ngram = ngram_tables(model)
    if ngram is None:  # no compiled tables: the numpy reference
        return [dag_full.dag_decode(model, wl) for wl in lattices]
    start = time.perf_counter()
    found = fast_full.run_dag(ngram, lattices, scoring=ngram_scoring(model))
    each = (time.perf_counter() - start) / max(len(lattices), 1)
    out = []
    for wl, best in zip(lattices, found, strict=True):
        if best.log_p == -np.inf:
            raise NoPathError(f"{wl.source}: every path has probability zero")
        out.append(dag_full.DagDecodeResult(wl.path_words(best.arcs), best.arcs, best.log_p,
                                            best.states, best.transitions, each))
    return out


def _kbest(lm: ModelLike, lattice: Lattice, k: int, method: str, options: dict):
    """`decode(k=...)`: the K best distinct paths. "full" runs the merged DP's k-best (the
    compiled one given n-gram tables, else the numpy reference `full_kbest`); "auto" runs the
    compiled one within KBEST_BUDGET_FACTOR times its decode budget (and the memory budget),
    else ARS's k-best; "ars" runs ARS's. ARS options apply to ARS only."""

    if k < 1:
        raise OptionError("k (the number of paths) must be >= 1")
    # Every method holds K scores per state (or K paths): no more than the lattice has, as
    # the CLI's --nbest (k = 10**12 on a small lattice tried to allocate 7.28 TiB).
    k = min(k, lattice.num_paths())
    _check_kbest_fits(k, lattice)
    try:
        return _kbest_within_budget(lm, lattice, k, method, options)
    except MemoryError:  # numpy's _ArrayMemoryError included: one line, not a traceback
        raise OptionError(f"k={k}: the {k} best paths ran out of memory; ask for fewer paths "
                          "(k, --nbest)") from None


def _check_kbest_fits(k: int, lattice: Lattice) -> None:
    """Refuse a k whose K-lists cannot fit in the memory budget, before any allocation.

    Why: cutting k to the number of paths is no help on a lattice with 10**30 of them, and
    `decode_kbest(lm, lattice, 10**9)` then died in numpy with a traceback (issue 29 B). The
    estimate is the CLI's --nbest floor (`cli.options.check_fits`: the paths kept, each a row
    of candidates and positions), held against the budget that `set_memory_budget` and
    --memory-budget set, so the API and the CLI refuse alike."""
    per_path = 24 * max(lattice.widths, default=1) + 16 * len(lattice) + 200
    need, budget = k * per_path, memory_budget()
    if need > budget:
        raise OptionError(f"k={k}: the {k} best paths need about {need / 1e9:,.1f} GB, more "
                          f"than the memory budget of {budget / 1e9:,.1f} GB; ask for fewer "
                          "paths, or raise the budget (set_memory_budget, --memory-budget)")


def _kbest_within_budget(lm: ModelLike, lattice: Lattice, k: int, method: str,
                         options: dict):
    """`_kbest` once k is known to fit."""
    from arsdecode.methods.kbest import decode_kbest

    model = as_target_model(lm)
    ngram = ngram_tables(model)
    if method != "ars" and ngram is not None and len(lattice):
        budget = None
        if method == "auto":
            sizes = LatticeSizes.of_widths([lattice.widths])
            budget = np.minimum(full_pairs_budgets(len(ngram.vocab), sizes)
                                * KBEST_BUDGET_FACTOR, float(memory_pairs_budget()))
        start = time.perf_counter()
        flat = FlatLattices.from_lattices(model, [lattice])
        res = fast_full.kbest_flat(ngram, flat, k, max_pairs=budget,
                                   scoring=ngram_scoring(model))
        if not np.isnan(res.scores[0, 0]):
            return _compiled_kbest(res, lattice, time.perf_counter() - start)
    elif method == "full":  # the numpy reference DP's K-lists (any target)
        return full_kbest(lm, lattice, k)
    return decode_kbest(lm, lattice, k, **options)  # ARS's options (`check_options`)


def _compiled_kbest(res: fast_full.KBestBatch, lattice: Lattice, seconds: float):
    """Lattice 0 of a compiled k-best as a KBestResult (exact: log_q = log_p)."""
    from arsdecode.methods.results import KBestResult, ScoredPath

    live = np.flatnonzero(np.isfinite(res.scores[0]))
    if not len(live):
        raise NoPathError("every path has probability zero")
    paths = []
    for r in live.tolist():
        idx = tuple(res.choice[r, : len(lattice)].tolist())
        paths.append(ScoredPath([toks[j] for toks, j in zip(lattice.tokens, idx, strict=True)],
                                idx, float(res.scores[0, r]), float(res.scores[0, r])))
    return KBestResult(paths, iterations=res.passes, states=0, seconds=seconds, certified=True,
                       method="full")


def exact_marginals(lm: ModelLike, lattice: Lattice | WordLattice, method: str
                    ) -> tuple[list[np.ndarray], float] | None:
    """The marginals' method choice: exact posteriors and ln Z from forward-backward over the
    merged full-model states (`methods.full.full_marginals`), or None when they are sampled.

    "full" always runs the exact pass; "sample" never does; "auto" runs it within
    MARGINALS_FULL_STATES merged states and returns None past them (the work done so far is
    abandoned). A word lattice gets its arc posteriors (one array, `lattice_posteriors`),
    always exact. Raises OptionError for an unknown method, NoPathError if every path has
    probability zero (exact pass only).
    """
    if method not in MARGINALS_METHODS:
        raise OptionError(f"unknown method {method!r}; choose from {MARGINALS_METHODS}")
    if isinstance(lattice, WordLattice):  # arc posteriors; "sample" refused (check_options)
        check_options("marginals", "dag", method, {})
        arc_post, arc_log_z = lattice_posteriors(lm, lattice)
        return [arc_post], arc_log_z
    if method == "sample":
        return None
    model = as_target_model(lm)
    ngram = ngram_tables(model)
    if ngram is not None and len(lattice):  # the compiled forward-backward
        flat = FlatLattices.from_lattices(model, [lattice])
        log_z, post = fast_full.posteriors_flat(
            ngram, flat, max_pairs=memory_pairs_budget() if method == "auto" else None,
            scoring=ngram_scoring(model))
        if np.isnan(log_z[0]):
            return None
        if log_z[0] == -np.inf:
            raise NoPathError("every path has probability zero")
        return np.split(post, flat.pos_off[1:-1]), float(log_z[0])
    budget = MARGINALS_FULL_STATES if method == "auto" else None
    try:
        return full_marginals(lm, lattice, max_states=budget)
    except StatesBudgetExceeded:
        return None


# ----- sampling and posteriors: the method choice ---------------------------------------------

def sample(lm: ModelLike, lattice: Lattice | WordLattice, n: int,
           seed: int | np.random.Generator | None = None, *, method: Method = "auto",
           **options: Any):
    """`n` exact i.i.d. samples of p over `lattice` by the method `method` picks (natural log).

    "auto": ARS on a confusion network (`ars.sample`, a SampleResult with the evidence ln Z
    and its 95% interval; the paper's sampler, whose memory stays small where the merged
    states would not), the exact expansion on a word lattice (`dag_full.dag_sample`: forward
    filtering, backward sampling; a `Paths` list of DagPath, method "full"), as
    `decode_word_lattice` chooses the expansion there. "ars" and "full" force one: ARS on a word
    lattice is `dag_ars.dag_ars_sample`, "full" on a confusion network the merged DP's samples
    with the exact ln Z (`full_samples.full_sample_result`). Options are checked first
    (`options.check_options`). Raises NoPathError if every path has probability zero.
    """
    from arsdecode.methods.ars import sample as ars_sample
    from arsdecode.methods.full_samples import full_sample_result

    check_method(method)
    kind = kind_of(lattice)
    options = check_options("sample", kind, method, options)
    if isinstance(lattice, WordLattice):
        if method == "ars":
            return dag_ars.dag_ars_sample(lm, lattice, n, seed, **options)
        return Paths(dag_full.dag_sample(lm, lattice, n, seed), method="full")
    if method == "full":
        return full_sample_result(lm, lattice, n, seed, **options)
    return ars_sample(as_target_model(lm), lattice, n, seed, **options)  # type: ignore[arg-type]


def adapt(lm: ModelLike, lattice: Lattice | WordLattice, **options: Any):
    """Refine q until its acceptance rate reaches the target, then stop (`ars.adapt`); a
    confusion network only (`options.REFUSED_METHODS` says why)."""
    from arsdecode.methods.ars import adapt as ars_adapt

    options = check_options("adapt", kind_of(lattice), "auto", options)
    return ars_adapt(as_target_model(lm), lattice, **options)  # type: ignore[arg-type]


def lattice_posteriors(lm: ModelLike, lattice: Lattice | WordLattice
                       ) -> tuple[np.ndarray, float]:
    """Every arc's exact posterior and ln Z by forward-backward over the merged expansion
    (`dag_posteriors.dag_posteriors`). A confusion network is read as the word lattice it is
    (`WordLattice.from_confusion`), and the answer has one entry per candidate, position by
    position, in lattice order: its marginal (0 for a candidate of weight -inf, which the
    word lattice has no arc for)."""
    if isinstance(lattice, WordLattice):
        return dag_posteriors.dag_posteriors(lm, lattice, max_bytes=memory_budget())
    post, log_z = dag_posteriors.dag_posteriors(lm, WordLattice.from_confusion(lattice),
                                          max_bytes=memory_budget())
    live = np.concatenate([np.isfinite(e) for e in lattice.log_emissions])
    out = np.zeros(len(live))
    out[live] = post  # from_confusion keeps the finite candidates, in order
    return out, log_z


Plan = tuple[bool, "np.ndarray | None"]
"""Whether the compiled full DP runs, and its pair budget per lattice (None: no budget)."""


def _compiled_plan(model: TargetModel, method: str, sizes: LatticeSizes) -> Plan:
    """Where `method` runs the compiled full DP: "full" always (given compiled tables),
    "auto" within `auto_budgets`, "ars" never. Decided from sizes alone, so the flat layout
    (a lookup of every candidate) is built only when the DP runs."""
    if method == "ars" or ngram_tables(model) is None or len(sizes.positions) == 0:
        return False, None
    if method == "auto":
        budgets = auto_budgets(model, sizes)
        return budgets is not None, budgets
    return True, None


def _compiled_full(model: TargetModel, flat: FlatLattices, method: str,
                   plan: Plan | None = None) -> tuple[BatchResult | None, float, list[int]]:
    """The compiled full DP on `flat` where `method` runs it (`_compiled_plan`, unless the
    caller already made the plan): (its result, or None where it did not run; its wall time;
    the lattices left to the other decoders, in order).

    Raises NoPathError naming the first lattice whose paths all have probability zero.
    """
    everyone = list(range(flat.n_lattices))
    runs, budgets = plan if plan is not None else _compiled_plan(
        model, method, LatticeSizes.of_flat(flat))
    ngram = ngram_tables(model)
    if not runs or ngram is None:
        return None, 0.0, everyone
    start = time.perf_counter()
    res = fast_full.run_flat(ngram, flat, viterbi=True, max_pairs=budgets,
                             scoring=ngram_scoring(model))
    seconds = time.perf_counter() - start
    over = np.isnan(res.score)  # abandoned past its budget
    dead = np.flatnonzero(~np.isfinite(res.score) & ~over)
    if len(dead):
        raise NoPathError(f"lattice {int(dead[0])}: every path has probability zero")
    return res, seconds, np.flatnonzero(over).tolist()


def _ars_many(model: TargetModel, lattices: Sequence[Lattice], labels: list[int],
              variant: Variant, max_iterations: int | None, tol: float) -> list[DecodeResult]:
    """ARS on every lattice, in lockstep groups (`lockstep_groups`), in input order. Ctrl-C
    raises DecodeManyInterrupted with one entry per lattice (None for the groups not run)."""
    start = time.perf_counter()
    out: list[DecodeResult | None] = []
    for group in lockstep_groups(list(range(len(lattices))),
                                 [sum(lat.widths) for lat in lattices]):
        try:
            out.extend(ars_lockstep(model, [lattices[k] for k in group], variant,
                                    max_iterations, tol, [labels[k] for k in group], start))
        except DecodeManyInterrupted as stop:
            out.extend(stop.results)
            raise DecodeManyInterrupted(out + [None] * (len(lattices) - len(out))) from None
    return out  # type: ignore[return-value]  # no None without an interrupt


def _reference_full(model: TargetModel, lattices: Sequence[Lattice], labels: list[int]
                    ) -> list[DecodeResult]:
    """The numpy reference full DP (`methods.full`) per lattice: a target without compiled
    tables still gets method "full"."""
    out = []
    for k, lat in zip(labels, lattices, strict=True):
        try:
            f = full_decode(model, lat)
        except NoPathError as err:
            raise NoPathError(f"lattice {k}: {err}") from None
        out.append(_full_result(f.tokens, f.log_p, f.dp_states, f.seconds))
    return out


def _compiled_result(res: BatchResult, flat: FlatLattices, s: int, lattice: Lattice,
                     seconds: float) -> DecodeResult:
    """Lattice `s` of a compiled call as a DecodeResult (`seconds`: the call's, shared out)."""
    p0, p1 = int(flat.sent_off[s]), int(flat.sent_off[s + 1])
    tokens = [toks[j] for toks, j in zip(lattice.tokens, res.choice[p0:p1].tolist(), strict=True)]
    return _full_result(tokens, float(res.score[s]), int(res.dp_states[s]),
                        seconds / max(flat.n_lattices, 1))


def _full_result(tokens: list[str], log_p: float, states: int, seconds: float) -> DecodeResult:
    """A full-DP optimum as a DecodeResult: exact by construction, so log_q = log_p."""
    return DecodeResult(
        tokens=tokens, log_p=log_p, log_q=log_p, iterations=1, states=states,
        ngrams_by_order={}, trace=[(log_p, log_p)], seconds=seconds, certified=True,
        method="full",
    )
