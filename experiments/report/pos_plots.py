"""The POS page's figures (Fig. 4a, 4b, 4c/4d), drawn from the results JSON alone.

Why separate from the runner (experiments/pos_experiments.py): a figure can be redrawn
(`--render-only`) without rerunning the experiment.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from experiments.pos_protocol import BUDGET_S
from experiments.report.pos_format import PAPER


def write_plots(res: dict, img: Path) -> list[Path]:
    """Fig. 4a, 4b and 4c/4d as PNGs under `img`; returns their paths in that order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    img.mkdir(parents=True, exist_ok=True)
    orders = sorted(int(n) for n in res["ars"])
    ars = [res["ars"][str(n)] for n in orders]
    tnt0, tnt1 = res["tnt"]["C=False"], res["tnt"]["C=True"]
    out = []

    # Fig. 4a
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    panels = [("accuracy", "all tokens"), ("known_accuracy", "known words"),
              ("unknown_accuracy", "unknown words")]
    for ax, (key, title) in zip(axes.flat, panels, strict=False):
        ax.plot(orders, [100 * a[key] for a in ars], "o-", color="C0", label="ARS, exact")
        ax.axhline(100 * tnt0[key], color="C3", ls="--", label="NLTK TnT (C=False)")
        ax.axhline(100 * tnt1[key], color="C3", ls=":", label="NLTK TnT (C=True)")
        if key == "accuracy":
            ax.plot([PAPER["best_order"]], [100 * PAPER["best_accuracy"]], "*", ms=12,
                    color="C2", label="paper, n=5 (WSJ 22-24)")
        ax.set_title(f"Accuracy, {title} (CoNLL-2000 test)")
        ax.set_xlabel("tag n-gram order n")
        ax.set_ylabel("accuracy (%)")
        ax.set_xticks(orders)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right" if key == "accuracy" else "best")
    ax = axes[1, 1]
    tok = res["test_tokens"]
    lat_s = res["lattice_seconds"]
    ax.semilogy(orders, [tok / a["seconds"] for a in ars], "o-", label="ARS, decode only")
    ax.semilogy(orders, [tok / (a["seconds"] + lat_s) for a in ars], "s--",
                label="ARS, lattice + decode")
    ax.axhline(tnt0["tokens_per_second"], color="C3", ls="--", label="NLTK TnT (C=False)")
    ax.set_title("Throughput (CPU time, single-threaded)")
    ax.set_xlabel("tag n-gram order n")
    ax.set_ylabel("tokens / second")
    ax.set_xticks(orders)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.append(img / "pos_fig4a_accuracy.png")
    fig.savefig(out[-1], dpi=110)
    plt.close(fig)

    # Fig. 4b
    fig, ax = plt.subplots(figsize=(7.5, 5))
    ax.semilogy(orders, [a["seconds"] for a in ars], "o-", color="C0", label="ARS (exact)")
    for key, color, label in (("merged", "C1", "full DP, KenLM-merged contexts"),
                              ("literal", "C3", "full model, literal (paper's baseline)")):
        rows = [res[key][str(n)] for n in orders]
        xs = [n for n, r in zip(orders, rows, strict=True) if r.get("feasible")]
        ys = [r["seconds"] for r in rows if r.get("feasible")]
        ax.semilogy(xs, ys, "s-", color=color, label=label)
        px = [n for n, r in zip(orders, rows, strict=True)
              if not r.get("feasible") and r.get("projected_seconds")]
        py = [r["projected_seconds"] for r in rows
              if not r.get("feasible") and r.get("projected_seconds")]
        if px:
            ax.semilogy(([xs[-1]] if xs else []) + px, ([ys[-1]] if ys else []) + py, "s:",
                        color=color, mfc="none", label=f"{label.split(',')[0]}: projected, "
                        "infeasible")
    ax.axhline(BUDGET_S, color="grey", lw=0.8, ls="--", label=f"budget {BUDGET_S:.0f} s")
    ax.set_xlabel("tag n-gram order n")
    ax.set_ylabel(f"CPU seconds, whole test set ({res['test_sentences']} sentences)")
    ax.set_title("Exact decoding time: ARS vs full model")
    ax.set_xticks(orders)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.append(img / "pos_fig4b_time.png")
    fig.savefig(out[-1], dpi=110)
    plt.close(fig)

    # Fig. 4c/4d
    smp = [res["sampling"][str(n)]["rows"] for n in orders]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.5))
    a1.plot(orders, [np.mean([r["trials"] for r in rows]) for rows in smp], "o-",
            label="sampling: trials to AR-100 = 60%")
    a1.plot(orders, [np.mean([r["refinements"] for r in rows]) for rows in smp], "s--",
            label="sampling: refinements")
    a1.plot(orders, [a["mean_iterations"] for a in ars], "^:", label="decoding: iterations")
    a1.set_title(f"(c) Mean iterations, {len(smp[0])} test sentences")
    a1.set_xlabel("tag n-gram order n")
    a1.set_ylabel("per sentence")
    a1.set_xticks(orders)
    a1.grid(alpha=0.3)
    a1.legend(fontsize=8)
    a2.semilogy(orders, [np.mean([r["states"] for r in rows]) for rows in smp], "o-",
                label="ARS sampling (AR-100 = 60%)")
    a2.semilogy(orders, [a["mean_states"] for a in ars], "^:", label="ARS decoding")
    a2.semilogy(orders, [np.mean([r["literal_states"] for r in rows]) for rows in smp], "s--",
                color="C3", label="literal full model")
    a2.set_title("(d) Mean states per sentence")
    a2.set_xlabel("tag n-gram order n")
    a2.set_ylabel("states (log)")
    a2.set_xticks(orders)
    a2.grid(alpha=0.3, which="both")
    a2.legend(fontsize=8)
    fig.tight_layout()
    out.append(img / "pos_fig4cd_sampling.png")
    fig.savefig(out[-1], dpi=110)
    plt.close(fig)
    return out
