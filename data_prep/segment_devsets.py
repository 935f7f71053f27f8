"""Development and test sets for word segmentation, from text the segmentation model never saw.

Usage:
    python -m data_prep.segment_devsets --out work/segment/sets [--data-dir DIR] [--ewt DIR]

Three kinds of input, each as JSON lines {"input": raw text, "words": the gold words}:

* hashtags: 2-4 consecutive words of a Brown corpus sentence (NLTK; not in the model's
  training text) ending in a noun, written as people write hashtags -- "#" and camel case
  ("#GrandJuryInvestigation"), all lower-case, the text's own case, and a fifth of them
  with a number after ("#election1961": the number is a word of the gold);
* urls: "www." or "http://", 1-3 words run together, ".com" / ".org" / ".net", and half of
  them a path of 1-3 more run-together words ("www.grandjury.org/cityofatlanta"); every
  piece is a gold word ("www", "com", ...);
* sentences: UD English Web Treebank sentences (its dev or test part: the model trained on
  its train part), their words (split at spaces, hyphens and slashes) as surface forms run
  together, lower-cased, punctuation removed.

Dev and test are disjoint: Brown's files alternate (even-numbered files for dev, odd for test)
and EWT's dev and test parts are separate. Every draw is seeded, so a rebuild is identical.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from arsdecode.tasks.segment.lattice import surface_form
from data_prep.corpus import find_corpus
from data_prep.ewt import default_ewt_dir, ewt_file

SIZES = {"dev": {"hashtags": 600, "urls": 300, "sentences": 500},
         "test": {"hashtags": 1100, "urls": 3000, "sentences": 1000}}
"""Items per set. The URL test set has 3,000 items: at 500, its standard error (about 0.8
points at 96% accuracy) was as large as the margin it had to show between two segmenters."""
_WORD = re.compile(r"^[A-Za-z]+$")


def brown_sentences(data_dir: Path | None, part: str) -> list[list[tuple[str, str]]]:
    """(word, tag) sentences of Brown's even (dev) or odd (test) files, in file order."""
    path = find_corpus("brown", data_dir)
    out = []
    with zipfile.ZipFile(path) as z:
        names = sorted(n for n in z.namelist() if re.fullmatch(r"brown/c[a-r]\d\d", n))
        for k, name in enumerate(names):
            if (k % 2 == 0) != (part == "dev"):
                continue
            for line in z.read(name).decode("utf-8").splitlines():
                tokens = [t.rsplit("/", 1) for t in line.split() if "/" in t]
                if tokens:
                    out.append([(w, tag) for w, tag in tokens])
    return out


def _windows(sentences: list[list[tuple[str, str]]], rng: np.random.Generator, n: int,
             lengths: Sequence[int]) -> list[list[str]]:
    """n distinct word windows of the given lengths, all letters, ending in a noun."""
    seen: set[tuple[str, ...]] = set()
    out: list[list[str]] = []
    while len(out) < n:
        s = sentences[int(rng.integers(len(sentences)))]
        k = int(rng.choice(lengths))
        if len(s) < k:
            continue
        i = int(rng.integers(len(s) - k + 1))
        window = s[i:i + k]
        words = [w for w, _ in window]
        if not all(_WORD.match(w) for w in words) or not window[-1][1].startswith(("nn", "np")):
            continue
        key = tuple(w.lower() for w in words)
        if key not in seen:
            seen.add(key)
            out.append(words)
    return out


def _camel(word: str) -> str:
    return word if word.isupper() and len(word) > 1 else word[:1].upper() + word[1:].lower()


def hashtags(sentences: list[list[tuple[str, str]]], n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng([seed, 1])
    out = []
    for words in _windows(sentences, rng, n, (2, 2, 3, 3, 4)):
        style = rng.choice(["camel", "camel", "lower", "asis"])
        shown = [_camel(w) if style == "camel" else w.lower() if style == "lower" else w
                 for w in words]
        gold = [w.lower() for w in words]
        if rng.random() < 0.2:
            number = str(int(rng.integers(1950, 2025)) if rng.random() < 0.6
                         else int(rng.integers(1, 100)))
            shown.append(number)
            gold.append(number)
        out.append({"input": "#" + "".join(shown), "words": gold})
    return out


def urls(sentences: list[list[tuple[str, str]]], n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng([seed, 2])
    domains = _windows(sentences, rng, n, (1, 2, 2, 3))
    paths = _windows(sentences, rng, n, (1, 2, 3))
    out = []
    for domain, path in zip(domains, paths, strict=True):
        scheme = ["www"] if rng.random() < 0.5 else ["http"]
        tld = str(rng.choice(["com", "com", "org", "net"]))
        dom = [w.lower() for w in domain]
        tail = [w.lower() for w in path] if rng.random() < 0.5 else []
        raw = ("www." if scheme == ["www"] else "http://") + "".join(dom) + "." + tld
        if tail:
            raw += "/" + "".join(tail)
        out.append({"input": raw, "words": scheme + dom + [tld] + tail})
    return out


def ewt_sentences(ewt_dir: Path, part: str, n: int, seed: int) -> list[dict]:
    """n sentences of 3-40 words from EWT's `part`, spaces and punctuation removed."""
    path = ewt_file(ewt_dir, part)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        texts = [line[len("# text = "):].strip() for line in f if line.startswith("# text = ")]
    pool = []
    for text in texts:
        words = [s for s in map(surface_form, re.split(r"[\s/-]+", text)) if s]
        if 3 <= len(words) <= 40:
            pool.append(words)
    rng = np.random.default_rng([seed, 3])
    chosen = sorted(rng.choice(len(pool), size=min(n, len(pool)), replace=False).tolist())
    return [{"input": "".join(pool[k]), "words": pool[k]} for k in chosen]


def build(out: Path, data_dir: Path | None, ewt_dir: Path, seed: int = 0) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    summary: dict = {}
    for part, sizes in SIZES.items():
        brown = brown_sentences(data_dir, part)
        sets = {"hashtags": hashtags(brown, sizes["hashtags"], seed),
                "urls": urls(brown, sizes["urls"], seed),
                "sentences": ewt_sentences(ewt_dir, part, sizes["sentences"], seed)}
        for kind, rows in sets.items():
            (out / f"{part}.{kind}.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
            summary[f"{part}.{kind}"] = len(rows)
    return summary


def read_set(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m data_prep.segment_devsets",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--ewt", type=Path, default=None)
    args = ap.parse_args(argv)
    print(json.dumps(build(args.out, args.data_dir, args.ewt or default_ewt_dir())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
