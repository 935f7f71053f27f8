"""The files of a corpus run: items read from the input JSONL, results appended to the output.

Why apart from the scheduling (`client`): resuming and "never twice" are properties of these
two files alone. The input is scanned in order and every line becomes an item (a bad line
carries its error); the output is read back for the ids already done, with a truncated last
line cut off, and is then appended to by one `ChunkWriter`, one fsynced write per chunk,
under an exclusive lock so that two runs cannot interleave.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, TypeVar

from arsdecode.errors import BatchError
from arsdecode.lattice import json_constant
from maxarpa.output import atomic_output


class Item(NamedTuple):
    """One input line: `key` is the canonical JSON of its id (or `#line:N` without an id)."""

    key: str
    id: Any
    lineno: int
    text: str
    error: str | None


# ---- the output file: done ids, truncated tails, the one writer ------------------------

def _line_key(obj: Any) -> str | None:
    if not isinstance(obj, dict) or "id" not in obj:
        return None
    if obj["id"] is None:
        return f"#line:{obj['line']}" if isinstance(obj.get("line"), int) else None
    return json.dumps(obj["id"])


def read_done(path: Path, drop_errors: bool = False) -> set[str]:
    """Keys of the results already in `path`; an unterminated last line is cut off (a crash
    mid-write), so what follows is appended after whole lines only.

    With `drop_errors` (--retry-errors), the error lines are removed first, so their items
    count as not done and are run again: the file is rewritten without them, through a
    temporary file and a rename (a crash leaves the old file whole).
    """
    done: set[str] = set()
    if not path.exists():
        return done
    kept: list[bytes] = []
    dropped = 0
    with open(path, "rb+") as fh:
        end = 0
        for lineno, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n"):
                break
            end += len(raw)
            try:
                obj = json.loads(raw)
                key = _line_key(obj)
            except ValueError:  # not JSON (JSONDecodeError) or not UTF-8 (UnicodeDecodeError)
                key = None
            if key is None:
                raise BatchError(f"{path}:{lineno}: not a batch result line; refusing to append")
            if drop_errors and "error" in obj:
                dropped += 1
                continue
            if drop_errors:
                kept.append(raw)
            done.add(key)
        fh.truncate(end)
    if dropped:
        _replace(path, b"".join(kept))
    return done


def _replace(path: Path, data: bytes) -> None:
    """Write `data` to `path` whole, or not at all (maxarpa's one atomic writer), synced to
    disk and with `path`'s permissions: a resumed run's output must survive a crash as the
    old one would have."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    with atomic_output(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)


class ChunkWriter:
    """Appends whole chunks to the output with one write + fsync each; holds an exclusive lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh = self._open_locked()

    def _open_locked(self) -> BinaryIO:
        fh = open(self.path, "ab")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise BatchError(f"{self.path}: another batch run is writing this file") from None
        return fh

    def reopen(self) -> None:
        """Append to the file now at `path` (after `read_done` replaced it), locked; the old
        file's lock is held until the new one is taken."""
        fh = self._open_locked()
        self.fh.close()
        self.fh = fh

    def write(self, lines: list[str]) -> None:
        """Append `lines` whole; a failed write (a full disk) raises an OSError naming the
        file. What it left is at most an unterminated last line, which the next run cuts."""
        if lines:
            try:
                self.fh.write("".join(line + "\n" for line in lines).encode("utf-8"))
                self.fh.flush()
                os.fsync(self.fh.fileno())
            except OSError as err:
                raise OSError(err.errno, err.strerror or str(err), str(self.path)) from None

    def close(self) -> None:
        try:
            self.fh.close()
        except OSError:  # the buffered bytes of a write that already failed (and was reported)
            pass


class StreamWriter:
    """`--out -`: whole chunks to stdout, flushed (a pipe cannot be locked or fsynced)."""

    def write(self, lines: list[str]) -> None:
        if lines:
            sys.stdout.flush()
            sys.stdout.buffer.write("".join(line + "\n" for line in lines).encode("utf-8"))
            sys.stdout.buffer.flush()

    def close(self) -> None:
        pass


# ---- the input file ---------------------------------------------------------------------

def scan_input(source: Path | BinaryIO, done: set[str]) -> Iterator[Item]:
    """The items of `source` (a path, or a binary stream such as stdin) not yet in `done`, in
    input order. Lines that are not a JSON object with a string or integer id, and repeated
    ids, become items that carry their error."""
    first_line: dict[str, int] = {}
    opened = open(source, "rb") if isinstance(source, Path) else contextlib.nullcontext(source)
    with opened as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            key, item_id, error = f"#line:{lineno}", None, None
            try:
                obj = json.loads(raw, parse_constant=json_constant)
            except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, or a NaN weight
                obj, error = None, f"invalid JSON: {str(err).splitlines()[0]}"
            cand = obj.get("id") if isinstance(obj, dict) else None
            if error is not None:
                pass
            elif not isinstance(obj, dict):
                error = "expected a JSON object"
            elif isinstance(cand, bool) or not isinstance(cand, (str, int)):
                error = 'missing or bad "id" (a string or an integer)'
            elif json.dumps(cand) in first_line:
                error = f"id {cand!r} repeats line {first_line[json.dumps(cand)]}"
            else:
                key, item_id = json.dumps(cand), cand
                first_line[key] = lineno
            if key not in done:
                text = "" if error else raw.decode("utf-8")
                yield Item(key, item_id, lineno, text, error and f"line {lineno}: {error}")


Chunked = TypeVar("Chunked")


def chunked(items: Iterable[Chunked], size: int) -> Iterator[list[Chunked]]:
    """`items` in lists of `size` (the last one shorter): batch's work items, and the
    segmenter's input lines (`arsdecode segment --file`)."""
    chunk: list[Chunked] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def tapered_chunks(items: Iterable[Item], size: int, remaining: int,
                   parallel: Callable[[], int]) -> Iterator[list[Item]]:
    """Chunks of `size` items that shrink towards the end of the input (guided
    self-scheduling): each is at most 1/(2P) of the items left, P the workers now running.

    Why: a chunk is the unit a worker cannot share. With fixed chunks, the run ends with one
    worker finishing a whole last chunk while the others idle; tapered, the last chunks are
    single items and the workers finish together. `remaining` is an estimate (line count);
    it only steers the sizes.
    """
    it = iter(items)
    while True:
        want = min(size, max(1, -(-remaining // (2 * max(1, parallel())))))
        chunk = list(itertools.islice(it, want))
        if not chunk:
            return
        remaining -= len(chunk)
        yield chunk


def count_lines(path: Path) -> int:
    """Newlines in `path`, read in 1 MiB blocks (about 1 GB/s): an upper bound on its items."""
    with open(path, "rb") as fh:
        return sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b""))
