"""Calibrated boundary posteriors: the exact posteriors of a flattened segmentation model.

Why a scale: the boundary posteriors are exact under the model, p(cut at b) = sum over the
segmentations that cut at b of exp(score) / Z, but the model (an n-gram LM with hand-priced
unknown words and cue bonuses) is itself too sure of itself: among offsets given p = 0.8 fewer
than 80 % were cuts (docs/results-segment.md). As lattice-tool's `-posterior-scale S` does for
ASR lattices (it divides the scores by S: alpha = 1/S), the posteriors are taken under
p_alpha(path) proportional to exp(alpha * score(path)), every ln weight of the lattice and
every LM ln probability times `alpha` (alpha < 1 flattens, alpha > 1 sharpens). The best
path is the same for every alpha > 0; only the confidences change, and they stay exact under
p_alpha (forward-backward over the lattice's merged expansion with a `WeightedLM` of weight
alpha).

`DEFAULT_POSTERIOR_SCALE` was fitted by `fit_posterior_scale` on the development sets (log-loss
of the offsets' posteriors against the gold cuts, every offset that is not a break;
experiments/segment_english.py) and is what `segment(..., posteriors=True)` uses.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from arsdecode.lattice.word_lattice import WordLattice
from arsdecode.methods.dispatch_posteriors import scaled_lattice_posteriors
from arsdecode.model.interface import ModelLike

DEFAULT_POSTERIOR_SCALE = 0.5
"""alpha fitted on the development sets (module docstring): dev log-loss 0.0329 at 0.4,
0.0304 at 0.5, 0.0319 at 0.6; the whole grid, alpha = 1 included, is on the results page."""


def boundary_posteriors(lm: ModelLike, wl: WordLattice, n: int,
                        scale: float = 1.0) -> tuple[float, ...]:
    """p_scale(cut at b) for b in 1..n-1 of a segmentation lattice over n characters (node i
    is offset i): the posterior mass of the arcs that end at b, under the model with every ln
    weight times `scale`."""
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"the posterior scale must be a finite number > 0, not {scale!r}")
    arc_post, _ = scaled_lattice_posteriors(lm, wl, 1.0 / scale)  # lattice-tool's S = 1/alpha
    at = np.bincount(wl.dst, weights=np.asarray(arc_post, dtype=np.float64),
                     minlength=n + 1)
    return tuple(float(min(1.0, max(0.0, p))) for p in at[1:n])


def log_loss(probs: np.ndarray, truth: np.ndarray, floor: float = 1e-12) -> float:
    """Mean negative ln likelihood of the 0/1 outcomes `truth` under the probabilities."""
    p = np.clip(probs, floor, 1 - floor)
    return float(-np.mean(np.where(truth, np.log(p), np.log1p(-p))))


def fit_posterior_scale(posteriors_at: Callable[[float], tuple[np.ndarray, np.ndarray]],
                        grid: Sequence[float] = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
                                                 1.2)) -> tuple[float, list[dict]]:
    """(the scale of least log-loss, one row per scale tried: scale, log_loss, brier).
    `posteriors_at(scale)` gives (posteriors, is a gold cut) over the development offsets."""
    rows = []
    for scale in grid:
        probs, truth = posteriors_at(scale)
        rows.append({"scale": scale, "log_loss": log_loss(probs, truth),
                     "brier": float(np.mean((probs - truth) ** 2))})
    best = min(rows, key=lambda r: r["log_loss"])
    return float(best["scale"]), rows


def expected_calibration_error(probs: np.ndarray, truth: np.ndarray, bins: int = 10) -> float:
    """ECE: the count-weighted mean over equal-width probability bins of |mean p - observed
    rate|."""
    which = np.clip((probs * bins).astype(np.int64), 0, bins - 1)
    total = 0.0
    for b in range(bins):
        m = which == b
        if m.any():
            total += m.sum() * abs(float(probs[m].mean()) - float(truth[m].mean()))
    return total / len(probs) if len(probs) else 0.0
