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
worst case is the budget plus ARS (estimates fit and validated in bench/bench_auto.py). One
exception, decided before any work: when setting up the full DP for a model (once per process;
nearly free when the binary model file stores its tables) would cost more than the estimated ARS
time on every lattice of the call, ARS runs them all. A target without compiled tables gets ARS.
A VPYLM's costs are scaled and its ARS estimates summed over calls (`fast_full.cost_factors`).

Parts (issue 30: one module, one job): the choice and its knobs live here, and the knobs are
read here at each call and passed down (tests set them on this module); running a choice is
`dispatch_run`, a confusion network's k-best `dispatch_kbest`, the exact posteriors
`dispatch_posteriors`. They, ARS and k-best are imported where they run (issue 34, start-up).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, cast

import numpy as np

from arsdecode.core.q_states import DEFAULT_VARIANT, Variant
from arsdecode.core.tolerances import CERTIFICATE_TOL
from arsdecode.errors import OptionError
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.lattice.flat import FlatLattices
from arsdecode.methods import cost_model, fast_full
from arsdecode.methods.budget import (  # noqa: F401  (re-exported: dispatch's names)
    BYTES_PER_PAIR,
    DEFAULT_MEMORY_BUDGET,
    MEMORY_BUDGET_ENV,
    memory_budget,
    memory_pairs_budget,
    set_memory_budget,
)
from arsdecode.methods.cost_model import LatticeSizes
from arsdecode.methods.dispatch_run import (
    FlatDecodeResult,
    Plan,
    ars_many,
    compiled_full,
    compiled_result,
    full_word_lattices,
    reference_full,
)
from arsdecode.methods.lockstep import DecodeManyInterrupted
from arsdecode.methods.options import check_options, kind_of
from arsdecode.methods.results import DecodeResult, SampleResult
from arsdecode.model import ModelLike, TargetModel, as_target_model

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

def full_pairs_budgets(vocab_size: int, sizes: LatticeSizes, scale: float = 1.0) -> np.ndarray:
    """Per lattice, the (state, candidate) pairs past which auto abandons its full DP for ARS:
    the ARS estimate in pairs rounded down to a power of 2**(1/4) (the estimate is coarse;
    finer steps would only pretend otherwise), at least the floor of the vocabulary kind, at
    most what the memory budget allows (`memory_pairs_budget`). `scale`: the target's ARS
    time per pair's time, relative to one n-gram table's (`fast_full.cost_factors`)."""
    floor = AUTO_FULL_PAIRS_SMALL_VOCAB if cost_model.small_vocab(vocab_size) else AUTO_FULL_PAIRS
    pairs = (scale * cost_model.ars_seconds(vocab_size, sizes)
             / cost_model.full_seconds_per_pair(vocab_size))
    rounded = np.exp2(np.floor(4 * np.log2(np.maximum(pairs, 1.0))) / 4)
    return np.minimum(np.maximum(float(floor), np.floor(rounded)), float(memory_pairs_budget()))


def _kbest_pairs(vocab_size: int, sizes: LatticeSizes) -> np.ndarray:
    """auto's pair budget for the compiled k-best: KBEST_BUDGET_FACTOR times the decode's,
    within the memory budget (read at each call: tests set both here)."""
    return np.minimum(full_pairs_budgets(vocab_size, sizes) * KBEST_BUDGET_FACTOR,
                      float(memory_pairs_budget()))


def auto_budgets(model: TargetModel, sizes: LatticeSizes) -> np.ndarray | None:
    """auto's choice for lattices of `sizes`: the full DP's pair budget per lattice, or None
    when ARS runs them all (no compiled tables for this target, or setting them up would cost
    more than the estimated ARS time on every lattice: a one-off decode of a short lattice on
    a large model then takes milliseconds instead of seconds of table building)."""
    ngram = fast_full.compiled_target(model)
    if ngram is None:
        return None
    vocab_size = len(ngram.vocab)
    ars_factor, pair_factor = fast_full.cost_factors(ngram)
    if not fast_full.setup_is_free(ngram):
        ars_total = ars_factor * float(cost_model.ars_seconds(vocab_size, sizes).sum())
        if fast_full.ars_charged(ngram, ars_total) < cost_model.setup_seconds(
                fast_full.setup_ngrams(ngram)):
            return None
    return full_pairs_budgets(vocab_size, sizes, ars_factor / pair_factor)

# ----- running the choice --------------------------------------------------------------------

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
    if plan is None:
        plan = _compiled_plan(model, method, LatticeSizes.of_flat(flat))
    compiled, seconds, rest = compiled_full(model, flat, plan)
    decoded: dict[int, DecodeResult] = {}
    if rest:
        todo = list(lattices(rest))
        if method == "full":  # no compiled tables: the numpy reference DP
            decoded = dict(zip(rest, reference_full(model, todo, rest), strict=True))
        else:
            try:
                decoded = dict(zip(rest, ars_many(model, todo, rest, variant, max_iterations,
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
            return reference_full(model, lattices, everyone)
        return ars_many(model, lattices, everyone, variant, max_iterations, tol)
    flat = FlatLattices.from_lattices(model, lattices)
    try:
        res = decode_flat(model, flat, lambda ks: [lattices[k] for k in ks], method=method,
                          variant=variant, max_iterations=max_iterations, tol=tol, plan=plan)
    except DecodeManyInterrupted as stop:  # the compiled DP's results, and ARS's so far
        done = stop.compiled
        raise DecodeManyInterrupted(
            [r if r is not None or done is None or np.isnan(done.score[s])
             else compiled_result(done, flat, s, lat, stop.compiled_seconds)
             for s, (r, lat) in enumerate(zip(stop.results, lattices, strict=True))]) from None
    if res.compiled is None:
        return [res.decoded[s] for s in range(len(lattices))]
    return [res.decoded[s] if s in res.decoded
            else compiled_result(res.compiled, flat, s, lat, res.compiled_seconds)
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
        from arsdecode.methods.dispatch_kbest import cn_kbest
        return cn_kbest(lm, lattice, k, method, options, _kbest_pairs)
    needs_ars = [o for o in ("on_iteration", "keep_automaton") if options.get(o)]
    model = as_target_model(lm)
    if method != "ars" and not needs_ars:
        plan = _compiled_plan(model, method, LatticeSizes.of_widths([lattice.widths]))
        if plan[0]:
            flat = FlatLattices.from_lattices(model, [lattice])
            compiled, seconds, rest = compiled_full(model, flat, plan)
            if compiled is not None and not rest:
                return compiled_result(compiled, flat, 0, lattice, seconds)
        elif method == "full":  # no compiled tables: the numpy reference DP
            return reference_full(model, [lattice], [0])[0]
    from arsdecode.methods.ars import decode as ars_decode
    return ars_decode(model, lattice, **options)  # ARS takes every option


def decode_word_lattice(lm: ModelLike, wl: WordLattice, *, method: Method = "auto",
                        k: int | None = None, unique: bool = False,
                        max_iterations: int | None = None, tol: float = CERTIFICATE_TOL,
                        on_iteration: Callable[..., None] | None = None):
    """The exact best path of a word lattice (a DAG, issue 21), or with `k` its K best paths
    (distinct paths, or with `unique` distinct word sequences, each scored by its best path).

    "ars" is Algorithm 1 on the q-automaton over (node, context) states
    (`methods.ars.dag_ars_decode`; `max_iterations` may stop it uncertified, `on_iteration`
    sees each iteration, Ctrl-C raises `ars.DecodeInterrupted` with the best path so far);
    "full" the merged expansion (`decode_word_lattices`: compiled given n-gram tables, else
    `methods.expansion_dp`); "auto" the expansion: on every ASR-like lattice measured
    (docs/results-lattice.md) the compiled expansion is several times faster than ARS, whose
    states are not merged. k-best comes from the expansion (`dispatch_kbest.dag_kbest_result`),
    for every method. k-best and ARS stay within `memory_budget()`. Results: a confusion
    network's types (`methods.results`). Raises NoPathError if every path has probability
    zero, MemoryBudgetExceeded (before allocating) past the budget."""
    check_method(method)
    check_options("decode" if k is None else "kbest", "dag", method,
                  {"unique": unique, "max_iterations": max_iterations, "tol": tol,
                   "on_iteration": on_iteration})
    if k is not None:
        from arsdecode.methods.dispatch_kbest import dag_kbest_result
        return dag_kbest_result(lm, wl, k, unique)
    if method == "ars":
        from arsdecode.methods import ars
        return ars.dag_ars_decode(lm, wl, max_iterations=max_iterations, tol=tol,
                                  on_iteration=on_iteration, max_bytes=memory_budget())
    return decode_word_lattices(lm, [wl], method=method)[0]


def decode_word_lattices(lm: ModelLike, lattices: Sequence[WordLattice], *,
                         method: Method = "auto"
                         ) -> list[DecodeResult]:
    """The exact best path of every word lattice, in order: "full" and "auto" run one compiled
    call over all of them given n-gram tables (`fast_full.run_dag`, each result's `seconds` the
    call's mean), else the numpy reference lattice by lattice; "ars" runs
    `ars.dag_ars_decode` on each. Raises NoPathError naming the first lattice with no path
    of nonzero probability."""
    check_method(method)
    if method == "ars":
        from arsdecode.methods import ars
        return [ars.dag_ars_decode(lm, wl, max_bytes=memory_budget())
                for wl in lattices]
    return full_word_lattices(as_target_model(lm), lattices)


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
    from arsdecode.methods.dispatch_posteriors import exact_posteriors
    return exact_posteriors(lm, lattice, method, full_states=MARGINALS_FULL_STATES,
                            pairs_budget=memory_pairs_budget)  # read here: tests set both

# ----- sampling and posteriors: the method choice ---------------------------------------------

def sample(lm: ModelLike, lattice: Lattice | WordLattice, n: int,
           seed: int | np.random.Generator | None = None, *, method: Method = "auto",
           **options: Any) -> SampleResult:
    """`n` exact i.i.d. samples of p over `lattice` by the method `method` picks (natural log).

    "auto": ARS on a confusion network (`ars.sample`, a SampleResult with the evidence ln Z
    and its 95% interval; the paper's sampler, whose memory stays small where the merged
    states would not), the exact expansion on a word lattice (`expansion_dp.dag_sample`: forward
    filtering, backward sampling, with the exact ln Z: `full_samples.dag_sample_result`), as
    `decode_word_lattice` chooses the expansion there. "ars" and "full" force one: ARS on a word
    lattice is `ars.dag_ars_sample`, "full" on a confusion network the merged DP's samples
    with the exact ln Z (`full_samples.full_sample_result`). Each a SampleResult whose
    `method` says which ran. Options are checked first
    (`options.check_options`). Raises NoPathError if every path has probability zero.
    """
    from arsdecode.methods import ars
    from arsdecode.methods.full_samples import dag_sample_result, full_sample_result

    check_method(method)
    options = check_options("sample", kind_of(lattice), method, options)
    if isinstance(lattice, WordLattice):
        if method == "ars":
            return ars.dag_ars_sample(lm, lattice, n, seed, **options)
        return dag_sample_result(lm, lattice, n, seed)
    if method == "full":
        return full_sample_result(lm, lattice, n, seed, **options)
    return ars.sample(as_target_model(lm), lattice, n, seed, **options)


def adapt(lm: ModelLike, lattice: Lattice | WordLattice, **options: Any):
    """Refine q until its acceptance rate reaches the target, then stop (`ars.adapt`); a
    confusion network only (`options.REFUSED_METHODS` says why)."""
    from arsdecode.methods.ars import adapt as ars_adapt
    options = check_options("adapt", kind_of(lattice), "auto", options)
    return ars_adapt(as_target_model(lm), lattice, **options)


def _compiled_plan(model: TargetModel, method: str, sizes: LatticeSizes) -> Plan:
    """Where `method` runs the compiled full DP: "full" always (given compiled tables),
    "auto" within `auto_budgets`, "ars" never. Decided from sizes alone, so the flat layout
    (a lookup of every candidate) is built only when the DP runs."""
    if method == "ars" or fast_full.compiled_target(model) is None or len(sizes.positions) == 0:
        return False, None
    if method == "auto":
        budgets = auto_budgets(model, sizes)
        return budgets is not None, budgets
    return True, None


