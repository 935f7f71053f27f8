"""Prepare the POS-tagging experiment: train/test files, tag n-gram LMs, emission model.

Usage: python -m data_prep.pos_data --out work/pos [--data-dir DIR] [--orders 2 3 ... 9]

Data (NLTK corpus zips; licences in the .xml files beside them, nothing derived is committed):

* train = the NLTK 10% WSJ sample of the Penn Treebank (treebank.zip, sections 00-01) plus
  CoNLL-2000 train.txt (WSJ sections 15-18); test = CoNLL-2000 test.txt (section 20). The
  sections are disjoint.
* Treebank sentences are read from combined/*.mrg, not tagged/*.pos: in the .pos files blank
  lines do not mark sentence boundaries (chunks of one sentence are split by them), while each
  .mrg tree is exactly one sentence. -NONE- leaves (traces) are dropped. The .mrg files write
  brackets as words -LRB-/-RRB-/-LCB-/-RCB- with tags -LRB-/-RRB-; CoNLL-2000 has the same
  words but tags "(" and ")", so the treebank tags are mapped to "(" and ")".
* Caveat: CoNLL-2000 POS tags were produced by the Brill tagger, not by the treebank
  annotators (see its README), so the test "gold" standard is itself a tagger's output and
  the training data mixes gold (treebank) and Brill (CoNLL) tags.

Tag LMs: lmplz modified Kneser-Ney over tag sequences (one sentence per line), orders as
requested, with ``--discount_fallback`` (no tag occurs once, so lmplz cannot estimate the
unigram discounts; only order 1 falls back, higher orders get their own estimates). Written
as tags.<order>.arpa, plus tags.<order>.maxarpa when the maxarpa package's converter exists.

Alternatives tried (exact Viterbi, our emissions, CoNLL-2000 test, accuracy all tokens):
fallback 0.1/0.2/0.3 instead of 0.5/1/1.5 changes nothing at order 3 (97.08%). Pruning
singletons of order >= 3 (``--prune 0 0 1``) helps high orders a little (order 5: 96.74 ->
96.86%, order 9: 96.64 -> 96.81%) but none beats the unpruned trigram (97.08%), so the default
is unpruned; ``--prune`` is available for experiments.
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

from arsdecode.tasks.pos import TnTEmissions, write_tagged
from data_prep.lmplz import REPO_ROOT, train_arpa

Sentence = list[tuple[str, str]]

TREEBANK_TAG_MAP = {"-LRB-": "(", "-RRB-": ")"}
# lmplz's discount fallback (D1 D2 D3+), used when its own estimates are invalid.
DISCOUNT_FALLBACK = ("0.5", "1", "1.5")
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


def prepare(
    out: Path,
    data_dir: Path,
    orders: Sequence[int],
    memory: str = "1G",
    prune: Sequence[int] = (),
) -> dict:
    """Write train/test files, tag LMs and the emission model under `out`; return a summary."""
    out.mkdir(parents=True, exist_ok=True)
    treebank = read_treebank(data_dir)
    conll_train = read_conll2000(data_dir, "train")
    test = read_conll2000(data_dir, "test")
    train = treebank + conll_train
    n_train = write_tagged(train, out / "train.tsv")
    n_test = write_tagged(test, out / "test.tsv")
    tag_lines = [" ".join(t for _, t in s) for s in train]
    (out / "train.tags").write_text("\n".join(tag_lines) + "\n", encoding="utf-8")

    lmplz_args = ["--discount_fallback", *DISCOUNT_FALLBACK]
    if prune:
        lmplz_args += ["--prune", *map(str, prune)]
    t0 = time.perf_counter()
    emissions = TnTEmissions.train(train)
    emissions.save(out / "emissions.json.gz")
    vocab = emissions.vocabulary
    test_unknown = sum(w not in vocab for s in test for w, _ in s)
    summary: dict = {
        "data_dir": str(data_dir),
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
        "lmplz_args": lmplz_args,
        "lms": {},
    }
    tty = sys.stderr.isatty()
    for order in tqdm(orders, desc="tag LMs", disable=not tty):
        arpa = train_arpa(
            tag_lines,
            order,
            out / f"tags.{order}.arpa",
            extra_args=lmplz_args,
            memory=memory,
        )
        maxarpa = out / f"tags.{order}.maxarpa"
        entry = {
            "arpa": str(arpa),
            "ngram_counts": arpa_ngram_counts(arpa),
            "maxarpa": str(maxarpa) if convert_maxarpa(arpa, maxarpa) else None,
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
    ap.add_argument("--prune", type=int, nargs="+", default=[], help="lmplz --prune thresholds")
    args = ap.parse_args(argv)
    if any(not 1 <= o <= 10 for o in args.orders):
        ap.error("orders must be in 1..10 (kenlm is built with MAX_ORDER=10)")
    try:
        data_dir = args.data_dir or default_data_dir()
        summary = prepare(args.out, data_dir, args.orders, args.memory, args.prune)
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
