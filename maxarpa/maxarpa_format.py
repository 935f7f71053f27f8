"""Reader and writer of the MAX-ARPA format (specified in docs/max-arpa-format.md).

Why the format lists blank nodes: the bound of an unlisted suffix of a listed n-gram is needed
by queries, and storing it means loading never recomputes a maximum. Every line of order k has
exactly k + 4 fields (logp, k words, bow, mf, mbow), which lets a section be parsed with one
`split` instead of a Python loop per line. Floats are written with `repr`, the shortest text
that reads back to the same float64, so read-then-write reproduces a file byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

from maxarpa.arpa import format_log10, lookup_ids, open_binary, read_text
from maxarpa.errors import FormatError
from maxarpa.model import Model
from maxarpa.output import atomic_output, compression_of, text_stream
from maxarpa.table import OrderNodes, Trie

MAX_ARPA_MAGIC = "\\max-arpa\\"
VERSION = "version 1"
WRITE_CHUNK = 200_000  # lines formatted and written at a time
_COUNT_RE = re.compile(r"^(ngram|blank)\s+(\d+)\s*=\s*(\d+)$")


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
    model: Model, path: str | Path, progress: Callable[[int], None] | None = None
) -> None:
    """Write `model` as MAX-ARPA (log10 values) to `path`.

    Args:
        model: the model with its bounds.
        path: the output; a `.gz`, `.bz2` or `.xz` suffix compresses it, another compression
            suffix is refused. Written through a temporary file and a rename, removed on any
            error or termination signal.
        progress: called with the number of n-grams of each section written.

    Raises:
        OutputError: a compression suffix that cannot be honoured.
        OSError: the file cannot be written (the message names `path`).
    """
    compression = compression_of(path)
    with atomic_output(path) as tmp, open(tmp, "wb") as raw, text_stream(raw, compression) as fh:
        fh.write(f"{MAX_ARPA_MAGIC}\n{VERSION}\n\n\\data\\\n")
        nodes = model.trie.nodes
        for k, node in enumerate(nodes, start=1):
            fh.write(f"ngram {k}={int(node.listed.sum())}\n")
        for k, node in enumerate(nodes, start=1):
            if k > 1:
                fh.write(f"blank {k}={int((~node.listed).sum())}\n")
        vocab = model.vocab
        words: list[str] = []
        for k, node in enumerate(nodes, start=1):
            words = _node_words(node, k, vocab, words, model.trie.vocab_size)
            for kind, mask in (("grams", node.listed), ("blanks", ~node.listed)):
                if kind == "blanks" and k == 1:
                    continue
                fh.write(f"\n\\{k}-{kind}:\n")
                idx = np.flatnonzero(mask)
                for lo in range(0, len(idx), WRITE_CHUNK):  # bounded transient text
                    sel = idx[lo : lo + WRITE_CHUNK]
                    lp, bow, mf, mbow = _format_values(node, sel)
                    fh.write("".join(
                        f"{lp[j]}\t{words[i]}\t{bow[j]}\t{mf[j]}\t{mbow[j]}\n"
                        for j, i in enumerate(sel.tolist())
                    ))
                    if progress:
                        progress(len(sel))
        fh.write("\n\\end\\\n")


def _node_words(
    node: OrderNodes, k: int, vocab: list[str], below: list[str], vocab_size: int
) -> list[str]:
    """The word text of every node of order k, in node order.

    Why recursive: a node is its first word followed by its suffix node one order down, whose
    text is already built, so each line costs one concatenation instead of a k-word join.
    """
    if k == 1:
        return [vocab[w] for w in node.rows[:, 0].tolist()]
    first = node.rows[:, 0].tolist()
    parent = (node.keys // np.uint64(vocab_size)).astype(np.int64).tolist()
    return [vocab[a] + " " + below[p] for a, p in zip(first, parent)]


def _format_values(node: OrderNodes, sel: np.ndarray) -> list[list[str]]:
    """logp, bow, mf, mbow of the nodes `sel` as text (`format_log10` semantics).

    Why through unique values: mf and mbow mostly repeat logp and bow, and backoffs repeat a
    lot, so formatting each distinct float once saves most of the (slow) float-to-text work.
    """
    m = len(sel)
    stacked = np.concatenate([node.log10p[sel], node.log10bow[sel], node.mf[sel], node.mbow[sel]])
    uniq, inverse = np.unique(stacked, return_inverse=True)
    texts = [format_log10(v) for v in uniq.tolist()]
    table = np.array(texts, dtype=object)[inverse.ravel()]
    return [table[c * m : (c + 1) * m].tolist() for c in range(4)]


def read_max_arpa(path: str | Path) -> Model:
    """Read a MAX-ARPA file (plain or compressed); the bounds come from the file, nothing is
    recomputed or checked here (`maxarpa.load` checks them).

    Returns:
        The model (log10 values); its `source` is `path`.

    The whole text is read at once and each section is split in one call: per-line Python
    work is what dominates ARPA parsing, and the fixed field count makes it unnecessary.

    Raises:
        FormatError: naming the file and line of the first problem.
    """
    path = str(path)
    text = read_text(path)
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
        parsed = []
        for kind, expected in (("grams", listed_counts[k - 1]), ("blanks", blank_counts[k - 1])):
            body, offset = bodies.get((k, kind), ("", len(text)))
            if k == 1 and kind == "grams":
                vocab = _unigram_words(body)
                word_id = {w: i for i, w in enumerate(vocab)}
                if len(word_id) != len(vocab):
                    raise FormatError(path, _line_of(text, offset), "duplicate unigram")
                trie = Trie(len(vocab), [])
            parsed.append(_parse_section(body, k, expected, text, offset, path, kind, word_id))
        rows = np.concatenate([parsed[0][0], parsed[1][0]])
        values = np.concatenate([parsed[0][1], parsed[1][1]])
        listed = np.r_[np.ones(len(parsed[0][0]), bool), np.zeros(len(parsed[1][0]), bool)]
        if k == 1:
            keys = rows[:, 0].astype(np.uint64)
            perm = np.arange(len(rows))
        else:
            suffix = trie.lookup_rows(rows[:, 1:])
            if (suffix < 0).any():
                raise FormatError(path, None, f"a {k}-gram's suffix is missing")
            keys = trie.key(suffix, rows[:, 0])
            perm = np.argsort(keys)
            keys = keys[perm]
            twice = np.flatnonzero(keys[1:] == keys[:-1])
            if len(twice):
                words = " ".join(vocab[w] for w in rows[perm[twice[0]]].tolist())
                raise FormatError(path, None, f"the {k}-gram {words!r} is listed twice")
        trie.nodes.append(
            OrderNodes(
                keys, rows[perm], values[perm, 0], values[perm, 1], listed[perm],
                mf=values[perm, 2], mbow=values[perm, 3],
            )
        )
    return Model(vocab, trie, path)


_MARK_RE = re.compile(r"^\\(?:(\d+)-(grams|blanks):|end\\)[ \t]*$", re.M)


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


def _unigram_words(body: str) -> list[str]:
    return [line.split()[1] for line in body.split("\n") if line.strip()]


CHUNK_LINES = 200_000


def _parse_section(
    body: str, k: int, expected: int, text: str, offset: int, path: str, kind: str,
    word_id: dict[str, int],
) -> tuple[np.ndarray, np.ndarray]:
    """Word-id rows (m, k) and values (m, 4: logp, bow, mf, mbow) of one section.

    Lines are split in chunks, so the transient Python strings stay bounded in memory.
    """
    width = k + 4
    lines = [line for line in body.split("\n") if line.strip()]
    if len(lines) != expected:
        raise FormatError(
            path, _line_of(text, offset), f"\\{k}-{kind}: has {len(lines)} lines, header "
            f"says {expected}"
        )
    rows = np.empty((expected, k), dtype=np.int32)
    values = np.empty((expected, 4), dtype=np.float64)
    for lo in range(0, expected, CHUNK_LINES):
        chunk = lines[lo : lo + CHUNK_LINES]
        flat = "\n".join(chunk).split()
        if len(flat) != width * len(chunk):
            _report_bad_line(body, k, text, offset, path, word_id)
        hi = lo + len(chunk)
        try:
            for j in range(k):
                rows[lo:hi, j] = lookup_ids(flat[1 + j :: width], word_id)
            for c, j in enumerate((0, k + 1, k + 2, k + 3)):
                values[lo:hi, c] = np.array(flat[j::width], dtype=np.float64)
        except (KeyError, ValueError):
            _report_bad_line(body, k, text, offset, path, word_id)
            raise  # unreachable: _report_bad_line raises
    return rows, values


def _report_bad_line(
    body: str, k: int, text: str, offset: int, path: str, word_id: dict[str, int]
) -> None:
    """Find the first bad line of a section and raise a FormatError naming it."""
    mark_line = _line_of(text, offset)
    for i, line in enumerate(body.split("\n")):
        fields = line.split()
        if not fields:
            continue
        where = mark_line + i
        if len(fields) != k + 4:
            raise FormatError(path, where, f"expected {k + 4} fields, got {len(fields)}")
        for w in fields[1 : k + 1]:
            if w not in word_id:
                raise FormatError(path, where, f"word {w!r} is not a 1-gram")
        for v in (fields[0], *fields[k + 1 :]):
            try:
                float(v)
            except ValueError:
                raise FormatError(path, where, f"expected a number, got {v!r}") from None
    raise FormatError(path, mark_line, "malformed section")
