"""Reader and writer of the MAX-ARPA format (specified in docs/max-arpa-format.md).

Why the format lists blank nodes: the bound of an unlisted suffix of a listed n-gram is needed
by queries, and storing it means loading never recomputes a maximum. Every line of order k has
exactly k + 4 fields (logp, k words, bow, mf, mbow), so the compiled parser (maxarpa.native)
reads every line the same way. Floats are written as Python's `repr` lays them out (the
shortest text that reads back to the same float64), so read-then-write reproduces a file byte
for byte; the compiled writer produces those very bytes.
"""

from __future__ import annotations

import io
import lzma
import re
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from maxarpa.arpa import ENCODING, ERRORS, open_binary, parse_number
from maxarpa.checks import recompute_bounds
from maxarpa.digest import ALGORITHM, digest_to_write
from maxarpa.errors import FormatError, shown
from maxarpa.model import Model
from maxarpa.output import atomic_output, byte_stream, compression_of
from maxarpa.table import OrderNodes, Trie

MAX_ARPA_MAGIC = "\\max-arpa\\"
VERSION = "version 1"
WRITE_CHUNK = 200_000  # lines formatted and written at a time
_COUNT_RE = re.compile(r"^(ngram|blank)\s+(\d+)\s*=\s*(\d+)$")
_DIGEST_RE = re.compile(rb"^digest[ \t]+(\S+)[ \t]+([0-9a-f]+)[ \t]*$")
TAIL_BYTES = 4096  # how far past \end\ a reader looks for the digest line


def is_max_arpa(path: str | Path) -> bool:
    """True when the first non-blank line of the (decompressed) file is the MAX-ARPA marker."""
    try:
        with open_binary(path) as fh:
            for _ in range(1000):
                line = fh.readline(4096)
                if not line:
                    return False
                if line.strip():
                    return line.strip() == MAX_ARPA_MAGIC.encode()
    except Exception:  # unreadable or corrupt: the ARPA reader reports it, with its line
        return False
    return False


def write_max_arpa(
    model: Model, path: str | Path, progress: Callable[[int], None] | None = None, *,
    bounds_verified: bool = False,
) -> None:
    """Write `model` as MAX-ARPA (log10 values) to `path`.

    Args:
        model: the model with its bounds.
        path: the output; a `.gz`, `.bz2` or `.xz` suffix compresses it, another compression
            suffix is refused. Written through a temporary file and a rename, removed on any
            error or termination signal.
        progress: called with the number of n-grams of each section written.
        bounds_verified: the caller knows the bounds are exact (`maxarpa.load` made the
            model); otherwise they are recomputed first (maxarpa.digest.digest_to_write).

    The line after `\\end\\` is `digest xxh3_128 <hex>` (maxarpa.digest), which lets `maxarpa.load`
    trust the bounds without recomputing them; a table whose bounds are not exact gets none.
    It follows the end mark because every earlier reader of the format stops there.

    Raises:
        OutputError: a compression suffix that cannot be honoured.
        OSError: the file cannot be written (the message names `path`).
    """
    from maxarpa.native import format_lines

    if model.trie.bounds_rounded:  # a format-3 binary file's: text carries exact bounds
        model = Model(model.vocab, recompute_bounds(model.trie, model.eos_id), model.source)
    compression = compression_of(path)
    digest = digest_to_write(model.vocab, model.trie, model.eos_id, bounds_verified)
    nodes = model.trie.nodes
    # The vocabulary as one byte string with offsets, for the compiled writer.
    encoded = [w.encode(ENCODING, ERRORS) for w in model.vocab]
    blob = b"".join(encoded)
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(w) for w in encoded], out=offsets[1:])
    keys = [np.ascontiguousarray(node.keys, dtype=np.uint64) for node in nodes]
    firsts = [np.asarray(node.rows[:, 0], dtype=np.int32) for node in nodes]
    with atomic_output(path) as tmp, open(tmp, "wb") as raw, byte_stream(raw, compression) as fh:
        header = [f"{MAX_ARPA_MAGIC}\n{VERSION}\n\n\\data\\\n"]
        header += [f"ngram {k}={int(node.listed.sum())}\n" for k, node in enumerate(nodes, 1)]
        header += [f"blank {k}={int((~node.listed).sum())}\n"
                   for k, node in enumerate(nodes, 1) if k > 1]
        fh.write("".join(header).encode(ENCODING))
        for k, node in enumerate(nodes, start=1):
            for kind, mask in (("grams", node.listed), ("blanks", ~node.listed)):
                if kind == "blanks" and k == 1:
                    continue
                fh.write(f"\n\\{k}-{kind}:\n".encode(ENCODING))
                idx = np.flatnonzero(mask)
                for lo in range(0, len(idx), WRITE_CHUNK):  # bounded transient text
                    sel = idx[lo : lo + WRITE_CHUNK]
                    fh.write(format_lines(
                        k, keys, firsts, model.trie.vocab_size, blob, offsets, sel,
                        node.log10p, node.log10bow, node.mf, node.mbow,
                    ))
                    if progress:
                        progress(len(sel))
        fh.write(b"\n\\end\\\n")
        if digest is not None:
            fh.write(f"digest {ALGORITHM} {digest}\n".encode(ENCODING))


def read_max_arpa(path: str | Path) -> Model:
    """Read a MAX-ARPA file (plain or compressed); the bounds come from the file, nothing is
    recomputed or checked here (`maxarpa.load` checks them).

    Returns:
        The model (log10 values); its `source` is `path`.

    Raises:
        FormatError: naming the file and line of the first problem.
    """
    return read_max_arpa_with_digest(path)[0]


def read_max_arpa_with_digest(path: str | Path) -> tuple[Model, tuple[str, str] | None]:
    """`read_max_arpa`, and the file's digest line as (algorithm, hex digest), None if absent.

    The digest is only read here; `maxarpa.load` compares it with the table's.

    The header is read in Python; the n-gram lines go, chunk by chunk, through the compiled
    parser (maxarpa.native) straight into arrays sized from the header, so no line ever
    becomes a Python object.

    Raises:
        FormatError: naming the file and line of the first problem.
    """
    path = str(path)
    fh = open_binary(path)
    try:
        with fh:
            return _read_stream(fh, path)
    except (OSError, EOFError, zlib.error, lzma.LZMAError) as err:
        raise FormatError(path, None, f"corrupt or truncated compressed data ({err})") from None


def _read_stream(fh: io.BufferedIOBase, path: str) -> tuple[Model, tuple[str, str] | None]:
    from maxarpa.native import LineParser, feed_sections

    header_lines: list[str] = []
    first_mark = ""
    for raw in fh:
        text = raw.decode(ENCODING, ERRORS).rstrip("\r\n")
        if _MARK_RE.match(text.strip()):
            first_mark = text.strip()
            break
        header_lines.append(text)
    lineno = len(header_lines) + 1  # the first mark's line
    if not first_mark:
        raise FormatError(path, len(header_lines), "no \\1-grams: section")
    listed_counts, blank_counts = _parse_header(header_lines, path)
    if first_mark != "\\1-grams:":
        raise FormatError(path, lineno, f"expected \\1-grams:, got {first_mark}")
    n = len(listed_counts)
    rows = [np.empty((listed_counts[k - 1] + blank_counts[k - 1], k), np.int32)
            for k in range(1, n + 1)]
    values = [[np.empty(len(r)) for _ in range(4)] for r in rows]  # logp, bow, mf, mbow
    spans = {(k, "grams"): (0, listed_counts[k - 1]) for k in range(1, n + 1)}
    spans.update({(k, "blanks"): (listed_counts[k - 1], len(rows[k - 1]))
                  for k in range(2, n + 1)})
    parser = LineParser()
    seen: set[tuple[int, str]] = set()
    current = (1, "grams")

    def begin(section: tuple[int, str]) -> None:
        nonlocal current
        k = section[0]
        lo, hi = spans[section]
        parser.start(k, True, rows[k - 1][lo:hi], [v[lo:hi] for v in values[k - 1]])
        seen.add(section)
        current = section

    def on_mark(mark: bytes, lineno: int) -> bool:
        k, kind = current
        lo, hi = spans[current]
        if parser.filled != hi - lo:
            raise FormatError(path, lineno, f"\\{k}-{kind}: has {parser.filled} lines, header "
                              f"says {hi - lo}")
        text = mark.decode(ENCODING, ERRORS)
        m = _MARK_RE.match(text)
        if not m:
            raise FormatError(path, lineno, f"unexpected line {shown(text[:40])}")
        if text == "\\end\\":
            for (k, kind), (lo, hi) in spans.items():
                if hi > lo and (k, kind) not in seen:
                    raise FormatError(path, lineno, f"no \\{k}-{kind}: section; the header "
                                      f"says {hi - lo} lines")
            return False
        section = (int(m.group(1)), m.group(2))
        if section not in spans or section in seen:
            raise FormatError(path, lineno, f"unexpected {text}")
        begin(section)
        return True

    begin(current)
    tail = bytearray()
    stop = feed_sections(fh, lineno, parser, on_mark, tail)
    if stop is not None:
        if stop.text is None:
            raise FormatError(path, stop.line, "truncated file: missing \\end\\")
        lo, hi = spans[current]
        raise FormatError(path, stop.line, _bad_line(stop.text, current, hi - lo, parser.filled,
                                                     parser.words))
    vocab = [w.decode(ENCODING, ERRORS) for w in parser.words()]
    trie = Trie(len(vocab), [])
    for k in range(1, n + 1):
        r = rows[k - 1]
        logp, bow, mf, mbow = values[k - 1]
        listed = np.arange(len(r)) < listed_counts[k - 1]
        if k == 1:
            keys = r[:, 0].astype(np.uint64)
        else:
            suffix = _suffix_rows(trie, r, listed_counts[k - 1])
            if (suffix < 0).any():
                raise FormatError(path, None, f"a {k}-gram's suffix is missing")
            keys = trie.key(suffix, r[:, 0])
            if len(keys) > 1 and not (keys[1:] > keys[:-1]).all():  # not in the written order
                perm = np.argsort(keys, kind="stable")
                keys, r, listed = keys[perm], r[perm], listed[perm]
                logp, bow, mf, mbow = logp[perm], bow[perm], mf[perm], mbow[perm]
                twice = np.flatnonzero(keys[1:] == keys[:-1])
                if len(twice):
                    words = " ".join(vocab[w] for w in r[twice[0]].tolist())
                    raise FormatError(path, None, f"the {k}-gram {shown(words)} is listed twice")
        trie.nodes.append(OrderNodes(keys, r, logp, bow, listed, mf=mf, mbow=mbow))
    return Model(vocab, trie, path), _digest_line(tail, fh)


def _digest_line(tail: bytearray, fh: io.BufferedIOBase) -> tuple[str, str] | None:
    """The first non-blank line after `\\end\\` as (algorithm, hex), if it is a digest line.

    Text other than a digest line after the end mark is ignored, as it always was.
    """
    if len(tail) < TAIL_BYTES:
        tail += fh.read(TAIL_BYTES - len(tail))
    for line in bytes(tail[:TAIL_BYTES]).splitlines():
        if line.strip():
            m = _DIGEST_RE.match(line.strip())
            return (m.group(1).decode(), m.group(2).decode()) if m else None
    return None


def _suffix_rows(trie: Trie, rows: np.ndarray, listed: int) -> np.ndarray:
    """The row one order down of each row's suffix (-1 where missing).

    Why two ways: in a file as maxarpa writes it, each section is in key order, so one
    forward scan per section finds every suffix with no hashing (most of a load's time
    otherwise); a file in any other order is looked up through the hash index.
    """
    from maxarpa.native import parents_in_order

    below = np.ascontiguousarray(trie.nodes[-1].rows)
    grams = parents_in_order(rows[:listed], below)
    blanks = parents_in_order(rows[listed:], below)
    if grams is not None and blanks is not None:
        return np.concatenate([grams, blanks])
    return trie.lookup_rows(rows[:, 1:])


_MARK_RE = re.compile(r"^\\(?:(\d+)-(grams|blanks):|end\\)[ \t]*$")


def _bad_line(
    line: bytes, section: tuple[int, str], expected: int, filled: int,
    vocab: Callable[[], list[bytes]],
) -> str:
    """Why the compiled parser rejected `line` of `section` (it only says where)."""
    k, kind = section
    if filled == expected:
        return f"\\{k}-{kind}: more lines than the header's {expected}"
    fields = line.decode(ENCODING, ERRORS).split()
    if len(fields) != k + 4:
        return f"expected {k + 4} fields, got {len(fields)}"
    for v in (fields[0], *fields[k + 1 :]):
        try:
            parse_number(v.encode(ENCODING, ERRORS))  # the ARPA number grammar, shared
        except ValueError as err:
            return str(err)
    words = fields[1 : k + 1]
    if k == 1 and kind == "grams":
        return f"duplicate unigram {shown(words[0])}"
    known = set(vocab())
    for w in words:
        if w.encode(ENCODING, ERRORS) not in known:
            return f"word {shown(w)} is not a 1-gram"
    return f"malformed line (a number float64 cannot hold?): {shown(line[:60])}"


def _parse_header(lines: list[str], path: str) -> tuple[list[int], list[int]]:
    seen_magic = seen_version = seen_data = False
    listed: list[int] = []
    blank: list[int] = [0]
    for lineno, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:
            continue
        if not seen_magic:
            if text != MAX_ARPA_MAGIC:
                raise FormatError(path, lineno, "not a MAX-ARPA file (missing \\max-arpa\\)")
            seen_magic = True
        elif not seen_version:
            if text != VERSION:
                raise FormatError(path, lineno, f"unsupported MAX-ARPA {text!r}")
            seen_version = True
        elif not seen_data:
            if text != "\\data\\":
                raise FormatError(path, lineno, "expected \\data\\")
            seen_data = True
        else:
            m = _COUNT_RE.match(text)
            if not m:
                raise FormatError(path, lineno, f"bad count line {text[:40]!r}")
            kind, order, count = m.group(1), int(m.group(2)), int(m.group(3))
            target = listed if kind == "ngram" else blank
            if order != len(target) + 1:
                raise FormatError(path, lineno, f"{kind} count for order {order} out of sequence")
            target.append(count)
    if not listed or len(blank) != len(listed):
        raise FormatError(path, len(lines), "incomplete MAX-ARPA header")
    return listed, blank


