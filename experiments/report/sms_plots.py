"""The SMS results page's figures (Fig. 2, 3a/3b, 3c/3d), drawn from the results JSON alone.

Why separate from the runner: a figure can be redrawn (`--render-only`) without rerunning the
experiments, and the same JSON always gives the same PNG bytes (Agg backend, no software or
date metadata).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

FILES = {
    "fig2": "sms_fig2_decoding.png",
    "fig3ab": "sms_fig3ab_sampling_trace.png",
    "fig3cd": "sms_fig3cd_sampling_by_length.png",
}
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


def by_length(
    rows: list[dict], field: str, orders: list[int]
) -> dict[int, tuple[list, list, list]]:
    """Per order: lengths, mean of `field` and its standard error at each length."""
    out = {}
    for n in orders:
        groups: dict[int, list[float]] = {}
        for r in rows:
            if r["order"] == n:
                groups.setdefault(r["length"], []).append(r[field])
        lens = sorted(groups)
        vals = [np.asarray(groups[length], dtype=float) for length in lens]
        out[n] = (lens, [float(v.mean()) for v in vals],
                  [float(v.std() / math.sqrt(len(v))) for v in vals])
    return out


def running_mean(values: np.ndarray, window: int) -> np.ndarray:
    """Mean of the last `window` values at each index (fewer at the start)."""
    t = np.arange(1, len(values) + 1)
    c = np.r_[0.0, np.cumsum(values)]
    lo = np.maximum(0, t - window)
    return (c[t] - c[lo]) / (t - lo)


def write_plots(res: dict, img: Path) -> dict[str, str]:
    """Write the three figures into `img`; returns their file names by figure key."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cfg = res["config"]
    orders = cfg["options"]["orders"]
    colors = {n: COLORS[i % len(COLORS)] for i, n in enumerate(orders)}
    ticks = range(1, cfg["long_length"] + 1)
    img.mkdir(parents=True, exist_ok=True)

    def save(fig, key: str) -> None:
        fig.savefig(img / FILES[key], dpi=110, metadata={"Software": None})
        plt.close(fig)

    def per_length_figure(rows: list[dict], panels: tuple, title: str, key: str) -> None:
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, (field, label) in zip(axes, panels):
            for n, (x, y, e) in by_length(rows, field, orders).items():
                ax.errorbar(x, y, yerr=e, marker="o", ms=4, capsize=2, color=colors[n],
                            label=f"{n}-gram")
            ax.set_xlabel("sentence length (words)")
            ax.set_title(label)
            ax.set_xticks(list(ticks))
            ax.grid(alpha=0.3)
            ax.legend()
        fig.suptitle(title)
        fig.tight_layout()
        save(fig, key)

    per_length_figure(
        res["decoding"], (("iterations", "mean iterations"),
                          ("states", "mean states of the final q")),
        "Fig. 2 — exact decoding, full candidate lists (error bars: ±1 s.e.)", "fig2")

    f3 = res["fig3ab"]
    target = f"AR-{cfg['ar_window']} ≥ {100 * cfg['target_ar']:.0f}%"
    per_length_figure(
        res["fig3cd"], (("trials", f"mean trials to {target}"),
                        ("states", f"mean states of q at {target}")),
        f"Fig. 3c/3d — sampling, K = {cfg['top_k']}, B = 100 (error bars: ±1 s.e.)", "fig3cd")

    ratios = np.asarray(f3["ratios"], dtype=float)
    acc = np.asarray(f3["accepted"], dtype=float)
    t = np.arange(1, len(acc) + 1)
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    axes[0].semilogy(t, np.maximum(running_mean(ratios, 10), 1e-300), lw=0.8,
                     color="tab:purple")
    axes[0].set_ylabel("p/q, mean of last 10")
    axes[0].set_title("(a) ratio p(x)/q(x) of the trials (log scale)")
    axes[1].plot(t, np.cumsum(acc) / t, label="cumulative AR", color="tab:blue")
    axes[1].plot(t, running_mean(acc, cfg["ar_window"]), color="tab:red", lw=0.9,
                 label=f"AR over last {cfg['ar_window']} trials")
    axes[1].axhline(cfg["target_ar"], ls=":", color="gray")
    axes[1].set_ylabel("acceptance rate")
    axes[1].set_title("(b) acceptance rate")
    axes[1].legend(loc="upper left")
    axes[2].plot(t, np.cumsum(acc), color="tab:green", label="accepted samples")
    ax2 = axes[2].twinx()
    ax2.plot(t, f3["trace_states"], color="tab:gray", lw=0.9, label="states of q")
    ax2.set_ylabel("states of q", color="tab:gray")
    axes[2].set_ylabel("accepted samples", color="tab:green")
    axes[2].set_xlabel("trial")
    axes[2].set_title("(b') accepted samples and automaton size")
    for ax in axes:  # trial numbers are 1-based: the first trial of the final q is frozen_from+1
        ax.axvline(f3["frozen_from"] + 1, ls="--", color="black", lw=0.8)
        ax.grid(alpha=0.3)
    fig.suptitle(f"Fig. 3a/3b — sentence {f3['id']}, {f3['order']}-gram, K = {cfg['top_k']}, "
                 f"B = {f3['batch']} (dashed: first trial drawn from the final q)")
    fig.tight_layout()
    save(fig, "fig3ab")
    return dict(FILES)
