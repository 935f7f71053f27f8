r"""Streaming reader and writer for ARPA text (and the shared line grammar of MAX-ARPA).

Why two readers: a 10M n-gram file must not become 10M Python objects, so the common path is
the compiled parser (maxarpa.native), which fills arrays sized from the header; the careful
line-by-line reader below takes over whenever the compiled one declines a file, and is the
one that names the line of a problem. Together they accept what real toolkits write:
gzip/bzip2/xz compression, any text before `\data\` (QuickLM and CMU-Cambridge headers, `#`
comments, IRSTLM's `ARPA` first line; SRILM and Sphinx skip it too), IRSTLM's `ngram 1= 12`
spacing, `-inf` and `-99` probabilities, missing backoff columns, and words in any byte
encoding.

Words are bytes, as in KenLM and SRILM. Text is decoded as UTF-8 with errors="surrogateescape":
a UTF-8 word is the str it spells, and a word in another encoding (a Latin-1 `chr\xe9tien`)
becomes a str holding surrogates that encodes back to exactly its bytes with
`word.encode("utf-8", "surrogateescape")`. Writers encode the same way, so files round-trip
byte for byte, and a query names a word by the str its bytes decode to (or by the bytes).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import math
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from maxarpa.errors import FormatError

_COUNT_RE = re.compile(r"^ngram\s+(\d+)\s*=\s*(\d+)\s*$")
_SECTION_RE = re.compile(r"^\\(\d+)-grams:\s*$")
ENCODING = "utf-8"
ERRORS = "surrogateescape"
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
    """Numbered lines of a (possibly compressed) file, decoded one line at a time (UTF-8 with
    surrogateescape); compression errors become FormatError naming the line reached."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.lineno = 0
        self._fh = open_binary(path)

    def __iter__(self) -> Iterator[str]:
        try:
            for raw in self._fh:
                self.lineno += 1
                yield raw.decode(ENCODING, ERRORS).rstrip("\r\n")
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


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_header(lines: Iterator[str], reader: LineReader) -> list[int]:
    """Skip everything before the `\\data\\` line, then read the `ngram k=count` lines."""
    first: tuple[int, str] | None = None
    for line in lines:
        if line.strip() == "\\data\\":
            break
        if first is None and line.strip():
            first = (reader.lineno, line.strip())
    else:
        if first is None:
            raise reader.error("empty file: no \\data\\ header")
        raise FormatError(reader.path, first[0], "no \\data\\ line in the file (it starts "
                          f"with {first[1][:40]!r})")
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
    """Read an ARPA file (plain or compressed) into arrays of word ids and log10 values.

    Returns:
        The vocabulary in file order and the listed n-grams of every order.

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


class _Irregular(Exception):
    """Something the compiled reader does not handle; the streaming reader takes over."""


def _read_arpa_fast(path: str) -> ArpaData | None:
    """The compiled reader (maxarpa.native); None whenever the careful reader should take over.

    Why: splitting lines into Python objects cost about 4x the file in memory and most of a
    conversion's time. Here the bytes are parsed in place, chunk by chunk, straight into
    arrays allocated once from the header's counts. Anything irregular (a bad line, an unknown
    word, a number float() would accept but the strict parser does not, a count that does not
    match) returns None, and the line-by-line reader reports the exact line, or reads it.
    """
    try:
        fh = open_binary(path)
    except FormatError:
        return None
    try:
        with fh:
            return _parse_native(fh)
    except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError, _Irregular):
        return None


def _parse_native(fh: io.BufferedIOBase) -> ArpaData | None:
    from maxarpa.native import LineParser, feed_sections

    lineno = 0
    for raw in fh:  # everything before \data\ is skipped, as SRILM and Sphinx do
        lineno += 1
        if raw.strip() == b"\\data\\":
            break
    else:
        return None
    counts: list[int] = []
    for raw in fh:
        lineno += 1
        text = raw.strip()
        if not text:
            continue
        m = _COUNT_RE.match(text.decode("ascii", "replace"))
        if not m:
            break
        if int(m.group(1)) != len(counts) + 1:
            return None
        counts.append(int(m.group(2)))
    else:
        return None
    if not counts or text != b"\\1-grams:":
        return None
    arrays = [(np.empty((c, k), np.int32), np.empty(c), np.empty(c))
              for k, c in enumerate(counts, start=1)]
    parser = LineParser()
    section = 1
    parser.start(1, False, arrays[0][0], [arrays[0][1], arrays[0][2]])

    def on_mark(mark: bytes, lineno: int) -> bool:
        nonlocal section
        if parser.filled != counts[section - 1]:
            raise _Irregular
        if mark == b"\\end\\" and section == len(counts):
            return False
        if section == len(counts) or mark != f"\\{section + 1}-grams:".encode():
            raise _Irregular
        section += 1
        ids, logp, bow = arrays[section - 1]
        parser.start(section, False, ids, [logp, bow])
        return True

    if feed_sections(fh, lineno, parser, on_mark) is not None:
        return None
    vocab = [w.decode(ENCODING, ERRORS) for w in parser.words()]
    return ArpaData(vocab, [OrderArrays(*a) for a in arrays])


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
            if not m:
                raise reader.error(f"unexpected line {text[:40]!r}")
            section = int(m.group(1))
            if section != len(orders) + 1 or section > len(counts):
                raise reader.error(f"section \\{section}-grams: out of sequence")
            continue
        if section is None:
            raise reader.error(f"n-gram line outside a section: {text[:40]!r}")
        fields = text.split()
        if len(fields) not in (section + 1, section + 2):
            words = sum(not is_number(f) for f in fields[1:])
            raise reader.error(
                f"expected {section + 1} or {section + 2} fields in a {section}-gram line "
                f"(log10 p, {section} words, optional backoff), got {len(fields)} fields "
                f"with {words} word(s): {text[:60]!r}"
            )
        logps.append(parse_log10(fields[0], reader))
        if len(fields) > section + 1 and not is_number(fields[section + 1]):
            raise reader.error(
                f"a {section}-gram line with {section + 1} words "
                f"({' '.join(fields[1:])!r}): wrong section, or a backoff that is not a number"
            )
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


def ngram_lines(path: str | Path, k: int, words: list[str], limit: int = 2) -> list[int]:
    """Line numbers of the first `limit` lines of the `k`-gram section that list `words`.

    Only used to name the lines of an error (a duplicate n-gram), so a second pass over the
    file is acceptable: the common path never pays for keeping line numbers.
    """
    reader = LineReader(path)
    found: list[int] = []
    section = 0
    for line in reader:
        text = line.strip()
        m = _SECTION_RE.match(text)
        if m:
            section = int(m.group(1))
        elif section == k and text.split()[1 : k + 1] == words:
            found.append(reader.lineno)
            if len(found) == limit:
                break
    return found


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
