"""Streaming reader and writer for ARPA text (and the shared line grammar of MAX-ARPA).

Why streaming with flat lists: a 10M n-gram file must not become 10M Python tuples; each
section is read into flat lists and turned into numpy arrays once, at the section's end.
The reader accepts what real toolkits write: gzip/bzip2/xz compression, IRSTLM's leading blank
lines and `ngram 1= 12` spacing, `-inf` and `-99` probabilities, and missing backoff columns.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import math
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np

from maxarpa.errors import FormatError

_COUNT_RE = re.compile(r"^ngram\s+(\d+)\s*=\s*(\d+)\s*$")
_SECTION_RE = re.compile(r"^\\(\d+)-(grams|blanks):\s*$")
_MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz"}


@dataclass(frozen=True)
class OrderArrays:
    """The n-grams of one order as arrays: `ids[i]` are the words, oldest first (log10)."""

    ids: np.ndarray  # (m, k) int32
    log10p: np.ndarray  # (m,) float64
    log10bow: np.ndarray  # (m,) float64, 0 where the column is missing


@dataclass(frozen=True)
class ArpaData:
    """A parsed ARPA file: vocabulary (unigram order) and the listed n-grams of every order."""

    vocab: list[str]
    orders: list[OrderArrays]  # orders[k-1] holds the k-grams


def open_text(path: str | Path) -> TextIO:
    """Open plain, gzip, bzip2 or xz text, chosen by magic bytes rather than by file name."""
    path = str(path)
    try:
        with open(path, "rb") as raw:
            head = raw.read(6)
    except OSError as err:
        raise FormatError(path, None, f"cannot open: {err.strerror}") from None
    kind = next((k for m, k in _MAGIC.items() if head.startswith(m)), "plain")
    if kind == "gzip":
        stream = gzip.open(path, "rb")
    elif kind == "bzip2":
        stream = bz2.open(path, "rb")
    elif kind == "xz":
        stream = lzma.open(path, "rb")
    else:
        stream = open(path, "rb")
    return io.TextIOWrapper(stream, encoding="utf-8", errors="strict", newline=None)


class LineReader:
    """Numbered lines of a (possibly compressed) text file; decoding errors become FormatError."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.lineno = 0
        self._fh = open_text(path)

    def __iter__(self) -> Iterator[str]:
        try:
            for line in self._fh:
                self.lineno += 1
                yield line.rstrip("\r\n")
        except (OSError, EOFError, zlib.error, lzma.LZMAError) as err:
            raise FormatError(
                self.path, self.lineno + 1, f"corrupt or truncated compressed data ({err})"
            ) from None
        except UnicodeDecodeError:
            raise FormatError(self.path, self.lineno + 1, "not UTF-8 text") from None
        finally:
            self._fh.close()

    def error(self, message: str) -> FormatError:
        return FormatError(self.path, self.lineno, message)


def parse_log10(text: str, reader: LineReader) -> float:
    """Parse a log10 value; `-inf` is minus infinity, NaN and +inf are errors."""
    try:
        value = float(text)
    except ValueError:
        raise reader.error(f"expected a number, got {text!r}") from None
    if math.isnan(value) or value == math.inf:
        raise reader.error(f"value {text!r} is not allowed")
    return value


def read_header(lines: Iterator[str], reader: LineReader) -> list[int]:
    """Skip leading blank lines, read `\\data\\` and the `ngram k=count` lines."""
    for line in lines:
        if line.strip():
            if line.strip() != "\\data\\":
                raise reader.error(f"expected \\data\\, got {line.strip()[:40]!r}")
            break
    else:
        raise reader.error("empty file: no \\data\\ header")
    counts: list[int] = []
    for line in lines:
        text = line.strip()
        if not text:
            if counts:
                break
            continue
        m = _COUNT_RE.match(text)
        if not m:
            raise reader.error(f"bad count line {text[:40]!r}")
        order, count = int(m.group(1)), int(m.group(2))
        if order != len(counts) + 1:
            raise reader.error(f"count for order {order} out of sequence")
        counts.append(count)
    if not counts:
        raise reader.error("no n-gram counts in header")
    return counts


def read_arpa(path: str | Path) -> ArpaData:
    """Read an ARPA file into arrays.

    Raises:
        FormatError: on any malformed line, naming the file and line number.
    """
    reader = LineReader(path)
    lines = iter(reader)
    counts = read_header(lines, reader)
    vocab: list[str] = []
    word_id: dict[str, int] = {}
    orders: list[OrderArrays] = []
    section: int | None = None
    ids: list[int] = []
    logps: list[float] = []
    bows: list[float] = []

    def close_section() -> None:
        k = len(orders) + 1
        if len(logps) != counts[k - 1]:
            raise reader.error(
                f"the {k}-gram section has {len(logps)} entries but the header says "
                f"{counts[k - 1]}"
            )
        orders.append(
            OrderArrays(
                np.asarray(ids, dtype=np.int32).reshape(len(logps), k),
                np.asarray(logps, dtype=np.float64),
                np.asarray(bows, dtype=np.float64),
            )
        )

    ended = False
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if text.startswith("\\"):
            if section is not None:
                close_section()
                ids, logps, bows = [], [], []
            if text == "\\end\\":
                ended = True
                break
            m = _SECTION_RE.match(text)
            if not m or m.group(2) != "grams":
                raise reader.error(f"unexpected line {text[:40]!r}")
            section = int(m.group(1))
            if section != len(orders) + 1 or section > len(counts):
                raise reader.error(f"section \\{section}-grams: out of sequence")
            continue
        if section is None:
            raise reader.error(f"n-gram line outside a section: {text[:40]!r}")
        fields = text.split()
        if len(fields) not in (section + 1, section + 2):
            raise reader.error(
                f"expected {section + 1} or {section + 2} fields in a {section}-gram line, "
                f"got {len(fields)}"
            )
        logps.append(parse_log10(fields[0], reader))
        bows.append(parse_log10(fields[section + 1], reader) if len(fields) > section + 1 else 0.0)
        if section == 1:
            word = fields[1]
            if word in word_id:
                raise reader.error(f"duplicate unigram {word!r}")
            word_id[word] = len(vocab)
            vocab.append(word)
            ids.append(word_id[word])
        else:
            for word in fields[1 : section + 1]:
                wid = word_id.get(word)
                if wid is None:
                    raise reader.error(f"word {word!r} is not among the 1-grams")
                ids.append(wid)
    if not ended:
        raise reader.error("truncated file: missing \\end\\")
    if len(orders) != len(counts):
        raise reader.error(f"header lists {len(counts)} orders but the file has {len(orders)}")
    return ArpaData(vocab, orders)


def format_log10(value: float) -> str:
    """Shortest text that reads back to the same float64 (so files round-trip exactly)."""
    if value == -math.inf:
        return "-inf"
    if value == 0.0:
        return "0"
    return repr(float(value))


def atomic_writer(path: str | Path) -> tuple[io.TextIOWrapper, Path]:
    """Open a temporary file beside `path`; the caller renames it with `os.replace` on success."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    return open(tmp, "w", encoding="utf-8", newline="\n"), tmp
