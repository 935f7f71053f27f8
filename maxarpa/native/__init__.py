"""maxarpa's compiled text reader and writer (built at install time from _textio.pyx), and the
loop that feeds a file to the reader in chunks.

Why compiled: parsing and formatting 5M n-gram lines through Python objects was most of a
conversion's time and memory (docs/performance.md section 6). Python keeps what is rare and
needs good messages: headers, section marks, and the report of a bad line.
"""

from __future__ import annotations

import io
import mmap
from collections.abc import Callable
from dataclasses import dataclass

try:
    from maxarpa.native._textio import (
        AT_MARK,
        DECLINED,
        FAILED,
        LineParser,
        children_max_sorted,
        first_occurrences,
        format_lines,
        level_keys,
        parents_in_order,
        prefix_rows_sorted,
        repr_log10,
        round_up_f32_array,
    )
except ImportError as err:  # pragma: no cover - only without a build
    raise ImportError(
        "maxarpa's compiled text reader is not built; run `pip install -e .` (or `make "
        f"install`) in the source tree ({err})"
    ) from err

__all__ = ["DECLINED", "LineParser", "Stop", "children_max_sorted", "feed_sections",
           "first_occurrences", "format_lines", "level_keys", "parents_in_order",
           "prefix_rows_sorted", "repr_log10", "round_up_f32_array"]

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
    # One buffer, reused: the unfinished line moves to its front and the next chunk is read
    # in after it. (A new bytes object per chunk, and another for the join, put ~2x the
    # file through freshly mapped pages: issue 34's conversion spent a fifth of its CPU
    # having the kernel zero pages.)
    # Anonymous memory, not a bytearray: a bytearray is zeroed when made, so all 16 MiB
    # became resident even for a model of a few MB (the embedded model's load peaked 12 MB
    # above its result, issue 34); these pages become resident only as the reads fill them.
    store = mmap.mmap(-1, 2 * CHUNK_BYTES)
    filled = 0  # bytes of `store` in use
    buf = memoryview(store)[:0]
    pos = 0
    # The line number of the parser's next line: the lines before the stream, the marks read
    # here, and the lines the parser consumed (it counts them: counting newlines in the
    # buffer here was 3% of a conversion, issue 34).
    marks_read = lines_before - parser.lines
    eof = False
    while True:
        status, at = parser.parse(buf, pos)
        if status == AT_MARK or status == FAILED or status == DECLINED:
            nl = store.find(b"\n", at, filled)  # the parser only stops on complete lines
            lineno = marks_read + parser.lines + 1
            if status != AT_MARK:
                return Stop(lineno, bytes(store[at:nl]))
            if not on_mark(bytes(store[at:nl]).strip(), lineno):
                if tail is not None:
                    tail += store[nl + 1 : filled]
                return None
            marks_read += 1
            pos = nl + 1
            continue
        if eof:
            return Stop(marks_read + parser.lines + 1, None)
        buf.release()
        rest = filled - at
        store[:rest] = store[at:filled]
        if len(store) - rest < CHUNK_BYTES:  # a line longer than a chunk: room for more
            store.resize(len(store) + CHUNK_BYTES)
        with memoryview(store) as room:
            got = fh.readinto(room[rest : rest + CHUNK_BYTES])
        filled = rest + (got or 0)
        if not got:
            eof = True
            if rest:  # the last line may lack its newline
                store[filled : filled + 1] = b"\n"
                filled += 1
        buf, pos = memoryview(store)[:filled], 0
