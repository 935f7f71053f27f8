"""Out-of-domain development sets for the shipped EWT tagger: a Brown sample and the WSJ sample.

Why: the shipped tagger's choices were once made on EWT dev alone, and two of them
(issue 19's) lost out of domain against NLTK TnT (issue 29 G). Tagger changes must now also
pass these development sets (experiments/pos_ood.py). They are fixed samples, read straight
from the NLTK zips in ../shared/data/nltk, and nothing of them is ever written into the
project (the NLTK corpora may not be redistributed):

* **Brown dev**: every BROWN_STEP-th sentence of the Brown corpus (`brown/c??` files in name
  order, sentence 0, 20, 40, ...). Brown's tagset is not the Penn Treebank's, so tags are
  compared on the 12 universal tags of Petrov, Das & McDonald: gold through
  universal_tagset's en-brown map, the tagger's Penn tags through its en-ptb map. As NLTK's
  `map_tag`, a tag absent from a map is X (EWT's own HYPH, NFP, ADD, GW, AFX, XX among them).
  Brown tags are upper-cased first, as NLTK's corpus reader does.
* **WSJ dev**: the NLTK Penn Treebank sample (treebank.zip, WSJ sections 00-01, traces
  dropped), Penn tags compared as they are, brackets' tags in EWT's spelling (-LRB-, -RRB-).
  Not CoNLL-2000 test (WSJ section 20), which docs/results-pos.md reports as a test set.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Sequence
from pathlib import Path

from data_prep.pos_data import DataError, read_treebank

Sentence = list[tuple[str, str]]
BROWN_STEP = 20  # Brown dev: sentences 0, 20, 40, ... of the whole corpus
UNIVERSAL_DEFAULT = "X"  # NLTK's map_tag: a tag the map does not list is X
_BROWN_FILE = re.compile(r"^brown/c[a-r]\d\d$")
_EWT_BRACKETS = {"(": "-LRB-", ")": "-RRB-"}


def _zip(nltk_dir: Path, name: str) -> Path:
    path = nltk_dir / f"{name}.zip"
    if not path.is_file():
        raise DataError(f"{path}: NLTK corpus {name!r} not found")
    return path


def universal_map(nltk_dir: Path, name: str) -> dict[str, str]:
    """Tag -> universal tag of universal_tagset/<name>.map ("en-ptb", "en-brown")."""
    path = _zip(nltk_dir, "universal_tagset")
    member = f"universal_tagset/{name}.map"
    with zipfile.ZipFile(path) as z:
        try:
            text = z.read(member).decode("utf-8")
        except KeyError:
            raise DataError(f"{path}: no {member}") from None
    out: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.strip().split("\t")
        if len(parts) != 2:
            raise DataError(f"{path}:{member}:{lineno}: expected 'tag<TAB>universal tag'")
        out[parts[0]] = parts[1]
    return out


def to_universal(tags: Sequence[str], mapping: dict[str, str]) -> list[str]:
    """`tags` on the universal tagset, as NLTK's map_tag (unlisted tags are X)."""
    return [mapping.get(t, UNIVERSAL_DEFAULT) for t in tags]


def read_brown(nltk_dir: Path) -> list[Sentence]:
    """Every sentence of the Brown corpus, (word, upper-cased Brown tag), files in name order.

    A sentence is a non-blank line of `word/tag` tokens; the tag is after the last "/"."""
    path = _zip(nltk_dir, "brown")
    out: list[Sentence] = []
    with zipfile.ZipFile(path) as z:
        for member in sorted(m for m in z.namelist() if _BROWN_FILE.match(m)):
            text = z.read(member).decode("utf-8", "replace")
            for lineno, line in enumerate(text.splitlines(), 1):
                sent: Sentence = []
                for token in line.split():
                    word, sep, tag = token.rpartition("/")
                    if not sep or not word or not tag:
                        raise DataError(f"{path}:{member}:{lineno}: bad token {token!r}")
                    sent.append((word, tag.upper()))
                if sent:
                    out.append(sent)
    if not out:
        raise DataError(f"{path}: no brown/c?? sentences")
    return out


def brown_dev(nltk_dir: Path) -> list[Sentence]:
    """The Brown development sample: every BROWN_STEP-th sentence (0, 20, 40, ...)."""
    return read_brown(nltk_dir)[::BROWN_STEP]


def wsj_dev(nltk_dir: Path) -> list[Sentence]:
    """The WSJ development set: treebank.zip (WSJ 00-01), Penn tags, EWT's bracket tags."""
    _zip(nltk_dir, "treebank")
    return [[(w, _EWT_BRACKETS.get(t, t)) for w, t in s] for s in read_treebank(nltk_dir)]
