"""Decoding many lattices at once: `decode_many`, with a choice of exact method per lattice.

Why: per sentence, ARS pays Python and numpy call overhead for every model query (the initial
automaton, each iteration's path scoring, each refinement). Here all active sentences advance
in lockstep, one ARS iteration at a time, and each step's model queries are concatenated
across sentences: one `log_prob` query for the paths to score, one `log_prob` and one
`log_bound` query for the rows to (re)fill. The model answers row by row, so every sentence
gets exactly the numbers `ars.decode` would get, and the same result (tested).

Method choice (`method="auto"`). The merged full DP (KenLM-style state merging) runs on the
compiled core (`methods.fast_full`), all lattices in one call, pruned by max-backoff bounds;
its cost is its (state, candidate) pairs, which pruning makes impossible to predict well
beforehand (the unpruned count, `predicted_pairs`, overestimates it by up to 1000x on SMS).
So auto measures instead of predicting: it runs the pruned full DP on every lattice with a
budget of pairs per lattice (`method_choice.full_pairs_budgets`: an estimate of what ARS costs
on that lattice, which grows with its positions x width, converted to pairs), and a lattice
that exceeds it is abandoned there and decoded by ARS. The worst case is the budget plus ARS;
the cost model is fit and validated in bench/bench_auto.py, which times both methods on every
lattice. One exception, decided before any work: when setting up the full DP for a model
(once per process; nearly free when the binary model stores its tables) would cost more than
the estimated ARS time on every lattice of the call, ARS runs them all (`setup_outweighs`).
Each result's `method` says which one ran.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence
from typing import Literal

import numpy as np

from arsdecode.core.automaton import DEFAULT_VARIANT, Variant
from arsdecode.core.tolerances import CERTIFICATE_TOL
from arsdecode.errors import NoPathError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.methods.ars import decode as ars_decode
from arsdecode.methods.cost_model import (
    ars_seconds,
    full_pairs_budgets,
    lattice_sizes,
    setup_outweighs,
)
from arsdecode.methods.full import full_decode
from arsdecode.methods.lockstep import ars_lockstep, lockstep_groups
from arsdecode.methods.results import DecodeResult
from arsdecode.model import TargetModel, as_target_model, ngram_tables

Method = Literal["auto", "ars", "full"]
METHODS: tuple[str, ...] = ("auto", "ars", "full")


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise OptionError(f"unknown method {method!r}; choose from {METHODS}")


def decode_many(
    lm,
    lattices: Sequence[Lattice],
    *,
    method: Method = "auto",
    variant: Variant = DEFAULT_VARIANT,
    max_iterations: int | None = None,
    tol: float = CERTIFICATE_TOL,
) -> list[DecodeResult]:
    """The exact argmax of p on each lattice, in input order (natural log).

    ARS results are identical to `ars.decode(lm, lattice, ...)` field by field, apart from
    `seconds` (here: the wall time from the start of the batch until that lattice was done).
    Full-DP results have `method="full"`, `log_q = log_p`, one iteration and the merged DP's
    state count. Raises NoPathError naming the first lattice on which every path has
    probability zero.
    """
    _check_method(method)
    model = as_target_model(lm)
    results: list[DecodeResult | None] = [None] * len(lattices)
    budgets = auto_pairs_budgets(model, lattices) if method == "auto" else None
    if method == "full":
        results = list(_full_native(model, lattices, list(range(len(lattices)))))
    elif budgets is not None:  # None: abandoned past its budget, for ARS below
        results = list(_full_native(model, lattices, list(range(len(lattices))), budgets))
    ars = [k for k, r in enumerate(results) if r is None]
    start = time.perf_counter()
    for group in lockstep_groups(ars, [sum(lattices[k].widths) for k in ars]):
        for k, r in zip(group, ars_lockstep(model, [lattices[k] for k in group], variant,
                                             max_iterations, tol, group, start), strict=True):
            results[k] = r
    return [r for r in results if r is not None]


def decode(lm, lattice: Lattice, *, method: Method = "auto", k: int | None = None, **options):
    """The exact argmax of p on one lattice by the method `method` picks (natural log).

    "ars" is Algorithm 1 (`arsdecode.methods.ars.decode`, which takes `options`: variant,
    max_iterations, tol, on_iteration, keep_automaton, prune); "full" is the merged full DP on
    the compiled core; "auto" runs the full DP within `auto_pairs_budgets`, else ARS (the
    module docstring says why). Returns a DecodeResult whose
    `method` says which ran. With `k`, returns instead the K best distinct paths, each exact
    and certified (`arsdecode.methods.kbest.decode_kbest`, a KBestResult, always by ARS).
    Raises NoPathError if every path has probability zero.
    """
    _check_method(method)
    if k is not None:
        from arsdecode.methods.kbest import decode_kbest

        if method == "full":
            raise OptionError("k-best decoding runs on the q-automaton: use method 'ars' or 'auto'")
        return decode_kbest(lm, lattice, k, **{o: v for o, v in options.items()
                                               if o in ("variant", "max_iterations", "tol")})
    needs_ars = [k for k in ("on_iteration", "keep_automaton") if options.get(k)]
    if method == "full" and needs_ars:
        raise OptionError(f"{needs_ars[0]} needs the q-automaton, which only method 'ars' builds")
    model = as_target_model(lm)
    budgets = auto_pairs_budgets(model, [lattice]) if method == "auto" and not needs_ars else None
    if method == "full" or budgets is not None:
        result = _full_native(model, [lattice], [0], budgets)[0]
        if result is not None:
            return result
    return ars_decode(lm, lattice, **options)


def predicted_pairs(model: TargetModel, lattices: Sequence[Lattice]) -> np.ndarray:
    """Upper bound on the merged full DP's (state, candidate) pairs per lattice, unpruned: the
    size of the merged state space (bench/bench_pos.py reports it; auto does not use it)."""
    from arsdecode.methods.fast_full import FlatLattices

    lm = _maxarpa_model(model)
    return predicted_pairs_flat(lm, FlatLattices.from_lattices(lm, lattices))


def predicted_pairs_flat(lm, flat, *, tight: bool = True) -> np.ndarray:
    """Upper bound on the merged full DP's (state, candidate) pairs per lattice of `flat`
    (an `arsdecode.methods.fast_full.FlatLattices`), vectorised over every position of the corpus.

    After token t of a lattice, a merged state is the empty context, a useful context of
    length j <= min(t + 1, n - 1) that ends with one of token t's candidates (at most the
    product of the last j widths, and at most the number of useful contexts of length j
    ending with those candidates), or one of the `<s>`-initial family (length t + 2 <= n - 1);
    each state meets the next token's candidates (the end of the lattice counts one).
    The start state meets the first token's candidates. One estimator serves `decode`,
    `decode_many` and `tag_many`; it is tested to bound the real count. `tight=False` drops
    the "ending with those candidates" count (all useful contexts of length j instead): a
    looser bound that needs no per-candidate work, enough to clear lattices far under budget.
    """
    n1 = max(lm.order - 1, 0)
    ending = _useful_by_last_word(lm)  # (n1 + 1, V): useful contexts by length and last word
    useful_by_len = np.append(ending.sum(axis=1), 0.0)
    sent_off = np.asarray(flat.sent_off, dtype=np.int64)
    pos_off = np.asarray(flat.pos_off, dtype=np.int64)
    n_pos = len(pos_off) - 1
    if n_pos == 0:
        return np.zeros(len(sent_off) - 1)
    widths = np.diff(pos_off).astype(np.float64)
    lengths = np.diff(sent_off)
    local = np.arange(n_pos) - np.repeat(sent_off[:-1], lengths)  # t: index in its lattice
    starts = pos_off[:-1]
    ids = np.asarray(flat.cand_ids, dtype=np.int64)
    prod = np.ones(n_pos)
    states = np.ones(n_pos)  # the empty context
    for j in range(1, n1 + 1):
        ok = local + 1 >= j  # a context of length j needs j tokens
        shifted = np.ones(n_pos)
        shifted[j - 1:] = widths[: n_pos - j + 1]  # width of token t - j + 1
        prod = np.where(ok, prod * shifted, prod)
        if tight and len(ids):
            ending_here = np.add.reduceat(ending[j][ids], starts)
        else:
            ending_here = np.full(n_pos, useful_by_len[j])
        states += np.where(ok, np.minimum(prod, ending_here), 0.0)
    family = local + 2 <= n1  # the <s>-initial contexts of length t + 2
    states += np.where(family, np.minimum(prod, useful_by_len[np.minimum(local + 2, n1 + 1)]),
                       0.0)
    last = local == np.repeat(lengths - 1, lengths)
    following = np.where(last, 1.0, np.append(widths[1:], 1.0))
    per_pos = states * following
    # Per lattice, plus the start state times the first width.
    return np.add.reduceat(per_pos, sent_off[:-1]) + widths[sent_off[:-1]]


_ENDING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _useful_by_last_word(lm) -> np.ndarray:
    """counts[j, w]: useful contexts (see methods.full) of length j whose last word is w."""
    hit = _ENDING.get(lm)
    if hit is None:
        from arsdecode.methods.fast_full import full_dp

        rows, lens = (np.asarray(a) for a in full_dp(lm).arrays[:2])
        n1 = max(lm.order - 1, 0)
        v = lm.trie.vocab_size
        keep = lens > 0
        flat = lens[keep].astype(np.int64) * v + rows[keep, -1]
        hit = np.bincount(flat, minlength=(n1 + 1) * v).reshape(n1 + 1, v).astype(np.float64)
        _ENDING[lm] = hit
    return hit


def auto_pairs_budgets(model: TargetModel, lattices: Sequence[Lattice]) -> np.ndarray | None:
    """auto's pair budget for the full DP on each lattice (`method_choice.full_pairs_budgets`),
    or None when auto runs ARS on all of them: no compiled tables for this target (not a
    maxarpa model), or setting them up would cost more than the estimated ARS time on every
    lattice of the call."""
    lm = _maxarpa_model(model)
    if lm is None:
        return None
    sizes = lattice_sizes([lat.widths for lat in lattices])
    if setup_outweighs(lm, float(ars_seconds(lm, *sizes).sum())):
        return None
    return full_pairs_budgets(lm, *sizes)


def _maxarpa_model(model: TargetModel):
    return ngram_tables(model)


def _full_native(model: TargetModel, lattices: Sequence[Lattice], labels,
                 max_pairs: np.ndarray | None = None) -> list[DecodeResult | None]:
    """The merged full DP on the compiled core, every lattice in one call; None for a lattice
    abandoned past its budget in `max_pairs` (one per lattice; only the compiled DP
    abandons)."""
    from arsdecode.methods.fast_full import decode_lattices

    lm = _maxarpa_model(model)
    if lm is None:  # a target with no compiled tables: the numpy reference DP
        out: list[DecodeResult | None] = []
        for k, lat in zip(labels, lattices, strict=True):
            try:
                f = full_decode(model, lat)
            except NoPathError as err:
                raise NoPathError(f"lattice {k}: {err}") from None
            out.append(_full_result(f.tokens, f.log_p, f.dp_states, f.seconds))
        return out
    start = time.perf_counter()
    decoded = decode_lattices(lm, lattices, labels, max_pairs)
    seconds = (time.perf_counter() - start) / max(len(lattices), 1)
    return [None if d is None else _full_result(d[0], d[1], d[2], seconds) for d in decoded]


def _full_result(tokens: list[str], log_p: float, states: int, seconds: float) -> DecodeResult:
    """A full-DP optimum as a DecodeResult: exact by construction, so log_q = log_p."""
    return DecodeResult(
        tokens=tokens, log_p=log_p, log_q=log_p, iterations=1, states=states,
        ngrams_by_order={}, trace=[(log_p, log_p)], seconds=seconds, certified=True,
        method="full",
    )


