"""Errors of the arsdecode package: one tree, so the CLI catches only the project's own errors.

Why a tree (as in maxarpa.errors and KenLM's lm_exception.hh): library users can catch
`ArsDecodeError` once, or tell a bad lattice from an impossible one; the command-line front end
turns exactly these (and maxarpa's `MaxArpaError`) into one line on stderr and exit status 2. Any
other exception is a bug and keeps its traceback. All subclass ValueError because they are all
bad input, which is what callers that predate the tree catch.
"""

from __future__ import annotations


class ArsDecodeError(ValueError):
    """Base class of every error arsdecode raises on bad input or an impossible request."""


class LatticeError(ArsDecodeError):
    """A lattice that cannot be decoded: empty, a position without candidates, bad weights,
    a sentence marker used as a token, or a path the lattice does not allow."""


class NoPathError(ArsDecodeError):
    """Every path of the lattice has probability zero: nothing to decode or sample."""


class AutomatonError(ArsDecodeError):
    """A bad request to the q-automaton (unknown variant, path not in the lattice)."""


class TargetError(ArsDecodeError):
    """A token sequence that the lattice does not allow (scoring the target p)."""


class ObservationError(ArsDecodeError):
    """A task observation that cannot be turned into a lattice (a bad keypad string, an empty
    sentence, a word no tag can emit)."""


class ModelError(ArsDecodeError):
    """A task model that is missing, incomplete or of the wrong kind (POS models, emissions)."""


class OptionError(ArsDecodeError):
    """An argument value outside its documented range (a CLI option or a keyword argument)."""


class BoundViolationError(ArsDecodeError):
    """A path scored higher under the target p than under its supposed upper bound q: the
    model's bounds are wrong (a hand-edited or corrupt MAX-ARPA table, a TargetModel whose
    `log_bound` is not a bound). Raised instead of certifying or sampling on a broken bound;
    the message names the position, the word and its context."""
