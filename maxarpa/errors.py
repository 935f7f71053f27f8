"""Errors of the maxarpa package, and how a word appears in their messages.

Why a tree: callers (the CLIs) catch `MaxArpaError` once and print its one-line message; tests
and library users can still tell a broken file (`FormatError`) from a bad query
(`UnknownWordError`). All subclass ValueError because they are all bad input.
"""

from __future__ import annotations


class MaxArpaError(ValueError):
    """Base class of every error raised on bad input by maxarpa."""


class FormatError(MaxArpaError):
    """A malformed ARPA or MAX-ARPA file. The message names the file and the line."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class UnknownWordError(MaxArpaError):
    """A query used a word that is not in the vocabulary, and the model has no <unk>."""


def shown(text: str | bytes) -> str:
    """`text` (a word, n-gram or line of a model file) in quotes, as the bytes it is.

    Why not repr(): words are bytes (docs/max-arpa-format.md), held as str with surrogate
    escapes, and repr() would print a Latin-1 byte as `\\udce9` and a backslash twice
    (`\\\\1-grams:`). Here valid UTF-8 prints as text, any other byte as `\\xe9`, a backslash
    as itself, and a control character (a tab) escaped, so the message stays one line.
    """
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape")
    decoded = raw.decode("utf-8", "backslashreplace")
    return "'" + "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                         for c in decoded) + "'"
