"""How every `arsdecode` command writes: whole lines to stdout, warnings to stderr, files
checked before the work, progress bars only on a terminal.

Why one module: every command prints results, warns about out-of-vocabulary candidates and
may write a file; the guarantees (a line is never cut by Ctrl-C, a full disk is an error and
not a silently truncated output, a file is replaced whole or not at all) are kept here once.
Files are written through maxarpa's one atomic writer, `maxarpa.output.atomic_output`.
"""

from __future__ import annotations

import io
import json
import math
import os
import signal
import sys
from collections.abc import Container, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arsdecode.errors import ModelError
from arsdecode.termination import TERMINATION_SIGNALS

if TYPE_CHECKING:
    from arsdecode.lattice import Lattice, WordLattice


def buffer_stdout() -> None:
    """Put a real buffer between sys.stdout and its file when Python runs unbuffered.

    Why: with `python -u` or PYTHONUNBUFFERED=1, sys.stdout writes straight to the raw file,
    and a short write (a disk that fills up half-way through a line) is silently dropped: the
    run exits 0 with truncated output. A BufferedWriter retries short writes and raises the
    error (ENOSPC, EFBIG), which the CLI reports. Write-through and line buffering keep the
    unbuffered behaviour: every line reaches the file at once.
    """
    out = sys.stdout
    if out is not sys.__stdout__:  # a caller (a test, an embedding program) chose its own
        return
    if isinstance(out, io.TextIOWrapper) and isinstance(out.buffer, io.RawIOBase):
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(out.buffer), encoding=out.encoding,
                                      errors=out.errors, line_buffering=True,
                                      write_through=True)


def bytes_transparent_stdout() -> None:
    """Print a word read from non-UTF-8 bytes as those bytes again.

    Why: words are bytes (maxarpa reads an ARPA file's Latin-1 `caf\\xe9` as the str
    'caf\\udce9', and disambig's map and text read the same way), so a decoded path may hold
    such a word; stdout's strict UTF-8 would fail on it. surrogateescape writes it back as the
    byte it came from; text that is UTF-8 prints as before. Only the process's own stdout: a
    caller's stream (a test's capture) keeps its settings.
    """
    out = sys.stdout
    if out is sys.__stdout__ and isinstance(out, io.TextIOWrapper):
        out.reconfigure(errors="surrogateescape")


def print_json(obj: object) -> None:
    """One JSON object per line, flushed (so a pipe sees it at once).

    Ctrl-C is held back while the line is written: a KeyboardInterrupt raised inside a
    buffered write would cut the line and lose its start, and streamed output (`sample
    --jsonl`) promises whole lines up to the interrupt. The pending signal fires right after.
    """
    write_line(json.dumps(obj))


def write_line(text: str) -> None:
    """Write one whole line to stdout and flush, with Ctrl-C held back (see `print_json`)."""
    text += "\n"
    held = _hold_sigint()
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    finally:
        if held:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD_SIGNALS)


HELD_SIGNALS = {signal.SIGINT, *TERMINATION_SIGNALS}
"""Signals that raise an exception in the main thread (arsdecode.termination): held back
while a line is written, so that a stop never cuts one."""


def _hold_sigint() -> bool:
    """Block SIGINT (and SIGTERM, SIGHUP) in this thread if the platform can (POSIX); True if
    they were blocked."""
    if not hasattr(signal, "pthread_sigmask"):
        return False
    signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)
    return True


def fixed(x: float, decimals: int) -> str:
    """`x` with `decimals` decimals, as people read a log probability; from 1e15 in magnitude
    on (a path through a -1e308 weight, say) in exponent form, not as a 300-digit number.

    Only text output is rounded: JSON keeps every float's shortest round-trip `repr`, the
    exact value the API returns (a batch line equals the single-item command's output).
    """
    if math.isfinite(x) and abs(x) < 1e15:
        return f"{x:.{decimals}f}"
    return f"{x:.{decimals}g}"


def warn(message: str) -> None:
    print(f"arsdecode: warning: {message}", file=sys.stderr)


def report_uncertified(iterations: int, max_iterations: int | None) -> None:
    """Say on stderr why a result is not certified: the --max-iterations the user gave, or
    else a bound ARS could not tighten (every state on the path already exact, yet q above p
    beyond float noise: scores that overflowed or are not finite). Naming --max-iterations
    when it was never given sent users looking for a flag they had not used (issue 29 C)."""
    if max_iterations is not None and iterations >= max_iterations:
        why = f"stopped after {iterations} iterations (--max-iterations {max_iterations})"
    else:
        why = (f"after {iterations} iterations the bound still exceeds the path's score, with "
               "nothing left to refine (scores too large or not finite?)")
    print(f"arsdecode: UNCERTIFIED: {why}; the path above is the best found, not proven best",
          file=sys.stderr)


def oov_report(lattice: Lattice | WordLattice, vocabulary: Container[str]) -> dict[str, Any]:
    """Lattice candidates (a word lattice's arc words) the model does not know: they are
    scored as <unk>.

    Returns {"count": candidates that are out of vocabulary, "tokens": distinct such tokens in
    lattice order}.
    """
    # (duck-typed: this module imports no lattice code at run time, see its docstring)
    groups = (lattice.tokens if hasattr(lattice, "tokens")
              else [[w for w in lattice.words if w is not None]])
    return oov_of_words((t for toks in groups for t in toks), vocabulary)


def oov_of_words(words: Iterable[str], vocabulary: Container[str]) -> dict[str, Any]:
    """`oov_report` of any candidates (a tree automaton's leaf words, too): how many are out
    of vocabulary, and the distinct ones in order."""
    count = 0
    seen: dict[str, None] = {}
    for t in words:
        if t not in vocabulary:
            count += 1
            seen.setdefault(t, None)
    return {"count": count, "tokens": list(seen)}


def warn_oov(oov: dict[str, Any], lm: Any = None, model_path: str = "",
             lattice: str = "") -> None:
    """Warn that out-of-vocabulary candidates are scored as <unk>; or, when the model `lm`
    has no <unk> to score them with, raise one ModelError instead (not a warning saying they
    are scored as <unk> followed by an error saying they cannot be). `lattice` names the
    lattice in the warning (a run over many lattices)."""
    if not oov["count"]:
        return
    shown = ", ".join(repr(t) for t in oov["tokens"][:10])
    more = f" and {len(oov['tokens']) - 10} more" if len(oov["tokens"]) > 10 else ""
    if lm is not None and getattr(lm, "unk_id", 0) is None:
        raise ModelError(f"{model_path}: the model has no <unk>, so it cannot score the "
                         f"{oov['count']} lattice candidate(s) outside its vocabulary: "
                         f"{shown}{more}")
    where = f"{lattice}: " if lattice else ""
    warn(f"{where}{oov['count']} lattice candidate(s) are not in the model's vocabulary and "
         f"are scored as <unk>: {shown}{more}")


def check_writable(path: str | os.PathLike[str]) -> Path:
    """Fail before any work if `path` cannot be written (missing folder, a directory, no
    permission). Raises OSError naming the user's path.

    The folder checked is the one the file is written in (`maxarpa.output.output_target`):
    a symbolic link's file's; a FIFO or a device is written through, so only it must be
    writable, not the folder it sits in (/dev).

    (Not `maxarpa.output.check_output`: that one also reads a compression from the suffix,
    which an FST, GraphML or CoNLL output does not have.)"""
    from maxarpa.output import output_target

    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(21, "is a directory", str(path))
    target = output_target(p)
    if target.through:
        if not os.access(p, os.W_OK):
            raise PermissionError(13, "permission denied", str(path))
        return p
    parent = target.path.parent
    if not parent.is_dir():
        raise FileNotFoundError(2, "folder does not exist", str(path))
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise PermissionError(13, "permission denied", str(path))
    return p


class _NoBar:
    """What a progress bar does when nobody watches: nothing."""

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def progress_bar(total: int | None, unit: str, **options: Any) -> Any:
    """tqdm on a terminal; a no-op when stderr is piped, without importing tqdm at all (its
    import is ~4% of tagging a whole WSJ section from the command line)."""
    if not sys.stderr.isatty():
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, file=sys.stderr, **options)
