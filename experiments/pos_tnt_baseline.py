"""Baseline for the POS demo: NLTK's TnT (second-order HMM, beam search) on our split.

Why: the exact decoder's tagging accuracy only means something next to an established
tagger trained on exactly the same data. NLTK's TnT (>= 3.9) includes Brants' suffix model
for unknown words, so it is the closest off-the-shelf counterpart to our trigram setting.

Usage: python -m experiments.pos_tnt_baseline --pos-dir work/pos --out work/pos/tnt.json
(the directory written by `python -m data_prep.pos_data`). Known/unknown is decided by the
exact word string's presence in the training data, as in
`arsdecode.tasks.pos.evaluation.score_tags`.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from arsdecode.tasks.pos.evaluation import read_tagged, score_tags


def run(pos_dir: Path, beam: int, capitalization: bool, limit: int | None) -> dict:
    """Train TnT on train.tsv, tag test.tsv, and return accuracy and speed figures."""
    import nltk
    from nltk.tag.tnt import TnT

    train = read_tagged(pos_dir / "train.tsv")
    test = read_tagged(pos_dir / "test.tsv")
    if limit is not None:
        test = test[:limit]
    tagger = TnT(N=beam, C=capitalization)
    t0 = time.perf_counter()
    tagger.train(train)
    train_s = time.perf_counter() - t0
    preds: list[list[str]] = []
    t0 = time.perf_counter()
    for sent in tqdm(test, desc="TnT", disable=not sys.stderr.isatty()):
        preds.append([tag for _, tag in tagger.tag([w for w, _ in sent])])
    tag_s = time.perf_counter() - t0
    vocab = {w for s in train for w, _ in s}
    acc = score_tags(test, preds, vocab)
    return {
        "tagger": "nltk.tag.tnt.TnT",
        "nltk_version": nltk.__version__,
        "python": platform.python_version(),
        "beam_N": beam,
        "capitalization": capitalization,
        "train_sentences": len(train),
        "test_sentences": len(test),
        **acc.as_dict(),
        "train_seconds": round(train_s, 2),
        "tag_seconds": round(tag_s, 2),
        "tokens_per_second": round(acc.tokens / tag_s, 1) if tag_s > 0 else None,
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pos-dir", type=Path, default=Path("work/pos"))
    ap.add_argument("--out", type=Path, required=True, help="JSON result file")
    ap.add_argument("--beam", type=int, default=1000, help="TnT's N (beam ratio)")
    ap.add_argument("--capitalization", action="store_true", help="TnT's C flag")
    ap.add_argument("--limit", type=int, default=None, help="tag only the first N sentences")
    args = ap.parse_args(argv)
    for name in ("train.tsv", "test.tsv"):
        if not (args.pos_dir / name).is_file():
            hint = "run python -m data_prep.pos_data"
            print(f"missing {args.pos_dir / name}; {hint}", file=sys.stderr)
            return 1
    result = run(args.pos_dir, args.beam, args.capitalization, args.limit)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
