"""The full model F: exact dynamic programs over n-gram context states, the baseline for ARS.

Why it exists: adaptive rejection sampling claims to find the same optimum and to sample the same
distribution as the full high-order HMM while building a small fraction of its states. This module
is that full HMM, written independently of the q-automaton so the two can check each other:
Viterbi (`full_decode`), exact k-best (`full_kbest`), the forward algorithm
(`full_log_partition`), forward filtering with backward sampling (`full_sample`) and
forward-backward posterior marginals (`full_marginals`), all in natural log with the same
target as `Target.log_p`:

    log p(x) = sum_i ln p(x_i | <s> x_1..x_{i-1}) + ln p(</s> | <s> x) + sum_i e_i(x_i)

States. The full model's state after i tokens is the last n - 1 tokens of `<s> x_1 .. x_i` (fewer
near the start); `full_state_count` reports that count, the paper's measure of F. The dynamic
programs by default merge states the way KenLM does, which cannot change any score: a context is
cut to the model's `minimal_context` (for a backoff model, its longest *useful* suffix; see
`arsdecode.model`), so p(w | c) equals p(w | cut(c)) for every w, and cutting commutes with
appending a word. Without the cut, n = 5 with 100 candidates a position would need 10^8 states
per position; `minimize=False` keeps the literal state space for tests on small lattices.

Each position is one batched `log_prob` query over (state, candidate) pairs, and states are
merged with `np.unique` on context rows, so Python work is per position, not per pair. The
forward sweep is generic in the semiring (`MaxPlus` for Viterbi, `LogSumExp` for the forward
algorithm), the same semirings as the q-automaton's dynamic program (`dp.py`), and sampling uses
the same categorical draw (`dp.draw_in_segments`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from arsdecode.core.dp import draw_in_segments
from arsdecode.core.semiring import LogSumExp, MaxPlus, Semiring, logsumexp, quiet
from arsdecode.errors import ArsDecodeError, NoPathError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.methods.results import KBestResult, ScoredPath
from arsdecode.model import ModelLike, TargetModel, as_target_model

if TYPE_CHECKING:
    pass


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


# ----- the layered state space ---------------------------------------------------------------
@dataclass(frozen=True)
class _Layer:
    """The (state, candidate) pairs of one position, sorted by the state they lead to."""

    prev: np.ndarray  # state index in the previous layer
    cand: np.ndarray  # candidate index at this position
    score: np.ndarray  # ln weight: log_prob + emission (finite)
    group: np.ndarray  # state index in this layer (ascending)
    starts: np.ndarray  # first pair of each state
    size: int


@dataclass(frozen=True)
class _Sweep:
    alpha: np.ndarray  # per final-layer state, max or logsumexp including </s>
    layers: list[_Layer]  # kept only when asked (sampling, k-best)
    alphas: list[np.ndarray]  # forward values before each position, kept with `layers`
    back: list[np.ndarray]  # per layer, the best pair of each state (Viterbi)
    dp_states: int
    final: np.ndarray  # per final-layer state, ln p(</s> | state) (the backward start)


class StatesBudgetExceeded(ArsDecodeError):
    """Raised by `_sweep` when the merged states pass `max_states` (the caller falls back to
    another method). In the error tree, so that a caller who sets the budget gets one line."""


def _group_rows(rows: np.ndarray) -> tuple[int, np.ndarray]:
    """Number of distinct rows and each row's group id (ids ordered like the sorted rows)."""
    if rows.shape[1] == 0:
        return 1, np.zeros(len(rows), dtype=np.int64)
    a = np.ascontiguousarray(rows)
    view = a.view(np.dtype((np.void, a.dtype.itemsize * a.shape[1]))).ravel()
    uniq, inverse = np.unique(view, return_inverse=True)
    return len(uniq), inverse.ravel().astype(np.int64)


def start_context(model: TargetModel, minimize: bool = True) -> np.ndarray:
    """The full DP's start state: the context `<s>` as a (1, order - 1) row, cut to its
    useful suffix with `minimize` (the confusion-network DP and the word-lattice expansion,
    `methods.dag_full`, both start there)."""
    w = max(model.order - 1, 0)
    ctx = np.full((1, w), -1, dtype=np.int64)
    if w:
        ctx[0, -1] = model.bos
        if minimize:
            ctx = model.minimal_context(ctx)
    return ctx


def _sweep(
    lm: TargetModel,
    lattice: Lattice,
    *,
    semiring: type[Semiring],
    minimize: bool,
    keep: bool,
    max_states: int | None = None,
) -> _Sweep:
    """The forward dynamic program in `semiring`; with `MaxPlus` also the back pointers.
    Raises StatesBudgetExceeded as soon as the states built pass `max_states`."""
    w = max(lm.order - 1, 0)
    cut = minimize and w > 0
    ctx = start_context(lm, minimize)
    alpha = np.zeros(1)
    layers: list[_Layer] = []
    alphas: list[np.ndarray] = [alpha]
    back: list[np.ndarray] = []
    dp_states = 1
    for i, toks in enumerate(lattice.tokens):
        emis = np.asarray(lattice.log_emissions[i], dtype=np.float64)
        valid = np.flatnonzero(emis > -np.inf)
        ids = lm.ids(list(toks))[valid]
        m = len(ctx)
        prev = np.repeat(np.arange(m), len(valid))
        cand = np.tile(valid, m)
        word = np.tile(ids, m)
        with quiet():
            score = lm.log_prob(ctx[prev], word) + emis[cand]
        live = score > -np.inf
        prev, cand, word, score = prev[live], cand[live], word[live], score[live]
        if len(score) == 0:
            raise NoPathError(f"no path through position {i} has nonzero probability")
        nxt = np.concatenate([ctx[prev, 1:], word[:, None]], axis=1) if w else ctx[prev]
        if cut:
            nxt = lm.minimal_context(nxt)
        size, group = _group_rows(nxt)
        with quiet():
            total = alpha[prev] + score
        order = np.argsort(group, kind="stable")
        prev, cand, score, group, total = (a[order] for a in (prev, cand, score, group, total))  # type: ignore[assignment]  # mixed-dtype arrays permuted together
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        ctx = nxt[order][starts]
        alpha = semiring.segment_sum(total, starts)
        if semiring is MaxPlus:  # the first pair reaching each state's max (stable order)
            first = np.where(total == alpha[group], np.arange(len(total)), len(total))
            best = np.minimum.reduceat(first, starts)
            back.append(np.c_[prev[best], cand[best]])
        if keep:
            layers.append(_Layer(prev, cand, score, group, starts, size))
            alphas.append(alpha)
        dp_states += size
        if max_states is not None and dp_states > max_states:
            raise StatesBudgetExceeded(f"{dp_states} merged states > {max_states}")
    eos = np.full(len(ctx), lm.eos, dtype=np.int64)
    with quiet():
        final = lm.log_prob(ctx, eos)
        alpha = alpha + final
    return _Sweep(alpha, layers, alphas, back, dp_states, final)


# ----- public API --------------------------------------------------------------------------
# Each takes a maxarpa Model or any TargetModel and converts it once, here at the entry.
def full_decode(lm: ModelLike, lattice: Lattice, *, minimize: bool = True
                ) -> FullDecodeResult:
    """The best path of the full model (Viterbi), with its ln p including </s> and emissions.

    Ties are broken deterministically (the smallest state row, then the first pair).
    Raises NoPathError if every path has probability zero.
    """
    t0 = time.perf_counter()
    model = as_target_model(lm)
    sw = _sweep(model, lattice, semiring=MaxPlus, minimize=minimize, keep=False)
    best = int(np.argmax(sw.alpha))
    log_p = float(sw.alpha[best])
    if not math.isfinite(log_p):
        raise NoPathError("every path has probability zero")
    tokens: list[str] = []
    state = best
    for i in range(len(lattice) - 1, -1, -1):
        state, cand = (int(v) for v in sw.back[i][state])
        tokens.append(lattice.tokens[i][cand])
    tokens.reverse()
    return FullDecodeResult(
        tokens=tokens,
        log_p=log_p,
        states=full_state_count(model, lattice),
        seconds=time.perf_counter() - t0,
        dp_states=sw.dp_states,
    )


def full_kbest(lm: ModelLike, lattice: Lattice, k: int, *, minimize: bool = True
               ) -> KBestResult:
    """The k most probable distinct paths of p by the merged full DP, exact in float64.

    Huang & Chiang (2005)'s Algorithm 1 on the layered DAG of merged states (each node has
    in-edges from one layer only, so a "hyperedge" is a (state, candidate) pair): after the
    Viterbi sweep's layers are built, every state keeps its K best prefixes, the top K of the
    union over its in-pairs of (the K-list of the pair's state + the pair's weight), one numpy
    sort per layer over (pairs x K) entries; then the top K of the final K-lists plus
    ln p(</s> | state). A path is one DAG path (the merged states are a deterministic function
    of the candidates), so the K paths are distinct. Cost O(pairs K log(pairs K)) per layer.

    Ties are broken as `kbest` documents: the K-lists are ordered by score, then by candidate
    indices lexicographically (each kept prefix carries its rank in that order, so a tie
    between prefixes from different states is decided like one within a state); the result is
    ordered by ln p (the DP's float64 sum), then by candidate indices.
    Zero-probability paths are never returned, so fewer than K come back when fewer than K
    paths have p > 0. `certified` is True, `log_q = log_p`, `method = "full"`.

    Raises:
        OptionError: k < 1.
        NoPathError: every path has probability zero.
    """
    if k < 1:
        raise OptionError("k (the number of paths) must be >= 1")
    t0 = time.perf_counter()
    model = as_target_model(lm)
    sw = _sweep(model, lattice, semiring=MaxPlus, minimize=minimize, keep=True)
    vals = np.full((1, k), -np.inf)
    vals[0, 0] = 0.0
    lex = np.zeros((1, k), dtype=np.int64)  # each kept prefix's rank in lexicographic order
    backs: list[tuple[np.ndarray, np.ndarray]] = []  # per layer: (pair, rank) of [state, r]
    for layer in sw.layers:
        with quiet():
            tot = (vals[layer.prev] + layer.score[:, None]).ravel()
        pair = np.repeat(np.arange(len(layer.prev)), k)
        rank = np.tile(np.arange(k), len(layer.prev))
        live = tot > -np.inf
        tot, pair, rank = tot[live], pair[live], rank[live]
        grp = layer.group[pair]
        # (prefix, candidate) is a distinct path prefix: its lexicographic rank breaks ties
        key = np.empty(len(pair), dtype=np.int64)
        key[np.lexsort((layer.cand[pair], lex[layer.prev[pair], rank]))] = np.arange(len(pair))
        order = np.lexsort((key, -tot, grp))  # by state, best first, then lexicographic
        tot, pair, rank, grp, key = (a[order] for a in (tot, pair, rank, grp, key))
        pos = _rank_in_groups(grp)
        top = pos < k
        vals = np.full((layer.size, k), -np.inf)
        back_pair = np.full((layer.size, k), -1, dtype=np.int64)
        back_rank = np.full((layer.size, k), -1, dtype=np.int64)
        lex = np.zeros((layer.size, k), dtype=np.int64)
        vals[grp[top], pos[top]] = tot[top]
        lex[grp[top], pos[top]] = key[top]
        back_pair[grp[top], pos[top]] = pair[top]
        back_rank[grp[top], pos[top]] = rank[top]
        backs.append((back_pair, back_rank))
    with quiet():
        final = (vals + sw.final[:, None]).ravel()
    cells = np.flatnonzero(final > -np.inf)
    cells = cells[np.lexsort((lex.ravel()[cells], -final[cells]))][:k]
    if len(cells) == 0:
        raise NoPathError("every path has probability zero")
    rows = []
    for cell in cells.tolist():
        state, r = divmod(cell, k)
        idx = []
        for i in range(len(lattice) - 1, -1, -1):
            back_pair, back_rank = backs[i]
            p, r = int(back_pair[state, r]), int(back_rank[state, r])
            idx.append(int(sw.layers[i].cand[p]))
            state = int(sw.layers[i].prev[p])
        rows.append((float(final[cell]), tuple(reversed(idx))))
    rows.sort(key=lambda row: (-row[0], row[1]))
    paths = [ScoredPath([lattice.tokens[i][j] for i, j in enumerate(idx)], idx, lp, lp)
             for lp, idx in rows]
    return KBestResult(paths, 1, sw.dp_states, time.perf_counter() - t0, True, method="full")


def _rank_in_groups(grp: np.ndarray) -> np.ndarray:
    """Each entry's position within its run of equal values of the sorted `grp`."""
    if len(grp) == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, grp[1:] != grp[:-1]])
    lengths = np.diff(np.r_[starts, len(grp)])
    return np.arange(len(grp)) - np.repeat(starts, lengths)


def full_log_partition(lm: ModelLike, lattice: Lattice, *, minimize: bool = True
                       ) -> float:
    """ln Z = ln of the sum over all paths of p(x) (forward algorithm); -inf if no path."""
    try:
        sw = _sweep(as_target_model(lm), lattice, semiring=LogSumExp, minimize=minimize,
                    keep=False)
    except NoPathError:
        return -math.inf
    return logsumexp(sw.alpha)


def full_sample(
    lm: ModelLike, lattice: Lattice, n: int, rng: np.random.Generator, *,
    minimize: bool = True,
) -> list[list[str]]:
    """`n` independent exact samples from p(x)/Z: forward filtering, backward sampling.

    Why FFBS and not enumeration: it is exact for any lattice the forward pass can hold, and it
    draws all `n` samples together, one vectorised step per position.
    Raises NoPathError if every path has probability zero.
    """
    sw = _sweep(as_target_model(lm), lattice, semiring=LogSumExp, minimize=minimize, keep=True)
    if logsumexp(sw.alpha) == -math.inf:
        raise NoPathError("every path has probability zero")
    one = np.zeros(1, dtype=np.int64)
    state = draw_in_segments(sw.alpha, one, np.zeros(n, dtype=np.int64), rng.random(n))
    cands = np.empty((len(lattice), n), dtype=np.int64)
    for i in range(len(lattice) - 1, -1, -1):
        layer = sw.layers[i]
        # P(pair | state) is proportional to exp(alpha_prev[prev] + score) within the state.
        with quiet():
            logit = sw.alphas[i][layer.prev] + layer.score
        pick = draw_in_segments(logit, layer.starts, state, rng.random(n))
        cands[i] = layer.cand[pick]
        state = layer.prev[pick]
    return [[lattice.tokens[i][cands[i, k]] for i in range(len(lattice))] for k in range(n)]


def full_marginals(
    lm: ModelLike, lattice: Lattice, *, minimize: bool = True, max_states: int | None = None,
) -> tuple[list[np.ndarray], float]:
    """Exact posterior marginals and ln Z: forward-backward in the log semiring over the
    merged states of `_sweep` (the forward pass is the one `full_log_partition` runs).

    Returns, per position, an array of p(x_i = candidate k) over that position's candidates
    (0 for a candidate with emission -inf or on no path; each array sums to 1), and ln Z, all
    float64. The backward value of a state is ln of the mass from it to </s>; a pair's
    posterior is exp(alpha[prev] + score + beta[next] - ln Z), summed per candidate.
    Raises NoPathError if every path has probability zero, StatesBudgetExceeded when the
    merged states pass `max_states`.
    """
    sw = _sweep(as_target_model(lm), lattice, semiring=LogSumExp, minimize=minimize,
                keep=True, max_states=max_states)
    log_z = logsumexp(sw.alpha)
    if log_z == -math.inf:
        raise NoPathError("every path has probability zero")
    beta = sw.final
    out: list[np.ndarray] = [np.empty(0)] * len(lattice)
    for i in range(len(lattice) - 1, -1, -1):
        layer = sw.layers[i]
        with quiet():
            through = layer.score + beta[layer.group]  # ln mass from the pair's source to </s>
            post = np.exp(sw.alphas[i][layer.prev] + through - log_z)
        out[i] = np.bincount(layer.cand, weights=post, minlength=len(lattice.tokens[i]))
        beta = LogSumExp.scatter_sum(through, layer.prev, len(sw.alphas[i]))
    return out, log_z


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
        return _sweep(model, lattice, semiring=LogSumExp, minimize=True, keep=False).dp_states
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
