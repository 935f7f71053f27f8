"""SRILM `disambig`'s inputs: a map file of p(observed | hidden) and a text of observed
tokens, turned into confusion-network Lattices.

Why a module of its own: `disambig` users hold their channel as a compact map (one line per
observed token, `observed hidden1 p1 hidden2 p2 ...`) and their observations as plain text, not
as lattice JSON. Reading both here lets every front end (the `disambig` command today) build the
same Lattice objects, checked once.

The map format, as SRILM's VocabMap reads it:

- a line is `observed hidden1 [p1] hidden2 [p2] ...`; a field after a hidden word that reads as a
  number is that word's probability, otherwise the hidden word has p = 1 (log10 0 with logmap);
- plain probabilities, or log10 probabilities with `logmap=True` (`-inf` allowed there);
- a later line for the same observed token replaces the earlier one (SRILM warns and replaces);
- blank lines are skipped.

Differences from SRILM, each an error here (one line naming file and line) where SRILM goes on:
a hidden word listed twice on one line (SRILM keeps the last probability), a probability
outside [0, 1] (log10 above 0 with logmap; SRILM takes 1.5 or 7 as they come), a number that
overflows float64 (1e400), a sentence marker (<s>, </s>) as a hidden word of another token (the
decoder adds <s> and </s> itself; the lines `<s> <s>` and `</s> </s>`, SRILM's built-in
defaults, are accepted and ignored).

Words are bytes, as in SRILM and in maxarpa's ARPA reader: the map and the text are read as
UTF-8, and bytes that are not UTF-8 (a Latin-1 `caf\xe9`) with surrogateescape, as maxarpa
reads an ARPA file's words; so the same bytes are the same word in the map, the text and the
model, and the CLI prints such a word back as its bytes.

Emissions are natural log: ln p(observed | hidden) * mapw. Identical candidate lists (the same
hidden words with the same probabilities, e.g. every spelling of a keypad code) share one parsed
row, and the lattices built from it share its arrays.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from arsdecode.errors import LatticeError, ObservationError
from arsdecode.lattice.confusion import SENTENCE_MARKERS, Lattice
from arsdecode.lattice.input_files import input_name, read_input_text

LN10 = math.log(10.0)

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z", re.ASCII)
_NEG_INF = frozenset({"-inf", "-infinity"})


def _probability(field_text: str, logmap: bool) -> float | None:
    """The ln probability a map field stands for, or None if the field is a word."""
    if _NUMBER.match(field_text):
        value = float(field_text)
    elif logmap and field_text.lower() in _NEG_INF:
        value = -math.inf
    else:
        return None
    if logmap:
        return value * LN10
    if value < 0:
        return math.nan  # reported by the caller with file and line
    return math.log(value) if value > 0 else -math.inf


_NUMBER_START = frozenset("0123456789.+-")


def _fast_row(fields: list[str], logmap: bool) -> tuple[list[str], list[float]] | None:
    """The common line `observed h1 p1 h2 p2 ...` (every word with its probability, nothing
    odd), parsed without the per-field grammar; None when anything is unusual, and the
    general parser then reads the line (and reports what is wrong with it)."""
    if len(fields) < 3 or len(fields) % 2 == 0:
        return None
    words = fields[1::2]
    texts = fields[2::2]
    # float() reads exactly _NUMBER's ASCII strings, plus '_' separators and inf/nan, which
    # are ruled out here (tests/test_disambig.py checks the two parsers agree).
    if any(w[0] in _NUMBER_START for w in words):
        return None
    if not all(t.isascii() and "_" not in t for t in texts):
        return None
    try:
        values = [float(t) for t in texts]
    except ValueError:
        return None
    if not all(math.isfinite(v) for v in values):
        return None
    if len(set(words)) != len(words) or not SENTENCE_MARKERS_SET.isdisjoint(words):
        return None
    if logmap:
        if any(v > 0 for v in values):
            return None
        return words, [v * LN10 for v in values]
    if any(v < 0 or v > 1 for v in values):
        return None
    return words, [math.log(v) if v > 0 else -math.inf for v in values]


SENTENCE_MARKERS_SET = frozenset(SENTENCE_MARKERS)


def _lines(text: str) -> Iterator[str]:
    """The lines of `text` (split at newlines, as SRILM reads them), one at a time: a list
    of every line of a 35 MB map would double its memory (and io.StringIO copies it)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        yield text[start:end]
        start = end + 1


def _general_row(fields: list[str], logmap: bool, where: str) -> tuple[list[str], list[float]]:
    """Any line of the map grammar: a field after a hidden word that reads as a number is its
    probability, else the word has p = 1. Raises LatticeError naming `where`."""
    hidden: list[str] = []
    logs: list[float] = []
    i = 1
    while i < len(fields):
        word = fields[i]
        i += 1
        if _probability(word, logmap) is not None:
            raise LatticeError(f"{where}: expected a hidden word, found the number "
                               f"{word!r}")
        lp = 0.0
        if i < len(fields):
            value = _probability(fields[i], logmap)
            if value is not None:
                i += 1
                if math.isnan(value) or value > 0:  # p < 0, p > 1, NaN or overflow
                    raise LatticeError(f"{where}: hidden word {word!r} has the "
                                       f"probability {fields[i - 1]!r}, not one in "
                                       f"{'[-inf, 0] (log10)' if logmap else '[0, 1]'}")
                lp = value
        if word in hidden:
            raise LatticeError(f"{where}: the hidden word {word!r} is listed twice")
        hidden.append(word)
        logs.append(lp)
    return hidden, logs


@dataclass(frozen=True, eq=False)
class MapRow:
    """The hidden candidates of one observed token and their ln p(observed | hidden)."""

    hidden: tuple[str, ...]
    log_probs: np.ndarray
    line: int  # the first map line that defined this row (for messages)


@dataclass
class DisambigMap:
    """A parsed map: observed token -> its row (rows with identical lists are one object)."""

    rows: dict[str, MapRow]
    source: str = "map"
    tolower: bool = False
    _scaled: dict[tuple[int, float], np.ndarray] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def distinct_rows(self) -> int:
        return len({id(r) for r in self.rows.values()})

    @classmethod
    def read(cls, path: str | Path, *, logmap: bool = False, tolower: bool = False) -> DisambigMap:
        """Read a map file ('-' for stdin, .gz compressed). Raises LatticeError (one line,
        `file:line: ...`) on a malformed line."""
        name = input_name(path)
        return cls.parse(read_input_text(path, "map", bytes_ok=True), source=name,
                         logmap=logmap, tolower=tolower)

    @classmethod
    def parse(cls, text: str, *, source: str = "map", logmap: bool = False,
              tolower: bool = False) -> DisambigMap:
        """Parse map text (see the module docstring for the format)."""
        rows: dict[str, MapRow] = {}
        # Memory: a map of full keypad lists holds ~10^6 (word, p) pairs over ~10^4 distinct
        # words. Each hidden word is kept as one shared string object (`names`), and rows are
        # shared by (words, the bytes of their float64 ln p), not by tuples of Python floats:
        # 94 MB instead of 228 MB for the 35 MB map of issue 23's full lists.
        shared: dict[tuple[tuple[str, ...], bytes], MapRow] = {}
        names: dict[str, str] = {}
        for lineno, raw in enumerate(_lines(text), start=1):
            fields = (raw.lower() if tolower else raw).split()
            if not fields:
                continue
            where = f"{source}:{lineno}"
            observed = fields[0]
            if len(fields) == 1:
                raise LatticeError(f"{where}: the observed token {observed!r} maps to no "
                                   "hidden word")
            parsed = _fast_row(fields, logmap)
            if parsed is not None:
                hidden, logs = parsed
            else:  # the general grammar, with its messages
                hidden, logs = _general_row(fields, logmap, where)
            if observed in SENTENCE_MARKERS and hidden == [observed]:
                continue  # SRILM's built-in default mapping; the decoder adds the markers
            for word in hidden:
                if word in SENTENCE_MARKERS:
                    raise LatticeError(f"{where}: {word!r} is a sentence marker, not a hidden "
                                       "word (the decoder adds <s> and </s> itself)")
            if not any(lp > -math.inf for lp in logs):
                raise LatticeError(f"{where}: every hidden word of {observed!r} has "
                                   "probability 0")
            words = tuple([names.setdefault(w, w) for w in hidden])
            arr = np.asarray(logs, dtype=np.float64)
            key = (words, arr.tobytes())
            row = shared.get(key)
            if row is None:
                arr.setflags(write=False)
                row = shared[key] = MapRow(words, arr, lineno)
            rows[observed] = row  # a later line replaces an earlier one, as in SRILM
        if not rows:
            raise LatticeError(f"{source}: the map has no entries")
        return cls(rows, source, tolower)

    def _emissions(self, row: MapRow, mapw: float) -> np.ndarray:
        if mapw == 1.0:
            return row.log_probs
        key = (id(row), mapw)
        arr = self._scaled.get(key)
        if arr is None:
            # -inf stays -inf (p = 0 is impossible at any weight, also at mapw = 0).
            arr = np.full(row.log_probs.shape, -math.inf)
            finite = ~np.isneginf(row.log_probs)
            arr[finite] = row.log_probs[finite] * mapw
            arr.setflags(write=False)
            self._scaled[key] = arr
        return arr

    def lattice(self, observed: Sequence[str], *, mapw: float = 1.0, keep_unk: bool = False,
                where: str = "text") -> Lattice:
        """The confusion network of one observed sentence (tokens already split; lowercased
        here when the map was read with tolower). A token missing from the map passes through
        as itself with p = 1 under `keep_unk`, else is a one-line ObservationError naming
        `where` (e.g. "obs.txt:3")."""
        if not mapw >= 0 or math.isinf(mapw):
            raise LatticeError(f"mapw must be a finite number >= 0, not {mapw}")
        if len(observed) == 0:
            raise ObservationError(f"{where}: the sentence is empty")
        tokens: list[tuple[str, ...]] = []
        weights: list[np.ndarray] = []
        for tok in observed:
            if self.tolower:
                tok = tok.lower()
            row = self.rows.get(tok)
            if row is not None:
                tokens.append(row.hidden)
                weights.append(self._emissions(row, mapw))
            elif keep_unk:
                if tok in SENTENCE_MARKERS:
                    raise ObservationError(f"{where}: {tok!r} is a sentence marker; the "
                                           "decoder adds <s> and </s> itself")
                tokens.append((tok,))
                weights.append(_ZERO)
            else:
                raise ObservationError(f"{where}: the observed token {tok!r} is not in the map "
                                       f"{self.source} (--keep-unk passes it through as itself)")
        return Lattice(tuple(tokens), tuple(weights))


_ZERO = np.zeros(1, dtype=np.float64)
_ZERO.setflags(write=False)


def read_observations(path: str | Path) -> list[list[str]]:
    """`--text`: one sentence of observed tokens per line (whitespace-separated; a blank line
    is an empty sentence)."""
    return [line.split() for line in read_input_text(path, "text", bytes_ok=True).splitlines()]


def text_sentences(dmap: DisambigMap, path: str | Path, *, mapw: float = 1.0,
                   keep_unk: bool = False) -> list[tuple[list[str], Lattice | None]]:
    """Each line of the text file `path` as (its observed tokens, its lattice); the lattice is
    None for a blank line (nothing to decode). The file is read once (it may be stdin).
    Errors name the text file and line."""
    name = input_name(path)
    out: list[tuple[list[str], Lattice | None]] = []
    for lineno, sentence in enumerate(read_observations(path), start=1):
        if not sentence:
            out.append((sentence, None))
            continue
        out.append((sentence, dmap.lattice(sentence, mapw=mapw, keep_unk=keep_unk,
                                           where=f"{name}:{lineno}")))
    return out


def text_lattices(dmap: DisambigMap, path: str | Path, *, mapw: float = 1.0,
                  keep_unk: bool = False) -> list[Lattice | None]:
    """One lattice per line of the text file `path`; None for a blank line (nothing to
    decode). Errors name the text file and line."""
    return [lat for _, lat in text_sentences(dmap, path, mapw=mapw, keep_unk=keep_unk)]
