"""Opening model text: plain, gzip, bzip2 or xz bytes, chosen by magic bytes, read whole or
as numbered byte lines whose compression errors name the line reached.

Why its own module: every text reader (ARPA, MAX-ARPA, the command line's stdin and training
text) opens files this one way, and none of them needs the ARPA grammar to do it.
Words are bytes until decoded once as UTF-8 with surrogateescape (ENCODING, ERRORS; see
maxarpa.arpa), so no file is ever refused for its encoding.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from collections.abc import Iterator
from pathlib import Path

from maxarpa.errors import FormatError

ENCODING = "utf-8"
ERRORS = "surrogateescape"
_MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz"}


def open_binary(path: str | Path) -> io.BufferedIOBase:
    """Open plain, gzip, bzip2 or xz bytes, chosen by magic bytes rather than by file name."""
    path = str(path)
    try:
        with open(path, "rb") as raw:
            head = raw.read(6)
    except OSError as err:
        raise FormatError(path, None, f"cannot open: {err.strerror}") from None
    kind = next((k for m, k in _MAGIC.items() if head.startswith(m)), "plain")
    if kind == "gzip":
        return gzip.open(path, "rb")
    if kind == "bzip2":
        return bz2.open(path, "rb")
    if kind == "xz":
        return lzma.open(path, "rb")
    return open(path, "rb")


def read_text(path: str | Path) -> str:
    """The whole decompressed text (UTF-8 with surrogateescape: never a decoding error)."""
    path = str(path)
    try:
        with open_binary(path) as fh:
            data = fh.read()
    except (OSError, EOFError, zlib.error, lzma.LZMAError) as err:
        raise FormatError(path, None, f"corrupt or truncated compressed data ({err})") from None
    return data.decode(ENCODING, ERRORS)


class LineReader:
    """Numbered byte lines of a (possibly compressed) file, one at a time; compression errors
    become FormatError naming the line reached. Lines are bytes: the grammar splits on ASCII
    whitespace only, and words are decoded once, at the end."""

    def __init__(self, path: str | Path, fh: io.BufferedIOBase | None = None) -> None:
        self.path = str(path)
        self.lineno = 0
        self.stream = fh if fh is not None else open_binary(path)

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        try:
            raw = self.stream.readline()
        except (OSError, EOFError, zlib.error, lzma.LZMAError) as err:
            raise FormatError(
                self.path, self.lineno + 1, f"corrupt or truncated compressed data ({err})"
            ) from None
        if not raw:
            raise StopIteration
        self.lineno += 1
        return raw

    def close(self) -> None:
        self.stream.close()

    def error(self, message: str) -> FormatError:
        return FormatError(self.path, self.lineno, message)
