"""OpenFst text format (what `fstprint` writes): read a word lattice, write one back (issue 21).

Why: OpenFst, pynini, Kaldi and k2 users hold lattices as FSTs, and `fstprint` (or Kaldi's
`lattice-copy ... ark,t:-`) turns any of them into this text.

Lines (fields separated by white space, as fstprint's tabs):

    src dst ilabel olabel [weight]      an arc (a transducer)
    src dst label [weight]              an arc (an acceptor, fstprint --acceptor)
    state [weight]                      a final state

The first line's first field is the start state. States are non-negative integers, not
necessarily dense. A missing weight is One (cost 0). Which arc form a file uses: `acceptor`
says so; left None, a file with a 5-field line is a transducer, one with a 3-field line an
acceptor (both kinds: an error), and one whose arc lines all have 4 fields is an acceptor
only if every 4th field is a Kaldi weight pair (holds a comma), else a transducer
(fstprint's unweighted transducer).

Words. The word of an arc is its output label (the olabel; an acceptor's only label): in a
Kaldi lattice the input labels are transition ids and the output labels words. Labels are
symbols or integer ids. `labels="auto"` (the default) reads them as ids when every label of
the file is an integer (fstprint without symbols, Kaldi's integer lattices), else as symbols
(fstprint with --isymbols/--osymbols); "ids" or "names" says so (a lattice whose words are
numbers needs "names"). Id 0 is epsilon, and so is the symbol `<eps>`. With a symbol table
(`symbol id` lines, as fstprint's symbol files and Kaldi's words.txt), an id is turned into
its symbol and a symbol must be in the table; either missing is an error naming the line.
Without one, an id's word is its decimal text. `<s>` and `</s>` are read as epsilon: the
engine adds the sentence markers itself.

Weights. A weight is a cost, tropical or log semiring alike (both are -ln of a probability):
the arc's ln weight is `-cost`; `Infinity` is Zero (the arc is dropped, the state not final).
Kaldi's lattice weights `graph,acoustic` (CompactLattice's `graph,acoustic,transition_ids`
too) cost `graph + acoustic_scale * acoustic` (`--acoustic-scale`, as Kaldi's
lattice-scale). A final state's weight is its ln final weight the same way.

A Kaldi text archive holding one lattice is accepted: an utterance key alone on the first
line is skipped, and a blank line ends the lattice; a second lattice is an error. An archive
of many (`lattice-copy ark:lat.gz ark,t:-`) is split by `split_kaldi_archive` into one text per
utterance, each read as its own lattice (`decode --in-kaldi-ark`).

Errors: one LatticeError line naming the file and the line: a wrong number of fields, a bad
state, label or weight, a symbol or id missing from the table, a final state given twice, a
cycle (naming its closing arc), no path to a final state.

Writing (`write_fst_text`): the canonical lattice, start state 0 first, each state's arcs and
then its final line, as a transducer with ilabel == olabel (or an acceptor), costs `-ln
weight` (omitted when 0), words as symbols (`<eps>` for epsilon), or as ids of a symbol table
(`symbol_table(wl)` makes one; `write_symbol_table` writes it).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Literal, TextIO

import numpy as np

from arsdecode.errors import LatticeError, OptionError
from arsdecode.lattice.confusion import SENTENCE_MARKERS
from arsdecode.lattice.input_files import input_name, read_input_text
from arsdecode.lattice.word_lattice import WordLattice

EPSILON_SYMBOL = "<eps>"
LabelMode = Literal["auto", "ids", "names"]


# ----- symbol tables ---------------------------------------------------------------------------


def read_symbol_table(path: str | Path) -> dict[str, int]:
    """A symbol table file (`symbol id` per line; '-' for stdin, gzip if *.gz): symbol -> id."""
    return parse_symbol_table(read_input_text(path, "symbol table"), source=input_name(path))


def parse_symbol_table(text: str, *, source: str = "symbols") -> dict[str, int]:
    """Parse `symbol id` lines; a bad line, a symbol or an id given twice is an error."""
    table: dict[str, int] = {}
    seen: dict[int, int] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        where = f"{source}:{lineno}"
        if len(fields) != 2 or not fields[1].isdigit():
            raise LatticeError(f"{where}: expected 'symbol id' (an id is a non-negative "
                               f"integer), got {line.strip()!r}")
        symbol, sid = fields[0], int(fields[1])
        if symbol in table:
            raise LatticeError(f"{where}: the symbol {symbol!r} is listed twice")
        if sid in seen:
            raise LatticeError(f"{where}: the id {sid} is listed twice (first on line "
                               f"{seen[sid]})")
        table[symbol], seen[sid] = sid, lineno
    return table


def symbol_table(wl: WordLattice) -> dict[str, int]:
    """A symbol table for `wl`: `<eps>` 0, then its words by first appearance from 1."""
    table = {EPSILON_SYMBOL: 0}
    for word in wl.words:
        if word is not None and word not in table:
            table[word] = len(table)
    return table


def write_symbol_table(table: Mapping[str, int], out: TextIO) -> None:
    """Write `symbol<TAB>id` lines in id order (as fstsymbols and Kaldi's words.txt)."""
    for symbol, sid in sorted(table.items(), key=lambda kv: kv[1]):
        out.write(f"{symbol}\t{sid}\n")


# ----- reading ---------------------------------------------------------------------------------


def read_fst_text(path: str | Path, *, symbols: str | Path | Mapping[str, int] | None = None,
                  acoustic_scale: float = 1.0, acceptor: bool | None = None,
                  labels: LabelMode = "auto", text: str | None = None) -> WordLattice:
    """Read an OpenFst text file ('-' for stdin, gzip if *.gz; `text`: its content, when the
    caller has read it already); `symbols` is a symbol table file or an already read table.
    Errors name the file and line."""
    table = symbols if symbols is None or isinstance(symbols, Mapping) else \
        read_symbol_table(symbols)
    table_name = input_name(symbols) if isinstance(symbols, (str, Path)) else "the symbol table"
    if text is None:
        text = read_input_text(path, "lattice")
    return parse_fst_text(text, source=input_name(path),
                          symbols=table, symbols_name=table_name,
                          acoustic_scale=acoustic_scale, acceptor=acceptor, labels=labels)


def parse_fst_text(text: str, *, source: str = "lattice",
                   symbols: Mapping[str, int] | None = None,
                   symbols_name: str = "the symbol table", acoustic_scale: float = 1.0,
                   acceptor: bool | None = None, labels: LabelMode = "auto") -> WordLattice:
    """Parse fstprint text (module docstring) into a checked, canonical WordLattice."""
    if labels not in ("auto", "ids", "names"):
        raise OptionError(f"labels must be 'auto', 'ids' or 'names', not {labels!r}")
    if not math.isfinite(acoustic_scale):
        raise OptionError(f"the acoustic scale must be a finite number, not {acoustic_scale}")
    shape = _Shape(text, source)
    if not shape.rows:
        raise LatticeError(f"{source}: no states (an empty FST)")
    is_acceptor = shape.acceptor(source) if acceptor is None else acceptor
    arc_sizes = (3, 4) if is_acceptor else (4, 5)
    kind = "an acceptor" if is_acceptor else "a transducer"
    if (bad := shape.first_not_sized[arc_sizes]) is not None:
        lineno, n_fields = bad
        raise LatticeError(f"{source}:{lineno}: {n_fields} fields: an arc of {kind} "
                           f"has {arc_sizes[0]} or {arc_sizes[1]}, a final state 1 or 2")
    label_col = 2 if is_acceptor else 3
    ids = shape.digit_labels[label_col] if labels == "auto" else labels == "ids"
    id_to_symbol = {sid: sym for sym, sid in symbols.items()} if symbols is not None else None

    def word_of(label: str, where: str) -> str | None:
        if ids:
            if not label.isdigit():
                raise LatticeError(f"{where}: the label {label!r} is not an integer id")
            sid = int(label)
            if sid == 0:
                return None
            if id_to_symbol is None:
                word = label
            elif sid not in id_to_symbol:
                raise LatticeError(f"{where}: the label id {sid} is not in {symbols_name}")
            else:
                word = id_to_symbol[sid]
        else:
            if symbols is not None:
                if label not in symbols:
                    raise LatticeError(f"{where}: the symbol {label!r} is not in "
                                       f"{symbols_name}")
                if symbols[label] == 0:
                    return None
            word = label
        return None if word == EPSILON_SYMBOL or word in SENTENCE_MARKERS else word

    states: dict[str, int] = {}

    def state(x: str, where: str) -> int:
        if not x.isdigit():
            raise LatticeError(f"{where}: the state {x!r} is not a non-negative integer")
        return states.setdefault(str(int(x)), len(states))

    # One entry per arc in arrays, words interned: no tuple nor list of fields per line kept.
    src, dst, word_ids, weights, arc_lines = (array("q"), array("q"), array("q"), array("d"),
                                              array("q"))
    vocab: dict[str, int] = {}
    finals: dict[int, float] = {}
    final_lines: dict[int, int] = {}
    for lineno, fields in _rows(text, source):
        where = f"{source}:{lineno}"
        if len(fields) <= 2:
            s = state(fields[0], where)
            if s in final_lines:
                raise LatticeError(f"{where}: the state {fields[0]} is final twice (first on "
                                   f"line {final_lines[s]})")
            final_lines[s] = lineno
            w = -_cost(fields[1], where, acoustic_scale) if len(fields) == 2 else 0.0
            if w > -math.inf:
                finals[s] = w
            continue
        s, d = state(fields[0], where), state(fields[1], where)
        weight_col = label_col + 1
        w = -_cost(fields[weight_col], where, acoustic_scale) if len(fields) > weight_col \
            else 0.0
        word = word_of(fields[label_col], where)
        src.append(s)
        dst.append(d)
        word_ids.append(-1 if word is None else vocab.setdefault(word, len(vocab)))
        weights.append(w)
        arc_lines.append(lineno)
    if not finals:
        raise LatticeError(f"{source}: no final state")
    return WordLattice.from_arrays(
        len(states), 0, finals, np.frombuffer(src, np.int64), np.frombuffer(dst, np.int64),
        np.frombuffer(word_ids, np.int64), list(vocab), np.frombuffer(weights, np.float64),
        source=source, node_names=list(states), arc_lines=np.frombuffer(arc_lines, np.int64))


def split_kaldi_archive(text: str, source: str) -> list[tuple[str, str]]:
    """A Kaldi text archive's lattices as (utterance key, text), in order. Each text keeps the
    archive's line numbers (blank lines stand for the lines before it), so an error in one
    lattice names the archive's line. A key is a line of one field that is not a state
    number, after a blank line or at the top; a key given twice is an error."""
    lines = text.splitlines()
    out: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    start = None
    key = ""
    for i, line in enumerate([*lines, ""]):
        fields = line.split()
        if start is None:
            if not fields:
                continue
            if len(fields) != 1 or fields[0].isdigit():
                raise LatticeError(f"{source}:{i + 1}: expected an utterance key alone on its "
                                   "line (a Kaldi text archive)")
            key, start = fields[0], i
            if key in seen:
                raise LatticeError(f"{source}:{i + 1}: the utterance {key!r} is given twice "
                                   f"(first on line {seen[key]})")
            seen[key] = i + 1
        elif not fields:
            out.append((key, "\n" * start + "\n".join(lines[start:i]) + "\n"))
            start = None
    if not out:
        raise LatticeError(f"{source}: no lattice in the archive")
    return out


def _rows(text: str, source: str) -> Iterator[tuple[int, list[str]]]:
    """The non-blank lines as fields, with their line numbers, one at a time; a Kaldi
    utterance key on the first line is skipped, and a blank line after the lattice ends it."""
    started = False
    ended = 0
    any_row = False
    for lineno, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            if any_row:
                ended = ended or lineno
            continue
        if ended:
            raise LatticeError(f"{source}:{lineno}: a second lattice after the blank line "
                               f"{ended}: one lattice per file")
        first, started = not started, True
        if first and len(fields) == 1 and not fields[0].isdigit():
            continue  # a Kaldi archive's utterance key
        any_row = True
        yield lineno, fields


class _Shape:
    """What the arc form is inferred from, in one pass over the rows (`_rows`) before the
    arcs are read, so nothing per row is kept: the number of rows, the arcs' field counts,
    the first line of 5 fields, whether every 4th field of a 4-field row holds a comma, the
    first arc row whose size fits neither form (per form), and whether every label is an
    integer id (per label column)."""

    def __init__(self, text: str, source: str) -> None:
        self.rows = 0
        self.sizes: set[int] = set()
        self.first_five: int | None = None
        self.fourths = 0
        self.fourths_with_comma = 0
        self.first_not_sized: dict[tuple[int, int], tuple[int, int] | None] = {
            (3, 4): None, (4, 5): None}
        self.digit_labels = {2: True, 3: True}
        for lineno, fields in _rows(text, source):
            self.rows += 1
            n = len(fields)
            if n <= 2:
                continue
            self.sizes.add(n)
            if n == 5 and self.first_five is None:
                self.first_five = lineno
            if n == 4:
                self.fourths += 1
                self.fourths_with_comma += "," in fields[3]
            for form, bad in self.first_not_sized.items():
                if bad is None and n not in form:
                    self.first_not_sized[form] = (lineno, n)
            for col in (2, 3):
                if self.digit_labels[col] and not (n > col and fields[col].isdigit()):
                    self.digit_labels[col] = False

    def acceptor(self, source: str) -> bool:
        """Whether the arc lines are an acceptor's (module docstring: inferring the arc
        form)."""
        if 3 in self.sizes and 5 in self.sizes:
            raise LatticeError(f"{source}:{self.first_five}: arcs of 3 fields (an acceptor) "
                               "and of 5 (a transducer) in one file")
        if 3 in self.sizes:
            return True
        if 5 in self.sizes:
            return False
        return self.fourths > 0 and self.fourths == self.fourths_with_comma


def _cost(text: str, where: str, acoustic_scale: float) -> float:
    """A weight field as a cost (-ln): a number, Infinity, or Kaldi's graph,acoustic[,...]."""
    parts = text.split(",")
    try:
        if len(parts) == 1:
            cost = float(text)
        else:
            graph, acoustic = float(parts[0]), float(parts[1])
            cost = graph + (acoustic_scale * acoustic if acoustic_scale else 0.0)
    except ValueError:
        raise LatticeError(f"{where}: the weight {text!r} is not a number (a cost) nor a "
                           "Kaldi graph,acoustic pair") from None
    if math.isnan(cost) or cost == -math.inf:
        raise LatticeError(f"{where}: the weight {text!r} is not a usable cost")
    return cost


# ----- writing ---------------------------------------------------------------------------------


def write_fst_text(wl: WordLattice, out: TextIO, *, symbols: Mapping[str, int] | None = None,
                   acceptor: bool = False) -> None:
    """Write `wl` as fstprint does (module docstring, "Writing"): labels are the words as
    symbols, or their ids in `symbols` when given (every word must be in it)."""
    def label(word: str | None) -> str:
        if word is None:
            return "0" if symbols is not None else EPSILON_SYMBOL
        if symbols is not None:
            if word not in symbols:
                raise LatticeError(f"{wl.source}: the word {word!r} is not in the symbol table")
            return str(symbols[word])
        if word == EPSILON_SYMBOL or any(c.isspace() for c in word):
            raise LatticeError(f"{wl.source}: the word {word!r} cannot be an OpenFst symbol")
        return word

    src, dst, lw = wl.src.tolist(), wl.dst.tolist(), wl.log_weights.tolist()
    k = 0
    for s in range(wl.n_nodes):
        while k < wl.n_arcs and src[k] == s:
            lab = label(wl.words[k])
            labs = lab if acceptor else f"{lab}\t{lab}"
            out.write(f"{s}\t{dst[k]}\t{labs}{_cost_field(lw[k])}\n")
            k += 1
        if s in wl.finals:
            out.write(f"{s}{_cost_field(wl.finals[s])}\n")


def _cost_field(ln_weight: float) -> str:
    return "" if ln_weight == 0 else f"\t{-ln_weight!r}"
