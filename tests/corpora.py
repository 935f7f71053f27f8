"""Where the tests find the NLTK corpora, and the one way they skip when a corpus is absent.

Lookup order: `$STATE_UNION_ZIP` (for state_union only), `../shared/data/nltk` relative to the
repository, then each `$NLTK_DATA` entry (its `corpora/` subfolder, or the entry itself); a
corpus is `<name>.zip` or an extracted `<name>/` folder, as NLTK stores them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def corpus_roots() -> list[Path]:
    """Folders that may hold NLTK corpora, in lookup order."""
    roots = [REPO_ROOT.parent / "shared" / "data" / "nltk"]
    for entry in filter(None, os.environ.get("NLTK_DATA", "").split(os.pathsep)):
        roots += [Path(entry) / "corpora", Path(entry)]
    return roots


def find_corpus(name: str) -> Path | None:
    """`<name>.zip` or an extracted `<name>/` in the first root that has it, else None."""
    if name == "state_union" and os.environ.get("STATE_UNION_ZIP"):
        path = Path(os.environ["STATE_UNION_ZIP"])
        return path if path.exists() else None
    for root in corpus_roots():
        for cand in (root / f"{name}.zip", root / name):
            if cand.exists():
                return cand
    return None


def corpus_dir_or_skip(*names: str) -> Path:
    """The folder holding every corpus in `names` (as zips or folders); skip if none does."""
    for root in corpus_roots():
        if all((root / f"{n}.zip").exists() or (root / n).is_dir() for n in names):
            return root
    pytest.skip(f"NLTK corpora {', '.join(names)} not found in ../shared/data/nltk or "
                "$NLTK_DATA/corpora")


def needs_corpus(*names: str) -> pytest.MarkDecorator:
    """Skip marker for tests that read the NLTK corpora `names`."""
    missing = [n for n in names if find_corpus(n) is None]
    return pytest.mark.skipif(
        bool(missing),
        reason=f"NLTK corpus {', '.join(missing)} not found in ../shared/data/nltk or "
               "$NLTK_DATA/corpora",
    )
