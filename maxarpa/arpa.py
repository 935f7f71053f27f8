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
from typing import BinaryIO, TextIO

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


def open_binary(path: str | Path) -> BinaryIO:
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


def open_text(path: str | Path) -> TextIO:
    """Text view of `open_binary` (UTF-8)."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8", errors="strict", newline=None)


def read_text(path: str | Path) -> str:
    """The whole decompressed text; a decoding problem names the line it is on."""
    path = str(path)
    try:
        with open_binary(path) as fh:
            data = fh.read()
    except (OSError, EOFError, zlib.error, lzma.LZMAError) as err:
        raise FormatError(path, None, f"corrupt or truncated compressed data ({err})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise FormatError(path, line, "not UTF-8 text") from None


class LineReader:
    """Numbered lines of a (possibly compressed) file, decoded one line at a time so that a
    decoding error names its own line; compression errors become FormatError."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.lineno = 0
        self._fh = open_binary(path)

    def __iter__(self) -> Iterator[str]:
        try:
            for raw in self._fh:
                self.lineno += 1
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise FormatError(self.path, self.lineno, "not UTF-8 text") from None
                yield line.rstrip("\r\n")
        except (OSError, EOFError, zlib.error, lzma.LZMAError) as err:
            raise FormatError(
                self.path, self.lineno + 1, f"corrupt or truncated compressed data ({err})"
            ) from None
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

    A fast path splits whole sections at once when every line of a section has the same
    number of fields; anything unusual (mixed backoff columns, a bad line, a bad encoding)
    falls back to the streaming line-by-line reader, which reports the exact line.

    Raises:
        FormatError: on any malformed line, naming the file and line number.
    """
    fast = _read_arpa_fast(str(path))
    if fast is not None:
        return fast
    return _read_arpa_streaming(path)


_MARK_RE = re.compile(r"^\\(?:(\d+)-grams:|end\\)[ \t]*$", re.M)
_CHUNK = 200_000


def _read_arpa_fast(path: str) -> ArpaData | None:
    """Whole-section parsing; None whenever the careful reader should take over."""
    try:
        text = read_text(path)
    except FormatError:  # the streaming reader reports it, with the line
        return None
    marks = list(_MARK_RE.finditer(text))
    if not marks or marks[-1].group(1) is not None:
        return None
    head = text[: marks[0].start()].split("\n")
    counts: list[int] = []
    seen_data = False
    for line in head:
        t = line.strip()
        if not t:
            continue
        if not seen_data:
            if t != "\\data\\":
                return None
            seen_data = True
            continue
        m = _COUNT_RE.match(t)
        if not m or int(m.group(1)) != len(counts) + 1:
            return None
        counts.append(int(m.group(2)))
    if len(marks) != len(counts) + 1:
        return None
    vocab: list[str] = []
    word_id: dict[str, int] = {}
    orders: list[OrderArrays] = []
    for k, (mark, nxt) in enumerate(zip(marks, marks[1:]), start=1):
        if mark.group(1) is None or int(mark.group(1)) != k:
            return None
        lines = [ln for ln in text[mark.end() : nxt.start()].split("\n") if ln.strip()]
        if len(lines) != counts[k - 1]:
            return None
        ids = np.empty((len(lines), k), dtype=np.int32)
        logp = np.empty(len(lines))
        bow = np.zeros(len(lines))
        for lo in range(0, len(lines), _CHUNK):
            chunk = lines[lo : lo + _CHUNK]
            flat = "\n".join(chunk).split()
            if len(flat) == (k + 2) * len(chunk):
                width = k + 2
            elif len(flat) == (k + 1) * len(chunk):
                width = k + 1
            else:
                return None
            hi = lo + len(chunk)
            try:
                logp[lo:hi] = np.array(flat[0::width], dtype=np.float64)
                if width == k + 2:
                    bow[lo:hi] = np.array(flat[k + 1 :: width], dtype=np.float64)
                if k == 1:
                    words = flat[1::width]
                    for w in words:
                        if w in word_id:
                            return None
                        word_id[w] = len(vocab)
                        vocab.append(w)
                    ids[lo:hi, 0] = np.arange(len(vocab) - len(words), len(vocab))
                else:
                    for j in range(k):
                        ids[lo:hi, j] = lookup_ids(flat[1 + j :: width], word_id)
            except (ValueError, KeyError):
                return None
        if np.isnan(logp).any() or np.isnan(bow).any() or (logp == np.inf).any():
            return None
        if (bow == np.inf).any():
            return None
        orders.append(OrderArrays(ids, logp, bow))
    return ArpaData(vocab, orders)


def _read_arpa_streaming(path: str | Path) -> ArpaData:
    """The careful reader: line by line, with the line number of any problem."""
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


def lookup_ids(words: list[str], word_id: dict[str, int]) -> np.ndarray:
    """Word ids of a column of words; KeyError on an unknown word."""
    return np.fromiter(map(word_id.__getitem__, words), dtype=np.int32, count=len(words))


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
