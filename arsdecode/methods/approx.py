"""The approximate tools users run today, on the same model and lattice as exact ARS.

Why they are in the box: to measure, on the same p, where they go wrong (search errors,
sampler bias) and what they cost, next to the exact engine (docs/results-approx.md). None of
them certifies anything. They ask the model only what the exact engine asks
(`arsdecode.model.TargetModel`: ids, `log_prob` in ln, order, <s> and </s>), so they run on any
target, not only a maxarpa backoff model. All work on LM states = the last n - 1 words of the
history, which fix every future factor exactly (recombination is lossless; no state merging,
so the state counts are those of the plain model); scores are `log_prob + emission`, natural
log, the same terms as arsdecode.core.target.

- `beam_search`: left-to-right search keeping the `width` best LM states per position, with
  recombination of hypotheses that share a state (SRILM lattice-tool's n-gram expansion with
  beam pruning, CTC prefix beam decoders). With width >= the number of distinct states it is
  exact Viterbi.
- `gibbs`: Gibbs sampling over positions: each sweep redraws every x_i from
  p(x_i | x_-i) (only the n factors that contain x_i change). An MCMC chain: correct in the
  limit, correlated and biased for any finite run.
- `randomized_log_partition`: randomized forward DP (Fu et al., "Scaling Structured Inference
  with Randomization"): per position keep the `top` states with the largest forward values
  exactly, and `sampled` more drawn with replacement from the rest in proportion to their
  forward values, each carrying rest_mass / sampled. Each layer's forward vector is unbiased
  given the previous one and the recursion is linear, so E[Z_hat] = Z (unbiased in Z, not in
  ln Z). With top >= the number of states it is exact.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from arsdecode.errors import OptionError
from arsdecode.lattice import Lattice
from arsdecode.model import ModelLike, TargetModel, as_target_model

if TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class BeamResult:
    tokens: list[str]
    indices: list[int]
    log_p: float  # exact ln p of the returned path (recombination keeps scores exact)
    seconds: float
    max_states: int  # distinct LM states seen at the widest position (before pruning)


class _States:
    """Expansion of LM states (rows of the last n - 1 word ids, left-padded with -1)."""

    def __init__(self, lm: TargetModel, lattice: Lattice) -> None:
        self.lm = lm
        self.lattice = lattice
        self.n1 = max(lm.order - 1, 0)
        self.bos = lm.bos
        self.eos = lm.eos
        self.cand = [np.asarray(lm.ids(list(t)), dtype=np.int64) for t in lattice.tokens]

    def start(self) -> np.ndarray:
        ctx = np.full((1, self.n1), -1, dtype=np.int64)
        if self.n1:
            ctx[0, -1] = self.bos
        return ctx

    def expand(self, ctx: np.ndarray, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Scores (H, w) of every candidate of position i (i = L: </s>) after each state,
        and the successor states (H * w, n1), row h * w + j."""
        words = self.cand[i] if i < len(self.lattice) else np.array([self.eos])
        h, w = len(ctx), len(words)
        rows = np.repeat(ctx, w, axis=0)
        lp = self.lm.log_prob(rows, np.tile(words, h)).reshape(h, w)
        emis = self.lattice.log_emissions[i] if i < len(self.lattice) else np.zeros(1)
        scores = lp + emis[None, :]
        if self.n1 == 0:
            return scores, rows
        nxt = np.concatenate([rows[:, 1:], np.tile(words, h)[:, None]], axis=1)
        return scores, nxt


def _groups(ctx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique states and, per row, its group."""
    if ctx.shape[1] == 0:
        return ctx[:1], np.zeros(len(ctx), dtype=np.int64)
    uniq, inverse = np.unique(ctx, axis=0, return_inverse=True)
    return uniq, inverse.reshape(-1)


def beam_search(lm: ModelLike, lattice: Lattice, width: int) -> BeamResult:
    """The best path found keeping `width` LM states per position (ties: lower row first)."""
    if width < 1:
        raise OptionError("width must be >= 1")
    start = time.perf_counter()
    st = _States(as_target_model(lm), lattice)
    ctx, score = st.start(), np.zeros(1)
    backs: list[tuple[np.ndarray, np.ndarray]] = []
    max_states = 1
    L = len(lattice)
    for i in range(L):
        add, nxt = st.expand(ctx, i)
        w = add.shape[1]
        flat = (score[:, None] + add).reshape(-1)
        uniq, inv = _groups(nxt)
        max_states = max(max_states, len(uniq))
        order = np.lexsort((-flat, inv))  # by state, best first (stable: lower row on ties)
        first = order[np.r_[True, inv[order][1:] != inv[order][:-1]]]
        keep = first[np.argsort(-flat[first], kind="stable")[:width]]
        keep = keep[np.isfinite(flat[keep])] if np.isfinite(flat[keep]).any() else keep[:1]
        backs.append((keep // w, keep % w))
        ctx, score = nxt[keep], flat[keep]
    add, _ = st.expand(ctx, L)
    final = score + add[:, 0]
    h = int(np.argmax(final))
    idx: list[int] = []
    for parent, col in reversed(backs):
        idx.append(int(col[h]))
        h = int(parent[h])
    idx.reverse()
    best = float(np.max(final))
    toks = [lattice.tokens[i][j] for i, j in enumerate(idx)]
    return BeamResult(toks, idx, best, time.perf_counter() - start, max_states)


def randomized_log_partition(
    lm: ModelLike, lattice: Lattice, top: int, sampled: int,
    rng: np.random.Generator,
) -> float:
    """An estimate of ln Z whose exp is unbiased for Z (see module docstring)."""
    if top < 0 or sampled < 0 or top + sampled < 1:
        raise OptionError("need top >= 0, sampled >= 0 and top + sampled >= 1")
    st = _States(as_target_model(lm), lattice)
    ctx, alpha = st.start(), np.zeros(1)
    for i in range(len(lattice)):
        add, nxt = st.expand(ctx, i)
        flat = (alpha[:, None] + add).reshape(-1)
        uniq, inv = _groups(nxt)
        alpha = _group_logsumexp(flat, inv, len(uniq))
        ctx, alpha = _reduce(uniq, alpha, top, sampled, rng)
    add, _ = st.expand(ctx, len(lattice))
    return _logsumexp(alpha + add[:, 0])


def _reduce(ctx: np.ndarray, alpha: np.ndarray, top: int, sampled: int, rng):
    """Keep the `top` largest exactly; replace the rest by `sampled` draws of weight R/sampled."""
    if len(alpha) <= top + sampled:
        return ctx, alpha
    order = np.argsort(-alpha, kind="stable")
    head, rest = order[:top], order[top:]
    if sampled == 0:
        return ctx[head], alpha[head]
    log_r = _logsumexp(alpha[rest])
    if log_r == -math.inf:
        return ctx[head], alpha[head]
    probs = np.exp(alpha[rest] - log_r)
    draws = rng.choice(len(rest), size=sampled, p=probs / probs.sum())
    picked, counts = np.unique(draws, return_counts=True)
    new = np.concatenate([alpha[head], log_r + np.log(counts / sampled)])
    return ctx[np.concatenate([head, rest[picked]])], new


def _group_logsumexp(x: np.ndarray, groups: np.ndarray, n: int) -> np.ndarray:
    top = np.full(n, -np.inf)
    np.maximum.at(top, groups, x)
    safe = np.where(np.isfinite(top), top, 0.0)
    total = np.zeros(n)
    np.add.at(total, groups, np.exp(x - safe[groups]))
    with np.errstate(divide="ignore"):
        return safe + np.log(total)


def _logsumexp(x: np.ndarray) -> float:
    top = float(np.max(x)) if len(x) else -math.inf
    if top == -math.inf:
        return -math.inf
    return top + math.log(float(np.exp(x - top).sum()))


@dataclass(frozen=True)
class GibbsResult:
    samples: list[list[int]]  # candidate indices, one path per sweep after burn-in
    seconds: float


def gibbs(
    lm: ModelLike,
    lattice: Lattice,
    sweeps: int,
    rng: np.random.Generator,
    *,
    burn_in: int = 0,
    init: list[int] | None = None,
) -> GibbsResult:
    """Systematic-scan Gibbs sampling; one recorded path per sweep after `burn_in` sweeps.

    Start: `init`, else the per-position best emission. A position whose every candidate has
    conditional probability 0 (possible only from a zero-probability start) is left as is.
    """
    start = time.perf_counter()
    st = _States(as_target_model(lm), lattice)
    L, n1 = len(lattice), st.n1
    x = list(init) if init is not None else [int(np.argmax(e)) for e in lattice.log_emissions]
    words = np.array([st.cand[i][j] for i, j in enumerate(x)], dtype=np.int64)
    out: list[list[int]] = []
    for sweep in range(burn_in + sweeps):
        for i in range(L):
            cand = st.cand[i]
            w = len(cand)
            hist = np.tile(np.r_[np.full(n1, -1), st.bos, words], (w, 1))  # padded history
            hist[:, n1 + 1 + i] = cand
            ks = range(i, min(L, i + n1) + 1)  # factors whose n-gram contains x_i
            ctx = np.concatenate([hist[:, k + 1 : k + 1 + n1] for k in ks], axis=0)
            tgt = np.concatenate([hist[:, n1 + 1 + k] if k < L else np.full(w, st.eos)
                                  for k in ks])
            lp = st.lm.log_prob(ctx, tgt).reshape(len(ks), w).sum(axis=0)
            logits = lp + lattice.log_emissions[i]
            top = logits.max()
            if top == -np.inf or not np.isfinite(top):
                continue
            prob = np.exp(logits - top)
            j = int(rng.choice(w, p=prob / prob.sum()))
            x[i] = j
            words[i] = cand[j]
        if sweep >= burn_in:
            out.append(list(x))
    return GibbsResult(out, time.perf_counter() - start)
