"""Stochastic-approximation training of a trans-dimensional random-field LM (Wang, Ou and Tan,
ICML 2015 / TPAMI 2018), with model samples drawn exactly (ARS per length) or by their MCMC.

The model: p(l, x) = pi_l exp(score(x)) / Z_l, score(x) = ln p_base(x) + lambda . f(x) (natural
log; alpha = 1 fixed on the base n-gram), pi_l the training text's length distribution. The
log-likelihood gradient in lambda, per sentence, is f(x) - E_p[f], with
E_p[f] = sum_l pi_l E_{p(x|l)}[f(x)]. One iteration t:

- a minibatch of training sentences (drawn without replacement, reshuffled each epoch) gives
  the data mean of f;
- K model samples give the model mean as sum_l pi_l mean_l f, the mean over the samples at
  length l (lengths with no sample this iteration are left out and pi renormalised over the
  rest; the exact sampler draws at least `min_per_length` at every length, so it leaves none);
- lambda += gamma_t (data mean - model mean - l2 lambda), each component clipped to
  [-clip, clip] before the step; gamma_t = gamma0 / max(1, t / t0)^beta (constant for t0
  iterations, then decaying): the same schedule whichever sampler runs.

The two samplers:

- "ars" (or "full"): n_l ~ K pi_l exact samples at each length from `exact.draw_exact`; its
  ln Z_l is ARS's estimate from that iteration's run (the model's own normalisers);
- "mcmc": K persistent chains of `mcmc.TransDimensionalSampler`, `sweeps` sweeps per
  iteration, the chains' states the samples; zeta (the ln Z estimates the chains need) is
  updated as in the paper, zeta_l += gamma_zeta,t (fraction of samples at length l) / pi_l,
  then shifted so that zeta at the shortest length equals its exact ln Z (a sum over the V^l
  sentences of that length: V of them at length 1, as in the paper).

Training stops at `iterations` or when the wall clock passes `budget` seconds. Every
iteration appends a `Checkpoint` (seconds, iteration, samples so far, a copy of lambda and the
own ln Z estimates) to the result's log, so that evaluation happens afterwards and is not
charged to the training clock.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from arsdecode.errors import OptionError
from arsdecode.model.interface import ModelLike
from arsdecode.model.loglinear import LogLinearLM
from arsdecode.tasks.trf.exact import draw_exact, exact_log_partitions, stratified_counts
from arsdecode.tasks.trf.features import FeatureSet, build_model
from arsdecode.tasks.trf.score import sentence_log_scores

Sampler = Literal["ars", "full", "mcmc"]


@dataclass(frozen=True)
class TrainConfig:
    """Settings shared by both samplers (`module docstring`)."""

    iterations: int = 1000
    budget: float | None = None  # wall seconds
    minibatch: int = 100
    samples: int = 100  # K per iteration
    gamma0: float = 1.0
    t0: float = 10.0
    beta: float = 0.6
    clip: float = 1.0
    l2: float = 1e-3
    min_per_length: int = 2  # exact sampler
    sweeps: int = 1  # mcmc sweeps per iteration
    zeta_gamma0: float = 1.0
    zeta_beta: float = 0.6
    seed: int = 0
    ars_options: Mapping[str, object] = field(default_factory=dict)

    def step(self, t: int) -> float:
        return self.gamma0 / max(1.0, t / self.t0) ** self.beta


@dataclass(frozen=True)
class Checkpoint:
    """Iteration `iteration`, `seconds` of training wall time from the start: the weights it
    drew its samples with (before its update) and the ln Z estimates of those weights, so the
    pair is consistent (the update moves lambda on from there)."""

    seconds: float
    iteration: int
    samples: int
    weights: np.ndarray
    log_z: dict[int, float]  # the sampler's own ln Z_l estimates


@dataclass
class TrainResult:
    """The last checkpoint's weights and ln Z (a consistent pair), the totals, the log."""

    sampler: str
    weights: np.ndarray
    log_z: dict[int, float]
    iterations: int
    samples: int
    seconds: float
    log: list[Checkpoint]


def length_log_prior(sentences: Sequence[Sequence[str]], max_length: int,
                     smoothing: float = 0.5, min_length: int = 1) -> np.ndarray:
    """ln pi_l for l = 0 .. max_length: the lengths' relative frequencies in `sentences`,
    plus `smoothing` per length min_length .. max_length (so every one stays allowed); -inf
    below min_length."""
    counts = np.zeros(max_length + 1)
    for s in sentences:
        if min_length <= len(s) <= max_length:
            counts[len(s)] += 1
    counts[min_length:] += smoothing
    with np.errstate(divide="ignore"):
        out = np.log(counts / counts.sum())
    out[:min_length] = -math.inf
    return out


class Problem:
    """What one training run needs: the base model, the features, the training sentences and
    their feature counts, the length prior and the sampling vocabulary. Sentences outside
    min_length .. max_length are left out (the field has no mass there).

    Why a `min_length`: the MCMC sampler anchors zeta at the shortest length and updates it by
    frac_l / pi_l, so a nearly empty shortest length (one sentence of length 1 in thousands)
    makes every zeta jump with each rare visit there."""

    def __init__(self, base: ModelLike, features: FeatureSet,
                 sentences: Sequence[Sequence[str]], max_length: int,
                 min_length: int = 1) -> None:
        self.base = base
        self.features = features
        self.sentences = [list(s) for s in sentences if min_length <= len(s) <= max_length]
        if not self.sentences:
            raise OptionError(f"no training sentence of {min_length} .. {max_length} words")
        self.max_length = max_length
        self.min_length = min_length
        self.log_pi = length_log_prior(self.sentences, max_length, min_length=min_length)
        self.lengths = [int(n) for n in np.flatnonzero(np.isfinite(self.log_pi))]
        self.data_counts = features.counts(self.sentences)
        self.vocab = build_model(base, features, np.zeros(len(features))).vocabulary()

    def model(self, weights: np.ndarray) -> LogLinearLM:
        return build_model(self.base, self.features, weights)

    def model_mean(self, draws: Sequence[Sequence[str]]) -> np.ndarray:
        """sum_l pi_l mean_l f over `draws`, pi renormalised over the lengths present."""
        by_length: dict[int, list[int]] = {}
        for i, s in enumerate(draws):
            by_length.setdefault(len(s), []).append(i)
        counts = self.features.counts(draws)
        lengths = sorted(by_length)
        pi = np.exp(self.log_pi[lengths])
        pi = pi / pi.sum()
        out = np.zeros(len(self.features))
        for p, length in zip(pi, lengths, strict=True):
            out += p * counts.mean(by_length[length])
        return out


def gradient(data_mean: np.ndarray, model_mean: np.ndarray, weights: np.ndarray,
             l2: float) -> np.ndarray:
    """The regularised log-likelihood gradient per sentence."""
    return data_mean - model_mean - l2 * weights


def train(problem: Problem, sampler: Sampler, config: TrainConfig, *,
          weights: np.ndarray | None = None,
          on_iteration: Callable[[Checkpoint], None] | None = None) -> TrainResult:
    """Train lambda by stochastic approximation with `sampler`'s model samples (module
    docstring); `weights` the start (zeros by default). `on_iteration` sees each checkpoint
    (its time is not charged to the training clock)."""
    if sampler not in ("ars", "full", "mcmc"):
        raise OptionError(f"unknown sampler {sampler!r} (ars, full or mcmc)")
    rng = np.random.default_rng(config.seed)
    lam = np.zeros(len(problem.features)) if weights is None else np.array(weights, float)
    n_data = len(problem.sentences)
    order = rng.permutation(n_data)
    cursor = 0
    lengths = np.flatnonzero(np.isfinite(problem.log_pi))
    log_z: dict[int, float] = {}
    chains = None
    zeta = np.zeros(len(problem.log_pi))
    counts = stratified_counts(problem.log_pi, config.samples, config.min_per_length)
    log: list[Checkpoint] = []
    clock = 0.0
    total_samples = 0
    t = 0
    while t < config.iterations and (config.budget is None or clock < config.budget):
        started = time.perf_counter()
        t += 1
        if cursor + config.minibatch > n_data:
            order, cursor = rng.permutation(n_data), 0
        batch = order[cursor:cursor + config.minibatch]
        cursor += config.minibatch
        data_mean = problem.data_counts.mean(batch)
        model = problem.model(lam)
        if sampler == "mcmc":
            if chains is None:
                from arsdecode.tasks.trf.mcmc import TransDimensionalSampler

                chains = TransDimensionalSampler(model, problem.log_pi, config.samples, rng)
                zeta = _anchor(np.zeros(len(problem.log_pi)), model, problem, lengths)
            else:
                chains.set_model(model)
            for _ in range(config.sweeps):
                states = chains.sweep(zeta)
            draws = [[model.word(int(i)) for i in s] for s in states]
            frac = np.bincount([len(s) for s in draws], minlength=len(zeta)) / len(draws)
            step = config.zeta_gamma0 / t ** config.zeta_beta
            with np.errstate(divide="ignore", invalid="ignore"):
                zeta[lengths] += step * frac[lengths] / np.exp(problem.log_pi[lengths])
            zeta = _anchor(zeta, model, problem, lengths)
            log_z = {int(length): float(zeta[length]) for length in lengths}
        else:
            result = draw_exact(model, problem.vocab, counts, rng, method=sampler,
                                **dict(config.ars_options))
            draws = [s for d in result.values() for s in d.samples]
            log_z = {length: d.log_Z for length, d in result.items()}
        total_samples += len(draws)
        used = lam.copy()
        grad = gradient(data_mean, problem.model_mean(draws), lam, config.l2)
        lam = lam + config.step(t) * np.clip(grad, -config.clip, config.clip)
        clock += time.perf_counter() - started
        point = Checkpoint(clock, t, total_samples, used, dict(log_z))
        log.append(point)
        if on_iteration is not None:
            on_iteration(point)
    if not log:
        raise OptionError("no training iteration ran (iterations or budget is 0)")
    last = log[-1]
    return TrainResult(sampler, last.weights, last.log_z, t, total_samples, clock, log)


_ENUMERATE = 20_000
"""Largest number of sentences the zeta anchor scores one by one (else the forward DP)."""


def _anchor(zeta: np.ndarray, model: LogLinearLM, problem: Problem,
            lengths: np.ndarray) -> np.ndarray:
    """zeta shifted so that its shortest allowed length holds the exact ln Z there."""
    first = int(lengths[0])
    if len(problem.vocab) ** first <= _ENUMERATE:  # every sentence of that length, scored
        ids = [int(i) for i in model.ids(problem.vocab)]
        sentences = [list(p) for p in itertools.product(ids, repeat=first)]
        exact = float(np.logaddexp.reduce(sentence_log_scores(model, sentences)))
    else:
        exact = exact_log_partitions(model, problem.vocab, [first])[first]
    out = zeta.copy()
    out[lengths] += exact - zeta[first]
    return out


def heldout_log_likelihood(model: LogLinearLM, sentences: Sequence[Sequence[str]],
                           log_pi: np.ndarray, log_z: Mapping[int, float]) -> dict[str, float]:
    """Held-out ln p(l, x) = ln pi_l + score(x) - ln Z_l summed over `sentences` (words and
    `</s>` count as tokens): total, per token, and the perplexity exp(-per token). Sentences
    of a length without a prior or a Z are an error (the caller filters them)."""
    ids = [[int(i) for i in model.ids(list(s))] for s in sentences]
    scores = sentence_log_scores(model, ids)
    total = 0.0
    tokens = 0
    for s, score in zip(sentences, scores, strict=True):
        total += float(log_pi[len(s)]) + float(score) - float(log_z[len(s)])
        tokens += len(s) + 1
    per = total / tokens
    return {"log_likelihood": total, "tokens": tokens, "ln_per_token": per,
            "perplexity": math.exp(-per)}

