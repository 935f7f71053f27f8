"""Shared fixtures: real KenLM-trained models, and writing ARPA text to (compressed) files.

The real models are trained once per session with lmplz on normalised State of the Union
sentences read from the NLTK corpus. A missing lmplz is an error (`make test` builds it, and
these tests are the evidence that maxarpa agrees with KenLM on real models). A missing corpus
is a skip with one clear reason: a fresh clone without the data still runs every other test
(the POS code path is covered by the committed fixture tests/data/tagged_fixture.txt).

Corpora are looked up, in order, in `$STATE_UNION_ZIP` (that one file), `../shared/data/nltk`
relative to the repository, then each `$NLTK_DATA` entry (its `corpora/` subfolder, or the
entry itself), as `<name>.zip` or an extracted `<name>/` folder, as NLTK does.
"""

from __future__ import annotations

import bz2
import gzip
import itertools
import lzma
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from corpora import find_corpus
from data_prep.lmplz import LmplzError, find_tool, train_arpa  # the root: pyproject pythonpath

# Fixtures shared by the arsdecode test modules, registered once for the whole session (a
# module-level import in each test file would rebuild the session fixtures per module).
pytest_plugins = ["ars_fixtures"]

N_TRAIN = 3000
N_HELD_OUT = 300

_TOKEN_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SENT_SPLIT_RE = re.compile(r"(?<=[.!?])\s+")


def normalise_sentences(text: str) -> list[str]:
    """Lowercase, split into sentences at . ! ?, keep simple word tokens; drop short ones."""
    out = []
    for para in text.splitlines():
        for sent in _SENT_SPLIT_RE.split(para):
            toks = _TOKEN_RE.findall(sent.lower())
            if len(toks) >= 3:
                out.append(" ".join(toks))
    return out


def read_state_union(path: Path | None = None) -> list[str]:
    """Normalised sentences of the state_union corpus; skips the test when it is absent."""
    path = path or find_corpus("state_union")
    if path is None:
        pytest.skip("NLTK corpus state_union not found (../shared/data/nltk, $NLTK_DATA/corpora "
                    "or $STATE_UNION_ZIP)")
    texts: list[bytes] = []
    if path.is_dir():
        texts = [p.read_bytes() for p in sorted(path.rglob("*.txt"))]
    else:
        with zipfile.ZipFile(path) as zf:
            texts = [zf.read(n) for n in sorted(zf.namelist()) if n.endswith(".txt")]
    sents: list[str] = []
    for data in texts:
        sents.extend(normalise_sentences(data.decode("latin-1")))
    return sents


@dataclass(frozen=True)
class RealModels:
    """Paths of the lmplz-trained models, with their training and held-out sentences."""

    paths: dict[int, Path]  # order -> ARPA path
    train: list[str]
    held_out: list[str]


@pytest.fixture(scope="session", autouse=True)
def segmentation_cache(tmp_path_factory) -> Path:
    """The shipped segmentation model's cache (binary model and trie) in the session's
    temporary folder, not the user's ~/.cache: a test run leaves nothing behind, and starts
    from an empty cache as a new user does. Subprocesses inherit it through the environment."""
    folder = tmp_path_factory.mktemp("arsdecode-cache")
    os.environ.setdefault("ARSDECODE_CACHE_DIR", str(folder))
    return Path(os.environ["ARSDECODE_CACHE_DIR"])


@pytest.fixture(scope="session")
def lmplz() -> Path:
    try:
        return find_tool("lmplz")
    except LmplzError as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="session")
def state_union_sentences() -> list[str]:
    sents = read_state_union()
    assert len(sents) >= N_TRAIN + N_HELD_OUT, len(sents)
    return sents


@pytest.fixture(scope="session")
def real_models(state_union_sentences, lmplz, tmp_path_factory) -> RealModels:
    """3-gram and 5-gram modified Kneser-Ney models trained with lmplz."""
    train = state_union_sentences[:N_TRAIN]
    # Held out: sentences from the far end of the corpus (different decades and speakers).
    held_out = state_union_sentences[-N_HELD_OUT:]
    d = tmp_path_factory.mktemp("real_models")
    paths = {}
    for order in (3, 5):
        paths[order] = train_arpa(train, order, d / f"state_union.{order}gram.arpa")
        assert paths[order].stat().st_size > 0
    return RealModels(paths=paths, train=train, held_out=held_out)


_COMPRESSORS = {
    None: lambda data: data,
    "gz": gzip.compress,
    "bz2": bz2.compress,
    "xz": lzma.compress,
}


def write_arpa_file(
    directory: Path, text: str, name: str = "model.arpa", compression: str | None = None
) -> Path:
    """Write ARPA text to `directory/name[.compression]`; compression in None/gz/bz2/xz."""
    data = _COMPRESSORS[compression](text.encode("utf-8"))
    path = directory / (name + (f".{compression}" if compression else ""))
    path.write_bytes(data)
    return path


class ArpaWriter:
    """Callable writing ARPA text to fresh, uniquely named files in one directory.

    Session-scoped so hypothesis tests (which must not use function-scoped fixtures) can use it.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._counter = itertools.count()

    def __call__(self, text: str, compression: str | None = None, name: str | None = None) -> Path:
        name = name or f"m{next(self._counter)}.arpa"
        return write_arpa_file(self.directory, text, name, compression)


@pytest.fixture(scope="session")
def write_arpa(tmp_path_factory) -> ArpaWriter:
    return ArpaWriter(tmp_path_factory.mktemp("arpa"))


# Fixtures that train or read real models (lmplz on a corpus, or the NLTK POS corpora): a test
# that uses one is slow by construction, so it is marked here rather than test by test.
SLOW_FIXTURES = frozenset({"real_models", "real_lms", "cli_models", "pos_models", "split"})


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
