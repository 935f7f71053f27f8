"""Errors of the arsdecode package: one tree, so that "bad input" is one `except` clause.

Why a tree (as in maxarpa.errors and KenLM's lm_exception.hh): a library user can catch
`ArsDecodeError` once, or tell a bad lattice from an impossible one; the command line turns
exactly these (and maxarpa's `MaxArpaError`) into one line on stderr and exit status 2, and a
batch run turns them into the item's error line. Any other exception is a bug and keeps its
traceback: nothing in arsdecode raises a bare ValueError or AssertionError for bad input.

The tree, and the user mistake each class means:

    ArsDecodeError          any bad input or impossible request (the base; never raised itself)
      OptionError           an argument value outside its documented range (a CLI option or
                            a keyword argument: a negative --batch, an unknown method)
        ArgumentError       an argument of a public function (arsdecode.api) of the wrong type
                            or out of range, refused before any work (arsdecode.validate);
                            also a TypeError
      Refused               (arsdecode.validate) a check's verdict, which the argument
                            checker turns into the ArgumentError naming the argument
      LatticeError          a lattice that cannot be decoded: unreadable or malformed file,
                            an empty position, a NaN weight, a sentence marker as a token
      NoPathError           a lattice whose every path has probability zero
      AutomatonError        a bad request to the q-automaton (unknown variant, a path the
                            lattice does not allow)
      TargetError           a token sequence the lattice does not allow, given to the target p
      BoundViolationError   a model whose "upper bounds" are not bounds (a corrupt or
                            hand-edited MAX-ARPA table, a TargetModel with a wrong log_bound)
      MemoryBudgetExceeded  a request that would need more memory than the memory budget
                            (--memory-budget): refused before allocating it, naming the option
      ObservationError      a task observation that cannot become a lattice (a bad keypad
                            string, an empty sentence, a word no tag can emit)
        NoCandidatesError     (arsdecode.tasks.sms.keypad) a digit string whose length no
                              vocabulary word has
      ModelError            a model that is missing, incomplete or of the wrong kind (no
                            max-backoff bounds, an order above the compiled core's maximum)
        PosModelError         (arsdecode.tasks.pos.emissions) POS models that are missing,
                              incomplete or not POS models
      BatchError            a corpus run that cannot start or go on (a bad --in or --out,
                            another run writing the same file, an unreachable scheduler)
      StatesBudgetExceeded  (arsdecode.methods.full) the merged full DP passed the state
                            budget its caller gave; `auto` catches it and samples instead, so
                            a user sees it only by passing `max_states` to `full_marginals`
      TreeAutomatonError    (arsdecode.trees.errors) a tree automaton that cannot be read:
        TreeFormatError       a syntax error in its JSON or Alto/IRTG text,
        TreeCycleError        a cycle (naming the rule that closes it),
        UndefinedStateError   a state used as a child that no rule defines,
        TreeWeightError       a weight that is not a number, NaN or +inf,
        EmptyLanguageError    no tree of nonzero weight (also a NoPathError)
      _TooLarge             (arsdecode.trees.api) auto's internal signal that the full forest
                            would pass its budget; caught there, never seen by a caller

A malformed or refused model file is maxarpa's `MaxArpaError` (FormatError, ...), raised by
`arsdecode.load_lm`; callers that catch bad input catch both. Stopping is not an error:
Ctrl-C is KeyboardInterrupt, SIGTERM/SIGHUP `arsdecode.termination.Terminated` (a
KeyboardInterrupt too); an ARS decode it stops raises a KeyboardInterrupt carrying what was
found (`methods.ars.DecodeInterrupted`, `methods.kbest.KBestInterrupted`,
`methods.lockstep.DecodeManyInterrupted`).

Every class subclasses ValueError, as maxarpa's do: each is a bad value given by the caller,
and code written for the standard library's convention (`except ValueError`) still sees it.
`ArgumentError` is a TypeError as well (as scikit-learn's InvalidParameterError is both): a
wrong type is a TypeError by Python's convention, and calls like `sample(lm, lat, 2.5)` raised
one before the public functions checked their arguments, so `except TypeError` keeps working.
"""

from __future__ import annotations


class ArsDecodeError(ValueError):
    """Base class of every error arsdecode raises on bad input or an impossible request."""


class OptionError(ArsDecodeError):
    """An argument value outside its documented range (a CLI option or a keyword argument)."""


class ArgumentError(OptionError, TypeError):
    """An argument of a public function of the wrong type or outside its range (`k=0`,
    `n=2.5`, `lm="model.arpa"`), refused before any work; the message names the function
    and the argument. Why an OptionError: it is the same mistake, found at the door, so
    callers catching OptionError for a range (`n < 0`) still catch it; why a TypeError: see
    the module docstring."""


class LatticeError(ArsDecodeError):
    """A lattice that cannot be decoded: empty, a position without candidates, bad weights,
    a sentence marker used as a token, or a path the lattice does not allow."""


class NoPathError(ArsDecodeError):
    """Every path of the lattice has probability zero: nothing to decode or sample."""


class AutomatonError(ArsDecodeError):
    """A bad request to the q-automaton (unknown variant, path not in the lattice)."""


class TargetError(ArsDecodeError):
    """A token sequence that the lattice does not allow (scoring the target p)."""


class BoundViolationError(ArsDecodeError):
    """A path scored higher under the target p than under its supposed upper bound q: the
    model's bounds are wrong (a hand-edited or corrupt MAX-ARPA table, a TargetModel whose
    `log_bound` is not a bound). Raised instead of certifying or sampling on a broken bound;
    the message names the position, the word and its context."""


class MemoryBudgetExceeded(ArsDecodeError):
    """A request whose memory would pass the memory budget (`methods.dispatch.memory_budget`,
    the CLI's --memory-budget): refused before the memory is allocated, with one line that
    names the option that would help (a larger --memory-budget, a smaller --nbest), instead
    of a MemoryError traceback or the OOM killer."""

    @classmethod
    def of(cls, what: str, need: float, max_bytes: int, hint: str) -> MemoryBudgetExceeded:
        """The refusal of `what`, estimated to need `need` bytes, naming the help (`hint`)."""
        mib = max_bytes >> 20
        return cls(f"{what} needs more than the memory budget of {mib} MiB (at least "
                   f"{max(int(need) >> 20, mib + 1)} MiB); {hint}")


class ObservationError(ArsDecodeError):
    """A task observation that cannot be turned into a lattice (a bad keypad string, an empty
    sentence, a word no tag can emit)."""


class ModelError(ArsDecodeError):
    """A model that is missing, incomplete or of the wrong kind (POS models, emissions, a
    language model without max-backoff bounds or of too high an order)."""


class BatchError(ArsDecodeError):
    """A corpus run that cannot start or go on (bad --in or --out file, a run already writing
    it, an unreachable Dask scheduler)."""
