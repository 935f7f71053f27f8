"""Errors of the maxarpa package.

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
