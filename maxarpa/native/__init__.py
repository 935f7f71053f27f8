"""maxarpa's compiled text reader and writer (built at install time from _textio.pyx), and the
loop that feeds a file to the reader in chunks.

Why compiled: parsing and formatting 5M n-gram lines through Python objects was most of a
conversion's time and memory (docs/performance.md section 6). Python keeps what is rare and
needs good messages: headers, section marks, and the report of a bad line.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

try:
    from maxarpa.native._textio import (
        AT_MARK,
        DECLINED,
        FAILED,
        LineParser,
        format_lines,
        first_occurrences,
        parents_in_order,
        prefix_rows_sorted,
        repr_log10,
    )
except ImportError as err:  # pragma: no cover - only without a build
    raise ImportError(
        "maxarpa's compiled text reader is not built; run `pip install -e .` (or `make "
        f"install`) in the source tree ({err})"
    ) from err

__all__ = ["DECLINED", "LineParser", "Stop", "feed_sections", "first_occurrences",
           "format_lines", "parents_in_order", "prefix_rows_sorted", "repr_log10"]

CHUNK_BYTES = 8 << 20  # bytes read (and decompressed) at a time


@dataclass(frozen=True)
class Stop:
    """Where feeding stopped early: the 1-based line number, and the line (None when the
    file ended before a mark said to stop)."""

    line: int
    text: bytes | None


def feed_sections(
    fh: io.BufferedIOBase, lines_before: int, parser: LineParser,
    on_mark: Callable[[bytes, int], bool], tail: bytearray | None = None,
) -> Stop | None:
    """Feed the rest of `fh` to `parser`, chunk by chunk; None once `on_mark` says to stop.

    Args:
        fh: the open (decompressing) stream, positioned after the header.
        lines_before: how many lines of the file precede the stream's position.
        parser: a LineParser whose current section receives the n-gram lines.
        on_mark: called with each line whose first non-blank byte is a backslash (stripped)
            and its line number; it switches the parser's section and returns True, or
            returns False at the end mark. It may raise to reject a mark.
        tail: if given, receives the bytes already read past the end mark's line (the
            MAX-ARPA digest line follows `\\end\\`); the rest is still in `fh`.

    Returns:
        None when `on_mark` returned False; otherwise the line the parser rejected (or, in
        a keyed section, declined), or
        Stop(line, None) when the file ended first.
    """
    buf = b""
    pos = 0
    base = lines_before  # lines before buf[0]
    eof = False
    while True:
        status, at = parser.parse(buf, pos)
        if status == AT_MARK or status == FAILED or status == DECLINED:
            nl = buf.find(b"\n", at)  # the parser only stops on complete lines
            lineno = base + buf.count(b"\n", 0, at) + 1
            if status != AT_MARK:
                return Stop(lineno, buf[at:nl])
            if not on_mark(buf[at:nl].strip(), lineno):
                if tail is not None:
                    tail += buf[nl + 1 :]
                return None
            pos = nl + 1
            continue
        if eof:
            return Stop(base + buf.count(b"\n", 0, at) + 1, None)
        base += buf.count(b"\n", 0, at)
        rest = buf[at:]
        chunk = fh.read(CHUNK_BYTES)
        if not chunk:
            eof = True
            chunk = b"\n" if rest else b""  # the last line may lack its newline
        buf, pos = rest + chunk, 0
