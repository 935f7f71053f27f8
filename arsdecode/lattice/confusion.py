"""Lattices: the candidate tokens of each position and their natural-log emission weights.

Why a separate module: every front end (JSON files, the SMS channel, the POS tagger) builds the
same object, and every check on it (empty, NaN, no candidates) must happen once, before any work.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from arsdecode.errors import LatticeError, OptionError
from arsdecode.lattice.input_files import input_name, read_input_text
from arsdecode.lattice.input_files import utf8_text as utf8_text  # re-exported: it lived here
from arsdecode.model.limits import too_large
from maxarpa.constants import BOS, EOS

SENTENCE_MARKERS = (BOS, EOS)
"""Not words: the decoder adds them itself around every path, so a lattice may not list them."""
WORD_SEPARATORS = frozenset(" \t\n\r\v\f")
"""What separates words in ARPA files and in every text arsdecode prints (maxarpa.arpa.SPACE):
no token may hold one, or a printed path would read as more words than it has."""


def token_problem(token: str) -> str | None:
    """Why `token` cannot be a lattice word (a clause for a message naming it), or None.

    Why these: a token holding white space ("the union") prints like two words and can never
    be an ARPA word; a lone surrogate ("\\ud800", which JSON's \\u escapes allow) is no text
    and no byte, so printing it fails. A surrogate U+DC80..U+DCFF is accepted: it is how a
    word's non-UTF-8 byte reads (surrogateescape, as maxarpa reads ARPA words), and it prints
    back as that byte.
    """
    if not WORD_SEPARATORS.isdisjoint(token):
        return "holds white space (a token is one word; text output separates words by spaces)"
    try:
        token.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as err:
        return (f"holds the lone surrogate U+{ord(token[err.start]):04X} at character "
                f"{err.start}, which is neither text nor a byte")
    return None


@dataclass(frozen=True)
class Lattice:
    """Candidates per position. `tokens[i][j]` has emission weight `log_emissions[i][j]` (ln)."""

    tokens: tuple[tuple[str, ...], ...]
    log_emissions: tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        # Every constructor (from_lists, JSON, and the direct one the SMS channel uses for
        # speed) passes here. A marker inside a path would make the n-gram context of a later
        # position look like the start of a sentence, which the engine treats as exact: a
        # false certificate (issue 9 A.1). The scan is a C-level tuple search per position.
        for i, toks in enumerate(self.tokens):
            for marker in SENTENCE_MARKERS:
                if marker in toks:
                    raise LatticeError(
                        f"position {i}: {marker!r} is a sentence marker, not a word; the "
                        "decoder adds <s> and </s> itself, so a lattice may not list them"
                    )

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def widths(self) -> list[int]:
        return [len(t) for t in self.tokens]

    @classmethod
    def fixed_length(cls, vocab: Sequence[str], length: int) -> Lattice:
        """`length` positions, each holding every word of `vocab` with emission 0: its paths
        are all sentences of that length over `vocab`, so a target's samples on it follow the
        target normalised at that length, and ln Z is that length's normaliser (what
        random-field training needs). Raises OptionError for length < 1 and LatticeError for
        an empty vocabulary or a sentence marker in it."""
        if length < 1:
            raise OptionError(f"length must be >= 1, not {length}")
        row = [(w, 0.0) for w in vocab]
        return cls.from_lists([row] * length, source=f"fixed-length lattice ({length} words)")

    @classmethod
    def from_lists(
        cls, positions: Sequence[Sequence[tuple[str, float]]], source: str = "lattice"
    ) -> Lattice:
        """Build and validate a lattice from `[[(token, ln_emission), ...], ...]`.

        Raises:
            LatticeError: empty lattice, empty position, duplicate token, a sentence marker
                (<s>, </s>) as a token, a token with white space or a lone surrogate
                (`token_problem`), non-finite weight other than -inf, a weight too large to
                add up (`arsdecode.model.limits`), or a position whose candidates all have
                weight -inf.
        """
        if len(positions) == 0:
            raise LatticeError(f"{source}: the lattice is empty (no positions)")
        tokens: list[tuple[str, ...]] = []
        weights: list[np.ndarray] = []
        for i, position in enumerate(positions):
            where = f"{source}: position {i}"
            if not isinstance(position, (list, tuple)) or len(position) == 0:
                raise LatticeError(f"{where} has no candidates")
            toks: list[str] = []
            ws: list[float] = []
            for cand in position:
                if (
                    not isinstance(cand, (list, tuple))
                    or len(cand) != 2
                    or not isinstance(cand[0], str)
                    or isinstance(cand[1], bool)
                    or not isinstance(cand[1], (int, float))
                ):
                    raise LatticeError(f"{where}: candidate {cand!r} is not [\"token\", ln_weight]")
                tok = cand[0]
                try:
                    w = float(cand[1])
                except OverflowError:  # a JSON integer beyond float64 (e.g. 400 digits)
                    raise LatticeError(f"{where}: token {tok!r} has a weight beyond float64's "
                                       "range") from None
                if math.isnan(w) or w == math.inf:
                    raise LatticeError(f"{where}: token {tok!r} has weight {w}")
                if (big := too_large(w)) is not None:
                    raise LatticeError(f"{where}: token {tok!r} has the weight {w!r}, {big}")
                if tok == "":
                    raise LatticeError(f"{where}: empty token")
                if (bad := token_problem(tok)) is not None:
                    raise LatticeError(f"{where}: the token {tok!r} {bad}")
                if tok in SENTENCE_MARKERS:
                    raise LatticeError(
                        f"{where}: {tok!r} is a sentence marker, not a word (the decoder "
                        "adds <s> and </s> itself)"
                    )
                toks.append(tok)
                ws.append(w)
            if len(set(toks)) != len(toks):
                twice = next(t for k, t in enumerate(toks) if t in toks[:k])
                raise LatticeError(f"{where} lists the token {twice!r} twice")
            arr = np.asarray(ws, dtype=np.float64)
            if not np.any(np.isfinite(arr)):
                raise LatticeError(f"{where}: every candidate has weight -inf")
            tokens.append(tuple(toks))
            weights.append(arr)
        return cls(tuple(tokens), tuple(weights))

    @classmethod
    def from_json_obj(cls, obj: object, source: str = "lattice") -> Lattice:
        """Parse the JSON shape `{"positions": [[["token", ln_emission], ...], ...]}`."""
        if not isinstance(obj, dict) or "positions" not in obj:
            raise LatticeError(f'{source}: expected a JSON object with key "positions"')
        positions = obj["positions"]
        if not isinstance(positions, list):
            raise LatticeError(f'{source}: "positions" must be a list')
        return cls.from_lists(positions, source=source)

    @classmethod
    def from_json_file(cls, path: str | Path) -> Lattice:
        """Read a lattice JSON file ('-' for stdin; gzip-compressed if its name ends in .gz);
        any problem is a one-line LatticeError naming the file.

        Why bytes first: the file must be UTF-8 JSON, and a file that is not (gzip bytes
        under a .json name, a Latin-1 token) has to be reported like any other bad input,
        with the file and the byte offset, not as a decoding traceback.
        """
        name, obj = read_json_input(path)
        return cls.from_json_obj(obj, source=name)

    def to_json_obj(self) -> dict:
        return {
            "positions": [
                [[t, float(w)] for t, w in zip(toks, ws)]
                for toks, ws in zip(self.tokens, self.log_emissions)
            ]
        }

    @cached_property
    def position_of(self) -> list[dict[str, int]]:
        """Per position, token -> candidate index."""
        return [{t: j for j, t in enumerate(toks)} for toks in self.tokens]

    def indices(self, tokens: Sequence[str]) -> list[int]:
        """Candidate index of each token of a path; LatticeError if the lattice forbids it."""
        if len(tokens) != len(self.tokens):
            raise LatticeError(f"path has {len(tokens)} tokens, lattice has {len(self.tokens)}")
        try:
            return [self.position_of[i][t] for i, t in enumerate(tokens)]
        except KeyError as err:
            raise LatticeError(f"token {err.args[0]!r} is not a candidate") from None

    def num_paths(self) -> int:
        return math.prod(self.widths)


def json_constant(name: str) -> float:
    """`parse_constant` for lattice JSON (files and batch lines alike): -Infinity is an
    allowed weight (a candidate the emission model rules out); NaN and Infinity are not."""
    if name == "-Infinity":
        return -math.inf
    raise ValueError(f"weight {name} is not allowed")


def read_json_input(path: str | Path, what: str = "lattice") -> tuple[str, Any]:
    """(the input's name, its parsed JSON), read by `read_input_text`, with the grammar of
    lattice files (`json_constant`): confusion networks and JSON DAGs share it. Bad JSON is a
    one-line LatticeError naming the file and line."""
    name = input_name(path)
    return name, parse_json_text(read_input_text(path, what), name, what)


def parse_json_text(text: str, name: str, what: str = "lattice") -> Any:
    """The JSON of input `name`'s text, with the grammar of lattice files (`json_constant`);
    bad JSON (or JSON nested past the parser's recursion limit) is a one-line LatticeError
    naming the input and line. `read_json_input` reads the file first; a lattice already read
    from stdin (to sniff its format) is parsed here directly."""
    try:
        return json.loads(text, parse_constant=json_constant)
    except json.JSONDecodeError as err:
        raise LatticeError(f"{name}:{err.lineno}: invalid JSON: {err.msg}") from None
    except ValueError as err:
        raise LatticeError(f"{name}: {err}") from None
    except RecursionError:  # json's parser recurses once per nested list or object
        raise LatticeError(f"{name}: invalid {what}: JSON nested too deeply for the "
                           "parser") from None
