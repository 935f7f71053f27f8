"""The tree methods' front door: decode, kbest, sample, marginals, log_partition.

`target` is a loaded model or any `TargetModel` (converted once by `as_target_model`), the
automaton a `TreeAutomaton`; method "full" (the exact intersection with the target's merged
states, `intersect.py`), "ars" (adaptive rejection over the bounding tree automaton, `ars.py`)
or "auto". For decode and k-best, auto is ARS: it certifies its answer and builds a fraction
of the full forest (bench/bench_trees.py, CKY charts of L = 5-15 words over SMS keypad
lattices, state_union 5-gram: 1.4-2.4x faster than the full intersection with 5 candidates
a position, 13-35x with 20). For samples, marginals and ln Z, auto is the full intersection
while it asks the target at most `max_queries` (context, word) pairs, else ARS: the exact
forest answers them all at once and exactly (zero-width intervals), and drew 100 samples
2-3x faster than ARS's adaptive rejection with 5 candidates (ARS was 1.0-1.9x faster with
20, where the full forest is 10x larger than ARS's final q). Results are `results.py`'s types;
natural logs. The lead wires these into `arsdecode.api`'s dispatch and the CLI (`--trees FILE`).
"""

from __future__ import annotations

import math
import time

import numpy as np

from arsdecode.errors import ArgumentError, ArsDecodeError, OptionError
from arsdecode.methods.marginals import wilson
from arsdecode.methods.results import Paths, SampleTrace
from arsdecode.model import ModelLike, TargetModel, as_target_model
from maxarpa.model import Model

from .ars import ars_decode, ars_kbest, ars_sample
from .automaton import TreeAutomaton
from .errors import EmptyLanguageError
from .forest import Forest
from .intersect import (
    ContextStates,
    State,
    decode_pruning,
    derivation_log_p,
    intersect,
    leaf_ids,
)
from .results import (
    RuleMarginal,
    TreeDecodeResult,
    TreeMarginalsResult,
    TreePath,
    TreeSampleResult,
    tree_paths,
)

METHODS = ("auto", "full", "ars")
MAX_QUERIES = 200_000
"""auto's budget: (context, word) pairs the full intersection may ask of the target before
auto hands the automaton to ARS (the pairs are the forest's leaf edges: its size)."""


class _TooLarge(ArsDecodeError):
    """auto's signal, inside this module, that the full forest would pass its query budget
    (caught here, never raised to a caller; an ArsDecodeError so nothing of arsdecode stands
    outside the error tree)."""


def _target(fn: str, target: ModelLike, automaton: TreeAutomaton) -> TargetModel:
    """The engine's view of `target`, after checking both arguments' types (one line each)."""
    if not isinstance(automaton, TreeAutomaton):
        raise ArgumentError(f"{fn}(): automaton must be a TreeAutomaton (TreeAutomaton.read "
                            f"reads a file); got {type(automaton).__name__}")
    if not isinstance(target, (Model, TargetModel)):
        raise ArgumentError(f"{fn}(): target must be a loaded model or a TargetModel; got "
                            f"{type(target).__name__}")
    return as_target_model(target)


def _method(method: str) -> str:
    if method not in METHODS:
        raise OptionError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    return method


def full_forest(target: ModelLike, automaton: TreeAutomaton, prune: bool = False) -> Forest:
    """The exact intersection (goal last); refuses an automaton whose every tree has p = 0.
    `prune`: drop the nodes that cannot be on the best derivation (`intersect.Pruning`; the
    forest then serves the best derivation only)."""
    tm = as_target_model(target)
    forest = intersect(automaton, ContextStates(tm),
                       prune=decode_pruning(automaton, tm) if prune else None)
    if forest.log_partition() == -math.inf:
        raise EmptyLanguageError(f"{automaton.source}: every tree has probability zero under "
                                 "the target")
    return forest


def _choose(target: TargetModel, automaton: TreeAutomaton, method: str,
            max_queries: int, prune: bool = False) -> tuple[str, Forest | None]:
    """auto: build the full forest unless `max_queries` target queries do not finish it
    (a negative budget: ARS at once)."""
    method = _method(method)
    if method == "ars" or (method == "auto" and max_queries < 0):
        return "ars", None
    if method == "full":
        return "full", full_forest(target, automaton, prune)
    try:
        forest = intersect(automaton, _Budget(target, max_queries))
    except _TooLarge:
        return "ars", None
    if forest.log_partition() == -math.inf:
        raise EmptyLanguageError(f"{automaton.source}: every tree has probability zero under "
                                 "the target")
    return "full", forest


class _Budget(ContextStates):
    """The target's merged states, counting the (context, word) rows asked: auto's stop."""

    def __init__(self, target: TargetModel, max_rows: int) -> None:
        super().__init__(target)
        self.max_rows = max_rows

    def step(self, state: State, words: np.ndarray) -> tuple[list[State], np.ndarray]:
        if self.queries + len(words) > self.max_rows:
            raise _TooLarge
        return super().step(state, words)


def _path(a: TreeAutomaton, rules: list[int], log_p: float) -> TreePath:
    d = a.from_preorder(rules)
    return TreePath(a.tree_string(d), a.yield_of(d), tuple(rules), log_p)


def decode(target: ModelLike, automaton: TreeAutomaton, method: str = "auto",
           max_iterations: int | None = None, max_queries: int = MAX_QUERIES) -> TreeDecodeResult:
    """The best derivation of p (tree, yield, ln p), certified."""
    t0 = time.perf_counter()
    tm = _target("decode", target, automaton)
    chosen, forest = _choose(tm, automaton, method, -1 if method == "auto" else max_queries,
                             prune=True)
    if forest is not None:
        log_p, rules = forest.viterbi()
        p = _path(automaton, rules, log_p)
        return TreeDecodeResult(p.tokens, log_p, log_p, 1, forest.num_nodes, {}, [
            (log_p, log_p)], time.perf_counter() - t0, True, None, "full", None, p.tree,
            p.rules)
    s, rules, ars, trace, ok = ars_decode(automaton, tm, max_iterations)
    p = _path(automaton, rules, s.log_p)
    return TreeDecodeResult(p.tokens, s.log_p, s.log_q, len(trace), ars.forest.num_nodes, {},
                            trace, time.perf_counter() - t0, ok, None, "ars", None, p.tree,
                            p.rules)


def kbest(target: ModelLike, automaton: TreeAutomaton, k: int, method: str = "auto",
          max_iterations: int | None = None, max_queries: int = MAX_QUERIES) -> Paths:
    """The k best derivations of p, best first (`Paths` of `TreePath`; fewer if there are
    fewer derivations of non-zero weight)."""
    if not isinstance(k, int) or k < 1:
        raise ArgumentError(f"kbest(): k must be an int >= 1; got {k!r}")
    tm = _target("kbest", target, automaton)
    chosen, forest = _choose(tm, automaton, method, -1 if method == "auto" else max_queries)
    if forest is not None:
        return tree_paths([_path(automaton, rules, lp) for lp, rules in forest.kbest(k)],
                          "full")
    top, _, _, ok = ars_kbest(automaton, tm, k, max_iterations)
    return tree_paths([_path(automaton, rules, s.log_p) for s, rules in top], "ars", ok)


def sample(target: ModelLike, automaton: TreeAutomaton, n: int, seed: int | None = None,
           method: str = "auto", max_queries: int = MAX_QUERIES, target_ar: float = 0.5,
           max_trials: int | None = None) -> TreeSampleResult:
    """n exact i.i.d. derivations of p, with ln Z (exact for "full", an estimate with its 95%
    interval for "ars")."""
    if not isinstance(n, int) or n < 0:
        raise ArgumentError(f"sample(): n must be an int >= 0; got {n!r}")
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    tm = _target("sample", target, automaton)
    chosen, forest = _choose(tm, automaton, method, max_queries)
    if forest is not None:
        sampler = forest.sampler()
        draws = [sampler.draw(rng) for _ in range(n)]
        ids = leaf_ids(automaton, tm)
        paths = [_path(automaton, r, derivation_log_p(automaton, tm, r, ids)) for r in draws]
        lz = sampler.log_Z
        trace = SampleTrace([1.0] * n, [True] * n, [forest.num_nodes] * n, [lz] * n, 0)
        return TreeSampleResult([p.tokens for p in paths], [p.log_p for p in paths], n, 1.0,
                                lz, (lz, lz), lz, forest.num_nodes, 0,
                                time.perf_counter() - t0, trace, 0, lz, (lz, lz),
                                [p.tree for p in paths], [p.rules for p in paths], "full")
    run = ars_sample(automaton, tm, n, rng, target_ar=target_ar, max_trials=max_trials)
    imp, rej, plain = run.log.evidence()
    paths = [_path(automaton, rules, s.log_p) for s, rules in run.accepted]
    return TreeSampleResult([p.tokens for p in paths], [p.log_p for p in paths],
                            run.log.trials, run.log.acceptance_rate(), imp.log_Z, imp.ci, plain,
                            run.ars.forest.num_nodes, run.ars.refinements,
                            time.perf_counter() - t0, run.log.trace(run.frozen_from),
                            run.adapted_at, rej.log_Z, rej.ci, [p.tree for p in paths],
                            [p.rules for p in paths], "ars")


def marginals(target: ModelLike, automaton: TreeAutomaton, n: int = 1000,
              seed: int | None = None, method: str = "auto", max_queries: int = MAX_QUERIES
              ) -> TreeMarginalsResult:
    """Rule posteriors (expected uses per derivation) and ln Z: exact on the full forest;
    with ARS, estimated from n exact samples (Wilson 95% intervals of the share of samples
    using the rule, exact when a derivation uses a rule at most once, as in a chart)."""
    t0 = time.perf_counter()
    tm = _target("marginals", target, automaton)
    chosen, forest = _choose(tm, automaton, method, max_queries)
    rules = automaton.raw_rules()
    if forest is not None:
        post = forest.rule_posteriors(len(automaton.rules))
        lz = forest.log_partition()
        ms = [RuleMarginal(i, r.lhs, r.label, r.children, float(p), float(p), float(p))
              for i, (r, p) in enumerate(zip(rules, post, strict=True))]
        return TreeMarginalsResult(ms, lz, (lz, lz), True, "full", time.perf_counter() - t0)
    draws = sample(tm, automaton, n, seed, method="ars")
    counts = np.zeros(len(rules))
    used = np.zeros(len(rules), dtype=np.int64)
    for r in draws.rules:
        c = np.bincount(np.asarray(r, dtype=np.int64), minlength=len(rules))
        counts += c
        used += c > 0
    ms = [RuleMarginal(i, r.lhs, r.label, r.children, float(counts[i] / max(n, 1)),
                       *wilson(int(used[i]), n)) for i, r in enumerate(rules)]
    return TreeMarginalsResult(ms, draws.log_Z, draws.log_Z_ci, False, "ars",
                               time.perf_counter() - t0, draws)


def log_partition(target: ModelLike, automaton: TreeAutomaton, method: str = "auto",
                  n: int = 1000, seed: int | None = None, max_queries: int = MAX_QUERIES
                  ) -> tuple[float, tuple[float, float], bool]:
    """(ln Z, its 95% interval, exact): exact on the full forest; with ARS the importance
    estimate from the trials of n exact samples."""
    tm = _target("log_partition", target, automaton)
    chosen, forest = _choose(tm, automaton, method, max_queries)
    if forest is not None:
        lz = forest.log_partition()
        return lz, (lz, lz), True
    draws = sample(tm, automaton, n, seed, method="ars")
    return draws.log_Z, draws.log_Z_ci, False
