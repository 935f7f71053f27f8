"""The shipped segmentation model in a fast form, built once per machine into a cache folder.

Why: the model ships as gzipped MAX-ARPA text (8.7 MB; its uncompressed binary is 42 MB,
too much for the wheel), and parsing it, then indexing its 243,000 words by surface form,
took most of a short `arsdecode segment` run. The first use writes the maxarpa binary
(`maxarpa.convert(..., binary=True)`, memory-mapped afterwards) and the vocabulary's trie
(`compiled.TrieIndex`) into the cache folder, each through a temporary file and an atomic
rename, so concurrent first runs never see half a file; later runs load both at disk speed.

Exactness: the binary carries the digest of its numbers, which `maxarpa.load` checks, so a
cached model scores exactly as the text it came from (tests/test_segment_cache.py compares
every array and the scores). Cache names hold a hash of the model file's bytes (and, for the
trie, of the code that makes it), so a changed model or surface rule is a new entry.

Folder: $ARSDECODE_CACHE_DIR, else $XDG_CACHE_HOME/arsdecode, else ~/.cache/arsdecode. When
it cannot be written, the model is loaded from its text as before (nothing fails).
"""

from __future__ import annotations

import hashlib
import inspect
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import maxarpa
from arsdecode.tasks.segment.compiled import TrieIndex
from arsdecode.tasks.segment.lattice import SurfaceIndex
from maxarpa import Config
from maxarpa.output import atomic_output

CACHE_ENV = "ARSDECODE_CACHE_DIR"


def cache_dir() -> Path:
    """The cache folder (module docstring); not created here."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "arsdecode"


def _digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()[:20]


def _build(target: Path, write: Callable[[Path], None]) -> None:
    """Write `target` through the package's one atomic writer (`maxarpa.output.atomic_output`:
    a temporary file beside it, renamed when complete, removed on an error or a stop, and the
    temporaries of dead writers cleared first), creating the cache folder."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(target) as tmp:
        write(tmp)


def cached_files(source: Path) -> tuple[Path, Path] | None:
    """(binary model, trie) for the model text `source`, built into the cache folder on
    first use (with the default `Config`: a caller's is applied when the binary is loaded);
    None when the folder cannot be written (the caller loads the text)."""
    try:
        folder = cache_dir() / "segment"
        key = _digest(source)
        code = _digest(Path(inspect.getfile(SurfaceIndex)), Path(inspect.getfile(TrieIndex)))
        stem = source.name.split(".")[0]
        binary = folder / f"{stem}-{key}.npz"
        trie = folder / f"{stem}-{key}-{code}.trie.npz"
        if not binary.is_file():
            def write_binary(tmp: Path) -> None:
                maxarpa.convert(source, tmp, binary=True)

            _build(binary, write_binary)
        if not trie.is_file():
            model = maxarpa.load(binary, mmap=True)
            index = TrieIndex.of(SurfaceIndex.of_model(model).words, model.vocab)
            _build(trie, index.save)
        return binary, trie
    except OSError:
        return None


def load_shipped(source: Path, config: Config | None = None
                 ) -> tuple[maxarpa.Model, TrieIndex | None]:
    """The model `source` and its trie: from the cache when it can be had, else the model
    parsed from its text (and None: the segmenter then indexes it itself)."""
    files = cached_files(source)
    if files is not None:
        try:
            return maxarpa.load(files[0], mmap=True, config=config), TrieIndex.load(files[1])
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile,
                maxarpa.FormatError):
            for f in files:  # a damaged entry: dropped, rebuilt next time
                f.unlink(missing_ok=True)
    return maxarpa.load(source, config=config), None
