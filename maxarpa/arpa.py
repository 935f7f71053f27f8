r"""Streaming reader and writer for ARPA text, and the one ARPA grammar both readers follow.

Why two readers: a 10M n-gram file must not become 10M Python objects, so the common path is
the compiled parser (maxarpa.native), which fills arrays sized from the header; the careful
line-by-line reader below takes over whenever the compiled one declines a line, and is the
one that names the fault and its line. They accept exactly the same language, written down
once below ("The ARPA grammar") and in docs/max-arpa-format.md: the header, counts and
section marks are parsed by the same Python functions in both, and the compiled line parser
mirrors `SPACE` and `NUMBER_RE`. Together they accept what real toolkits write:
gzip/bzip2/xz compression, any text before `\data\` (QuickLM and CMU-Cambridge headers, `#`
comments, IRSTLM's `ARPA` first line; SRILM and Sphinx skip it too), IRSTLM's `ngram 1= 12`
spacing, counts running straight into `\1-grams:` (kylm), `-inf`/`-Infinity` and `-99`
values, missing backoff columns, and words in any byte encoding.

Words are bytes, as in KenLM and SRILM. Text is decoded as UTF-8 with errors="surrogateescape":
a UTF-8 word is the str it spells, and a word in another encoding (a Latin-1 `chr\xe9tien`)
becomes a str holding surrogates that encodes back to exactly its bytes with
`word.encode("utf-8", "surrogateescape")`. Writers encode the same way, so files round-trip
byte for byte, and a query names a word by the str its bytes decode to (or by the bytes).
Messages print words as their bytes (`maxarpa.errors.shown`).
"""

from __future__ import annotations

import lzma
import math
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from maxarpa.errors import FormatError, shown

# Opening files is maxarpa.textfile's job; these names stay importable from here, where the
# other readers and arsdecode have always imported them.
from maxarpa.textfile import (  # noqa: F401
    ENCODING,
    ERRORS,
    LineReader,
    open_binary,
    read_text,
)


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


# ---- The ARPA grammar ---------------------------------------------------------------------
# Written down once, here (and in docs/max-arpa-format.md, "The ARPA grammar we accept"); the
# compiled reader (maxarpa/native/textio.hpp) mirrors SPACE and the number grammar, and both
# readers share every rule above the n-gram lines (header, counts, section marks) as the
# Python functions below. Everything is bytes: a file has no encoding until its words are
# decoded, so a line splits on ASCII whitespace only (bytes.split()), never on U+0085 or U+3000.

SPACE = b" \t\n\r\v\f"  # what separates fields: bytes.split()'s whitespace
DATA = b"\\data\\"
END = b"\\end\\"
# `ngram k=count`, spaces allowed around `=` (IRSTLM writes `ngram  1=        43`).
COUNT_RE = re.compile(rb"ngram[ \t]+([0-9]+)[ \t]*=[ \t]*([0-9]+)")
SECTION_RE = re.compile(rb"\\([0-9]+)-grams:")
# A number is an ASCII decimal float, or minus infinity as toolkits spell it (`-inf` from
# KenLM, `-Infinity` from Java writers; any case). Not Python's float(): it also reads `1_0`,
# `nan`, `infinity` and non-ASCII digits such as `١`. `-99` is an ordinary number.
NUMBER_RE = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
MINUS_INFINITY = (b"-inf", b"-infinity")  # compared in lower case


def parse_number(text: bytes) -> float:
    """The value of an ARPA number (log10), by the grammar above.

    A value too large for float64 (`1e999`) is refused rather than read as infinity; one too
    small (`1e-999`) is 0, as the correctly rounded reading says.

    Raises:
        ValueError: `text` is not a number of the grammar, or overflows float64 (the message
            says which; callers add the file and line).
    """
    if text.lower() in MINUS_INFINITY:
        return -math.inf
    if NUMBER_RE.fullmatch(text) is None:
        raise ValueError(f"expected a number, got {shown(text)}")
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {shown(text)} is out of float64's range")
    return value


def is_number(text: bytes) -> bool:
    """True when `text` is a number of the grammar (parse_number would not raise)."""
    try:
        parse_number(text)
    except ValueError:
        return False
    return True


def read_header(reader: LineReader) -> list[int]:
    """Read up to and including the `\\1-grams:` mark; the header's n-gram counts.

    Grammar: any lines, up to the first line that is `\\data\\` (after stripping whitespace);
    then `ngram k=count` lines for k = 1, 2, ... in order, with blank lines allowed anywhere;
    then `\\1-grams:`, with or without a blank line before it (kylm writes none). Both
    readers call this, so they accept the same headers and name the same fault.
    """
    first: tuple[int, bytes] | None = None
    for line in reader:
        text = line.strip()
        if text == DATA:
            break
        if first is None and text:
            first = (reader.lineno, text)
    else:
        if first is None:
            raise reader.error("empty file: no \\data\\ header")
        raise FormatError(reader.path, first[0], "no \\data\\ line in the file (it starts "
                          f"with {shown(first[1][:40])})")
    counts: list[int] = []
    for line in reader:
        text = line.strip()
        if not text:
            continue
        if text.startswith(b"\\"):
            if not counts:
                raise reader.error(f"no n-gram counts between \\data\\ and {shown(text[:40])}")
            if text != b"\\1-grams:":
                raise reader.error(f"expected \\1-grams: after the counts, got {shown(text[:40])}")
            return counts
        m = COUNT_RE.fullmatch(text)
        if not m:
            raise reader.error(f"bad count line {shown(text[:40])}")
        order, count = int(m.group(1)), int(m.group(2))
        if order != len(counts) + 1:
            raise reader.error(f"count for order {order} out of sequence")
        counts.append(count)
    raise reader.error("truncated file: the header ends before \\1-grams:")


class SectionMarks:
    """The section marks after the header, as both readers judge them.

    Grammar: a line whose first non-blank byte is a backslash is a mark; the marks are
    `\\2-grams:` ... `\\n-grams:` in order, then `\\end\\`; each mark closes the section
    before it, whose number of entries must be the header's count. Nothing after `\\end\\`
    is read.
    """

    def __init__(self, counts: list[int], path: str) -> None:
        self.counts = counts
        self.path = path
        self.k = 1  # the open section

    def close(self, mark: bytes, entries: int, lineno: int) -> bool:
        """Close the open section, which had `entries` lines, at `mark` (line `lineno`).

        Returns:
            True when `mark` opens the next section (now `self.k`), False at `\\end\\`.

        Raises:
            FormatError: a count that differs from the header's, or a mark out of place.
        """
        k, n = self.k, len(self.counts)
        if entries != self.counts[k - 1]:
            raise FormatError(self.path, lineno, f"the {k}-gram section has {entries} entries "
                              f"but the header says {self.counts[k - 1]}")
        if mark == END:
            if k != n:
                raise FormatError(self.path, lineno, f"the header lists {n} orders but "
                                  f"\\end\\ comes after the {k}-grams")
            return False
        m = SECTION_RE.fullmatch(mark)
        if m is None:
            raise FormatError(self.path, lineno, f"unexpected line {shown(mark[:40])}")
        if k == n:
            raise FormatError(self.path, lineno, f"{shown(mark)} after the last order the "
                              f"header lists ({n}); expected \\end\\")
        if m.group(1) != str(k + 1).encode():
            raise FormatError(self.path, lineno, f"{shown(mark)} out of sequence: expected "
                              f"\\{k + 1}-grams:")
        self.k = k + 1
        return True

    def truncated(self, entries: int) -> str:
        """What is missing when the file ends in the open section, after `entries` lines."""
        k, count = self.k, self.counts[self.k - 1]
        if entries == count and k == len(self.counts):
            return "truncated file: missing \\end\\"
        return (f"truncated file: it ends in the {k}-gram section, after {entries} of the "
                f"{count} entries the header lists for order {k} of {len(self.counts)}")


def read_arpa(path: str | Path) -> ArpaData:
    """Read an ARPA file (plain or compressed) into arrays of word ids and log10 values.

    Returns:
        The vocabulary in file order and the listed n-grams of every order.

    The compiled reader parses the n-gram lines; on a line it declines (a bad line, a bad
    number, an unknown or repeated word, more lines than the header says) or a compression
    error, the streaming line-by-line reader reads the file again and names the fault and
    its line. Both follow the one grammar, so a file the compiled reader declines is one the
    streaming reader refuses.

    Raises:
        FormatError: on any malformed line, naming the file and line number.
    """
    fast = _read_arpa_fast(str(path))
    if fast is not None:
        return fast
    return _read_arpa_streaming(path)


def _read_arpa_fast(path: str) -> ArpaData | None:
    """The compiled reader (maxarpa.native); None whenever the careful reader should take over.

    Why: splitting lines into Python objects cost about 4x the file in memory and most of a
    conversion's time. Here the bytes are parsed in place, chunk by chunk, straight into
    arrays allocated once from the header's counts. A bad header or section mark raises the
    FormatError the streaming reader would (the same functions judge them); a line the
    compiled parser declines returns None, and the line-by-line reader names the fault.
    """
    try:
        fh = open_binary(path)
    except FormatError:
        return None
    try:
        with fh:
            return _parse_native(LineReader(path, fh))
    except (OSError, EOFError, zlib.error, lzma.LZMAError):
        return None
    except MemoryError:  # a header count no file could hold: the careful reader counts
        return None


def _parse_native(reader: LineReader) -> ArpaData | None:
    from maxarpa.native import LineParser, feed_sections

    counts = read_header(reader)
    arrays = [(np.empty((c, k), np.int32), np.empty(c), np.empty(c))
              for k, c in enumerate(counts, start=1)]
    parser = LineParser()
    marks = SectionMarks(counts, reader.path)
    parser.start(1, False, arrays[0][0], [arrays[0][1], arrays[0][2]])

    def on_mark(mark: bytes, lineno: int) -> bool:
        if not marks.close(mark, parser.filled, lineno):
            return False
        ids, logp, bow = arrays[marks.k - 1]
        parser.start(marks.k, False, ids, [logp, bow])
        return True

    if feed_sections(reader.stream, reader.lineno, parser, on_mark) is not None:
        return None
    vocab = [w.decode(ENCODING, ERRORS) for w in parser.words()]
    return ArpaData(vocab, [OrderArrays(*a) for a in arrays])


def _read_arpa_streaming(path: str | Path) -> ArpaData:
    """The careful reader: line by line, with the line number of any problem."""
    reader = LineReader(path)
    try:
        return _parse_streaming(reader)
    finally:
        reader.close()


def _parse_streaming(reader: LineReader) -> ArpaData:
    counts = read_header(reader)
    marks = SectionMarks(counts, reader.path)
    vocab: list[bytes] = []
    word_id: dict[bytes, int] = {}
    unigram_line: list[int] = []
    orders: list[OrderArrays] = []
    ids: list[int] = []
    logps: list[float] = []
    bows: list[float] = []
    for line in reader:
        fields = line.split()
        if not fields:
            continue
        k = marks.k
        if fields[0].startswith(b"\\"):
            more = marks.close(line.strip(), len(logps), reader.lineno)
            orders.append(OrderArrays(np.asarray(ids, dtype=np.int32).reshape(len(logps), k),
                                      np.asarray(logps, dtype=np.float64),
                                      np.asarray(bows, dtype=np.float64)))
            ids, logps, bows = [], [], []
            if not more:
                return ArpaData([w.decode(ENCODING, ERRORS) for w in vocab], orders)
            continue
        if len(fields) not in (k + 1, k + 2):
            words = sum(not is_number(f) for f in fields[1:])
            raise reader.error(
                f"expected {k + 1} or {k + 2} fields in a {k}-gram line "
                f"(log10 p, {k} words, optional backoff), got {len(fields)} fields "
                f"with {words} word(s): {shown(line.strip()[:60])}"
            )
        logps.append(_number(fields[0], reader))
        if len(fields) == k + 2 and not is_number(fields[k + 1]):
            raise reader.error(
                f"a {k}-gram line with {k + 1} words ({shown(b' '.join(fields[1:]))}): "
                "wrong section, or a backoff that is not a number"
            )
        bows.append(_number(fields[k + 1], reader) if len(fields) == k + 2 else 0.0)
        if k == 1:
            word = fields[1]
            if word in word_id:
                raise reader.error(f"duplicate 1-gram {shown(word)} (first listed at line "
                                   f"{unigram_line[word_id[word]]})")
            word_id[word] = len(vocab)
            vocab.append(word)
            unigram_line.append(reader.lineno)
            ids.append(word_id[word])
        else:
            for word in fields[1 : k + 1]:
                wid = word_id.get(word)
                if wid is None:
                    raise reader.error(f"word {shown(word)} is not among the 1-grams")
                ids.append(wid)
    raise reader.error(marks.truncated(len(logps)))


def _number(text: bytes, reader: LineReader) -> float:
    try:
        return parse_number(text)
    except ValueError as err:
        raise reader.error(str(err)) from None


def ngram_lines(path: str | Path, k: int, words: list[str], limit: int = 2) -> list[int]:
    """Line numbers of the first `limit` lines of the `k`-gram section that list `words`.

    Only used to name the lines of an error (a duplicate n-gram, a value too large), so a
    second pass over the file is acceptable: the common path never pays for keeping line
    numbers. Empty when `path` is not an ARPA file (MAX-ARPA, binary).
    """
    try:
        reader = LineReader(path)
    except FormatError:
        return []
    wanted = [w.encode(ENCODING, ERRORS) for w in words]
    found: list[int] = []
    try:
        read_header(reader)  # skips a preamble's fake section marks (CMU-Cambridge)
        section = 1
        for line in reader:
            fields = line.split()
            if fields and fields[0].startswith(b"\\"):
                m = SECTION_RE.fullmatch(line.strip())
                if m is None:
                    break
                section = int(m.group(1))
            elif section == k and fields[1 : k + 1] == wanted:
                found.append(reader.lineno)
                if len(found) == limit:
                    break
    except FormatError:  # not ARPA text
        return []
    finally:
        reader.close()
    return found


def format_log10(value: float) -> str:
    """Shortest text that reads back to the same float64 (so files round-trip exactly)."""
    if value == -math.inf:
        return "-inf"
    if value == 0.0:
        return "0"
    return repr(float(value))
