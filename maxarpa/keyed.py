"""The n-gram table straight from a sorted, suffix-closed ARPA file, with no word rows.

Why: KenLM's `lmplz` lists each order sorted by reversed n-gram, which is the table's key
order (an order-k key is `row of the suffix at order k-1 * V + first word`, so keys sort by
the last word first), and every suffix of a listed n-gram is listed. For such a file the
compiled parser can compute each line's key as it reads it, with one forward cursor per lower
order over that order's keys (`textio.hpp`, `line_key`), and store only the key, log10 p and
backoff: 24 bytes an n-gram instead of 16 + 4k, no row arrays, no sort, no permutation
(issue 34: the parse and table phases of `convert --binary` on the 6M-n-gram bench model).

Anything else (another order, a missing suffix, a repeated n-gram, any line the compiled
parser declines, a compression error) returns None, and `maxarpa.load` reads the file with
`read_arpa` and `build_trie` as before, which accept every file and name every fault. The
table built here is the one `build_trie` builds for such a file, array for array
(tests/test_maxarpa_keyed.py).
"""

from __future__ import annotations

import lzma
import zlib
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from maxarpa.arpa import ENCODING, ERRORS, LineReader, SectionMarks, open_binary, read_header
from maxarpa.errors import FormatError
from maxarpa.keywalk import rows_from_parent, unigram_rows
from maxarpa.table import OrderNodes, Trie


def read_sorted_arpa(path: str | Path) -> tuple[list[str], Trie] | None:
    """(vocabulary, table) of an ARPA file listed in key order and suffix-closed; None for
    any other file (then read it with `read_arpa` and `build_trie`).

    Raises:
        FormatError: a bad header or section mark, as `read_arpa` raises it (the same
            functions judge them).
    """
    try:
        fh = open_binary(str(path))
    except FormatError:
        return None
    try:
        with fh:
            return _parse_keyed(LineReader(str(path), fh))
    except (OSError, EOFError, zlib.error, lzma.LZMAError, MemoryError):
        return None


def _parse_keyed(reader: LineReader) -> tuple[list[str], Trie] | None:
    values: list[tuple[np.ndarray, np.ndarray]] = []
    parsed = parse_orders(reader, lambda k, log10p, log10bow: values.append((log10p, log10bow)))
    if parsed is None:
        return None
    vocab, keys = parsed
    trie = Trie(len(vocab), [])
    for k, (key, (log10p, log10bow)) in enumerate(zip(keys, values, strict=True), start=1):
        rows = (partial(unigram_rows, key) if k == 1 else  # built only if asked for
                partial(rows_from_parent, key, trie.nodes[k - 2], len(vocab)))
        trie.nodes.append(OrderNodes(key, rows, log10p, log10bow,
                                     np.ones(len(key), dtype=bool)))
    return vocab, trie


OrderDone = Callable[[int, np.ndarray, np.ndarray], None]


def parse_orders(reader: LineReader, done: OrderDone) -> tuple[list[str], list[np.ndarray]] | None:
    """(vocabulary, keys of each order) of a key-ordered, suffix-closed ARPA file, None as
    `read_sorted_arpa`; `done(k, log10p, log10bow)` is handed each order's values as soon as
    its section is closed, and they are not kept here (`maxarpa.streamed` parks them on disk:
    issue 34's conversion peak). It may raise, which ends the parse.
    """
    from maxarpa.native import LineParser, feed_sections

    counts = read_header(reader)
    keys = [np.empty(c, np.uint64) for c in counts]

    def fresh(k: int) -> list[np.ndarray]:
        # Backoffs start as np.zeros (pages the system maps only when written): the parser
        # leaves a missing backoff unwritten, so the highest order's column costs no memory.
        return [np.empty(counts[k - 1]), np.zeros(counts[k - 1])]

    values = fresh(1)
    parser = LineParser()
    marks = SectionMarks(counts, reader.path)
    parser.start(1, False, np.empty((counts[0], 1), np.int32), values, keys[0], [])

    def on_mark(mark: bytes, lineno: int) -> bool:
        nonlocal values
        if not marks.close(mark, parser.filled, lineno):
            return False
        k = marks.k
        done(k - 1, values[0], values[1])
        values = fresh(k)
        parser.start(k, False, np.empty((0, k), np.int32), values, keys[k - 1], keys[: k - 1])
        return True

    if feed_sections(reader.stream, reader.lineno, parser, on_mark) is not None:
        return None
    done(len(counts), values[0], values[1])
    return [w.decode(ENCODING, ERRORS) for w in parser.words()], keys
