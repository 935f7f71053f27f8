"""The full model F: exact dynamic programs over n-gram context states, the baseline for ARS.

Why it exists: adaptive rejection sampling claims to find the same optimum and to sample the same
distribution as the full high-order HMM while building a small fraction of its states. This module
is that full HMM, written independently of the q-automaton so the two can check each other:
Viterbi (`full_decode`), the forward algorithm (`full_log_partition`) and forward filtering with
backward sampling (`full_sample`), all in natural log with the same target as `Target.log_p`:

    log p(x) = LN10 * [sum_i log10p(x_i | <s> x_1..x_{i-1}) + log10p(</s> | <s> x)] + sum_i e_i(x_i)

States. The full model's state after i tokens is the last n - 1 tokens of `<s> x_1 .. x_i` (fewer
near the start); `full_state_count` reports that count, the paper's measure of F. The dynamic
programs by default merge states the way KenLM does, which cannot change any score: a context is
cut to its longest *useful* suffix, where useful means a proper prefix of a listed n-gram, or a
listed n-gram with a nonzero backoff. Every listed n-gram that can match after such a context, and
every nonzero backoff the query adds, lies inside that suffix, so p(w | c) equals p(w | cut(c)) for
every w, and cutting commutes with appending a word. Without the cut, n = 5 with 100 candidates a
position would need 10^8 states per position; `minimize=False` keeps the literal state space for
tests on small lattices.

Each position is one batched `Model.log10p_batch` query over (state, candidate) pairs, and states
are merged with `np.unique` on context rows, so Python work is per position, not per pair.
"""

from __future__ import annotations

import math
import time
import weakref
from dataclasses import dataclass

import numpy as np

from arsdecode.errors import NoPathError
from arsdecode.lattice import Lattice
from maxarpa.constants import BOS, EOS, LN10
from maxarpa.model import Model


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


# ----- useful contexts ---------------------------------------------------------------------
class _UsefulContexts:
    """Forward-keyed sorted tables of the useful contexts of every length 1..n-1.

    Useful contexts are prefix-closed (a prefix of a useful context is a proper prefix of a listed
    n-gram), so each is found by walking from its oldest word: key = index(prefix) * V + word.
    """

    def __init__(self, lm: Model) -> None:
        trie = lm.trie
        n, v = trie.order, trie.vocab_size
        self.v = np.uint64(v)
        parts: list[list[np.ndarray]] = [[] for _ in range(n)]
        for k, node in enumerate(trie.nodes, start=1):
            listed = node.rows[node.listed].astype(np.int64)
            for j in range(1, k):
                parts[j].append(listed[:, :j])
            if k < n:
                parts[k].append(node.rows[node.listed & (node.log10bow != 0)].astype(np.int64))
        self.first = np.zeros(v, dtype=bool)
        self.keys: list[np.ndarray] = [np.empty(0, np.uint64), np.empty(0, np.uint64)]
        for j in range(1, n):
            rows = np.concatenate(parts[j]) if parts[j] else np.empty((0, j), np.int64)
            if j == 1:
                self.first[rows[:, 0]] = True
                continue
            parent = self.lookup(rows[:, :-1])
            assert (parent >= 0).all(), "useful contexts must be prefix-closed"
            keys = parent.astype(np.uint64) * self.v + rows[:, -1].astype(np.uint64)
            self.keys.append(np.unique(keys))

    def lookup(self, rows: np.ndarray) -> np.ndarray:
        """Index of each row (B, j) among useful contexts of length j, or -1."""
        b, j = rows.shape
        w0 = rows[:, 0]
        idx = np.where((w0 >= 0) & self.first[np.maximum(w0, 0)], w0, -1)
        for k in range(2, j + 1):
            ok = (idx >= 0) & (rows[:, k - 1] >= 0)
            table = self.keys[k]
            found = np.full(b, -1, dtype=np.int64)
            if ok.any() and len(table):
                key = idx[ok].astype(np.uint64) * self.v + rows[ok, k - 1].astype(np.uint64)
                pos = np.minimum(np.searchsorted(table, key), len(table) - 1)
                found[ok] = np.where(table[pos] == key, pos, -1)
            idx = found
        return idx

    def cut(self, ctx: np.ndarray) -> np.ndarray:
        """Replace each context row by its longest useful suffix (left-padded with -1)."""
        b, w = ctx.shape
        keep = np.zeros(b, dtype=np.int64)
        todo = np.arange(b)
        for j in range(w, 0, -1):
            if len(todo) == 0:
                break
            hit = self.lookup(ctx[todo, w - j :]) >= 0
            keep[todo[hit]] = j
            todo = todo[~hit]
        return np.where(np.arange(w)[None, :] >= (w - keep)[:, None], ctx, -1)


_USEFUL: weakref.WeakKeyDictionary[Model, _UsefulContexts] = weakref.WeakKeyDictionary()


def _useful(lm: Model) -> _UsefulContexts:
    if lm not in _USEFUL:
        _USEFUL[lm] = _UsefulContexts(lm)
    return _USEFUL[lm]


# ----- the layered state space ---------------------------------------------------------------
@dataclass(frozen=True)
class _Layer:
    """The (state, candidate) pairs of one position, sorted by the state they lead to."""

    prev: np.ndarray  # state index in the previous layer
    cand: np.ndarray  # candidate index at this position
    score: np.ndarray  # ln weight: LN10 * log10p + emission (finite)
    group: np.ndarray  # state index in this layer (ascending)
    starts: np.ndarray  # first pair of each state
    size: int


@dataclass(frozen=True)
class _Sweep:
    alpha: np.ndarray  # per final-layer state, max or logsumexp including </s>
    layers: list[_Layer]  # kept only when asked (sampling)
    alphas: list[np.ndarray]  # forward values before each position, kept with `layers`
    back: list[np.ndarray]  # per layer, the best pair of each state (Viterbi)
    dp_states: int


def _group_rows(rows: np.ndarray) -> tuple[int, np.ndarray]:
    """Number of distinct rows and each row's group id (ids ordered like the sorted rows)."""
    if rows.shape[1] == 0:
        return 1, np.zeros(len(rows), dtype=np.int64)
    a = np.ascontiguousarray(rows)
    view = a.view(np.dtype((np.void, a.dtype.itemsize * a.shape[1]))).ravel()
    uniq, inverse = np.unique(view, return_inverse=True)
    return len(uniq), inverse.ravel().astype(np.int64)


def _sweep(lm: Model, lattice: Lattice, *, mode: str, minimize: bool, keep: bool) -> _Sweep:
    """Run the dynamic program with `mode` "max" (Viterbi) or "sum" (forward, log space)."""
    w = max(lm.order - 1, 0)
    useful = _useful(lm) if minimize and w > 0 else None
    ctx = np.full((1, w), -1, dtype=np.int64)
    if w:
        ctx[0, -1] = lm.word_id(BOS)
        if useful is not None:
            ctx = useful.cut(ctx)
    alpha = np.zeros(1)
    layers: list[_Layer] = []
    alphas: list[np.ndarray] = [alpha]
    back: list[np.ndarray] = []
    dp_states = 1
    for i, toks in enumerate(lattice.tokens):
        emis = np.asarray(lattice.log_emissions[i], dtype=np.float64)
        valid = np.flatnonzero(np.isfinite(emis))
        ids = lm.ids(list(toks)).astype(np.int64)[valid]
        m = len(ctx)
        prev = np.repeat(np.arange(m), len(valid))
        cand = np.tile(valid, m)
        word = np.tile(ids, m)
        score = LN10 * lm.log10p_batch(ctx[prev], word) + emis[cand]
        live = np.isfinite(score)
        prev, cand, word, score = prev[live], cand[live], word[live], score[live]
        if len(score) == 0:
            raise NoPathError(f"no path through position {i} has nonzero probability")
        nxt = np.concatenate([ctx[prev, 1:], word[:, None]], axis=1) if w else ctx[prev]
        if useful is not None:
            nxt = useful.cut(nxt)
        size, group = _group_rows(nxt)
        total = alpha[prev] + score
        if mode == "max":
            order = np.lexsort((-total, group))
        else:
            order = np.argsort(group, kind="stable")
        prev, cand, score, group, total = (a[order] for a in (prev, cand, score, group, total))
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        ctx = nxt[order][starts]
        if mode == "max":
            alpha = total[starts]
            back.append(np.c_[prev[starts], cand[starts]])
        else:
            top = np.maximum.reduceat(total, starts)
            alpha = top + np.log(np.add.reduceat(np.exp(total - top[group]), starts))
        if keep:
            layers.append(_Layer(prev, cand, score, group, starts, size))
            alphas.append(alpha)
        dp_states += size
    eos = np.full(len(ctx), lm.word_id(EOS), dtype=np.int64)
    alpha = alpha + LN10 * lm.log10p_batch(ctx, eos)
    return _Sweep(alpha, layers, alphas, back, dp_states)


def _logsumexp(x: np.ndarray) -> float:
    top = float(np.max(x)) if len(x) else -math.inf
    if not math.isfinite(top):
        return top
    return top + math.log(float(np.sum(np.exp(x - top))))


# ----- public API --------------------------------------------------------------------------
def full_decode(lm: Model, lattice: Lattice, *, minimize: bool = True) -> FullDecodeResult:
    """The best path of the full model (Viterbi), with its ln p including </s> and emissions.

    Ties are broken deterministically (the smallest state row, then the first pair).
    Raises NoPathError if every path has probability zero.
    """
    t0 = time.perf_counter()
    sw = _sweep(lm, lattice, mode="max", minimize=minimize, keep=False)
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
        states=full_state_count(lm, lattice),
        seconds=time.perf_counter() - t0,
        dp_states=sw.dp_states,
    )


def full_log_partition(lm: Model, lattice: Lattice, *, minimize: bool = True) -> float:
    """ln Z = ln of the sum over all paths of p(x) (forward algorithm); -inf if no path."""
    try:
        sw = _sweep(lm, lattice, mode="sum", minimize=minimize, keep=False)
    except NoPathError:
        return -math.inf
    return _logsumexp(sw.alpha)


def full_sample(
    lm: Model, lattice: Lattice, n: int, rng: np.random.Generator, *, minimize: bool = True
) -> list[list[str]]:
    """`n` independent exact samples from p(x)/Z: forward filtering, backward sampling.

    Why FFBS and not enumeration: it is exact for any lattice the forward pass can hold, and it
    draws all `n` samples together, one vectorised step per position.
    Raises NoPathError if every path has probability zero.
    """
    sw = _sweep(lm, lattice, mode="sum", minimize=minimize, keep=True)
    log_z = _logsumexp(sw.alpha)
    if not math.isfinite(log_z):
        raise NoPathError("every path has probability zero")
    state = _draw(np.exp(sw.alpha - log_z), rng.random(n))
    cands = np.empty((len(lattice), n), dtype=np.int64)
    for i in range(len(lattice) - 1, -1, -1):
        layer = sw.layers[i]
        # P(pair | state) = exp(alpha_prev[prev] + score - alpha[state]), normalised per state.
        logit = sw.alphas[i][layer.prev] + layer.score
        top = np.maximum.reduceat(logit, layer.starts)[layer.group]
        p = np.exp(logit - top)
        cum = np.cumsum(p)
        seg_base = (cum - p)[layer.starts][layer.group]
        seg_total = np.add.reduceat(p, layer.starts)[layer.group]
        cdf = layer.group + (cum - seg_base) / seg_total  # state g occupies (g, g + 1]
        lo = layer.starts[state]
        hi = np.r_[layer.starts[1:], len(p)][state] - 1
        pick = np.clip(np.searchsorted(cdf, state + rng.random(n), side="left"), lo, hi)
        cands[i] = layer.cand[pick]
        state = layer.prev[pick]
    return [[lattice.tokens[i][cands[i, k]] for i in range(len(lattice))] for k in range(n)]


def _draw(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws from a normalised probability vector."""
    cdf = np.cumsum(probs)
    return np.minimum(np.searchsorted(cdf, u * cdf[-1], side="right"), len(probs) - 1)


def full_state_count(lm: Model, lattice: Lattice, *, minimized: bool = False) -> int:
    """States of the full model over the lattice: the start state plus, for every position i, the
    distinct last-(n-1)-token contexts of `<s> x_1..x_i` (the same layers as `QAutomaton`).

    Counted exactly without building them (the product of the distinct candidate ids with a finite
    emission over the last n - 1 positions), since the literal count is what ARS is compared
    with and can be astronomically large. `minimized=True` instead counts the merged states the
    dynamic program builds (and does build them).
    """
    if minimized:
        return _sweep(lm, lattice, mode="sum", minimize=True, keep=False).dp_states
    w = max(lm.order - 1, 0)
    distinct = _distinct_candidates(lm, lattice)
    total = 1
    for i in range(1, len(lattice) + 1):
        total += math.prod(distinct[max(0, i - w) : i]) if w else 1
    return total


def full_ngrams_by_order(lm: Model, lattice: Lattice) -> dict[int, int]:
    """(context, word) weights of the full model over the lattice, by n-gram order (Table 1).

    The word at position i (1-based; i = L + 1 is </s>) is predicted from the last n - 1
    tokens of `<s> x_1..x_{i-1}`: order min(n, i + 1), one weight per choice of the last
    min(n - 1, i - 1) words and of the word itself (<s> and </s> have one choice). Counted
    over the same distinct candidates as `full_state_count`, so the two describe one model.
    """
    n = lm.order
    choices = _distinct_candidates(lm, lattice) + [1]
    counts: dict[int, int] = {}
    for i in range(1, len(choices) + 1):
        real_ctx = min(n - 1, i - 1)
        order = min(n, i + 1)
        counts[order] = counts.get(order, 0) + math.prod(choices[i - 1 - real_ctx : i])
    return dict(sorted(counts.items()))


def _distinct_candidates(lm: Model, lattice: Lattice) -> list[int]:
    """Per position, the distinct LM ids among candidates with a finite emission."""
    return [
        len(set(lm.ids(list(t))[np.isfinite(np.asarray(e))].tolist()))
        for t, e in zip(lattice.tokens, lattice.log_emissions, strict=True)
    ]
