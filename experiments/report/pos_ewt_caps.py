"""The `ewtcaps` block of docs/results-pos.md, from work/ewt/caps.json alone.

Why separate from the runner (experiments/pos_ewt_caps.py): the block is a pure function of the
JSON, so `--render-only` redoes it without rerunning; every number in it comes from the results.
"""

from __future__ import annotations

from experiments.report.pos_ewt import SET_NAMES, pct


def markdown(res: dict) -> str:
    """The `ewtcaps` block: per set, accuracy (all / known / unknown) of every variant."""
    sets, orders = res["sets"], res["orders"]
    variants = list(res["variants"])  # the runner's VARIANTS, in its order
    rows = {(r["variant"], r["set"], r["order"]): r for r in res["results"]}
    tnt = {(r["set"], r["arg"]): r for r in res["tnt"]}
    checked = sum(r["checked"] for r in res["results"])
    agree = sum(r["check_agree"] for r in res["results"])
    L = ["## Issue 19: the shipped tagger gets TnT's capitalisation feature\n",
         "The shipped EWT tagger now decodes over capitalised states (TnT's C=True: the "
         "hidden state is the tag and whether the word starts with a capital, "
         "`arsdecode.tasks.pos.cap`, tag LM over those states), and its suffix model leaves "
         "out rare case variants of frequent words (\"Which\", \"Each\") and closed-class "
         "tags (`arsdecode.tasks.pos.emissions.PENN_CLOSED_TAGS`), so that no unknown word gets a "
         "function-word tag (tests/test_pos_closed_class.py). Before, \"He visited Munich "
         "yesterday .\" gave Munich/DT (n = 3, 4, 5) and \"The company Zürich Insurance rose "
         ".\" Zürich/WDT; both are NNP now at every shipped order. The variants add one "
         "change each (`experiments/pos_ewt_caps.py`): *plain* is the previous shipped "
         "model, *caps* adds the capitalisation feature alone, *no case variants* adds "
         "`skip_case_variants`, *shipped* adds `closed_tags`. Accuracy %, all / known / "
         "unknown (unknown = unseen in EWT train); bold: the best variant of the row. NLTK "
         "TnT (N = 1000) is trained on the same EWT train. CPU s: lattices + exact decoding of "
         "the whole set in one process (the ARS cross-check not timed). The EWT section "
         "above is the plain-state model (the *plain* column here), but for its "
         "capitalised-states table, which is the *shipped* column.\n"]
    for s in sets:
        n_unk = res["unknown_tokens"][s]
        L.append(f"### {SET_NAMES[s]} ({n_unk:,} unknown tokens)\n")
        L.append("| n | " + " | ".join(variants) + " | CPU s, plain / shipped |")
        L.append("|---" * (2 + len(variants)) + "|")
        for n in orders:
            cells = [rows.get((v, s, n)) for v in variants]
            if any(c is None for c in cells):
                continue
            best = max(c["accuracy"] for c in cells)

            def fmt(c: dict, best: float = best) -> str:
                a = pct(c["accuracy"])
                a = f"**{a}**" if c["accuracy"] == best else a
                return f"{a} / {pct(c['known_accuracy'])} / {pct(c['unknown_accuracy'])}"

            label = f"{n} (default)" if n == res["default_order"] else str(n)
            L.append(f"| {label} | " + " | ".join(fmt(c) for c in cells)
                     + f" | {cells[0]['seconds']:.2f} / {cells[-1]['seconds']:.2f} |")
        for c in (False, True):
            t = tnt[(s, c)]
            L.append(f"| NLTK TnT (C={c}) | {pct(t['accuracy'])} / {pct(t['known_accuracy'])}"
                     f" / {pct(t['unknown_accuracy'])} | | | | {t['seconds']:.2f} (TnT) |")
        wins = {c: sum(rows[("shipped", s, n)]["accuracy"] > tnt[(s, c)]["accuracy"]
                       for n in orders if ("shipped", s, n) in rows) for c in (False, True)}
        done = sum(("shipped", s, n) in rows for n in orders)
        L.append(f"\nShipped model above NLTK TnT at {wins[False]} of {done} orders "
                 f"(C=True: {wins[True]} of {done}).\n")
    L.append(f"Exactness: ARS re-decoded {agree:,} of {checked:,} checked sentences (50 per "
             "job) to the same ln p as the full-model DP. Run: "
             f"{res['wall_seconds'] / 60:.1f} min on {res['machine']['jobs']} worker "
             f"processes, Python {res['machine']['python']}, load average "
             f"{res['machine']['load_before']:.1f} at the start.\n")
    L.append("Reproduce:\n\n```\npython -m data_prep.ewt --out work/ewt\n"
             "python -m experiments.pos_ewt_caps --jobs 2\n```\n")
    return "\n".join(L)
