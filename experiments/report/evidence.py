"""The evidence-estimator table (experiments/evidence_study.py), from its results alone.

Used by the study's own output and by the approximate-tools page (report/approx.py).
"""

from __future__ import annotations


def markdown(results: dict) -> str:
    """The table of every estimator on every case (bias, RMSE, coverage, CI width)."""
    lines = [
        f"Every estimator on the same ARS runs, {results['seeds']} seeds per case; random "
        "ARPA models with positive backoffs (arsdecode.testing.random_arpa), lattices of width 3.",
        "",
        "| case | reference | estimator | bias ln Z (± s.e.) | Z_hat/Z - 1 | RMSE ln Z | "
        "RMSE at 1 s | coverage | CI width | width at 1 s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case, c in results["cases"].items():
        for name, e in c["estimators"].items():
            lines.append(
                f"| {case} | {c['reference']} | {name} | {e['bias_log']:+.4f} ± "
                f"{e['bias_log_se']:.4f} | {e['rel_bias_Z']:+.4f} | {e['rmse_log']:.4f} | "
                f"{e['rmse_1s']:.4f} | "
                f"{e['coverage']:.2f} | {e['width']:.4f} | {e['width_1s']:.4f} |")
    return "\n".join(lines)
