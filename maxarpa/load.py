"""The one entry point that builds a model from any file, and the one that converts formats.

Why functions build (pynini's rule) and not `Model` classmethods: a model is only usable once
the strictness `Config` has been applied, and a second constructor (the former
`Model.from_arpa`) skipped it. Each format module owns its magic string and its `is_<format>`
sniff and imports `Model`; `Model` imports none of them nor this module. This module sits
above both, so there is no import cycle (tests/test_imports.py checks every import, also
those inside functions), and adding a format means adding one branch here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from maxarpa.arpa import read_arpa
from maxarpa.binary_format import is_binary, read_binary_checked
from maxarpa.binary_write import write_binary
from maxarpa.bound import compute_bounds
from maxarpa.checks import (
    check_stored_bounds,
    check_structure,
    first_difference,
    recompute_bounds,
    suffix_mismatch,
)
from maxarpa.config import DEFAULT_CONFIG, Config
from maxarpa.digest import digest_matches
from maxarpa.errors import FormatError
from maxarpa.keyed import read_sorted_arpa
from maxarpa.maxarpa_format import is_max_arpa, read_max_arpa_with_digest, write_max_arpa
from maxarpa.model import Model
from maxarpa.output import check_output
from maxarpa.rounded import compute_rounded_bounds
from maxarpa.specials import adds_words, apply_config
from maxarpa.spool import display_name, needs_spooling, spooled, under_name
from maxarpa.table import build_trie


def load(path: str | Path, *, mmap: bool = False, config: Config | None = None,
         rounded_bounds: bool = False) -> Model:
    """Open an ARPA, MAX-ARPA or maxarpa binary model; the kind is read from the content.

    ARPA and MAX-ARPA may be plain or gzip/bzip2/xz compressed. An ARPA file gets its
    max-backoff bounds computed; MAX-ARPA and binary files carry them. Stored bounds are
    used as they are only when the file's digest matches its numbers (maxarpa.digest: the
    file is as this package wrote it); otherwise they are checked and recomputed, or the
    file is refused (`Config.untrusted_bounds`), so no file can make a false certificate.

    Args:
        path: the model file; `-` is standard input. Standard input, a pipe or another
            file that can be read only once is first copied to a temporary file
            (maxarpa.spool), because the content is read twice (sniffed, then parsed).
        mmap: for a binary (.npz) model, map its arrays read-only from the file instead of
            copying them into memory (processes mapping one file share its pages). Ignored
            for text formats, which are always parsed into memory.
        config: strictness settings (`maxarpa.Config`); None means the defaults.
        rounded_bounds: for a model about to be written by `write_binary` (conversion):
            an ARPA file's bounds are computed as a format-3 binary file stores them, float32
            rounded up (`maxarpa.rounded`, `trie.bounds_rounded`), holding two orders' exact
            bounds at a time instead of all (issue 34's conversion peak); the file written
            is the same. Other formats' bounds are read, and this is ignored.

    Returns:
        The model. Every value it reports is a log10 probability or backoff.

    Raises:
        FormatError: the file is malformed, its stored bounds are not bounds (an untrusted
            file, checked on every row, see maxarpa.checks), differ from their recomputation
            where `config` says to refuse that, or it breaks a rule `config` says to raise on;
            the message names the file (and the line or the n-gram).
    """
    if needs_spooling(path):
        with spooled(path) as copy:
            return under_name(lambda: load(copy, config=config, rounded_bounds=rounded_bounds),
                              copy, display_name(path))
    config = config if config is not None else DEFAULT_CONFIG
    binary = is_binary(path)
    if binary:  # its digest checked by the reader (a mapped file's from plain reads)
        model, digest, matches = read_binary_checked(path, mmap=mmap)
    elif is_max_arpa(path):
        model, digest = read_max_arpa_with_digest(path)
        matches = digest_matches(digest, model.vocab, model.trie)
    else:
        return apply_config(_from_arpa(path, config if rounded_bounds else None), config)
    if digest is None:
        distrust: str | None = "the file carries no digest"
    elif not matches:
        distrust = "the file's digest does not match its numbers"
    else:
        distrust = None  # as this package wrote it
    if binary and (distrust is not None or config.verify_bounds):
        # A binary file's keys and rows are taken as they are: checked before any use.
        # With a matching digest they are the arrays this package wrote, so the check is
        # skipped; that saves about what the digest costs (bench/bench_maxarpa.py --digest).
        check_structure(model.trie, model.source)
    if distrust is not None or config.verify_bounds:
        model = _recomputed(model, config, distrust)
    return apply_config(model, config)


def _from_arpa(path: str | Path, rounded: Config | None = None) -> Model:
    """An ARPA file's model with its max-backoff bounds computed and no `Config` applied yet
    (a missing <s> is still missing): `load` applies it. Private: a model that skipped the
    strictness checks must not be one call away.

    With `rounded` (the config `load` will apply), the bounds are computed rounded, as
    `load(rounded_bounds=True)` says, unless applying the config adds words: a word added
    takes its bound from the exact ones (`specials.add_unigrams`).

    Raises:
        FormatError: the file is malformed (the message names the file and line).
    """
    keyed = read_sorted_arpa(path)  # lmplz's files: keys straight from the parser
    if keyed is not None:
        vocab, trie = keyed
    else:
        data = read_arpa(path)
        vocab, trie = data.vocab, build_trie(data, str(path))
        del data
    model = Model(vocab, trie, str(path))
    if rounded is not None and not adds_words(model, rounded):
        compute_rounded_bounds(trie, model.eos_id)
    else:
        compute_bounds(trie, model.eos_id)
    return model


def _recomputed(model: Model, config: Config, distrust: str | None) -> Model:
    """The model with its blank log10p, mf and mbow recomputed from its listed values, after
    the cheap checks (an untrusted file failing one is refused, naming the n-gram); refused
    instead if a stored value differs and `config` says to refuse (naming the first one).
    `distrust` says why the file is not trusted (None: it is, but verify_bounds is set)."""
    if distrust is not None:
        check_stored_bounds(model.trie, model.vocab, model.source)
    problem = suffix_mismatch(model.trie)
    if problem is not None:
        raise FormatError(model.source, None, problem)
    fresh = recompute_bounds(model.trie, model.eos_id)
    if config.verify_bounds or config.untrusted_bounds == "refuse":
        problem = first_difference(model.trie, fresh, model.vocab)
        if problem is not None:
            why = distrust if distrust is not None else "verify_bounds is set"
            raise FormatError(model.source, None, f"stored bounds differ from the recomputed "
                              f"ones ({why}): {problem}")
    return Model(model.vocab, fresh, model.source)


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
            of MAX-ARPA text. (`maxarpa convert --binary` writes the same file through
            `maxarpa.streamed` when it can, without the model in memory; this function
            returns the model, so it holds it.)
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
    model = load(input, config=config, rounded_bounds=binary)
    if binary:  # `load` leaves no unchecked bound: the writers need not check them again
        write_binary(model, output, bounds_verified=True)
    else:
        write_max_arpa(model, output, progress=progress, bounds_verified=True)
    return model
