"""Writing output files safely: checked before the work, atomic, compressed by suffix, and
never left half-written, whatever ends the process.

Why: a conversion takes seconds to minutes. Discovering only at the end that the output
directory is missing wastes that time; overwriting the input destroys the user's model; and a
SIGTERM from a job scheduler or a closed terminal (SIGHUP) used to leave a large temporary
file behind, because only SIGINT raised an exception that ran the cleanup. Here those signals
raise too while a file is being written, so the same `except BaseException` cleanup runs.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

from maxarpa.errors import MaxArpaError


class OutputError(MaxArpaError):
    """An output path that cannot or must not be written (it is the input, its suffix asks
    for a compression that is not offered, its directory does not exist)."""


COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")
REFUSED_SUFFIXES = (".zst", ".zstd", ".lz4", ".lzma", ".z", ".zip", ".7z", ".br", ".tgz")
CLEANUP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP")
                        if hasattr(signal, name))


def compression_of(path: str | Path) -> str | None:
    """The compression a text output gets from its suffix: "gz", "bz2", "xz" or None.

    Raises:
        OutputError: a suffix of another compression format (it would be a lie).
    """
    suffix = Path(path).suffix.lower()
    if suffix in COMPRESSED_SUFFIXES:
        return suffix[1:]
    if suffix in REFUSED_SUFFIXES:
        raise OutputError(f"{path}: cannot write {suffix} compression; use .gz, .bz2, .xz or "
                          "no compression suffix")
    return None


def check_output(input: str | Path | None, output: str | Path, *, binary: bool = False) -> None:
    """Refuse an output before any work: the input itself (also through a hard or symbolic
    link), a missing directory, or a suffix that cannot be honoured.

    Raises:
        OutputError: naming `output`.
    """
    out = Path(output)
    if input is not None and out.exists():
        try:
            same = os.path.samefile(input, out)
        except OSError:
            same = False
        if same:
            raise OutputError(f"{output}: is the input file {input}; choose another output")
    if out.is_dir():
        raise OutputError(f"{output}: is a directory")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"{output}: directory {parent} does not exist")
    if binary:
        suffix = out.suffix.lower()
        if suffix in COMPRESSED_SUFFIXES + REFUSED_SUFFIXES:
            raise OutputError(f"{output}: a binary model is written uncompressed (so it can be "
                              f"memory-mapped); drop the {suffix} suffix")
    else:
        compression_of(out)


class TerminatedBySignal(SystemExit):
    """Raised in the main thread by SIGTERM/SIGHUP while an output is being written, so the
    writer's cleanup runs; exits with the shell's status for a signal, 128 + signal number."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


def _raise_terminated(signum: int, frame: object) -> None:
    raise TerminatedBySignal(signum)


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """While active, SIGTERM and SIGHUP raise TerminatedBySignal (SIGINT already raises
    KeyboardInterrupt). Only the main thread can set handlers; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in CLEANUP_SIGNALS}
    for s in CLEANUP_SIGNALS:
        if previous[s] in (signal.SIG_DFL, None):  # respect a handler someone else installed
            signal.signal(s, _raise_terminated)
    try:
        yield
    finally:
        for s, handler in previous.items():
            if handler is not None:
                signal.signal(s, handler)


def temp_path(path: str | Path, pid: int | None = None) -> Path:
    """The temporary name beside `path` (same directory, so the final rename is atomic) of
    process `pid` (default: this one): `.NAME.PID.tmp`."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid() if pid is None else pid}.tmp")


def remove_stale_temporaries(path: str | Path) -> list[Path]:
    """Delete the temporary files of `path` left by writers that no longer run; return them.

    Why: a writer killed by SIGKILL (or the OOM killer, or a power cut) cannot clean up, and
    its `.NAME.PID.tmp` beside the output can be as large as the model. Only files of this
    exact output name are considered, and only when no process with that PID exists; the
    temporary file of a writer still running (or of a live PID that happens to reuse the
    number) is left alone.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    prefix, removed = f".{path.name}.", list[Path]()
    try:
        entries = list(folder.iterdir())
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        pid_text = name[len(prefix): -len(".tmp")]
        if not (name.startswith(prefix) and name.endswith(".tmp") and pid_text.isdigit()):
            continue
        pid = int(pid_text)
        if pid != os.getpid() and not pid_alive(pid):
            with contextlib.suppress(OSError):
                entry.unlink()
                removed.append(entry)
    return removed


def pid_alive(pid: int) -> bool:
    """True when a process with this PID exists (also one we may not signal)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it to `path` when the block succeeds,
    delete it on any exception or termination signal. An OSError names `path`, never the
    temporary file. Temporary files of `path` left by dead writers are removed first
    (`remove_stale_temporaries`)."""
    remove_stale_temporaries(path)
    tmp = temp_path(path)
    with signals_raise():
        try:
            yield tmp
            os.replace(tmp, path)
        except BaseException as err:
            with contextlib.suppress(OSError):
                tmp.unlink()
            if isinstance(err, OSError) and not isinstance(err, BrokenPipeError):
                raise OSError(err.errno, err.strerror or str(err), str(path)) from None
            raise


def byte_stream(raw: io.BufferedWriter, compression: str | None) -> io.BufferedIOBase:
    """A byte stream onto the open binary file `raw`, compressed as asked. Closing it
    finishes the compressed stream (for plain output it is `raw` itself, which its own `with`
    then closes again, harmlessly). The gzip header holds no file name and no time, so equal
    content gives equal bytes (and the temporary name never leaks into the file)."""
    if compression == "gz":
        return gzip.GzipFile(filename="", mode="wb", compresslevel=6, fileobj=raw, mtime=0)
    if compression == "bz2":
        return bz2.BZ2File(raw, "wb")
    if compression == "xz":
        return lzma.LZMAFile(raw, "wb", preset=3)
    return raw
