"""The one entry point that opens any model file, and the one that converts between formats.

Why here and not in model.py: each format module owns its magic string and its `is_<format>`
sniff and imports `Model`; `Model` imports none of them. This module sits above both, so
there is no import cycle, and adding a format means adding one branch here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from maxarpa.binary_format import is_binary, read_binary, write_binary
from maxarpa.checks import check_stored_bounds, check_structure, verify_bounds
from maxarpa.config import DEFAULT_CONFIG, Config
from maxarpa.errors import FormatError
from maxarpa.maxarpa_format import is_max_arpa, read_max_arpa, write_max_arpa
from maxarpa.model import Model
from maxarpa.output import check_output
from maxarpa.specials import apply_config
from maxarpa.spool import display_name, needs_spooling, spooled, under_name


def load(path: str | Path, *, mmap: bool = False, config: Config | None = None) -> Model:
    """Open an ARPA, MAX-ARPA or maxarpa binary model; the kind is read from the content.

    ARPA and MAX-ARPA may be plain or gzip/bzip2/xz compressed. An ARPA file gets its
    max-backoff bounds computed; MAX-ARPA and binary files carry them.

    Args:
        path: the model file; `-` is standard input. Standard input, a pipe or another
            file that can be read only once is first copied to a temporary file
            (maxarpa.spool), because the content is read twice (sniffed, then parsed).
        mmap: for a binary (.npz) model, map its arrays read-only from the file instead of
            copying them into memory (processes mapping one file share its pages). Ignored
            for text formats, which are always parsed into memory.
        config: strictness settings (`maxarpa.Config`); None means the defaults.

    Returns:
        The model. Every value it reports is a log10 probability or backoff.

    Raises:
        FormatError: the file is malformed, its stored bounds are not bounds (checked on
            every row, see maxarpa.checks), or it breaks a rule `config` says to raise on;
            the message names the file (and the line or the n-gram).
    """
    if needs_spooling(path):
        with spooled(path) as copy:
            return under_name(lambda: load(copy, config=config), copy, display_name(path))
    config = config if config is not None else DEFAULT_CONFIG
    if is_binary(path):
        model = read_binary(path, mmap=mmap)
        check_structure(model.trie, model.source)
    elif is_max_arpa(path):
        model = read_max_arpa(path)
    else:
        return apply_config(Model.from_arpa(path), config)
    check_stored_bounds(model.trie, model.vocab, model.source)
    if config.verify_bounds:
        problem = verify_bounds(model.trie, model.vocab, model.eos_id)
        if problem is not None:
            raise FormatError(model.source, None, f"stored bounds differ from the recomputed "
                              f"ones: {problem}")
    return apply_config(model, config)


def convert(
    input: str | Path, output: str | Path, *, binary: bool = False,
    config: Config | None = None, progress: Callable[[int], None] | None = None,
) -> Model:
    """Read `input` (ARPA, MAX-ARPA or binary) and write it as MAX-ARPA text or binary.

    Args:
        input: the model to read (see `load`; `-` is standard input).
        output: the file to write, through a temporary file beside it and a rename; the
            temporary file is removed on any error and on SIGINT, SIGTERM or SIGHUP.
        binary: write the uncompressed .npz companion (for `load(..., mmap=True)`) instead
            of MAX-ARPA text.
        config: strictness settings used to read `input`.
        progress: called with the number of n-grams written, now and then (text only).

    Returns:
        The model that was written (log10 values).

    Raises:
        OutputError: checked before reading: `output` is `input` itself (os.path.samefile,
            so also a hard or symbolic link to it), its directory is missing, or its suffix
            asks for a compression that cannot be honoured (text: .gz/.bz2/.xz compress, other
            compression suffixes are refused; binary: never compressed).
        FormatError: `input` is malformed.
        OSError: `output` cannot be written; the message names `output`.
    """
    check_output(input, output, binary=binary)
    model = load(input, config=config)
    if binary:
        write_binary(model, output)
    else:
        write_max_arpa(model, output, progress=progress)
    return model
