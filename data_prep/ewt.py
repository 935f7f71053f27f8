"""Prepare the shipped POS tagger from the UD English Web Treebank (EWT), and its evaluation data.

Usage:
    python -m data_prep.ewt --out work/ewt [--ewt DIR] [--orders 2 .. 9] [--nltk-dir DIR]
    python -m data_prep.ewt --out work/ewt --ship arsdecode/data/pos   # also the packaged model

Why EWT: the WSJ data of the paper's experiment (data_prep.pos_data) may not be redistributed;
EWT is CC BY-SA 4.0, so a tagger trained on it can ship inside the package (with the
attribution in arsdecode/data/pos/README.md) and `arsdecode tag` works right after install.

Data: ``--ewt DIR`` (default ../shared/data/ud_ewt beside the repository) holds
en_ewt-ud-{train,dev,test}.conllu(.gz). Tokens are the CoNLL-U word lines; multi-word token
ranges (``3-4``) and empty nodes (``8.1``) are skipped, so "don't" is tagged as "do" + "n't"
as in the Penn Treebank. The tag is column 5 (XPOS, Penn Treebank tags plus EWT's ADD, AFX, GW,
HYPH, NFP, XX). Written under ``--out``: train.tsv, dev.tsv, test.tsv and, when the NLTK
CoNLL-2000 corpus is found (``--nltk-dir``, default as data_prep.pos_data), wsj20.tsv (WSJ
section 20, for evaluation only; CoNLL-2000 writes brackets' tags as "(" ")", mapped here to
EWT's -LRB- -RRB-). Then the model, trained on EWT train: emissions.json.gz
(`arsdecode.tasks.pos.emissions.TnTEmissions` with the settings chosen on EWT dev, see SETTINGS) and
tags.<n>.arpa / tags.<n>.maxarpa / tags.<n>.npz (binary, what `tag --models` prefers), TnT's
deleted-interpolation tag LM of each order n. With the `capitalisation` setting (TnT's
capitalisation feature, `arsdecode.tasks.pos.cap`; on for the shipped model) the tag LM is
over "tag^class" states (class upper or lower, after the word).

``--ship DIR`` copies the model in the layout `arsdecode tag` looks up: emissions.json.gz and
tags.<n>.maxarpa.gz (gzip with mtime 0, so a rebuild is byte-identical).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from arsdecode.tasks.pos.cap import cap_sequences
from arsdecode.tasks.pos.emissions import PENN_CLOSED_TAGS, TnTEmissions
from arsdecode.tasks.pos.evaluation import write_tagged
from arsdecode.tasks.pos.models import PREFERRED_ORDER
from data_prep.lmplz import REPO_ROOT
from data_prep.pos_data import (
    DataError,
    arpa_ngram_counts,
    convert_binary,
    convert_maxarpa,
    default_data_dir,
    deleted_interpolation_arpa,
    read_conll2000,
)

Sentence = list[tuple[str, str]]
SPLITS = ("train", "dev", "test")
# Emission settings of the shipped model, chosen on EWT dev (experiments/pos_ewt.py); the
# issue-19 switches and alpha confirmed on EWT dev and out-of-domain dev together
# (experiments/pos_ood_study.py). A change must pass experiments/pos_ood.py.
SETTINGS: dict[str, float | int | bool | tuple[str, ...] | None] = {
    "rare_max_count": 10,
    "suffix_max_len": 10,
    "suffix_alpha": 10.0,
    "sentence_initial": True,
    "skip_case_variants": True,  # chosen on EWT dev with capitalisation (docs/results-pos.md)
    "capitalisation": True,  # TnT's capitalised states: better on EWT dev at every order
    "closed_tags": PENN_CLOSED_TAGS,  # no unknown word gets a function-word tag
}
# The order `arsdecode tag` uses by default, chosen on EWT dev; one constant, in the library.
DEFAULT_ORDER = PREFERRED_ORDER
# Orders shipped in the package: 2..5 take 2.7 MB gzipped; 6..9 would add ~23 MB.
SHIP_ORDERS = (2, 3, 4, 5)
WSJ_TAG_MAP = {"(": "-LRB-", ")": "-RRB-"}


def shared_data(name: str) -> Path | None:
    """shared/data/<name> in the nearest ancestor of the repository that has it (../shared for
    a clone, ../../shared for a git worktree under wt/), else None."""
    for parent in REPO_ROOT.parents:
        if (parent / "shared" / "data" / name).is_dir():
            return parent / "shared" / "data" / name
    return None


def default_ewt_dir() -> Path:
    """../shared/data/ud_ewt beside the repository (see `shared_data`)."""
    found = shared_data("ud_ewt")
    if found is None:
        raise DataError("no ../shared/data/ud_ewt beside the repository; pass --ewt DIR")
    return found


def _open_text(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(
        path, encoding="utf-8"
    )


def read_conllu(path: Path) -> list[Sentence]:
    """(FORM, XPOS) of every word line; ranges and empty nodes skipped; bad lines raise."""
    out: list[Sentence] = []
    cur: Sentence = []
    with _open_text(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                if cur:
                    out.append(cur)
                    cur = []
                continue
            if line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 10:
                raise DataError(f"{path}:{lineno}: expected 10 tab-separated columns")
            if not cols[0].isdigit():  # "3-4" multi-word token or "8.1" empty node
                continue
            form, xpos = cols[1], cols[4]
            if not form or xpos in ("", "_") or "\t" in form:
                raise DataError(f"{path}:{lineno}: missing FORM or XPOS")
            # A handful of EWT forms hold a space ("a few" as one token); the tagger's input
            # is whitespace-tokenised, so join them into one word.
            cur.append(("_".join(form.split()), xpos))
    if cur:
        out.append(cur)
    if not out:
        raise DataError(f"{path}: no sentences")
    return out


def ewt_file(ewt_dir: Path, split: str) -> Path:
    for name in (f"en_ewt-ud-{split}.conllu.gz", f"en_ewt-ud-{split}.conllu"):
        if (ewt_dir / name).is_file():
            return ewt_dir / name
    raise DataError(f"{ewt_dir}: no en_ewt-ud-{split}.conllu(.gz); pass --ewt DIR")


def read_ewt(ewt_dir: Path) -> dict[str, list[Sentence]]:
    """{"train", "dev", "test"} -> sentences."""
    return {s: read_conllu(ewt_file(ewt_dir, s)) for s in SPLITS}


def read_wsj20(nltk_dir: Path) -> list[Sentence]:
    """CoNLL-2000 test (WSJ section 20) with bracket tags in EWT's spelling."""
    return [[(w, WSJ_TAG_MAP.get(t, t)) for w, t in s] for s in read_conll2000(nltk_dir, "test")]


def build_model(
    train: Sequence[Sentence], out: Path, orders: Sequence[int], settings: dict | None = None
) -> dict:
    """emissions.json.gz and tags.<n>.{arpa,maxarpa,npz} under `out`; returns a summary.

    The tag LMs are over the states the emission model decodes with: tags, or "tag^class"
    when `settings["capitalisation"]` (arsdecode.tasks.pos.cap)."""
    settings = dict(SETTINGS if settings is None else settings)
    out.mkdir(parents=True, exist_ok=True)
    TnTEmissions.train(train, **settings).save(out / "emissions.json.gz")
    if settings.get("capitalisation"):
        tag_seqs = cap_sequences(train)
    else:
        tag_seqs = [[t for _, t in s] for s in train]
    lms: dict[str, dict] = {}
    for order in orders:
        arpa, lambdas = deleted_interpolation_arpa(tag_seqs, order, out / f"tags.{order}.arpa")
        maxarpa = out / f"tags.{order}.maxarpa"
        if not convert_maxarpa(arpa, maxarpa):
            raise DataError(f"cannot convert {arpa} to MAX-ARPA")
        convert_binary(maxarpa, out / f"tags.{order}.npz")
        lms[str(order)] = {"lambdas": [round(x, 6) for x in lambdas[1:]],
                           "ngram_counts": arpa_ngram_counts(arpa)}
    return {"settings": settings, "lms": lms}


def _gzip_deterministic(src: Path, dst: Path) -> None:
    """gzip `src` (itself gzipped if it ends in .gz) into `dst` with mtime 0 and no name."""
    tmp = dst.with_name(dst.name + ".tmp")
    opener = gzip.open if src.suffix == ".gz" else open
    with opener(src, "rb") as f, open(tmp, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as g:
            shutil.copyfileobj(f, g)
    tmp.replace(dst)


def ship(model_dir: Path, ship_dir: Path, orders: Sequence[int]) -> list[Path]:
    """Copy emissions.json.gz and gzip tags.<n>.maxarpa into `ship_dir`; returns the files."""
    ship_dir.mkdir(parents=True, exist_ok=True)
    for stale in ship_dir.glob("tags.*.maxarpa*"):
        stale.unlink()
    written = [ship_dir / "emissions.json.gz"]
    _gzip_deterministic(model_dir / "emissions.json.gz", written[0])
    for order in orders:
        dst = ship_dir / f"tags.{order}.maxarpa.gz"
        _gzip_deterministic(model_dir / f"tags.{order}.maxarpa", dst)
        written.append(dst)
    return written


def _nltk_dir(arg: Path | None) -> Path | None:
    if arg is not None:
        return arg
    try:
        return default_data_dir()
    except DataError:
        return shared_data("nltk")


def prepare(
    out: Path, ewt_dir: Path, orders: Sequence[int], nltk_dir: Path | None = None
) -> dict:
    """Write the splits (and wsj20.tsv when CoNLL-2000 is found) and the model under `out`."""
    data = read_ewt(ewt_dir)
    summary: dict = {"ewt_dir": str(ewt_dir), "splits": {}}
    for split, sents in data.items():
        n = write_tagged(sents, out / f"{split}.tsv")
        summary["splits"][split] = {"sentences": len(sents), "tokens": n}
    if nltk_dir is not None:
        wsj = read_wsj20(nltk_dir)
        n = write_tagged(wsj, out / "wsj20.tsv")
        summary["splits"]["wsj20"] = {"sentences": len(wsj), "tokens": n}
    summary |= build_model(data["train"], out, orders)
    summary["tags"] = sorted({t for s in data["train"] for _, t in s})
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def _iter_summary(summary: dict) -> Iterator[str]:
    for split, s in summary["splits"].items():
        yield f"{split}: {s['sentences']} sentences, {s['tokens']} tokens"
    for order, lm in summary["lms"].items():
        yield f"order {order}: " + " ".join(f"{k}:{v}" for k, v in lm["ngram_counts"].items())


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="output directory (e.g. work/ewt)")
    ap.add_argument("--ewt", type=Path, default=None, help="dir with en_ewt-ud-*.conllu.gz")
    ap.add_argument("--nltk-dir", type=Path, default=None,
                    help="dir with conll2000.zip, for wsj20.tsv (skipped when not found)")
    ap.add_argument("--orders", type=int, nargs="+", default=list(range(2, 10)))
    ap.add_argument("--ship", type=Path, default=None, metavar="DIR",
                    help="also write the packaged model (e.g. arsdecode/data/pos)")
    ap.add_argument("--ship-orders", type=int, nargs="+", default=list(SHIP_ORDERS),
                    help="orders to ship (default: %(default)s)")
    args = ap.parse_args(argv)
    if any(not 2 <= o <= 9 for o in args.orders):
        ap.error("orders must be in 2..9")
    try:
        ewt_dir = args.ewt or default_ewt_dir()
        summary = prepare(args.out, ewt_dir, args.orders, _nltk_dir(args.nltk_dir))
        if args.ship is not None:
            if not set(args.ship_orders) <= set(args.orders):
                raise DataError("--ship-orders must be among --orders")
            files = ship(args.out, args.ship, args.ship_orders)
            size = sum(p.stat().st_size for p in files)
            print(f"shipped {len(files)} files, {size / 1e6:.2f} MB, to {args.ship}")
    except (DataError, OSError) as err:
        print(f"ewt: {err}", file=sys.stderr)
        return 1
    for line in _iter_summary(summary):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
