"""Writing output files safely: checked before the work, atomic, compressed by suffix, and
never left half-written, whatever ends the process.

Why: a conversion takes seconds to minutes. Discovering only at the end that the output
directory is missing wastes that time; overwriting the input destroys the user's model; and a
SIGTERM from a job scheduler or a closed terminal (SIGHUP) used to leave a large temporary
file behind. A stop while writing removes the temporary file (maxarpa.unfinished).

Only a regular file (or a new path) is replaced by a rename. A symbolic link is followed, and
the file it names is replaced (as GNU tools and KenLM do): renaming over the link would leave
its file unwritten. A FIFO, a device or /dev/stdout is written through: renaming over it
would replace a device node or leave a FIFO's reader with nothing.
"""

from __future__ import annotations

import bz2
import contextlib
import errno
import gzip
import io
import lzma
import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from maxarpa.errors import MaxArpaError
from maxarpa.unfinished import forget_stop, raise_if_stopped, registered


class OutputError(MaxArpaError):
    """An output path that cannot or must not be written (it is the input, its suffix asks
    for a compression that is not offered, its directory does not exist)."""


COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")
REFUSED_SUFFIXES = (".zst", ".zstd", ".lz4", ".lzma", ".z", ".zip", ".7z", ".br", ".tgz")
OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EIO})
"""Errors of a write that cannot go on (full disk, file size limit, quota, device error)."""
FD_ALIASES = ("/dev/", "/proc/")
"""Where /dev/stdout, /dev/fd/N and /proc/self/fd/N live: links to whatever a descriptor is
open on (a pipe, a terminal, a file the shell truncated), never to be replaced by a rename."""


@dataclass(frozen=True)
class Target:
    """Where an output really goes.

    path: the file that is written: the output itself or, through symbolic links, the file
        they name.
    through: True when `path` is not a regular file (a FIFO, a device, /dev/stdout) and is
        written through rather than replaced.
    """

    path: Path
    through: bool


def output_target(path: str | Path) -> Target:
    """The `Target` of the output `path` (which need not exist yet)."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode  # follows symbolic links
    except OSError:  # a new file, a dangling link (its file is created), a loop (open says)
        mode = None
    if (mode is not None and not stat.S_ISREG(mode)) or _through_fd_alias(path):
        return Target(path, True)
    return Target(Path(os.path.realpath(path)), False)


def _through_fd_alias(path: Path) -> bool:
    """True if `path` or a symbolic link on the way to its file lies in /dev or /proc."""
    current = Path(os.path.abspath(path))
    for _ in range(40):  # the kernel's own limit on links followed
        if str(current).startswith(FD_ALIASES):
            return True
        try:
            link = os.readlink(current)
        except OSError:
            return False
        current = Path(os.path.normpath(current.parent / link))
    return False


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
    target = output_target(out)
    if input is not None and out.exists():
        try:
            same = os.path.samefile(input, out)
        except OSError:
            same = False
        if same:
            raise OutputError(f"{output}: is the input file {input}; choose another output")
    if out.is_dir():
        raise OutputError(f"{output}: is a directory")
    parent = target.path.parent
    if not target.through and not parent.is_dir():
        raise OutputError(f"{output}: directory {parent} does not exist")
    if binary:
        suffix = out.suffix.lower()
        if suffix in COMPRESSED_SUFFIXES + REFUSED_SUFFIXES:
            raise OutputError(f"{output}: a binary model is written uncompressed (so it can be "
                              f"memory-mapped); drop the {suffix} suffix")
    else:
        compression_of(out)


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
    """Yield a temporary path to write; when the block succeeds, put it in place as `path`.

    A regular file (or a new path) is replaced by a rename of a temporary file beside it; a
    symbolic link's file likewise, beside that file. A FIFO, a device or /dev/stdout
    (`output_target`) gets the finished temporary file's bytes written through, as stdout
    would: a writer that needs to seek (a zip) works, and an error while formatting sends
    nothing. The temporary file is deleted on any exception or stop (maxarpa.unfinished). An
    OSError names `path`, never the temporary file; a full disk or a file size limit says
    "cannot write the output", as a full stdout does. Temporary files of `path` left by dead
    writers are removed first (`remove_stale_temporaries`).
    """
    target = output_target(path)
    if target.through:
        import tempfile  # here: a process that only reads (a decode) never loads it

        fd, name = tempfile.mkstemp(prefix="maxarpa-output-", suffix=".tmp")
        os.close(fd)
        tmp = Path(name)
    else:
        remove_stale_temporaries(target.path)
        tmp = temp_path(target.path)
    with registered(tmp, str(path)):
        try:
            yield tmp
            raise_if_stopped()  # a stop that something swallowed: the file stays out
            if target.through:
                _write_through(tmp, target.path)
                tmp.unlink()
            else:
                os.replace(tmp, target.path)
            raise_if_stopped()
        except BaseException as err:
            forget_stop(err)
            with contextlib.suppress(OSError):
                tmp.unlink()
            if isinstance(err, OSError) and not isinstance(err, BrokenPipeError):
                raise _naming(err, path) from None
            raise


def _write_through(tmp: Path, path: Path) -> None:
    """Copy the finished `tmp` into the FIFO or device `path`, without creating a file."""
    with open(tmp, "rb") as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)


def _naming(err: OSError, path: str | Path) -> OSError:
    """`err` naming the user's `path`; a write that cannot go on says so as stdout's does."""
    text = err.strerror or str(err)
    if err.errno in OUTPUT_ERRNOS:
        text = f"cannot write the output: {text}"
    return OSError(err.errno, text, str(path))


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
