"""Argument checks for the public functions (`arsdecode.api`), made before any work is done.

Why: a public function given a wrong type used to fail deep inside, with an AttributeError or
a TypeError that named neither the function nor the argument (`decode(None, lat)`: "'NoneType'
object has no attribute 'order'"), or to accept it silently (`sample(lm, lat, 2.5)` drew
samples, `decode_kbest(lm, lat, None)` returned one best path). As scikit-learn's
`validate_params` does, each public function declares, per argument, what it accepts
(`@checked(k=integer(1), ...)`); every declared argument given is checked before the body
runs, and a refusal is one `ArgumentError` (an OptionError and a TypeError) naming the
function, the argument (an item as `models[1]`) and the value given.

A check is a function of the value that returns it (normalised: a numpy integer becomes an
int, a sequence a list) or raises `Refused` with what it expected. What a value means
(a file's content, weights summing to 1, a method's options) stays with the code that uses
it; the `**options` of a method are checked by that method.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import reprlib
import sys
from collections.abc import Callable, Mapping, Sequence
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from arsdecode.errors import ArgumentError, ArsDecodeError
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.model.interface import TargetModel
from arsdecode.model.maxarpa_lm import MaxArpaLM
from maxarpa.config import Config
from maxarpa.model import Model

if TYPE_CHECKING:
    from typing_extensions import TypeIs  # typing's own from Python 3.13

    from arsdecode.trees.automaton import TreeAutomaton

INT64_MAX = 2**63 - 1
"""The largest count (n, k, a length) accepted: counts become int64 in numpy arrays, and a
larger one cannot count anything a process holds."""

Check = Callable[[Any], Any]
F = TypeVar("F", bound=Callable[..., Any])

_SHOW = reprlib.Repr()
_SHOW.maxstring = _SHOW.maxother = 60
_SHOW.maxlong = 30
_PLAIN = (int, float, complex, str, bytes, list, tuple, dict, set, frozenset, np.generic)


class Refused(ArsDecodeError):
    """Raised by a check: `expected` says what the argument must be; `value` and `where`
    (an index or key, e.g. "[2]") locate the offending part when it is an item. The wrapper
    turns it into an ArgumentError naming the argument; it is in the error tree so that,
    should it ever escape, the CLI and batch still report it in one line."""

    def __init__(self, expected: str, value: Any, where: str = "") -> None:
        super().__init__(expected)
        self.expected, self.value, self.where = expected, value, where


def checked(**checks: Check) -> Callable[[F], F]:
    """Decorator: check the named arguments of each call before the function runs.

    Arguments not given keep their defaults unchecked (the defaults are valid); `**options`
    is not checked here. Raises ArgumentError naming the function and the argument. Why not
    `inspect.Signature.bind`: it costs about 10 us a call, more than every check together,
    and `decode` is called once per lattice; matching positions to names is enough (a call
    of the wrong shape is still Python's TypeError, from the function itself)."""

    def decorate(func: F) -> F:
        parameters = inspect.signature(func).parameters
        unknown = set(checks) - set(parameters)
        if unknown:
            raise TypeError(f"{func.__name__} has no argument {sorted(unknown)}")
        positional = [name for name, p in parameters.items()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

        def run(name: str, value: Any) -> Any:
            try:
                return checks[name](value)
            except Refused as r:
                raise ArgumentError(f"{func.__name__}(): {name}{r.where} must be {r.expected}; "
                                    f"got {_shown(r.value)}") from None

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = list(args)
            for i, name in enumerate(positional[:len(values)]):
                if name in checks:
                    values[i] = run(name, values[i])
            for name in kwargs:
                if name in checks:
                    kwargs[name] = run(name, kwargs[name])
            return func(*values, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def _shown(value: Any) -> str:
    """The type of a refused value, and a short repr of a plain one (a model's or lattice's
    repr would be long and say nothing more than its type)."""
    kind = type(value).__name__
    if isinstance(value, _PLAIN) or value is None:
        return f"{kind} {_SHOW.repr(value)}"
    return f"a {kind}"


def _is_int(value: Any) -> bool:
    """An integer, numpy's included; a bool is not one (True as a count is a mistake)."""
    return isinstance(value, Integral) and not isinstance(value, bool | np.bool_)


def integer(low: int, high: int | None = INT64_MAX) -> Check:
    """An int in [low, high] (high None: no upper limit), returned as a Python int."""
    expected = f"an int >= {low}" if high is None else f"an int in [{low}, {high}]"
    if high == INT64_MAX:
        expected = f"an int in [{low}, 2**63 - 1]"

    def check(value: Any) -> int:
        if not _is_int(value) or value < low or (high is not None and value > high):
            raise Refused(expected, value)
        return int(value)

    return check


def real(low: float | None = None, *, above: bool = False, minus_inf: bool = False) -> Check:
    """A real number (not a bool), finite (or -inf with `minus_inf`), >= low (> low with
    `above`), returned as a float."""
    expected = "a finite number" + (" or -inf" if minus_inf else "")
    if low is not None:
        expected += f" {'>' if above else '>='} {low:g}"

    def check(value: Any) -> float:
        if not isinstance(value, Real) or isinstance(value, bool | np.bool_):
            raise Refused(expected, value)
        x = float(value)
        if not (math.isfinite(x) or (minus_inf and x == -math.inf)):
            raise Refused(expected, value)
        if low is not None and (x <= low if above else x < low):
            raise Refused(expected, value)
        return x

    return check


def optional(inner: Check) -> Check:
    """None, or what `inner` accepts."""

    def check(value: Any) -> Any:
        if value is None:
            return None
        try:
            return inner(value)
        except Refused as r:
            if r.where:  # an item of the value is the mistake, not the value
                raise
            raise Refused(f"None or {r.expected}", r.value) from None

    return check


def flag(value: Any) -> bool:
    """True or False (numpy's bool too); not 0/1, None or a string, which read as a flag
    would silently mean something."""
    if not isinstance(value, bool | np.bool_):
        raise Refused("True or False", value)
    return bool(value)


def one_of(choices: Sequence[str]) -> Check:
    """One of the strings `choices`."""
    expected = "one of " + ", ".join(repr(c) for c in choices)

    def check(value: Any) -> str:
        if not isinstance(value, str) or value not in choices:
            raise Refused(expected, value)
        return value

    return check


def text(value: Any) -> str:
    """A str."""
    if not isinstance(value, str):
        raise Refused("a str", value)
    return value


def path(value: Any) -> Any:
    """A file or folder name: a non-empty str or os.PathLike, without NUL (which no file
    name holds, and `open` refuses with a bare ValueError)."""
    name = value
    if isinstance(value, os.PathLike):
        name = os.fspath(value)
    if not isinstance(name, str) or not name or "\0" in name:
        raise Refused("a path (a non-empty str or os.PathLike)", value)
    return value


def instance(*types: type, expected: str) -> Check:
    """An instance of one of `types`."""

    def check(value: Any) -> Any:
        if not isinstance(value, types):
            raise Refused(expected, value)
        return value

    return check


def sequence_of(item: Check, expected: str) -> Check:
    """A list or other Sequence (not a str) whose every item `item` accepts; a list back."""

    def check(value: Any) -> list:
        if not isinstance(value, Sequence) or isinstance(value, str | bytes):
            raise Refused(expected, value)
        out = []
        for i, x in enumerate(value):
            try:
                out.append(item(x))
            except Refused as r:
                raise Refused(r.expected, r.value, f"[{i}]{r.where}") from None
        return out

    return check


def mapping_of(key: Check, value_check: Check, expected: str) -> Check:
    """A Mapping whose keys `key` and values `value_check` accept; a dict back."""

    def check(value: Any) -> dict:
        if not isinstance(value, Mapping):
            raise Refused(expected, value)
        out = {}
        for k, v in value.items():
            try:
                k = key(k)
            except Refused as r:
                raise Refused(r.expected, r.value, " key") from None
            try:
                out[k] = value_check(v)
            except Refused as r:
                raise Refused(r.expected, r.value, f"[{k!r}]{r.where}") from None
        return out

    return check


def either(first: Check, second: Check) -> Check:
    """What `first` accepts, else what `second` accepts (`first` decides by type alone)."""

    def check(value: Any) -> Any:
        try:
            return first(value)
        except Refused as r:
            try:
                return second(value)
            except Refused as s:
                if s.where:  # the value was of second's kind: its item is the mistake
                    raise
                raise Refused(f"{r.expected}, or {s.expected}", value) from None

    return check


def target(value: Any) -> Any:
    """A language model: a maxarpa Model, or any object implementing TargetModel."""
    if isinstance(value, Model) or (not isinstance(value, type)
                                    and isinstance(value, TargetModel)):
        return value
    raise Refused("a maxarpa Model (arsdecode.load_lm(path) loads one) or an "
                  "arsdecode.model.TargetModel", value)


ngram = instance(Model, MaxArpaLM, expected="an n-gram model (what arsdecode.load_lm returns)")
maxarpa_model = instance(Model, expected="a maxarpa Model (what arsdecode.load_lm returns)")
lattice = instance(Lattice, WordLattice, expected="a Lattice or a WordLattice")


def is_tree_automaton(value: Any) -> TypeIs[TreeAutomaton]:
    """isinstance(value, TreeAutomaton), without importing the tree package.

    Why: a value can be a TreeAutomaton only once `arsdecode.trees.automaton` is loaded, so
    when it is not, the answer is no; a confusion-network or word-lattice run (one small
    decode per process, issue 34) then never loads the tree package at all.
    """
    module = sys.modules.get("arsdecode.trees.automaton")
    return module is not None and isinstance(value, module.TreeAutomaton)


def structure(value: Any) -> Any:
    """A Lattice, a WordLattice or a TreeAutomaton (see `is_tree_automaton`)."""
    if isinstance(value, Lattice | WordLattice) or is_tree_automaton(value):
        return value
    raise Refused("a Lattice, a WordLattice or a TreeAutomaton", value)


confusion = instance(Lattice, expected="a Lattice")
word_lattice = instance(WordLattice, expected="a WordLattice")
config = optional(instance(Config, expected="a maxarpa.Config"))
count = integer(0)
positive = integer(1)
seed = optional(integer(0, None))
words = either(text, sequence_of(text, "a list of str"))
