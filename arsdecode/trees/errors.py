"""Errors of tree-automaton input: each names the file and the line, in one line.

Why a module of the trees package and not `arsdecode.errors`: the tree input kind is new and
its errors are only raised here; they all subclass the package's `ArsDecodeError`, so the
command line and `batch` treat them as every other bad input (one line, exit status 2).
"""

from __future__ import annotations

from arsdecode.errors import ArsDecodeError, NoPathError


class TreeAutomatonError(ArsDecodeError):
    """A tree-automaton file or object that cannot be used (the base of the classes below)."""


class TreeFormatError(TreeAutomatonError):
    """A line that is not a rule of the format (JSON structure, Alto/IRTG syntax)."""


class TreeCycleError(TreeAutomatonError):
    """The automaton has a cycle; the message names the rule that closes it."""


class UndefinedStateError(TreeAutomatonError):
    """A state used as a child (or as the start) that no rule has on its left-hand side."""


class TreeWeightError(TreeAutomatonError):
    """A weight that is not a number, NaN, +inf (ln) or a negative probability (Alto)."""


class EmptyLanguageError(TreeAutomatonError, NoPathError):
    """Every tree of the automaton (or of the automaton times the target) has weight zero."""


def where(source: str, line: int | None) -> str:
    """`file:line: ` (or `file: ` when no line applies) for an error message."""
    return f"{source}:{line}: " if line else f"{source}: "
