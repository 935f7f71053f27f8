"""Markdown and terminal tables of the out-of-domain check (experiments/pos_ood.py) and of the
configuration study (experiments/pos_ood_study.py), from their JSON alone.

Why apart: the runners decode, this module only formats, so `--render-only` redoes the page
without the data.
"""

from __future__ import annotations

from data_prep.pos_ood import BROWN_STEP

SETS = ("ewt_dev", "brown_dev", "brown_title", "wsj_dev")
SHORT = {"ewt_dev": "EWT dev", "brown_dev": "Brown dev", "brown_title": "Brown dev, title case",
         "wsj_dev": "WSJ dev"}


def _acc(row: dict) -> str:
    return (f"{100 * row['accuracy']:.2f} / {100 * row['known_accuracy']:.2f} / "
            f"{100 * row['unknown_accuracy']:.2f}")


def print_table(res: dict) -> None:
    """The check's result on stdout: one line per set, then PASS or FAIL."""
    print(f"order {res['order']} ({res['models']}): accuracy % all / known / unknown")
    for s in SETS:
        tnt_c = f"   TnT C=True {_acc(res['tnt_c'][s])}" if res["tnt_c"] else ""
        print(f"  {SHORT[s]:21s} ours {_acc(res['ours'][s])}   TnT {_acc(res['tnt'][s])}"
              f"{tnt_c}   margin {100 * res['margins'][s]:+.2f}")
    print("PASS: ours above TnT on every set" if res["passed"]
          else "FAIL: ours not above TnT on every set")


def _data_lines(res: dict) -> list[str]:
    n, unk = res["sentences"], res["unknown_tokens"]
    tokens = {s: res["ours"][s]["tokens"] for s in SETS}
    return [
        f"* **EWT dev**: {n['ewt_dev']:,} sentences, {tokens['ewt_dev']:,} tokens, "
        f"{unk['ewt_dev']:,} unknown (unseen in EWT train).",
        f"* **Brown dev**: every {BROWN_STEP}th sentence of the Brown corpus (brown.zip, files "
        f"ca01..cr09 in name order, sentences 0, {BROWN_STEP}, {2 * BROWN_STEP}, ...): "
        f"{n['brown_dev']:,} sentences, {tokens['brown_dev']:,} tokens, {unk['brown_dev']:,} "
        "unknown. Compared on the 12 universal tags: gold through universal_tagset's en-brown "
        "map, predictions through its en-ptb map; as NLTK's map_tag, a tag a map does not list "
        "is X (EWT's HYPH, NFP, ADD, GW, AFX, XX among them).",
        f"* **Brown dev, title case**: the same sentences with every word capitalised "
        f"(\"The Fulton County Grand Jury Said\"), {unk['brown_title']:,} unknown: headline and "
        "title text, where the capitalised states read every word as a proper noun.",
        f"* **WSJ dev**: the NLTK Penn Treebank sample (treebank.zip, WSJ sections 00-01, "
        f"traces dropped): {n['wsj_dev']:,} sentences, {tokens['wsj_dev']:,} tokens, "
        f"{unk['wsj_dev']:,} unknown; Penn tags. Not CoNLL-2000 test (WSJ section 20), which "
        "stays a test set.",
    ]


def check_markdown(res: dict) -> str:
    """The `ewtood` block of docs/results-pos.md."""
    lines = [
        "## Out-of-domain development check (issue 29 G)",
        "",
        "Every change to the shipped tagger must pass `python -m experiments.pos_ood`: at its "
        f"shipped order (n = {res['order']}), exact decoding, more accurate than NLTK TnT "
        "(N = 1000, C=False) trained on the same EWT train on each development set "
        "(the command exits 1 otherwise; tests/test_pos_ood.py runs it when ../shared/data is "
        "there). No test set is read; the NLTK corpora are read from their zips, never copied "
        "into the project.",
        "",
        *_data_lines(res),
        "",
        "| set | shipped tagger | NLTK TnT (C=False) | margin | NLTK TnT (C=True) |",
        "|---|---|---|---|---|",
    ]
    for s in SETS:
        lines.append(f"| {SHORT[s]} | {_acc(res['ours'][s])} | {_acc(res['tnt'][s])} | "
                     f"{100 * res['margins'][s]:+.2f} | {_acc(res['tnt_c'][s])} |")
    verdict = "passes" if res["passed"] else "FAILS"
    lines += ["", f"Accuracy %, all / known / unknown. The shipped tagger {verdict}. Run: "
              f"{res['wall_seconds']:.0f} s wall."]
    return "\n".join(lines)


def study_markdown(res: dict) -> str:
    """The `ewtoodchoice` block: every configuration on the dev sets."""
    sets = [s for s in SETS if s in res["tnt"]]
    lines = [
        "### Choosing the suffix-model switches on EWT dev and out-of-domain dev together",
        "",
        "`python -m experiments.pos_ood_study`: every combination of issue 19's three switches "
        "(capitalised states; case variants and closed-class tags left out of the suffix model) "
        f"and the suffix weight alpha, at n = {res['order']}, on the development sets "
        "above. Chosen: the largest *smallest* margin over NLTK TnT (C=False) across the "
        "sets (ties: the higher mean), because the tagger must beat TnT on each set. Accuracy "
        "% (all tokens); margin in points.",
        "",
        "| configuration | " + " | ".join(SHORT[s] for s in sets) + " | smallest margin | mean |",
        "|---" * (len(sets) + 3) + "|",
    ]
    rows = sorted(res["rows"], key=lambda r: (-round(r["min_margin"], 6), -r["mean"]))
    for r in rows:
        name = r["label"]
        tags = (" **(chosen)**" if name == res["chosen"] else "") + (
            " (shipped)" if name == res["shipped"] else "")
        cells = " | ".join(f"{100 * r['ours'][s]['accuracy']:.2f}" for s in sets)
        lines.append(f"| {name}{tags} | {cells} | {100 * r['min_margin']:+.2f} | "
                     f"{100 * r['mean']:.2f} |")
    for key, name in (("tnt", "NLTK TnT (C=False)"), ("tnt_c", "NLTK TnT (C=True)")):
        cells = " | ".join(f"{100 * res[key][s]['accuracy']:.2f}" for s in sets)
        lines.append(f"| {name} | {cells} | | |")
    lines += ["", f"Run: {res['wall_seconds'] / 60:.1f} min wall."]
    return "\n".join(lines)
