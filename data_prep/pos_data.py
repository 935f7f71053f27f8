"""Prepare the POS-tagging experiment: train/test files, tag n-gram LMs, emission model.

Usage: python -m data_prep.pos_data --out work/pos [--data-dir DIR] [--orders 2 3 ... 9]
           [--estimator di|kn] [--split test|dev] [--all-tags-for-unknown]

Data (NLTK corpus zips; licences in the .xml files beside them, nothing derived is committed):

* train = the NLTK 10% WSJ sample of the Penn Treebank (treebank.zip, sections 00-01) plus
  CoNLL-2000 train.txt (WSJ sections 15-18); test = CoNLL-2000 test.txt (section 20). The
  sections are disjoint. ``--split dev`` instead holds out the last fifth of CoNLL-2000 train
  (1,787 sentences, 42,502 tokens, the end of section 18) as "test.tsv" and trains on the rest:
  the development split every modelling choice was made on.
* Treebank sentences are read from combined/*.mrg, not tagged/*.pos: in the .pos files blank
  lines do not mark sentence boundaries (chunks of one sentence are split by them), while each
  .mrg tree is exactly one sentence. -NONE- leaves (traces) are dropped. The .mrg files write
  brackets as words -LRB-/-RRB-/-LCB-/-RCB- with tags -LRB-/-RRB-; CoNLL-2000 has the same
  words but tags "(" and ")", so the treebank tags are mapped to "(" and ")".
* Caveat: CoNLL-2000 POS tags were produced by the Brill tagger, not by the treebank
  annotators (see its README), so the test "gold" standard is itself a tagger's output and
  the training data mixes gold (treebank) and Brill (CoNLL) tags.

Tag LMs (``--estimator``, default ``di``): TnT's transition model, linear interpolation of
maximum-likelihood k-gram estimates with Brants's deleted-interpolation weights, generalised
from order 3 to order n and written as an exact backoff ARPA (`deleted_interpolation_arpa`, in
data_prep/tag_lm.py, re-exported here).
``kn`` instead trains lmplz modified Kneser-Ney with ``--discount_fallback`` (no tag occurs once,
so lmplz cannot estimate the unigram discounts) and optional ``--prune``. Written as
tags.<order>.arpa, plus tags.<order>.maxarpa when the maxarpa package's converter exists, plus
its binary twin tags.<order>.npz (`maxarpa.convert(..., binary=True)`): the file
`arsdecode tag --models DIR` prefers (arsdecode.tasks.pos.models), because it loads without
parsing, where the 9-gram text model takes seconds to read.

Why deleted interpolation although Kneser-Ney has the lower tag perplexity at every order: on a
development split (``--split dev``: the last fifth of CoNLL-2000 train held out) the HMM tags
better with it at every order, e.g. 97.07% vs 96.93% at n = 3 and 96.75% vs 96.52% at n = 5.
KN's lower orders are continuation distributions, nearly uniform over the 45 tags; combined
with p(w | t) = c(w, t) / c(t) that favours rare tags whenever the model backs off. Pruning
(``--prune 0 0 1``) and unmodified interpolated estimators (Witten-Bell, absolute discounting
with ML lower orders, deleted interpolation with count-bucketed weights) were also tried on the
dev split and tag worse; the numbers are in docs/results-pos.md.

Emissions: `TnTEmissions` with ``closed_tags=PENN_CLOSED_TAGS``, as the shipped EWT tagger
(data_prep.ewt.SETTINGS): closed-class tokens are left out of the suffix statistics, so no
unknown word gets a function-word tag (DT, IN, WDT, ...). With them in, rare WSJ tokens gave
unknown words 28-29 of the 45 tags and the merged DP's pairs grew ~4x out of domain
(docs/performance.md, section 4). ``--all-tags-for-unknown`` restores the paper's plain TnT
suffix model (every tag a rare word had); summary.json records the setting.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from tqdm import tqdm

from arsdecode.tasks.pos.emissions import PENN_CLOSED_TAGS, TnTEmissions
from arsdecode.tasks.pos.evaluation import write_tagged
from data_prep.lmplz import REPO_ROOT, train_arpa
from data_prep.tag_lm import (  # noqa: F401  (re-exported: importers name them from here)
    deleted_interpolation_arpa,
    deleted_interpolation_weights,
    ngram_counts,
)

Sentence = list[tuple[str, str]]

TREEBANK_TAG_MAP = {"-LRB-": "(", "-RRB-": ")"}
# lmplz's discount fallback (D1 D2 D3+), used when its own estimates are invalid.
DISCOUNT_FALLBACK = ("0.5", "1", "1.5")
ESTIMATORS = ("di", "kn")
DEV_FRACTION = 5  # --split dev holds out the last 1/DEV_FRACTION of CoNLL-2000 train
_LEAF = re.compile(r"\(([^\s()]+)\s+([^\s()]+)\)")


class DataError(RuntimeError):
    """A corpus is missing or malformed."""


def default_data_dir() -> Path:
    """../shared/data/nltk beside the repository, else $NLTK_DATA/corpora."""
    shared = REPO_ROOT.parent / "shared" / "data" / "nltk"
    if shared.is_dir():
        return shared
    if os.environ.get("NLTK_DATA"):
        return Path(os.environ["NLTK_DATA"]) / "corpora"
    raise DataError("no data directory: pass --data-dir or set NLTK_DATA")


def _corpus_files(data_dir: Path, name: str) -> Iterator[tuple[str, str]]:
    """Yield (member name, text) of corpus `name`, from name.zip or an unpacked name/ dir."""
    zpath = data_dir / f"{name}.zip"
    if zpath.is_file():
        with zipfile.ZipFile(zpath) as z:
            for member in sorted(z.namelist()):
                if not member.endswith("/"):
                    yield member, z.read(member).decode("utf-8", "replace")
        return
    root = data_dir / name
    if not root.is_dir():
        raise DataError(f"corpus {name!r} not found as {zpath} or {root}/")
    for p in sorted(root.rglob("*")):
        if p.is_file():
            yield f"{name}/{p.relative_to(root).as_posix()}", p.read_text("utf-8", "replace")


def parse_mrg(text: str) -> list[Sentence]:
    """Split a .mrg file into top-level trees and return each tree's (word, tag) leaves."""
    sentences: list[Sentence] = []
    depth = 0
    start = None
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise DataError("unbalanced ')' in .mrg text")
            if depth == 0 and start is not None:
                sent = [
                    (word, TREEBANK_TAG_MAP.get(tag, tag))
                    for tag, word in _LEAF.findall(text[start : i + 1])
                    if tag != "-NONE-"
                ]
                if sent:
                    sentences.append(sent)
                start = None
    if depth != 0:
        raise DataError("unbalanced '(' in .mrg text")
    return sentences


def read_treebank(data_dir: Path) -> list[Sentence]:
    """All sentences of treebank/combined/wsj_*.mrg, in file order, traces dropped."""
    out: list[Sentence] = []
    for member, text in _corpus_files(data_dir, "treebank"):
        if re.search(r"combined/wsj_\d+\.mrg$", member):
            out.extend(parse_mrg(text))
    if not out:
        raise DataError(f"no treebank/combined/wsj_*.mrg sentences under {data_dir}")
    return out


def read_conll2000(data_dir: Path, split: str) -> list[Sentence]:
    """CoNLL-2000 `split` ("train" or "test"): word POS chunk columns, blank-line separated."""
    for member, text in _corpus_files(data_dir, "conll2000"):
        if member.endswith(f"/{split}.txt"):
            out: list[Sentence] = []
            cur: Sentence = []
            for lineno, line in enumerate(text.splitlines(), 1):
                cols = line.split()
                if not cols:
                    if cur:
                        out.append(cur)
                        cur = []
                    continue
                if len(cols) != 3:
                    raise DataError(f"{member}:{lineno}: expected 3 columns, got {line!r}")
                cur.append((cols[0], cols[1]))
            if cur:
                out.append(cur)
            return out
    raise DataError(f"conll2000/{split}.txt not found under {data_dir}")


def arpa_ngram_counts(path: Path) -> dict[int, int]:
    """The `ngram k=count` lines of an ARPA header."""
    counts: dict[int, int] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"ngram (\d+)=(\d+)", line)
            if m:
                counts[int(m.group(1))] = int(m.group(2))
            elif line.startswith("\\1-grams:"):
                break
    return counts


def convert_maxarpa(arpa: Path, out: Path) -> bool:
    """Convert with `python -m maxarpa convert` if that CLI exists; False if unavailable."""
    if not (REPO_ROOT / "maxarpa" / "cli.py").is_file():
        return False
    cmd = [sys.executable, "-m", "maxarpa", "convert", "--quiet", str(arpa), str(out)]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"maxarpa convert failed for {arpa}: {proc.stderr.strip()[-300:]}", file=sys.stderr)
        return False
    return True


def convert_binary(maxarpa_path: Path, out: Path) -> Path:
    """Write the binary tag LM `out` (.npz) from a MAX-ARPA file, through maxarpa's own writer
    (a temporary file and a rename, so a stopped run never leaves half a model)."""
    import maxarpa

    try:
        maxarpa.convert(maxarpa_path, out, binary=True)
    except maxarpa.MaxArpaError as err:
        raise DataError(f"{maxarpa_path}: cannot write the binary tag LM {out}: {err}") from None
    return out


def prepare(
    out: Path,
    data_dir: Path,
    orders: Sequence[int],
    memory: str = "1G",
    prune: Sequence[int] = (),
    estimator: str = "di",
    split: str = "test",
    all_tags_for_unknown: bool = False,
) -> dict:
    """Write train/test files, tag LMs and the emission model under `out`; return a summary.

    `estimator` "di" (deleted interpolation, default) or "kn" (lmplz; `prune`, `memory`);
    `split` "test" (CoNLL-2000 test) or "dev" (the last fifth of CoNLL-2000 train held out);
    `all_tags_for_unknown` keeps closed-class tags in the suffix model (plain TnT).
    """
    if estimator not in ESTIMATORS:
        raise DataError(f"unknown estimator {estimator!r}; choose from {ESTIMATORS}")
    if prune and estimator != "kn":
        raise DataError("--prune applies to the lmplz estimator only (--estimator kn)")
    out.mkdir(parents=True, exist_ok=True)
    treebank = read_treebank(data_dir)
    conll_train = read_conll2000(data_dir, "train")
    if split == "test":
        test = read_conll2000(data_dir, "test")
    elif split == "dev":
        n_dev = len(conll_train) // DEV_FRACTION
        conll_train, test = conll_train[:-n_dev], conll_train[-n_dev:]
    else:
        raise DataError(f"unknown split {split!r}; choose 'test' or 'dev'")
    train = treebank + conll_train
    n_train = write_tagged(train, out / "train.tsv")
    n_test = write_tagged(test, out / "test.tsv")
    tag_lines = [" ".join(t for _, t in s) for s in train]
    (out / "train.tags").write_text("\n".join(tag_lines) + "\n", encoding="utf-8")

    lmplz_args = ["--discount_fallback", *DISCOUNT_FALLBACK]
    if prune:
        lmplz_args += ["--prune", *map(str, prune)]
    t0 = time.perf_counter()
    closed_tags = () if all_tags_for_unknown else PENN_CLOSED_TAGS
    emissions = TnTEmissions.train(train, closed_tags=closed_tags)
    emissions.save(out / "emissions.json.gz")
    vocab = emissions.vocabulary
    test_unknown = sum(w not in vocab for s in test for w, _ in s)
    summary: dict = {
        "data_dir": str(data_dir),
        "split": split,
        "estimator": estimator,
        "emission_settings": {"closed_tags": list(emissions.closed_tags)},
        "train": {
            "sentences": len(train),
            "tokens": n_train,
            "treebank_sentences": len(treebank),
            "treebank_tokens": sum(map(len, treebank)),
            "conll2000_train_sentences": len(conll_train),
            "conll2000_train_tokens": sum(map(len, conll_train)),
            "word_types": len(vocab),
        },
        "test": {"sentences": len(test), "tokens": n_test, "unknown_tokens": test_unknown},
        "tags": list(emissions.tags),
        "test_tags_unseen_in_train": sorted({t for s in test for _, t in s} - set(emissions.tags)),
        "emission_seconds": round(time.perf_counter() - t0, 2),
        "lmplz_args": lmplz_args if estimator == "kn" else None,
        "lms": {},
    }
    tty = sys.stderr.isatty()
    for order in tqdm(orders, desc="tag LMs", disable=not tty):
        entry: dict = {}
        if estimator == "kn":
            arpa = train_arpa(
                tag_lines,
                order,
                out / f"tags.{order}.arpa",
                extra_args=lmplz_args,
                memory=memory,
            )
        else:
            tag_seqs = [[t for _, t in s] for s in train]
            arpa, lambdas = deleted_interpolation_arpa(tag_seqs, order, out / f"tags.{order}.arpa")
            entry["lambdas"] = [round(x, 6) for x in lambdas[1:]]
        maxarpa = out / f"tags.{order}.maxarpa"
        converted = convert_maxarpa(arpa, maxarpa)
        entry |= {
            "arpa": str(arpa),
            "ngram_counts": arpa_ngram_counts(arpa),
            "maxarpa": str(maxarpa) if converted else None,
            "binary": str(convert_binary(maxarpa, out / f"tags.{order}.npz")) if converted
            else None,
        }
        summary["lms"][str(order)] = entry
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="output directory (e.g. work/pos)")
    ap.add_argument("--data-dir", type=Path, default=None, help="dir with NLTK corpus zips")
    ap.add_argument("--orders", type=int, nargs="+", default=list(range(2, 10)))
    ap.add_argument("--memory", default="1G", help="lmplz -S")
    ap.add_argument("--prune", type=int, nargs="+", default=[],
                    help="lmplz --prune thresholds (with --estimator kn)")
    ap.add_argument("--estimator", choices=ESTIMATORS, default="di",
                    help="tag LM: di = TnT deleted interpolation (default), kn = lmplz MKN")
    ap.add_argument("--split", choices=("test", "dev"), default="test",
                    help="test = CoNLL-2000 test; dev = last fifth of CoNLL-2000 train held out")
    ap.add_argument("--all-tags-for-unknown", action="store_true",
                    help="plain TnT suffix model: unknown words may also get closed-class tags "
                    "(default: closed_tags=PENN_CLOSED_TAGS, as the shipped EWT tagger)")
    args = ap.parse_args(argv)
    if any(not 1 <= o <= 10 for o in args.orders):
        ap.error("orders must be in 1..10 (kenlm is built with MAX_ORDER=10)")
    try:
        data_dir = args.data_dir or default_data_dir()
        summary = prepare(
            args.out, data_dir, args.orders, args.memory, args.prune, args.estimator, args.split,
            args.all_tags_for_unknown,
        )
    except (DataError, OSError, RuntimeError) as err:
        print(f"pos_data: {err}", file=sys.stderr)
        return 1
    tr, te = summary["train"], summary["test"]
    print(
        f"train: {tr['sentences']} sentences, {tr['tokens']} tokens "
        f"(treebank {tr['treebank_tokens']}, conll2000 {tr['conll2000_train_tokens']}); "
        f"test: {te['sentences']} sentences, {te['tokens']} tokens, "
        f"{te['unknown_tokens']} unknown; {len(summary['tags'])} tags"
    )
    for order, lm in summary["lms"].items():
        counts = " ".join(f"{k}:{v}" for k, v in lm["ngram_counts"].items())
        print(f"order {order}: {counts}" + ("" if lm["maxarpa"] else " (ARPA only)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
