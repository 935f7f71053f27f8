"""The feature file of a log-linear target: `ngram<TAB>weight` lines, parsed into `Feature`s.

Why apart from `loglinear.py`: that module is the target (its factor, its bound over left
extensions, its exactness rule); reading a user's file (line numbers, UTF-8, duplicates,
malformed weights) is another job, which the random-field trainer's output also goes through.

A pattern is words separated by spaces; `*` (`SKIP`) stands for any one word. It starts and
ends with a word; `<s>` may only start it, `</s>` only end it (it could never match elsewhere).
Weights are natural-log, finite, of any sign.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from arsdecode.errors import ModelError, OptionError
from arsdecode.model.limits import too_large
from maxarpa.constants import BOS, EOS

SKIP = "*"
"""The pattern word that stands for any one word (a skip-n-gram's gap)."""


@dataclass(frozen=True)
class Feature:
    """One n-gram indicator: `pattern` (words, `SKIP` for any word), its ln weight."""

    pattern: tuple[str, ...]
    weight: float


def parse_feature(text: str) -> tuple[str, ...]:
    """The pattern of `text` (`w1 * w3`), or OptionError saying why it is not one."""
    words = tuple(text.split())
    if not words:
        raise OptionError("empty n-gram")
    if words[0] == SKIP or words[-1] == SKIP:
        raise OptionError(f"n-gram {text!r} starts or ends with {SKIP!r} (a skip is between "
                          "two words)")
    if BOS in words[1:]:
        raise OptionError(f"n-gram {text!r} has {BOS} after its first word (never matches)")
    if EOS in words[:-1]:
        raise OptionError(f"n-gram {text!r} has {EOS} before its last word (never matches)")
    return words


def read_features(path: str | Path) -> list[Feature]:
    """The features of a file of lines `ngram<TAB>weight` (blank lines and lines starting with
    `#` skipped). Raises ModelError naming the file and line for a malformed line, a weight
    that is not a finite number, or an n-gram listed twice; OSError if it cannot be read."""
    features: list[Feature] = []
    seen: dict[tuple[str, ...], int] = {}
    with open(path, encoding="utf-8") as fh:
        for number, line in _lines(path, fh):
            text = line.rstrip("\n").rstrip("\r")
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            where = f"{path}:{number}"
            fields = text.split("\t")
            if len(fields) != 2:
                raise ModelError(f"{where}: expected 'ngram<TAB>weight', got {text!r}")
            try:
                pattern = parse_feature(fields[0])
            except OptionError as e:
                raise ModelError(f"{where}: {e}") from None
            try:
                weight = float(fields[1])
            except ValueError:
                raise ModelError(f"{where}: weight {fields[1]!r} is not a number") from None
            if not math.isfinite(weight):
                raise ModelError(f"{where}: weight {fields[1]!r} is not finite")
            if (big := too_large(abs(weight))) is not None:
                raise ModelError(f"{where}: weight {fields[1]!r} is {big}")
            if pattern in seen:
                raise ModelError(f"{where}: n-gram {fields[0]!r} already listed on line "
                                 f"{seen[pattern]}")
            seen[pattern] = number
            features.append(Feature(pattern, weight))
    return features


def _lines(path: str | Path, fh: TextIO) -> Iterator[tuple[int, str]]:
    """(line number, line) of a text file; ModelError naming the line if it is not UTF-8."""
    number = 0
    try:
        for number, line in enumerate(fh, 1):
            yield number, line
    except UnicodeDecodeError:
        raise ModelError(f"{path}:{number + 1}: not UTF-8 text") from None


def as_features(features: str | Path | Mapping[str, float] | Iterable[Feature] | None
                ) -> list[Feature]:
    """Features from a file path, a {"w1 * w3": weight} mapping, Feature objects, or None."""
    if features is None:
        return []
    if isinstance(features, (str, Path)):
        return read_features(features)
    if isinstance(features, Mapping):
        out = []
        for text, weight in features.items():
            if not math.isfinite(float(weight)):
                raise OptionError(f"feature {text!r}: weight {weight!r} is not finite")
            if (big := too_large(abs(float(weight)))) is not None:
                raise OptionError(f"feature {text!r}: weight {weight!r} is {big}")
            out.append(Feature(parse_feature(text), float(weight)))
        if len({f.pattern for f in out}) != len(out):
            raise OptionError("a feature n-gram is listed twice")
        return out
    return list(features)
