"""The POS page's model-choice sections: the development-split grid the modelling choices
were made on (`dev_study`) and the test-set ablation of the two changes (`ablation`).

Why a module of their own: these tables say why the model is what it is, not how it performs
(experiments/report/pos_markdown.py renders the rest of the page and calls these); apart,
each module stays short (issue 30: pos_markdown was over 400 lines). Like the rest of the
page, a pure function of the results JSON: accuracies are percentages of tokens.
"""

from __future__ import annotations

import re

from experiments.pos_protocol import ORDERS
from experiments.report.pos_format import pct


def dev_study(dev: dict) -> list[str]:
    """The development-split grid the modelling choices were made on."""
    L: list[str] = []
    w = L.append
    w("### Development split (exact ARS decoding; accuracy %, all / known / unknown)\n")
    rows = dev["rows"]
    w("| tag LM | " + " | ".join(f"n={n}" for n in ORDERS) + " |")
    w("|---|" + "---|" * len(ORDERS))
    for est in ("di", "kn"):
        cells = []
        for n in ORDERS:
            r = next((x for x in rows if x["name"] == f"{est} LM, alpha 50"
                      and x["order"] == n), None)
            cells.append(pct(r["accuracy"]) if r else "–")
        label = ("deleted interpolation (chosen)" if est == "di"
                 else "lmplz modified Kneser-Ney")
        w(f"| {label} | " + " | ".join(cells) + " |")
    w("")
    w("| setting (n = 3) | all | known | unknown |")
    w("|---|---|---|---|")
    def natural(name: str) -> list:
        return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]

    for r in sorted((x for x in rows if x["order"] == 3), key=lambda x: natural(x["name"])):
        chosen = " **(chosen)**" if r["name"] == "di LM, alpha 50" else ""
        w(f"| {r['name']}{chosen} | {pct(r['accuracy'])} | {pct(r['known_accuracy'])} | "
          f"{pct(r['unknown_accuracy'])} |")
    for c, t in dev["tnt"].items():
        w(f"| NLTK TnT ({c}) | {pct(t['accuracy'])} | {pct(t['known_accuracy'])} | "
          f"{pct(t['unknown_accuracy'])} |")
    w("")
    w("Also tried on dev in scratch runs of the same decoder (not in this grid, numbers "
      "all-token %): lmplz Kneser-Ney with `--prune 0 0 1` (alpha 50: 96.95 at n = 3, 96.55 "
      "at n = 5); deleted interpolation with weights bucketed by history count (alpha 50: "
      "97.04, 96.59); interpolated Witten-Bell and absolute discounting with ML lower orders "
      "(TnT theta: 96.74 and 96.75 at n = 3, vs 96.83 for deleted interpolation). Each was "
      "below plain deleted interpolation at every n tried.\n")
    return L


def ablation(res: dict) -> list[str]:
    """The test-set ablation of the two changes at n = 3."""
    L: list[str] = []
    w = L.append
    w("### Test-set ablation at n = 3 (run once, after the choices)\n")
    w("| tag LM | suffix smoothing | all | known | unknown |")
    w("|---|---|---|---|---|")
    names = {"kn": "lmplz Kneser-Ney", "di": "deleted interpolation",
             "tnt": "TnT theta", "alpha": "Dirichlet alpha = 50"}
    for c, r in res["ablation"].items():
        e, s = c.split("+")
        tag = " (previous model)" if c == "kn+tnt" else (" (chosen)" if c == "di+alpha" else "")
        w(f"| {names[e]}{tag} | {names[s]} | {pct(r['accuracy'])} | "
          f"{pct(r['known_accuracy'])} | {pct(r['unknown_accuracy'])} |")
    w("")
    return L
