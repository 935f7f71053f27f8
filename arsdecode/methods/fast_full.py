"""The full model's Viterbi and log partition on the compiled core, many lattices per call.

Why: arsdecode.methods.full is the numpy reference, one lattice at a time with per-position Python
work. This front end runs one compiled call over a whole corpus of lattices in the flat layout
(`arsdecode.lattice.flat.FlatLattices`: per-sentence offsets, per-position offsets, candidate
ids, ln emissions), on the same merged state space: a context is cut to its longest *useful*
suffix (a proper prefix of a listed n-gram, or a listed n-gram with a nonzero backoff), which
changes no score and commutes with appending a word (see arsdecode.methods.full's docstring).

Tie-breaking is deterministic but not methods.full's: the first best predecessor in creation
order wins (see `arsdecode.native._core.FullDP`). Scores agree with methods.full to rounding
(the tables are in ln, summed in the same order as maxarpa's walk).

The compiled DP of a model (`full_dp(lm)`, one per model and process) keeps its transition
cache across calls and runs without the GIL. It is safe to call from several threads at once:
each concurrent call uses its own cache, bounded in size (see `arsdecode.native._core.FullDP`).

A mixture of several n-gram tables (`InterpolatedLM`, `-mix-lm`; also under an LM weight,
`WeightedLM`) runs on the same DP over the union of its components' useful contexts, every
factor from the components' walks (`arsdecode.methods.fast_mixture`): `compiled_target`
says which model the compiled DP runs on, if any, and every function here takes either.
A trained VPYLM (`VpylmLM`, bare or under a `WeightedLM`) runs on it likewise, over its
context tree's states (`arsdecode.methods.fast_vpylm`), and a log-linear target (`LogLinearLM`)
over states made on demand (`arsdecode.methods.fast_loglinear`).

It only executes: whether the full DP runs, and within which budget of pairs, is decided in
`arsdecode.methods.dispatch`.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, cast

import numpy as np

from arsdecode.errors import ModelError, NoPathError
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.lattice.flat import FlatLattices
from arsdecode.methods.compiled_kinds import CompiledKind, kind_of
from arsdecode.model.interface import PLAIN_SCORING, NgramScoring, ngram_tables
from arsdecode.model.weighted import WeightedLM
from arsdecode.native import _core, native_ngram
from maxarpa.contexts import has_stored_tables, useful_context_tables
from maxarpa.model import Model

if TYPE_CHECKING:
    from arsdecode.model.interpolated import InterpolatedLM
    from arsdecode.model.loglinear import LogLinearLM
    from arsdecode.model.vpylm import VpylmLM

Compiled: TypeAlias = "Model | InterpolatedLM | VpylmLM | LogLinearLM"
"""What the compiled DP runs on: one n-gram table, a mixture of several, a VPYLM, or a
log-linear target."""


@dataclass(frozen=True)
class BatchResult:
    """Per position the chosen candidate index; per sentence the score and state counts."""

    choice: np.ndarray  # (P,) int32, -1 where the sentence has no path
    score: np.ndarray  # (S,) ln p of the best path (Viterbi) or ln Z; -inf: no path
    dp_states: np.ndarray  # (S,) merged states built (after pruning), the start state included
    max_states: np.ndarray  # (S,) the most states at one position
    pairs: np.ndarray  # (S,) (state, candidate) pairs visited: the DP's cost


SPARSE_CACHE_BYTES: int = _core.SPARSE_CACHE_BYTES  # the DP's transition cache, at most

_DP: weakref.WeakKeyDictionary[Compiled, _core.FullDP | None] = weakref.WeakKeyDictionary()
_DP_LOCK = threading.Lock()  # threads asking for a new model's DP build it once


def compiled_target(model: object) -> Compiled | None:
    """The model the compiled DP runs `model` on: its n-gram tables (`ngram_tables`), or the
    target itself when `compiled_kinds` has its kind (a mixture, a VPYLM, a log-linear target;
    bare or under a `WeightedLM`, whose `scoring` the callers read as for one table), or None.
    A target whose states cannot be exact (`build_dp` gave None) gives None once a first
    `has_dp` has found it out."""
    ngram = ngram_tables(model)  # type: ignore[arg-type]
    if ngram is not None:
        return ngram
    inner = cast("Compiled", model.inner if isinstance(model, WeightedLM) else model)
    kind = kind_of(inner)
    if kind is None or (inner in _DP and _DP[inner] is None) or not kind.compilable(inner):
        return None
    return inner


def _kind(lm: Compiled) -> CompiledKind:
    """The kind of a target that is not one n-gram table (`compiled_target` found it)."""
    kind = kind_of(lm)
    assert kind is not None, type(lm)
    return kind


def setup_ngrams(lm: Compiled) -> int:
    """The set-up cost of `full_dp(lm)` in n-grams (units of cost_model.setup_seconds): one
    table's n-grams (its useful-context tables built here when not stored), else its kind's
    estimate (`CompiledKind.setup_ngrams`); 0 once built."""
    if isinstance(lm, Model):
        return sum(lm.counts)
    return 0 if lm in _DP else _kind(lm).setup_ngrams(lm)


def cost_factors(lm: Compiled) -> tuple[float, float]:
    """auto's (ARS time, full DP time per pair) on `lm`, relative to one n-gram table's
    (`cost_model`'s estimates): its kind's measured factors, 1 for one table."""
    if isinstance(lm, Model):
        return 1.0, 1.0
    kind = _kind(lm)
    return kind.ARS_TIME_FACTOR, kind.PAIR_TIME_FACTOR


def ars_charged(lm: Compiled, seconds: float) -> float:
    """`seconds` of estimated ARS time about to run on `lm`, plus what auto's earlier calls
    charged it where its kind keeps such an account (`CompiledKind.charge`)."""
    return seconds if isinstance(lm, Model) else _kind(lm).charge(lm, seconds)


def compiled_tables(model: object) -> Compiled | None:
    """`compiled_target(model)` where the compiled DP runs it (`has_dp`: builds a mixture's),
    else None: what the runners ask once the method is chosen."""
    target = compiled_target(model)
    return target if target is not None and has_dp(target) else None


def is_built(lm: Compiled) -> bool:
    """Whether `full_dp(lm)` has been built in this process (its setup is then paid)."""
    return lm in _DP


def setup_is_free(lm: Compiled) -> bool:
    """Whether `full_dp(lm)` costs next to nothing to build: already built in this process,
    or its tables are at hand: one table's useful contexts stored in the binary model file
    (`maxarpa.contexts`), another kind's tables built already (`CompiledKind.is_built`)."""
    if lm in _DP:
        return True
    return has_stored_tables(lm) if isinstance(lm, Model) else _kind(lm).is_built(lm)


def _boundaries(lm: Compiled, scoring: NgramScoring) -> tuple[int, int]:
    """The ids of <s> and </s> the DP starts and ends with (-1: none, by `scoring`); a
    ModelError when the model has no <s> or </s>."""
    bos, eos = (lm.bos_id, lm.eos_id) if isinstance(lm, Model) else (lm.bos, lm.eos)
    if bos is None or eos is None:
        raise ModelError(f"{getattr(lm, 'source', None) or 'model'}: no <s> or </s> in the "
                         "vocabulary; the full DP needs the sentence boundaries")
    return (bos if scoring.sentence_start else -1), (eos if scoring.sentence_end else -1)


def has_dp(lm: Compiled) -> bool:
    """Whether the compiled DP runs `lm` (building it): False for a mixture whose union states
    could not be exact (fast_mixture's docstring), which then runs ARS or the numpy DP."""
    return _full_dp(lm) is not None


def full_dp(lm: Compiled) -> _core.FullDP:
    """The compiled DP for `lm`, built once per model (its transition caches persist, bounded;
    safe to share between threads); ModelError for a mixture without one (`has_dp`).

    The useful-context tables come from the binary model file when it stores them (written by
    `maxarpa convert --binary`), else they are built here (about 1 us per n-gram). The core
    takes writable arrays, so tables memory-mapped from the file are copied (a memcpy). A
    mixture's are the union of its components' (`fast_mixture`).
    """
    dp = _full_dp(lm)
    if dp is None:
        raise ModelError(f"{lm!r}: a component's useful contexts hold its <unk>, which several "
                         "words of the union map to: no compiled full DP")
    return dp


def _full_dp(lm: Compiled) -> _core.FullDP | None:
    if lm in _DP:
        return _DP[lm]
    with _DP_LOCK:
        if lm not in _DP:
            if not isinstance(lm, Model):
                _DP[lm] = _kind(lm).build_dp(lm)
            else:
                rows, lens, keys = (a if a.flags.writeable else a.copy()
                                    for a in useful_context_tables(lm))
                slots, bits = _core.build_hash(keys)
                _DP[lm] = _core.FullDP(native_ngram(lm).core, rows, lens, keys, slots, bits)
        return _DP[lm]


def run_flat(lm: Compiled, flat: FlatLattices, *, viterbi: bool = True,
             prune: bool = True, max_pairs: float | np.ndarray | None = None,
             scoring: NgramScoring = PLAIN_SCORING) -> BatchResult:
    """One compiled call over every lattice in `flat`.

    `max_pairs` (one budget, or one per lattice) abandons a lattice once its (state,
    candidate) pairs exceed its budget: its score is NaN and its choices -1. The budgets are
    the caller's (`methods.dispatch` sets auto's); this only executes them.

    `prune` (Viterbi only) drops the (state, candidate) pairs whose score so far plus an upper
    bound on any completion (bigram max-backoff bounds, one backward pass over the lattice)
    falls below the exact score of a known path: the best score is the same number, with
    fewer states built (`_core.FullDP.run`). `prune=False` builds the whole merged state
    space, as arsdecode.methods.full does.

    `scoring` (a target's `NgramScoring`): the LM weight and whether `<s>` and `</s>` count.
    """
    bos, eos = _boundaries(lm, scoring)
    choice, score, states, widest, pairs = full_dp(lm).run(
        flat.sent_off, flat.pos_off, flat.cand_ids, flat.cand_emis, bos, eos, viterbi, prune,
        -1 if max_pairs is None else np.minimum(max_pairs, 2**62).astype(np.int64),
        scoring.lm_weight,
    )
    return BatchResult(choice, score, states, widest, pairs)


@dataclass(frozen=True)
class KBestBatch:
    """The K best paths of every lattice of a compiled call, exact in float64."""

    scores: np.ndarray  # (S, K) ln p, best first; -inf past a lattice's number of paths
    choice: np.ndarray  # (K, P) int32: the r-th best path's candidate index per position
    pairs: np.ndarray  # (S,) (state, candidate) pairs tried over every pass; NaN scores: over
    passes: int  # compiled calls made (see `kbest_flat`)


KBEST_FIRST_MARGIN = 8.0
"""k-best's first pruning threshold, in nats below the best path (see `kbest_flat`)."""


def kbest_flat(lm: Compiled, flat: FlatLattices, k: int, *,
               max_pairs: float | np.ndarray | None = None,
               scoring: NgramScoring = PLAIN_SCORING) -> KBestBatch:
    """The K best distinct paths of every lattice in `flat`, on the compiled DP.

    The DP records each lattice's layered graph of merged states and reads its K best paths
    off it (Huang & Chiang's k-best on a DAG, `_kbest.pxi`). Pruning needs a lower bound T on
    the K-th best score, and every path scoring >= T survives pruning with T; so:
      1. the pruned Viterbi pass gives the best score B;
      2. the k-best pass prunes with T = B - KBEST_FIRST_MARGIN; a lattice whose K-th score
         found is >= T is exact (every path above it survived);
      3. the others rerun with T = their K-th score found (the exact score of a real path, so
         a valid bound: exact now), or without pruning when fewer than K paths were found.
    `max_pairs` abandons a lattice past that many pairs in any pass (its scores are NaN).
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    bos, eos = _boundaries(lm, scoring)
    budget = -1 if max_pairs is None else np.minimum(max_pairs, 2**62).astype(np.int64)
    budgets = np.broadcast_to(np.asarray(budget, dtype=np.int64), (flat.n_lattices,))
    dp = full_dp(lm)

    def run(f: FlatLattices, known: np.ndarray, lattices: np.ndarray):
        return dp.run(f.sent_off, f.pos_off, f.cand_ids, f.cand_emis, bos, eos, True, True,
                      np.ascontiguousarray(budgets[lattices]), scoring.lm_weight, known, k)

    everyone = np.arange(flat.n_lattices)
    best = dp.run(flat.sent_off, flat.pos_off, flat.cand_ids, flat.cand_emis, bos, eos, True,
                  True, np.ascontiguousarray(budgets), scoring.lm_weight)
    pairs = best[4].astype(np.float64)
    over = np.isnan(best[1])
    scores = np.full((flat.n_lattices, k), -np.inf)
    choice = np.full((k, len(flat.pos_off) - 1), -1, dtype=np.int32)
    known = best[1] - KBEST_FIRST_MARGIN
    todo = everyone[np.isfinite(best[1])]
    passes = 1
    for final in (False, True):
        if not len(todo):
            break
        sub = flat if len(todo) == flat.n_lattices else flat.take(todo.tolist())
        res = run(sub, np.ascontiguousarray(known[todo]), todo)
        passes += 1
        pairs[todo] += res[4]
        found = np.isfinite(res[5]).sum(axis=1)
        kth = res[5][:, -1]
        done = final | np.isnan(res[1]) | (kth >= known[todo]) | ~np.isfinite(known[todo])
        for j, s in enumerate(todo.tolist()):
            if done[j]:
                scores[s] = res[5][j]
                p0, p1 = flat.sent_off[s], flat.sent_off[s + 1]
                q0 = sub.sent_off[j]
                choice[:, p0:p1] = res[6][:, q0:q0 + (p1 - p0)]
                over[s] |= bool(np.isnan(res[1][j]))
        rest = ~done
        known[todo[rest]] = np.where(found[rest] == k, kth[rest], np.nan)
        todo = todo[rest]
    scores[over] = np.nan
    return KBestBatch(scores, choice, pairs, passes)


def posteriors_flat(lm: Compiled, flat: FlatLattices, *,
                    max_pairs: float | np.ndarray | None = None,
                    scoring: NgramScoring = PLAIN_SCORING) -> tuple[np.ndarray, np.ndarray]:
    """Exact ln Z of every lattice in `flat` and the posterior probability of every candidate
    (forward-backward over the merged states, log semiring, no pruning), on the compiled DP.

    Returns (ln_z (S,), posteriors (C,)): ln Z is -inf where no path has p > 0 (posteriors
    0) and NaN where the lattice passed `max_pairs` (posteriors 0).
    """
    budget = -1 if max_pairs is None else np.minimum(max_pairs, 2**62).astype(np.int64)
    bos, eos = _boundaries(lm, scoring)
    res = full_dp(lm).run(
        flat.sent_off, flat.pos_off, flat.cand_ids, flat.cand_emis, bos, eos, False, False,
        budget, scoring.lm_weight, None, 0, True)
    return res[1], res[7]


@dataclass(frozen=True)
class DagBest:
    """The compiled expansion's best path of one word lattice (natural log)."""

    arcs: tuple[int, ...]  # arc indices of the WordLattice, start to final
    log_p: float  # -inf: no path of nonzero probability
    states: int  # (node, merged context) states built
    transitions: int


def run_dag(lm: Compiled, lattices: Sequence[WordLattice], *,
            scoring: NgramScoring = PLAIN_SCORING) -> list[DagBest]:
    """The exact best path of every word lattice, by Viterbi over its merged expansion on the
    compiled core (`_core.FullDP.run_dag`): the same states and scores as
    `methods.dag_full.dag_decode` (the numpy reference), in one call for all of them."""
    bos, eos = _boundaries(lm, scoring)
    sizes = np.array([wl.n_nodes for wl in lattices], dtype=np.int64)
    node_off = np.zeros(len(lattices) + 1, dtype=np.int64)
    np.cumsum(sizes, out=node_off[1:])
    n = int(node_off[-1])
    arc_off = np.zeros(n + 1, dtype=np.int64)
    dst, words, weights = [], [], []
    final_w = np.full(n, -np.inf)
    get, unk = lm.word_to_id.get, lm.unk_id
    for base, wl in zip(node_off[:-1].tolist(), lattices, strict=True):
        arc_off[base + 1:base + 1 + wl.n_nodes] = np.bincount(wl.src, minlength=wl.n_nodes)
        dst.append(wl.dst + base)
        weights.append(wl.log_weights)
        # An unknown word is <unk> (a model without one: maxarpa's `ids` raises its error).
        ids = [-1 if w is None else get(w, unk) for w in wl.words]
        if unk is None and None in ids:
            lm.ids([w for w in wl.words if w is not None])
        words.append(np.array(ids, dtype=np.int64))
        for node, w in wl.finals.items():
            final_w[base + node] = w
    np.cumsum(arc_off, out=arc_off)
    score, path, path_len, states, trans = full_dp(lm).run_dag(
        node_off, arc_off, _concat(dst, np.int64), _concat(words, np.int64),
        _concat(weights, np.float64),
        final_w, bos, eos, scoring.lm_weight)
    out, at = [], 0
    for s in range(len(lattices)):
        k = int(path_len[s])
        first_arc = int(arc_off[node_off[s]])  # the core numbers arcs over every lattice
        out.append(DagBest(tuple((path[at:at + k] - first_arc).tolist()), float(score[s]),
                           int(states[s]), int(trans[s])))
        at += k
    return out


def _concat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype) if arrays else np.empty(0, dtype)


def full_decode_many(lm: Compiled, lattices: Sequence[Lattice]) -> list[tuple[list[str], float]]:
    """Best path and its ln p for every lattice (arsdecode.methods.full.full_decode's values),
    from one compiled call.

    Raises NoPathError naming the first lattice whose paths all have probability zero.
    """
    flat = FlatLattices.from_lattices(lm, lattices)
    res = run_flat(lm, flat, viterbi=True)
    dead = np.flatnonzero(~np.isfinite(res.score))
    if len(dead):
        raise NoPathError(f"lattice {int(dead[0])}: every path has probability zero")
    choice = res.choice.tolist()
    out = []
    for s, lat in enumerate(lattices):
        p0 = int(flat.sent_off[s])
        out.append(([lat.tokens[i][choice[p0 + i]] for i in range(len(lat))],
                    float(res.score[s])))
    return out


def full_log_partition_many(lm: Compiled, lattices: Sequence[Lattice]) -> np.ndarray:
    """ln Z of every lattice (-inf where no path has nonzero probability)."""
    return run_flat(lm, FlatLattices.from_lattices(lm, lattices), viterbi=False).score
