"""The out-of-domain development check of the shipped tagger (issue 29 G): ours against TnT.

Why: the shipped EWT tagger's choices were once made on EWT dev alone, and it fell behind NLTK
TnT out of domain. Every tagger change must now pass this check: on EWT dev and on two out-of-
domain development sets (data_prep.pos_ood: a fixed Brown sample compared on the universal
tagset, and the NLTK WSJ sample, sections 00-01), and on the Brown sample in title case (every
word capitalised: headline text, where the capitalised states once lost), the tagger (the
shipped one, or `--models DIR`) at its order (the shipped default unless `--order`) must be
more accurate than NLTK TnT (N = 1000, C=False, the baseline of docs/results-pos.md) trained on
the same EWT train. TnT with C=True is shown beside it. No test set is read (neither EWT test
nor WSJ section 20), and nothing of the NLTK corpora is written into the project: the page gets
accuracies only.

    python -m experiments.pos_ood                 # the shipped tagger; exit 1 if it loses
    python -m experiments.pos_ood --models work/ewt --order 3 --no-doc

Decoding is exact (`tag_many(..., method="full")`). Writes work/ewt/ood.json and the block
`ewtood` of docs/results-pos.md (unless --no-doc). Takes about 25 s of CPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from arsdecode.errors import ArsDecodeError  # noqa: E402
from arsdecode.tasks.pos.evaluation import Accuracy, score_tags  # noqa: E402
from arsdecode.tasks.pos.models import load_models, models_dir, tag_lm_path  # noqa: E402
from arsdecode.tasks.pos.tag_many import tag_many  # noqa: E402
from data_prep.ewt import DEFAULT_ORDER, ewt_file, read_conllu, shared_data  # noqa: E402
from data_prep.pos_data import DataError  # noqa: E402
from data_prep.pos_ood import (  # noqa: E402
    brown_dev,
    to_universal,
    universal_map,
    wsj_dev,
)

Sentence = list[tuple[str, str]]
SETS = ("ewt_dev", "brown_dev", "brown_title", "wsj_dev")
UNIVERSAL_SETS = ("brown_dev", "brown_title")
TNT_BEAM = 1000


class DevData:
    """EWT train (for TnT and the known/unknown split), the dev sets, the tag maps."""

    def __init__(self, ewt_dir: Path, nltk_dir: Path) -> None:
        self.train = read_conllu(ewt_file(ewt_dir, "train"))
        self.vocab = {w for s in self.train for w, _ in s}
        self.sets: dict[str, list[Sentence]] = {
            "ewt_dev": read_conllu(ewt_file(ewt_dir, "dev")),
            "brown_dev": brown_dev(nltk_dir), "wsj_dev": wsj_dev(nltk_dir)}
        # Headline and title text: Brown dev with every word capitalised. The capitalised
        # states read such text as proper nouns (issue 29 G: 83.61% against TnT's 84.07%).
        self.sets["brown_title"] = [[(w[:1].upper() + w[1:], t) for w, t in s]
                                    for s in self.sets["brown_dev"]]
        self.ptb = universal_map(nltk_dir, "en-ptb")
        self.brown = universal_map(nltk_dir, "en-brown")

    def score(self, name: str, preds: list[list[str]]) -> Accuracy:
        """Accuracy of Penn-tag predictions on set `name`; Brown on the universal tagset."""
        gold = self.sets[name]
        if name in UNIVERSAL_SETS:
            gold = [list(zip([w for w, _ in s], to_universal([t for _, t in s], self.brown),
                             strict=True)) for s in gold]
            preds = [to_universal(p, self.ptb) for p in preds]
        return score_tags(gold, preds, self.vocab)


def find_data(ewt_dir: Path | None, nltk_dir: Path | None) -> tuple[Path, Path]:
    """The data folders: the arguments, else ../shared/data/{ud_ewt,nltk}; DataError if none."""
    ewt = ewt_dir or shared_data("ud_ewt")
    nltk = nltk_dir or shared_data("nltk")
    if ewt is None or nltk is None:
        missing = "ud_ewt" if ewt is None else "nltk"
        raise DataError(f"no ../shared/data/{missing} beside the repository; pass "
                        f"--{'ewt' if ewt is None else 'nltk-dir'} DIR")
    return ewt, nltk


def _row(acc: Accuracy, seconds: float) -> dict:
    return {**acc.as_dict(), "seconds": seconds}


def tag_ours(data: DevData, lm, em) -> dict[str, dict]:
    """Our tagger (tag LM `lm`, emissions `em`) on every dev set, exact; CPU s per set."""
    out = {}
    for name, sents in data.sets.items():
        c0 = time.process_time()
        res = tag_many(lm, em, [[w for w, _ in s] for s in sents], method="full")
        preds = [em.penn_tags(t) for t in res.tags]
        out[name] = _row(data.score(name, preds), time.process_time() - c0)
    return out


def tag_tnt(data: DevData, capitalization: bool) -> dict[str, dict]:
    """NLTK TnT trained on EWT train, on every dev set; CPU s of tagging per set."""
    from nltk.tag.tnt import TnT

    tagger = TnT(N=TNT_BEAM, C=capitalization)
    tagger.train(data.train)
    out = {}
    for name, sents in data.sets.items():
        c0 = time.process_time()
        preds = [[t for _, t in tagger.tag([w for w, _ in s])] for s in sents]
        out[name] = _row(data.score(name, preds), time.process_time() - c0)
    return out


def run(data: DevData, models: str | Path | None, order: int | None,
        with_tnt_c: bool = True) -> dict:
    """The check: ours, TnT C=False (the baseline) and, if `with_tnt_c`, C=True (shown
    beside it); `passed` if ours beats the baseline on every set."""
    lm, em = load_models(models, order)
    lm_path = tag_lm_path(models_dir(models), order)
    ours = tag_ours(data, lm, em)
    tnt = {c: tag_tnt(data, c) for c in ((False, True) if with_tnt_c else (False,))}
    margins = {s: ours[s]["accuracy"] - tnt[False][s]["accuracy"] for s in SETS}
    return {"models": str(models) if models else "shipped", "lm": lm_path.name,
            "order": lm.order, "settings": _settings(em), "ours": ours,
            "tnt": tnt[False], "tnt_c": tnt.get(True), "margins": margins,
            "passed": all(m > 0 for m in margins.values()),
            "sentences": {s: len(v) for s, v in data.sets.items()},
            "unknown_tokens": {s: ours[s]["unknown_tokens"] for s in SETS}}


def _settings(em) -> dict:
    base = getattr(em, "em", em)  # CapEmissions wraps the TnTEmissions
    return {"capitalisation": bool(base.capitalisation),
            "skip_case_variants": base.skip_case_variants,
            "closed_tags": list(base.closed_tags), "suffix_alpha": base.suffix_alpha}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=None, help="model directory (default: the shipped one)")
    ap.add_argument("--order", type=int, default=None,
                    help=f"tag LM order (default: the shipped default, {DEFAULT_ORDER})")
    ap.add_argument("--ewt", type=Path, default=None, help="dir with en_ewt-ud-*.conllu.gz")
    ap.add_argument("--nltk-dir", type=Path, default=None, help="dir with the NLTK zips")
    ap.add_argument("--json", type=Path, default=REPO / "work" / "ewt" / "ood.json")
    ap.add_argument("--doc", type=Path, default=REPO / "docs" / "results-pos.md")
    ap.add_argument("--no-doc", action="store_true", help="do not rewrite the results page")
    ap.add_argument("--baseline-only", action="store_true",
                    help="skip TnT C=True (shown beside the baseline; not part of the check)")
    args = ap.parse_args(argv)
    from experiments.report.pos_ood import check_markdown, print_table

    t0 = time.perf_counter()
    try:
        data = DevData(*find_data(args.ewt, args.nltk_dir))
        res = run(data, args.models, args.order, with_tnt_c=not args.baseline_only)
    except (DataError, ArsDecodeError, OSError) as err:
        print(f"pos_ood: {err}", file=sys.stderr)
        return 2
    res["wall_seconds"] = time.perf_counter() - t0
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    print_table(res)
    if not (args.no_doc or args.baseline_only) and args.models is None and args.order is None:
        from experiments.report.pos_ewt import splice

        splice(args.doc, "ewtood", check_markdown(res), script="experiments/pos_ood.py")
    return 0 if res["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
