"""Randomized inside DP over the intersection of a tree automaton with an n-gram target.

Why: the second baseline of issue 31, the tree version of `methods.approx`'s randomized forward
(Fu et al., "Scaling Structured Inference with Randomization", Randomized Inside, their eq. 8
and 18): per automaton state, keep the `top` intersection items of largest inside value and
replace the rest by `sampled` draws, with replacement, in proportion to their value (the
oracle proposal within the cell), each carrying rest / sampled. Its ln Z has no interval.
With `lookahead` (the default) the ranking and the proposal multiply each item's value by a
lower-order estimate of the LM factors its first words still owe (their contexts lie outside
the item): without it, items whose first words are unlikely look as good as any, and the
estimate's variance is large (any proposal keeps it unbiased: the weights divide by it).

Items (Bar-Hillel's intersection, without state merging). With m = order - 1, an item of state
q is (P, S): the first and the last min(len, m) words of a yield of q; a yield shorter than m
is `short` and P = S = the whole yield. An item's value is the sum, over q's derivations with
that boundary, of exp(rule weights + ln p of every yield word at index >= m given the m words
before it); those words' contexts lie inside the yield, every other factor waits for its left
context. Joining a (Pa, Sa) to the right of b = (Pb, Sb) scores b's word Pb[p] once
len(Sa) + p >= m (its m-word history Sa + Pb[:p] is then complete); the start state's items are
closed with <s> (the first words' contexts are the whole history, which fixes them) and </s>.

Unbiasedness: each cell's reduction is unbiased for the cell's exact item vector given its
children's, the cell's value is linear in each child, and two children of one rule have
independent estimates when their subtrees share no state (in a CKY chart, disjoint spans). By
induction over the bottom-up order, E[Z_hat] = Z (not E[ln Z_hat] = ln Z: Jensen makes the
mean of ln Z_hat low). An automaton where one rule's children share descendants (an ambiguous
forest) loses the independence, and then unbiasedness holds only with nothing sampled.

Each item also carries E[f | item] for a rule-additive f (a count of marked rules, as the
bracket count of `charts.bracket_mask`); the reduction scales Z and Z * f alike, so
sum(Z * f)_hat / Z_hat estimates E_G[f] (a ratio: consistent, not unbiased).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from arsdecode.core.semiring import logsumexp
from arsdecode.errors import OptionError
from arsdecode.model import ModelLike, TargetModel, as_target_model

from .rule_table import NULL_LABEL, RuleTable

Key = tuple[tuple[int, ...], tuple[int, ...]]


@dataclass(frozen=True)
class RandomizedResult:
    log_Z: float  # ln Z_hat; exp(log_Z) is unbiased for Z
    mean_f: float  # sum(Z f)_hat / Z_hat (nan without f)
    items: int  # intersection items built (before each cell's reduction)
    seconds: float  # CPU time


class _Lm:
    """Cached ln p(word | context) for tuples of ids (context: at most m ids, oldest first)."""

    def __init__(self, lm: TargetModel) -> None:
        self.lm = lm
        self.m = max(lm.order - 1, 0)
        self.cache: dict[tuple[tuple[int, ...], int], float] = {}

    def fill(self, queries: set[tuple[tuple[int, ...], int]]) -> None:
        new = [q for q in queries if q not in self.cache]
        if not new:
            return
        rows = np.array([[-1] * (self.m - len(c)) + list(c) for c, _ in new],
                        dtype=np.int64).reshape(len(new), self.m)
        lp = self.lm.log_prob(rows, np.array([w for _, w in new], dtype=np.int64))
        self.cache.update(zip(new, lp.tolist(), strict=True))


def _join(a: Key, b: Key, m: int) -> tuple[Key, list[tuple[tuple[int, ...], int]]]:
    """The item of a's yield followed by b's, and the (context, word) factors it completes."""
    (pa, sa), (pb, sb) = a, b
    done = [((sa + pb[:p])[-m:], pb[p]) for p in range(len(pb)) if len(sa) + p >= m]
    prefix = (pa + pb)[:m] if len(pa) < m else pa
    suffix = (sa + pb)[-m:] if len(pb) < m else sb
    return (prefix, suffix if m else ()), done


def randomized_inside(
    table: RuleTable, lm: ModelLike, rng: np.random.Generator, *, top: int, sampled: int,
    f_mask: np.ndarray | None = None, lookahead: bool = True,
) -> RandomizedResult:
    """Z_hat of g(t) = A(t) p_LM(<s> yield(t) </s>) (and E_G[f] for f = count of f_mask's
    rules); with top >= every cell's item count it is the exact intersection's Z."""
    if top < 0 or sampled < 0 or top + sampled < 1:
        raise OptionError("need top >= 0, sampled >= 0 and top + sampled >= 1")
    started = time.process_time()
    target = as_target_model(lm)
    lmc = _Lm(target)
    m = lmc.m
    fvals = (np.zeros(table.n_rules) if f_mask is None
             else np.asarray(f_mask, dtype=np.float64))
    cells: dict[int, tuple[list[Key], np.ndarray, np.ndarray]] = {}
    built = 0
    word_ids = {lab: int(target.ids([lab])[0]) for lab in set(table.labels)
                if lab != NULL_LABEL}
    for q in table.automaton.topo:
        acc: dict[Key, list[float]] = {}  # key -> [ln Z, Z-weighted f numerator in ln Z units]
        for row in range(int(table.rule_start[q]), int(table.rule_start[q + 1])):
            w = float(table.weight[row])
            if w == -math.inf:
                continue
            partial: list[tuple[Key, float, float]] = [(((), ()), w, float(fvals[row]))]
            if table.arity[row] == 0 and table.labels[row] != NULL_LABEL:
                wid = word_ids[table.labels[row]]
                key: Key = ((wid,), (wid,)) if m else ((), ())
                if not m:
                    lmc.fill({((), wid)})
                    w += lmc.cache[((), wid)]
                partial = [(key, w, float(fvals[row]))]
            for c in table.children[row, : table.arity[row]].tolist():
                partial = _extend(partial, cells[c], m, lmc)
            for item, z_item, f_item in partial:
                _add(acc, item, z_item, f_item)
        built += len(acc)
        keys = list(acc)
        lz = np.array([acc[k][0] for k in keys])
        fv = np.array([acc[k][1] for k in keys])
        if q != table.start and len(keys) > top + sampled:
            heur = _heuristic(keys, lmc) if lookahead else np.zeros(len(keys))
            idx, lz = _reduce(lz, heur, top, sampled, rng)
            keys, fv = [keys[i] for i in idx.tolist()], fv[idx]
        cells[q] = (keys, lz, fv)
    keys, lz, fv = cells[table.start]
    close = [_closing(k, target.bos, target.eos, m) for k in keys]
    lmc.fill({x for factors in close for x in factors})
    total = lz + np.array([sum(lmc.cache[x] for x in factors) for factors in close])
    log_z = logsumexp(total)
    mean_f = (float(np.dot(np.exp(total - log_z), fv)) if f_mask is not None and
              log_z > -math.inf else math.nan)
    return RandomizedResult(log_z, mean_f, built, time.process_time() - started)


def _extend(partial: list[tuple[Key, float, float]], cell: tuple[list[Key], np.ndarray,
            np.ndarray], m: int, lmc: _Lm) -> list[tuple[Key, float, float]]:
    """Every partial item joined with every item of the next child, LM factors added."""
    keys, lz, fv = cell
    joined = [(_join(a, b, m), za + float(zb), fa + float(fb))
              for a, za, fa in partial for b, zb, fb in zip(keys, lz, fv, strict=True)]
    lmc.fill({x for (_, done), _, _ in joined for x in done})
    return [(key, z + sum(lmc.cache[x] for x in done), f) for (key, done), z, f in joined]


def _add(acc: dict[Key, list[float]], key: Key, lz: float, fv: float) -> None:
    """Sum into acc[key]: ln Z by logaddexp, f as the Z-weighted mean."""
    if key not in acc:
        acc[key] = [lz, fv]
        return
    old_z, old_f = acc[key]
    new_z = float(np.logaddexp(old_z, lz))
    if new_z > -math.inf:
        acc[key] = [new_z, old_f * math.exp(old_z - new_z) + fv * math.exp(lz - new_z)]


def _closing(key: Key, bos: int, eos: int, m: int) -> list[tuple[tuple[int, ...], int]]:
    """The factors a start-state item still owes: its first words after <s>, and </s>."""
    prefix, suffix = key
    hist = (bos, *prefix)
    first = [(hist[max(0, p + 1 - m): p + 1] if m else (), prefix[p]) for p in range(len(prefix))]
    last = (bos, *prefix) if len(prefix) < m else suffix
    return [*first, (last[-m:] if m else (), eos)]


def _heuristic(keys: list[Key], lmc: _Lm) -> np.ndarray:
    """ln of the factors an item still owes for its first words, estimated with the context
    inside the item only (the lower-order estimate of LM-integrated parsing, Chiang 2007)."""
    m = lmc.m
    owed = [[(k[0][max(0, p - m):p], k[0][p]) for p in range(len(k[0]))] for k in keys]
    lmc.fill({x for xs in owed for x in xs})
    return np.array([sum(lmc.cache[x] for x in xs) for xs in owed])


def _reduce(lz: np.ndarray, heur: np.ndarray, top: int, sampled: int,
            rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(kept item indices, their new ln values): the `top` largest by lz + heur exactly, then
    `sampled` draws with replacement from the rest with probability pi_i proportional to
    exp(lz_i + heur_i), each picked item's value becoming v_i * count_i / (sampled * pi_i).
    E[new value of i] = v_i for every proposal (heur = 0 is approx's randomized forward)."""
    score = lz + heur
    order = np.argsort(-score, kind="stable")
    head, rest = order[:top], order[top:]
    if sampled == 0 or not len(rest):
        return head, lz[head]
    log_r = logsumexp(score[rest])
    if log_r == -math.inf:
        return head, lz[head]
    probs = np.exp(score[rest] - log_r)
    picked, counts = np.unique(rng.choice(len(rest), size=sampled, p=probs / probs.sum()),
                               return_counts=True)
    chosen = rest[picked]
    new = np.log(counts / sampled) + log_r - heur[chosen]
    return np.concatenate([head, chosen]), np.concatenate([lz[head], new])
