"""Teichmann, Wansing & Koller's Figure 1, reproduced: adaptive importance sampling's estimate
of E_G[1] per round on CKY-chart automata with Dirichlet(gamma) rule probabilities.

Why a module of its own: `experiments.trees_ais` runs it beside the n-gram comparison
(`experiments.trees_sms`), and both write one page. The paper's protocol (its section 5): one
automaton per (l, gamma), theta = 0 at the start, AdaGrad alpha' = 0.5, lambda = 100, k trees
per round, 100 rounds, 100 repetitions with different seeds; each box is one round's estimate
over the repetitions, computed from that round's sample alone; whiskers at the 9th and 91st
percentiles. The exact answer is 1 (G is a normalised pRTA; the inside algorithm gives ln Z),
and exact samples of the same G cost one inside pass and then a top-down draw.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from arsdecode.trees.charts import cky_chart
from arsdecode.trees.importance import adaptive_importance_sampling, exact_samples
from arsdecode.trees.rule_table import table_of


@dataclass(frozen=True)
class Figure1Config:
    lengths: tuple[int, ...] = (20, 30)
    gammas: tuple[float, ...] = (0.5, 0.1)
    samples: tuple[int, ...] = (500, 2000)
    rounds: int = 100
    repetitions: int = 100
    seed: int = 2017


QUICK = Figure1Config(lengths=(10, 15), samples=(100, 400), rounds=30, repetitions=10)


@dataclass(frozen=True)
class Panel:
    length: int
    gamma: float
    samples: int
    estimates: np.ndarray  # (repetitions, rounds): round n's estimate of E_G[1]
    exact_log_z: float  # the inside algorithm's ln Z (E_G[1] = exp of it)
    ais_seconds: float  # CPU seconds of all repetitions
    exact_seconds_per_tree: float  # CPU seconds per exact sample (inside pass included)
    ais_seconds_per_tree: float  # CPU seconds per AIS tree (sampling, weights, gradient)
    final_estimates: np.ndarray  # (repetitions,) the weighted average over rounds


def run_panel(length: int, gamma: float, samples: int, cfg: Figure1Config) -> Panel:
    automaton = cky_chart(length, gamma, np.random.default_rng((cfg.seed, length,
                                                                int(gamma * 1000))))
    table = table_of(automaton)
    started = time.process_time()
    est = np.empty((cfg.repetitions, cfg.rounds))
    final = np.empty(cfg.repetitions)
    for rep in range(cfg.repetitions):
        res = adaptive_importance_sampling(
            table, np.random.default_rng((cfg.seed, length, samples, rep)), rounds=cfg.rounds,
            samples=samples, normalised=True)
        est[rep] = [math.exp(r.log_Z) for r in res.rounds]
        final[rep] = math.exp(res.log_Z)
    ais = time.process_time() - started
    t0 = time.process_time()
    n_exact = samples * 10
    exact_table = table_of(automaton)  # the inside pass is part of the exact cost
    exact_samples(exact_table, np.random.default_rng(cfg.seed), n_exact)
    exact_per_tree = (time.process_time() - t0) / n_exact
    return Panel(length, gamma, samples, est, automaton.log_partition(), ais, exact_per_tree,
                 ais / (cfg.repetitions * cfg.rounds * samples), final)


def run(cfg: Figure1Config, say=print) -> list[Panel]:
    panels = []
    for samples in cfg.samples:
        for length in cfg.lengths:
            for gamma in cfg.gammas:
                p = run_panel(length, gamma, samples, cfg)
                say(f"figure 1: l={length} gamma={gamma} k={samples}: {p.ais_seconds:.1f}s, "
                    f"median last round {np.median(p.estimates[:, -1]):.3f}")
                panels.append(p)
    return panels


def plot(panels: list[Panel], cfg: Figure1Config, path: Path) -> None:
    """The paper's layout: one row per k, one column per (l, gamma); box plots per round."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = [(length, gamma) for length in cfg.lengths for gamma in cfg.gammas]
    fig, axes = plt.subplots(len(cfg.samples), len(cols), figsize=(4.2 * len(cols),
                                                                  3.2 * len(cfg.samples)),
                             squeeze=False, sharey=True)
    step = max(1, cfg.rounds // 25)
    for p in panels:
        ax = axes[cfg.samples.index(p.samples)][cols.index((p.length, p.gamma))]
        shown = list(range(0, cfg.rounds, step))
        ax.boxplot([p.estimates[:, r] for r in shown], positions=[r + 1 for r in shown],
                   whis=(9, 91), widths=step * 0.6, showfliers=False, manage_ticks=False)
        ax.axhline(math.exp(p.exact_log_z), color="tab:red", lw=1, ls="--")
        ax.set_title(f"l={p.length}, γ={p.gamma}, k={p.samples}", fontsize=9)
        ax.set_xlim(0, cfg.rounds + 1)
        ax.set_ylim(0, 2.0)
        ax.set_xlabel("round")
    for row in axes:
        row[0].set_ylabel("estimate of E_G[1]")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown(panels: list[Panel], cfg: Figure1Config, image: str) -> list[str]:
    shown = sorted({0, min(3, cfg.rounds - 1), min(9, cfg.rounds - 1), cfg.rounds // 2 - 1,
                    cfg.rounds - 1})
    lines = [
        f"![Figure 1 reproduction]({image})", "",
        f"Each box: one round's estimate of E_G[1] over {cfg.repetitions} repetitions "
        "(whiskers 9th-91st percentile, outliers hidden; every "
        f"{max(1, cfg.rounds // 25)}th round drawn); the dashed line is the exact value, "
        "exp(inside ln Z).", "",
        "| l | γ | k | exact E_G[1] (inside) | " +
        " | ".join(f"median round {r + 1}" for r in shown) +
        " | weighted average: median [9%, 91%] | AIS s/tree | exact-sample s/tree |",
        "|---|---|---|---|" + "---|" * len(shown) + "---|---|---|",
    ]
    for p in panels:
        meds = " | ".join(f"{np.median(p.estimates[:, r]):.3f}" for r in shown)
        lo, mid, hi = np.percentile(p.final_estimates, [9, 50, 91])
        lines.append(f"| {p.length} | {p.gamma} | {p.samples} | {math.exp(p.exact_log_z):.12f} "
                     f"| {meds} | {mid:.3f} [{lo:.3f}, {hi:.3f}] | "
                     f"{p.ais_seconds_per_tree * 1e6:.1f} µs | "
                     f"{p.exact_seconds_per_tree * 1e6:.1f} µs |")
    return lines
