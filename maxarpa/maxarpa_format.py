"""Reader and writer of the MAX-ARPA format (specified in docs/max-arpa-format.md).

Why the format lists blank nodes: the bound of an unlisted suffix of a listed n-gram is needed
by queries, and storing it means loading never recomputes a maximum. Every line of order k has
exactly k + 4 fields (logp, k words, bow, mf, mbow), which lets a section be parsed with one
`split` instead of a Python loop per line. Floats are written with `repr`, the shortest text
that reads back to the same float64, so read-then-write reproduces a file byte for byte.
"""

from __future__ import annotations

import lzma
import os
import re
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from maxarpa.arpa import LineReader, atomic_writer, format_log10
from maxarpa.errors import FormatError
from maxarpa.model import MAX_ARPA_MAGIC, Model
from maxarpa.table import OrderNodes, Trie

VERSION = "version 1"
_COUNT_RE = re.compile(r"^(ngram|blank)\s+(\d+)\s*=\s*(\d+)$")
_SECTION_RE = re.compile(r"^\\(\d+)-(grams|blanks):$")


def write_max_arpa(
    model: Model, path: str | Path, progress: Callable[[int], None] | None = None
) -> None:
    """Write `model` as MAX-ARPA to `path` via a temporary file and a rename."""
    fh, tmp = atomic_writer(path)
    try:
        with fh:
            fh.write(f"{MAX_ARPA_MAGIC}\n{VERSION}\n\n\\data\\\n")
            nodes = model.trie.nodes
            for k, node in enumerate(nodes, start=1):
                fh.write(f"ngram {k}={int(node.listed.sum())}\n")
            for k, node in enumerate(nodes, start=1):
                if k > 1:
                    fh.write(f"blank {k}={int((~node.listed).sum())}\n")
            vocab = model.vocab
            for k, node in enumerate(nodes, start=1):
                for kind, mask in (("grams", node.listed), ("blanks", ~node.listed)):
                    if kind == "blanks" and k == 1:
                        continue
                    fh.write(f"\n\\{k}-{kind}:\n")
                    idx = np.flatnonzero(mask)
                    lines = _format_lines(node, idx, vocab)
                    fh.write(lines)
                    if progress:
                        progress(len(idx))
            fh.write("\n\\end\\\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _format_lines(node: OrderNodes, idx: np.ndarray, vocab: list[str]) -> str:
    f = format_log10
    out = []
    rows = node.rows[idx].tolist()
    for i, row in zip(idx.tolist(), rows):
        words = " ".join(vocab[w] for w in row)
        out.append(
            f"{f(node.log10p[i])}\t{words}\t{f(node.log10bow[i])}\t{f(node.mf[i])}\t"
            f"{f(node.mbow[i])}\n"
        )
    return "".join(out)


def read_max_arpa(path: str | Path) -> Model:
    """Read a MAX-ARPA file; the bounds come from the file, nothing is recomputed.

    The whole text is read at once and each section is split in one call: per-line Python
    work is what dominates ARPA parsing, and the fixed field count makes it unnecessary.

    Raises:
        FormatError: naming the file and line of the first problem.
    """
    path = str(path)
    text = _read_all(path)
    header_end = text.find("\n\\1-grams:")
    if header_end < 0:
        raise FormatError(path, text.count("\n") + 1, "no \\1-grams: section")
    header_lines = text[:header_end].split("\n")
    listed_counts, blank_counts = _parse_header(header_lines, path)
    n = len(listed_counts)
    marks = list(_MARK_RE.finditer(text, header_end))
    if not marks or marks[-1].group(0) != "\\end\\":
        raise FormatError(path, text.count("\n") + 1, "truncated file: missing \\end\\")
    bodies: dict[tuple[int, str], tuple[str, int]] = {}
    for mark, nxt in zip(marks, marks[1:]):
        if mark.group(0) == "\\end\\":
            break
        key = (int(mark.group(1)), mark.group(2))
        if not 1 <= key[0] <= n or key in bodies:
            raise FormatError(path, _line_of(text, mark.start()), f"unexpected {mark.group(0)}")
        bodies[key] = (text[mark.end() : nxt.start()], mark.start())
    vocab: list[str] = []
    word_id: dict[str, int] = {}
    trie = Trie(listed_counts[0], [])
    for k in range(1, n + 1):
        parts = []
        for kind, expected in (("grams", listed_counts[k - 1]), ("blanks", blank_counts[k - 1])):
            body, offset = bodies.get((k, kind), ("", len(text)))
            parts.append(_parse_section(body, k, expected, text, offset, path, kind))
        fields = np.concatenate(parts) if k > 1 else parts[0]
        listed = np.r_[np.ones(len(parts[0]), bool), np.zeros(len(fields) - len(parts[0]), bool)]
        if k == 1:
            vocab = fields[:, 1].tolist()
            word_id = {w: i for i, w in enumerate(vocab)}
            if len(word_id) != len(vocab):
                raise FormatError(path, None, "duplicate unigram")
            trie = Trie(len(vocab), [])
        try:
            rows = np.fromiter(
                (word_id[w] for w in fields[:, 1 : k + 1].ravel()), dtype=np.int32,
                count=len(fields) * k,
            ).reshape(len(fields), k)
        except KeyError as err:
            raise FormatError(path, None, f"word {err.args[0]!r} is not a 1-gram") from None
        try:
            values = fields[:, [0, k + 1, k + 2, k + 3]].astype(np.float64)
        except ValueError:
            raise FormatError(path, None, f"non-numeric value in the {k}-gram sections") from None
        if k == 1:
            keys = rows[:, 0].astype(np.uint64)
            perm = np.arange(len(rows))
        else:
            suffix = trie.lookup_rows(rows[:, 1:])
            if (suffix < 0).any():
                raise FormatError(path, None, f"a {k}-gram's suffix is missing")
            keys = trie.key(suffix, rows[:, 0])
            perm = np.argsort(keys, kind="stable")
            keys = keys[perm]
        trie.nodes.append(
            OrderNodes(
                keys, rows[perm], values[perm, 0], values[perm, 1], listed[perm],
                mf=values[perm, 2], mbow=values[perm, 3],
            )
        )
    return Model(vocab, trie, path)


_MARK_RE = re.compile(r"^\\(?:(\d+)-(grams|blanks):|end\\)[ \t]*$", re.M)


def _read_all(path: str) -> str:
    reader = LineReader(path)
    try:
        with reader._fh as fh:
            return fh.read()
    except (OSError, EOFError, zlib.error, lzma.LZMAError) as err:
        raise FormatError(path, None, f"corrupt or truncated compressed data ({err})") from None
    except UnicodeDecodeError:
        raise FormatError(path, None, "not UTF-8 text") from None


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


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


def _parse_section(
    body: str, k: int, expected: int, text: str, offset: int, path: str, kind: str
) -> np.ndarray:
    """Split a section into an (m, k + 4) array of strings, reporting the first bad line."""
    width = k + 4
    flat = body.split()
    if len(flat) == width * expected:
        return np.array(flat, dtype=object).reshape(expected, width)
    first_line = _line_of(text, offset) + 1
    count = 0
    for i, line in enumerate(body.split("\n")[1:]):
        if not line.strip():
            continue
        count += 1
        if len(line.split()) != width:
            raise FormatError(path, first_line + i, f"expected {width} fields")
    raise FormatError(
        path, first_line, f"\\{k}-{kind}: has {count} lines, header says {expected}"
    )
