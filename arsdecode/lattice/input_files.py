"""Reading input files: their names in errors, their bytes (stdin, gzip), their UTF-8 text, and
the compression suffix that hides the format suffix.

Why a module of its own: every reader of the lattice layer (confusion-network JSON, JSON word
lattices, SLF, OpenFst text and symbol tables, disambig's map and text files) and the CLI's
text inputs read the same way and must report a bad file the same way, in one line naming it.
These functions lived in the confusion-network module, so reading an SLF file bounced through
confusion networks; here they depend on nothing but the error tree.
"""

from __future__ import annotations

import gzip
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from arsdecode.errors import LatticeError
from maxarpa.output import COMPRESSED_SUFFIXES


def input_name(path: str | Path) -> str:
    """How errors name an input: its path, or <stdin> for '-'."""
    return "<stdin>" if str(path) == "-" else str(path)


def without_compression_suffix(name: str) -> str:
    """`name` without one trailing compression suffix (.gz, .bz2, .xz: maxarpa.output's list),
    so that the suffix before it can tell the format ("a.slf.gz" -> "a.slf")."""
    for compressed in COMPRESSED_SUFFIXES:
        if name.endswith(compressed):
            return name[: -len(compressed)]
    return name


def open_input(path: str | Path) -> BinaryIO:
    """The bytes of an input as a binary stream: stdin's for '-', decompressed for a name
    ending in .gz, else the file's. Why one opener: every reader, whole-file or line by line,
    must agree on what '-' and .gz mean."""
    if str(path) == "-":
        return sys.stdin.buffer
    if str(path).endswith(".gz"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def read_input_lines(path: str | Path, what: str = "text") -> Iterator[str]:
    """The lines of an input file as they are read (for inputs too large to hold), cut as
    str.splitlines would cut the whole text. A line that is not UTF-8 stops the run with a
    one-line LatticeError naming the file and the line; an unreadable or corrupt file names
    the file and `what` it should hold, as read_input_text does."""
    name = input_name(path)
    try:
        with open_input(path) as fh:
            for number, raw in enumerate(fh, 1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise LatticeError(f"{name}:{number}: not UTF-8 {what}: byte "
                                       f"0x{raw[err.start]:02x}") from None
                yield from text.splitlines()  # "a\v\n" is two lines, as in the whole text
    except OSError as err:  # gzip.BadGzipFile is an OSError too
        reason = err.strerror or str(err).splitlines()[0]
        raise LatticeError(f"{name}: cannot read {what}: {reason}") from None
    except EOFError:
        raise LatticeError(f"{name}: cannot read {what}: truncated gzip file") from None


def read_input_text(path: str | Path, what: str, *, bytes_ok: bool = False) -> str:
    """The UTF-8 text of an input file ('-' for stdin; gzip-compressed if its name ends in
    .gz). Any problem is a one-line LatticeError naming the file and `what` it should hold
    ("lattice", "map", "text"): lattice JSON and disambig's map and text files share it.
    `bytes_ok` (disambig's map and text, whose words are bytes as an ARPA file's are): bytes
    that are not UTF-8 read as maxarpa reads ARPA words (surrogateescape), so the same bytes
    are the same word in the map, the text and the model; gzip bytes are still refused."""
    name = input_name(path)
    try:
        with open_input(path) as fh:
            data = fh.read()
    except OSError as err:  # gzip.BadGzipFile is an OSError too
        reason = err.strerror or str(err).splitlines()[0]
        raise LatticeError(f"{name}: cannot read {what}: {reason}") from None
    except EOFError:
        raise LatticeError(f"{name}: cannot read {what}: truncated gzip file") from None
    if bytes_ok and data[:2] != b"\x1f\x8b":
        return data.decode("utf-8", "surrogateescape")
    return utf8_text(data, name, LatticeError, gzip_hint=True)


def utf8_text(data: bytes, name: str, error: type[Exception], gzip_hint: bool = False) -> str:
    """`data` (the bytes of input `name`) decoded as UTF-8; otherwise `error`, one line naming
    the input, the line and the offending byte, not a decoding traceback (nor, on stdin, silent
    U+FFFD). Lattice files and `tag --file` text share it; `gzip_hint` (for inputs that are
    read compressed when named *.gz) says so when the bytes are gzip data."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        gz = gzip_hint and data[:2] == b"\x1f\x8b"
        hint = " (gzip data: name the file *.gz)" if gz else ""
        line = data.count(b"\n", 0, err.start) + 1
        raise error(f"{name}:{line}: not UTF-8 text: byte 0x{data[err.start]:02x} at offset "
                    f"{err.start}{hint}") from None
