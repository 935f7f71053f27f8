"""Adaptive importance sampling from a tree automaton (Teichmann, Wansing & Koller, Algorithm 1).

Why it is here: it is the baseline the exact tree methods are measured against (issue 31). It
estimates Z = sum_t g(t) and E_G[f] = sum_t g(t) f(t) / Z for a target g over the trees of a
cycle-free automaton A, by importance sampling from a proposal A_theta with the same rules and
adapted parameters theta. Its estimates carry no certificate: Z's round estimates are
unbiased, E_G[f]'s are self-normalised (consistent, biased for finite samples), and nothing
bounds the error.

Target: g(t) = exp(sum of t's rule weights (ln) + ln p_LM(<s> yield(t) </s>)) for any
`TargetModel`, or without a model g(t) = A(t) (the paper's evaluation: A's weights are a
normalised pRTA G and the estimate of E_G[1] = Z = 1 shows the proposal's mismatch).

Algorithm 1, per round n = 1..m:
  (a) draw ps derivations t_i from P_theta(t) = prod over rules of softmax_lhs(theta) (eq. 1-2);
  (b) gradient of o(theta) (eq. 11-13): for rule k with left-hand side q,
        grad_k = -(1/ps) sum_i w_i (c_k(t_i) - c_q(t_i) P_theta(k | q)) + theta_k / lambda,
      w_i = g(t_i) / P_theta(t_i), c_k the count of rule k in t_i and c_q the count of rules
      with left-hand side q (eq. 13's sum over r_i in R(d_t) of P(r_k | lhs(r_i)));
  (c) AdaGrad learning rates alpha_k = alpha' / sqrt(sum of grad_k^2 so far) (Duchi et al.,
      the paper's choice, alpha' = 0.5 and lambda = 100 as in its section 5.1);
  (d) theta -= alpha * grad.
Each round's sample gives an estimate (Z_n = mean w_i; E_n[f] = sum w_i f_i / sum w_i), and
the result is their weighted average (the paper's "more efficient use" of the samples), with
weights n (later rounds, better proposals, count more; fixed weights keep the average of Z_n
unbiased).

Scale of g in the gradient: eq. 12 uses g unnormalised, so the regulariser's pull is relative to
Z. For a normalised target (Figure 1) that is the paper's objective. For an LM target Z is
~e^-60, which would leave only the regulariser; the gradient then uses g / Z_hat (the running
weighted estimate), i.e. G in place of g in eq. 10, the KL objective the paper starts from.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from arsdecode.errors import OptionError
from arsdecode.model import ModelLike, as_target_model

from .rule_table import RuleTable
from .tree_batch import TreeBatch, YieldScorer, log_rule_probs, sample_batch

TreeFunction = Callable[[TreeBatch], np.ndarray]
"""f of the paper: per derivation of a batch, a float ((n,) array)."""


@dataclass(frozen=True)
class AisRound:
    """One round's estimates, from its own ps trees only (what Figure 1 plots)."""

    log_Z: float  # ln of mean_i g(t_i) / P(t_i); exp is unbiased for Z
    mean_f: float  # self-normalised estimate of E_G[f] (nan without f)
    ess: float  # effective sample size (sum w)^2 / sum w^2


@dataclass(frozen=True)
class AisResult:
    rounds: tuple[AisRound, ...]
    log_Z: float  # ln of the weighted average of the rounds' Z estimates
    mean_f: float  # weighted (by n * sum of the round's w) self-normalised E_G[f]
    theta: np.ndarray  # the adapted parameters after the last round
    trees: int  # derivations drawn
    seconds: float  # CPU time (process time)


def adaptive_importance_sampling(
    table: RuleTable,
    rng: np.random.Generator,
    *,
    rounds: int = 100,
    samples: int = 500,
    lm: ModelLike | None = None,
    f: TreeFunction | None = None,
    alpha: float = 0.5,
    lam: float = 100.0,
    normalised: bool = False,
    cpu_seconds: float | None = None,
) -> AisResult:
    """Algorithm 1 from theta = 0; `normalised=True` declares Z = 1 (the target is a pRTA).

    `cpu_seconds` stops after the first round that ends past that much process time (the
    equal-CPU comparisons); `rounds` is then a maximum."""
    if rounds < 1 or samples < 1 or alpha <= 0 or lam <= 0:
        raise OptionError("need rounds >= 1, samples >= 1, alpha > 0 and lambda > 0")
    started = time.process_time()
    scorer = YieldScorer(as_target_model(lm)) if lm is not None else None
    theta = np.zeros(table.n_rules)
    theta[~np.isfinite(table.weight)] = -math.inf  # a rule of weight zero is never proposed
    finite = np.isfinite(theta)
    acc = np.zeros(table.n_rules)
    out: list[AisRound] = []
    z_num = 0.0  # sum over rounds of n * Z_n / exp(shift)
    f_num = f_den = 0.0
    shift: float | None = None  # ln scale of the accumulated sums
    for n in range(1, rounds + 1):
        log_pi = log_rule_probs(table, theta)
        batch = sample_batch(table, log_pi, samples, rng)
        log_g = batch.rule_sum(np.where(np.isfinite(table.weight), table.weight, -np.inf))
        if scorer is not None:
            log_g = log_g + scorer(batch.yields(table))
        log_w = log_g - batch.rule_sum(log_pi)
        top = float(np.max(log_w))
        if top == -math.inf:
            out.append(AisRound(-math.inf, math.nan, 0.0))
            continue
        w = np.exp(log_w - top)
        log_zn = top + math.log(float(w.sum()) / samples)
        values = f(batch) if f is not None else None
        mean_f = float(np.dot(w, values) / w.sum()) if values is not None else math.nan
        out.append(AisRound(log_zn, mean_f, float(w.sum() ** 2 / np.dot(w, w))))
        if shift is None:
            shift = log_zn
        z_num += n * math.exp(log_zn - shift)
        if values is not None:
            f_num += n * math.exp(log_zn - shift) * mean_f
            f_den += n * math.exp(log_zn - shift)
        if normalised:
            ref = 0.0
        else:
            ref = shift + math.log(z_num / (n * (n + 1) / 2))
        scaled = np.exp(log_w - ref)
        grad = _gradient(table, batch, scaled, log_pi) / samples
        grad[finite] += theta[finite] / lam
        grad[~finite] = 0.0
        acc += grad * grad
        step = np.divide(alpha, np.sqrt(acc), out=np.zeros_like(acc), where=acc > 0)
        theta = theta - step * grad
        if cpu_seconds is not None and time.process_time() - started >= cpu_seconds:
            break
    done = len(out)
    log_z = -math.inf if shift is None else shift + math.log(z_num / (done * (done + 1) / 2))
    return AisResult(tuple(out), log_z, f_num / f_den if f_den > 0 else math.nan, theta,
                     done * samples, time.process_time() - started)


def _gradient(table: RuleTable, batch: TreeBatch, w: np.ndarray,
              log_pi: np.ndarray) -> np.ndarray:
    """sum_i -w_i (c_k(t_i) - c_lhs(k)(t_i) P(k | lhs(k))) for every rule k (eq. 12-13)."""
    node_w = w[batch.tree]
    ck = np.bincount(batch.rule, weights=node_w, minlength=table.n_rules)
    cq = np.bincount(table.lhs[batch.rule], weights=node_w, minlength=table.n_states)
    return -(ck - cq[table.lhs] * np.exp(log_pi))


def rule_count(mask: np.ndarray) -> TreeFunction:
    """f(t) = the number of t's nodes whose rule is marked in `mask` (R,) (a rule count)."""
    mask = np.asarray(mask, dtype=bool)
    return lambda batch: batch.count(mask)


def exact_samples(table: RuleTable, rng: np.random.Generator, n: int) -> TreeBatch:
    """n exact draws from the pRTA G(t) = A(t) / Z_A itself: each rule drawn with its
    inside-normalised probability w_r * prod inside(children) / inside(lhs). The cost of exact
    samples beside Figure 1 (G has no LM factor there, so this is exact sampling of G)."""
    inside = table.automaton.inside()
    kids = np.where(table.children >= 0, inside[np.maximum(table.children, 0)], 0.0).sum(axis=1)
    with np.errstate(invalid="ignore"):
        log_p = table.weight + kids - inside[table.lhs]
    return sample_batch(table, np.where(np.isnan(log_p), -np.inf, log_p), n, rng)
