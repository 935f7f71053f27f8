"""Model input that can be read only once: standard input (`-`), pipes, process substitution.

Why: a model file is opened several times (the format is sniffed from its first bytes, then
the matching reader opens it again). A pipe (`maxarpa convert <(zcat x.arpa.gz) out`,
`--lm /dev/stdin`) gives its bytes to the first reader only, so the real reader saw an empty
file. Such input is copied once, as it comes (still compressed if it was), to a private
temporary file that is then sniffed and parsed like any other; messages name the user's
input, never the copy.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from maxarpa.errors import FormatError, MaxArpaError

STDIN = "-"
STDIN_NAME = "<stdin>"

T = TypeVar("T")


def needs_spooling(path: str | Path) -> bool:
    """True for `-` and for anything that exists but is not a regular file (a pipe, a
    character device): input that cannot be opened and read again from its start."""
    if str(path) == STDIN:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:  # a missing file: the reader reports it, naming it
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def display_name(path: str | Path) -> str:
    """The name messages use for `path`: `<stdin>` for `-`, else the path as given."""
    return STDIN_NAME if str(path) == STDIN else str(path)


@contextlib.contextmanager
def spooled(path: str | Path) -> Iterator[Path]:
    """Copy `path` (or standard input for `-`) once into a private temporary file, yield that
    file's path, and delete it afterwards (also on any error)."""
    import tempfile  # here: a model read from a file never loads it (start-up, issue 34)

    name = display_name(path)
    with tempfile.TemporaryDirectory(prefix="maxarpa-input-") as folder:
        copy = Path(folder) / "input"
        try:
            if str(path) == STDIN:
                with open(copy, "wb") as out:
                    shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
            else:
                with open(path, "rb") as src, open(copy, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
        except OSError as err:
            if err.filename == str(path):
                raise FormatError(name, None, f"cannot read: {err.strerror}") from None
            raise OSError(err.errno, f"cannot copy the input {name} to {folder}: "
                                     f"{err.strerror}") from None
        yield copy


def under_name(read: Callable[[], T], copy: Path, name: str) -> T:
    """Run `read()` (which reads `copy`) so that its errors and warnings name `name`, the
    user's input, instead of the temporary copy; a returned model's `source` becomes `name`."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = read()
        except MaxArpaError as err:
            err.args = (str(err).replace(str(copy), name),)
            if isinstance(err, FormatError):
                err.path = name
            raise
        except OSError as err:
            raise OSError(err.errno, err.strerror or str(err), name) from None
    for w in caught:
        warnings.warn_explicit(str(w.message).replace(str(copy), name), w.category,
                               w.filename, w.lineno)
    if hasattr(result, "source"):
        result.source = name
    return result
