"""The line syntax of HTK's SLF: `name=value` fields, their long names, and the value parsers.

Why a module of its own: the reader (`slf`) and the writer (`slf_write`) must agree on it
(`quoted` writes a word as `split_fields` reads it back), and it holds the one place each bad
field becomes a LatticeError naming its file and line. What the fields mean, and how they
count, is in `arsdecode.lattice.slf`'s docstring.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

from arsdecode.errors import LatticeError
from arsdecode.lattice.confusion import SENTENCE_MARKERS

NULL_WORD = "!NULL"
EPSILON_WORDS = frozenset((NULL_WORD, *SENTENCE_MARKERS))
"""Words read as epsilon: HTK's null word, and the sentence markers the engine adds itself."""

_OCTAL = re.compile(r"[0-3][0-7][0-7]")
HEADER_LONG = {"VERSION": "V", "UTTERANCE": "U", "NODES": "N", "LINKS": "L", "SUBLAT": "S"}
NODE_LONG = {"time": "t", "WORD": "W", "var": "v", "div": "d", "acoustic": "a"}
LINK_LONG = {"START": "S", "END": "E", "WORD": "W", "var": "v", "div": "d", "acoustic": "a",
             "ngram": "n", "language": "l"}
"""The long field names of the HTK book, by their short names (slf.py's docstring)."""


def split_fields(line: str, where: str, htk_quotes: bool = True) -> list[tuple[str, str]]:
    """The `name=value` fields of a line; a value may be quoted with " or ', `\\ooo` is an
    octal byte and `\\` escapes any other next character (quoted or not), as HTK's string
    syntax has it. `htk_quotes=False`: every value is read literally up to white space, as
    lattice-tool reads SLF without its `-htk-quotes`."""
    if not htk_quotes or ("\"" not in line and "'" not in line and "\\" not in line):
        plain: list[tuple[str, str]] = []
        for item in line.split():
            name, sep, value = item.partition("=")
            if not sep or not name:
                raise LatticeError(f"{where}: bad field {item!r}: expected name=value")
            if not value:
                raise LatticeError(f"{where}: field {name}= has no value")
            plain.append((name, value))
        return plain
    out: list[tuple[str, str]] = []
    i, n = 0, len(line)
    while i < n:
        if line[i].isspace():
            i += 1
            continue
        eq = i
        while eq < n and line[eq] != "=" and not line[eq].isspace():
            eq += 1
        name = line[i:eq]
        if eq >= n or line[eq] != "=" or not name:
            raise LatticeError(f"{where}: bad field {line[i:eq + 1]!r}: expected name=value")
        i = eq + 1
        quote = line[i] if i < n and line[i] in "\"'" else ""
        if quote:
            i += 1
        value_bytes = bytearray()
        while i < n:
            c = line[i]
            if c == "\\" and _OCTAL.fullmatch(line, i + 1, i + 4):
                value_bytes.append(int(line[i + 1:i + 4], 8))  # HTK's \ooo byte
                i += 4
                continue
            if c == "\\" and i + 1 < n:
                value_bytes += line[i + 1].encode("utf-8")
                i += 2
                continue
            if (quote and c == quote) or (not quote and c.isspace()):
                break
            value_bytes += c.encode("utf-8")
            i += 1
        if quote:
            if i >= n:
                raise LatticeError(f"{where}: field {name}=: the quote {quote} is not closed")
            i += 1
            if i < n and not line[i].isspace():
                raise LatticeError(f"{where}: field {name}=: text after the closing quote")
        try:
            value = value_bytes.decode("utf-8")
        except UnicodeDecodeError:
            raise LatticeError(f"{where}: field {name}=: its \\ooo escapes are not UTF-8"
                               ) from None
        if not value and not quote:
            raise LatticeError(f"{where}: field {name}= has no value")
        out.append((name, value))
    return out


def node_fields(fields: list[tuple[str, str]], where: str) -> dict[str, str]:
    node: dict[str, str] = {}
    for name, value in fields:
        name = NODE_LONG.get(name, name)
        if name == "L":
            raise LatticeError(f"{where}: sub-lattices (L= on a node) are not supported")
        if name in node:
            raise LatticeError(f"{where}: field {name}= given twice")
        node[name] = value
    if "t" in node:
        parse_float(node["t"], "t", where)
    return node


def link_fields(fields: list[tuple[str, str]], where: str) -> dict[str, str]:
    link: dict[str, str] = {}
    for name, value in fields:
        name = LINK_LONG.get(name, name)
        if name in link:
            raise LatticeError(f"{where}: field {name}= given twice")
        link[name] = value
    return link


def parse_int(value: str, name: str, where: str) -> int:
    if not value.isdigit():
        raise LatticeError(f"{where}: {name}={value}: expected a non-negative integer")
    return int(value)


def node_ref(value: str, name: str, where: str, n_nodes: int) -> int:
    node = parse_int(value, name, where)
    if node >= n_nodes:
        raise LatticeError(f"{where}: {name}={node}: there is no node {node} (N={n_nodes})")
    return node


def parse_float(value: str, name: str, where: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise LatticeError(f"{where}: {name}={value}: not a number") from None
    if math.isnan(x) or x == math.inf:
        raise LatticeError(f"{where}: {name}={value}: not a usable number")
    return x


def log_base(header: Mapping[str, str], at: Callable[[str], str]) -> float:
    """The log base of the score fields: e when absent, 0 for linear scores."""
    if "base" not in header:
        return math.e
    base = parse_float(header["base"], "base", at("base"))
    if base < 0 or base == 1 or base == -math.inf:
        raise LatticeError(f"{at('base')}: base={header['base']}: a log base must be positive "
                           "and not 1 (or 0 for scores that are not logs)")
    return base


def scaled(scale: float, score: float) -> float:
    """`scale * score`, where a zero scale ignores the field (even a score of -inf)."""
    return scale * score if scale else 0.0


def log_score(value: str, base: float, name: str, where: str) -> float:
    """A score field as a natural log: `value * ln(base)`, or `ln(value)` when base is 0."""
    x = parse_float(value, name, where)
    if base == 0:
        if x < 0:
            raise LatticeError(f"{where}: {name}={value}: base=0 means scores are not logs, "
                               "so they cannot be negative")
        return math.log(x) if x > 0 else -math.inf
    return x if base == math.e else x * math.log(base)


def quoted(word: str, htk_quotes: bool = True) -> str:
    """A value as `split_fields` reads it back with the same `htk_quotes`: with HTK quoting,
    a backslash before each quote and backslash (HTK's and lattice-tool -htk-quotes' escape,
    `IT\\'S`), and in double quotes when it holds white space or is empty; without, the word
    as it is (lattice-tool's default reading; a word is never white space)."""
    if not htk_quotes:
        return word
    escaped = "".join("\\" + c if c in "\"'\\" else c for c in word)
    if word and not any(c.isspace() for c in word):
        return escaped
    return '"' + escaped + '"'
