"""Word-lattice files in any supported format, chosen by name or by `format` (issue 21).

Why one entry point: the CLI, batch runs and library users open a lattice by its file name;
the format modules (`slf`, `fst_text`, and the JSON DAG of `word_lattice`) each know one
format, and this module only picks one and handles files (stdin, gzip, atomic writes).

Formats and the suffixes that choose them (a trailing `.gz` is stripped first; the names
are lower-cased):

    "slf"   HTK Standard Lattice Format     .slf .lat .htk
    "fst"   OpenFst text (fstprint)         .fst.txt .fst
    "json"  JSON DAG, or a confusion        .json
            network ({"positions": ...}, read as WordLattice.from_confusion)
    "pfsg"  SRILM's PFSG (lattice-tool's    .pfsg
            native lattices; `pfsg` module)

`.fst` is also OpenFst's binary suffix: a binary FST is refused with a hint to run fstprint.
A file of any other name (SRILM's lattices often have none but `.gz`) is told by its first
lines (`sniff_format`); '-' (stdin/stdout) needs `format`, or a caller that has read stdin can ask
`sniff_format` which format its text is in (the CLI does, for `--lattice -`). Reading: gzip
when the name ends in .gz. Writing: through a temporary file renamed into place when complete
(`maxarpa.output.atomic_output`), compressed by suffix (.gz, .bz2, .xz).
"""

from __future__ import annotations

import gzip
import io
import json
import math
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from arsdecode.errors import LatticeError, OptionError
from arsdecode.lattice.confusion import (
    Lattice,
    input_name,
    parse_json_text,
    read_json_input,
)
from arsdecode.lattice.input_files import without_compression_suffix
from arsdecode.lattice.slf import SlfLattice, SlfScales, read_slf, write_slf
from arsdecode.lattice.vocabulary import apply_conventions, lm_transparent_words
from arsdecode.lattice.word_lattice import WordLattice
from maxarpa.output import atomic_output, byte_stream, compression_of

# The OpenFst text and PFSG readers and writers are imported where their format is read or
# written (issue 34, start-up: an SLF or JSON lattice loads neither).
if TYPE_CHECKING:
    from arsdecode.lattice.fst_text import LabelMode

FORMATS = ("slf", "fst", "json", "pfsg")
SUFFIXES: dict[str, str] = {
    ".slf": "slf", ".lat": "slf", ".htk": "slf",
    ".fst.txt": "fst", ".fst": "fst",
    ".json": "json",
    ".pfsg": "pfsg",
}
SNIFF_BYTES = 1 << 16
"""How much of a file `_sniff_file` reads to tell its format (a PFSG's nodes line is long)."""
OPENFST_BINARY_MAGIC = (2125659606).to_bytes(4, "little")
"""The first bytes of a binary OpenFst file (fst.h's kFstMagicNumber, little-endian)."""


def format_of(path: str | Path, format: str | None = None) -> str:
    """The format of `path`: `format` when given (checked), else from the suffix."""
    if format is not None:
        if format not in FORMATS:
            raise OptionError(f"unknown lattice format {format!r}: choose one of "
                              f"{', '.join(FORMATS)}")
        return format
    name = str(path).lower()
    if name == "-":
        raise OptionError("a lattice on stdin/stdout needs a format (slf, fst, json or pfsg)")
    name = without_compression_suffix(name)
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix):
            return SUFFIXES[suffix]
    sniffed = _sniff_file(path)
    if sniffed is not None:
        return sniffed
    raise OptionError(f"{path}: cannot tell the lattice format from the name; give the format "
                      f"({', '.join(FORMATS)}) or name the file "
                      f"{', '.join(sorted(SUFFIXES))}")


def sniff_format(text: str) -> str | None:
    """The format a lattice's `text` is in, from its first line that is not blank nor a `#`
    comment: "json" if it starts with `{` or `[`, "slf" if its first field is `name=value`,
    "fst" if its first field is a state number (or, as in a Kaldi archive, the line is one
    utterance key and the next one starts with a state number), "pfsg" if it is one of the
    PFSG header words (`name`, `nodes`, ...); None when nothing fits.

    Why: a lattice piped on stdin has no name to tell its format by, and "invalid JSON" for
    an SLF file sends the user the wrong way."""
    lines = (line.split() for line in text.splitlines())
    data = [f for f in lines if f and not f[0].startswith("#")][:2]
    if not data:
        return None
    first = data[0]
    if first[0][0] in "{[":
        return "json"
    if "=" in first[0]:
        return "slf"
    from arsdecode.lattice.pfsg import HEADER as PFSG_HEADER

    if first[0] in PFSG_HEADER and len(first) >= 2:
        return "pfsg"
    if first[0].isdigit():
        return "fst"
    if len(first) == 1 and len(data) > 1 and data[1][0].isdigit():
        return "fst"
    return None


def lattice_name(path: str | Path) -> str:
    """A lattice's name for outputs and n-best entries: its file name without the
    compression and lattice suffixes ("utt1.lat.gz" -> "utt1"; "<stdin>" for '-')."""
    if str(path) == "-":
        return "<stdin>"
    name = without_compression_suffix(Path(path).name)
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def _sniff_file(path: str | Path) -> str | None:
    """The format of a file whose name does not tell it, from its first lines (decompressed
    by suffix); None when it cannot be read or nothing fits (the reader or the caller then
    reports it)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rb") as raw:
            head = raw.read(SNIFF_BYTES)
    except (OSError, EOFError):
        return None
    return sniff_format(head.decode("utf-8", errors="replace"))


def read_word_lattice(path: str | Path, *, format: str | None = None,
                      scales: SlfScales | None = None, keep_lm_score: bool = False,
                      symbols: str | Path | Mapping[str, int] | None = None,
                      acoustic_scale: float = 1.0, acceptor: bool | None = None,
                      labels: LabelMode = "auto", text: str | None = None,
                      epsilon_words: Collection[str] | None = None,
                      htk_quotes: bool = True) -> WordLattice:
    """Read a word lattice in any format ('-' for stdin, needing `format`; gzip if *.gz).

    `epsilon_words`: arc words the LM never scores, made epsilon (default: lattice-tool's
    conventions, `vocabulary.lm_transparent_words()`: HTK's `!SENT_START`/`!SENT_END` and the
    pause `-pau-`; pass () to keep every word). `htk_quotes` (SLF): HTK's quoting and
    escapes, or (False) every word literally, as lattice-tool without -htk-quotes.

    `scales` and `keep_lm_score` apply to SLF (`slf` module); `symbols`, `acoustic_scale`,
    `acceptor` and `labels` to OpenFst text (`fst_text` module). `text` is the input's
    content when the caller has read it already (stdin, read once to `sniff_format`). Errors
    are one line naming the file (and the line, where there is one)."""
    return read_word_lattice_file(
        path, format=format, scales=scales, keep_lm_score=keep_lm_score, symbols=symbols,
        acoustic_scale=acoustic_scale, acceptor=acceptor, labels=labels, text=text,
        epsilon_words=epsilon_words, htk_quotes=htk_quotes)[0]


def read_word_lattice_file(path: str | Path, *, format: str | None = None,
                           scales: SlfScales | None = None, keep_lm_score: bool = False,
                           symbols: str | Path | Mapping[str, int] | None = None,
                           acoustic_scale: float = 1.0, acceptor: bool | None = None,
                           labels: LabelMode = "auto", text: str | None = None,
                           epsilon_words: Collection[str] | None = None,
                           htk_quotes: bool = True) -> tuple[WordLattice, SlfLattice | None]:
    """`read_word_lattice`, and for an SLF file what its reader also found: its header and
    the scales that made its weights (`SlfLattice`; the CLI reports them and takes the
    header's lmscale= as the LM scale). None for the other formats."""
    wl, slf = _read(path, format_of(path, format), scales, keep_lm_score, symbols,
                    acoustic_scale, acceptor, labels, text, htk_quotes)
    return apply_conventions(wl, lm_transparent_words() if epsilon_words is None
                             else epsilon_words), slf


def _read(path: str | Path, fmt: str, scales: SlfScales | None, keep_lm_score: bool,
          symbols: str | Path | Mapping[str, int] | None, acoustic_scale: float,
          acceptor: bool | None, labels: LabelMode, text: str | None,
          htk_quotes: bool = True) -> tuple[WordLattice, SlfLattice | None]:
    """`read_word_lattice_file` before the vocabulary conventions: the format's own reader."""
    if fmt == "slf":
        slf = read_slf(path, scales=scales, keep_lm_score=keep_lm_score, text=text,
                       htk_quotes=htk_quotes)
        return slf.lattice, slf
    if fmt == "pfsg":
        from arsdecode.lattice.pfsg import read_pfsg

        return read_pfsg(path, keep_lm_score=keep_lm_score, text=text), None
    if fmt == "fst":
        if text is None and str(path) != "-" and not str(path).endswith(".gz"):
            _refuse_binary_fst(path)
        from arsdecode.lattice.fst_text import read_fst_text

        return read_fst_text(path, symbols=symbols, acoustic_scale=acoustic_scale,
                             acceptor=acceptor, labels=labels, text=text), None
    name = input_name(path)
    obj = read_json_input(path)[1] if text is None else parse_json_text(text, name)
    if isinstance(obj, dict) and "positions" in obj and "arcs" not in obj:
        return WordLattice.from_confusion(Lattice.from_json_obj(obj, source=name)), None
    return WordLattice.from_json_obj(obj, source=name), None


def _refuse_binary_fst(path: str | Path) -> None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError:
        return  # read_input_text reports it
    if head == OPENFST_BINARY_MAGIC:
        raise LatticeError(f"{path}: a binary OpenFst file; print it as text first "
                           "(fstprint, with --osymbols for words)")


def write_word_lattice(wl: WordLattice, path: str | Path, *, format: str | None = None,
                       posteriors: Sequence[float] | None = None, base: float = math.e,
                       symbols: Mapping[str, int] | None = None,
                       acceptor: bool = False, htk_quotes: bool = True) -> None:
    """Write `wl` to `path` ('-' for stdout, needing `format`) in a format named or chosen by
    suffix; the file appears complete or not at all, compressed by its suffix.

    `posteriors` (one probability per arc) and `base` apply to SLF; `symbols` (write label
    ids of this table instead of symbols) and `acceptor` to OpenFst text. JSON holds the
    lattice alone."""
    fmt = format_of(path, format)
    if posteriors is not None and fmt != "slf":
        raise OptionError(f"{path}: posteriors are written in SLF only (p= on each link)")

    def write(out: TextIO) -> None:
        if fmt == "slf":
            write_slf(wl, out, posteriors=posteriors, base=base, htk_quotes=htk_quotes)
        elif fmt == "fst":
            from arsdecode.lattice.fst_text import write_fst_text

            write_fst_text(wl, out, symbols=symbols, acceptor=acceptor)
        elif fmt == "pfsg":
            from arsdecode.lattice.pfsg import write_pfsg

            write_pfsg(wl, out)
        else:
            json.dump(wl.to_json_obj(), out)
            out.write("\n")

    if str(path) == "-":
        write(sys.stdout)
        return
    text = io.StringIO()
    write(text)  # any LatticeError comes before the file is touched
    write_text_output(path, text.getvalue())


def write_text_output(path: str | Path, text: str) -> None:
    """`text` to `path` ('-': stdout), whole or not at all (a temporary file renamed into
    place), compressed by the name's suffix (.gz, .bz2, .xz)."""
    if str(path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    compression = compression_of(path)
    with atomic_output(path) as tmp, open(tmp, "wb") as raw:
        with byte_stream(raw, compression) as stream:
            stream.write(text.encode("utf-8"))
