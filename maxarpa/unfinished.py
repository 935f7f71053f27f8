"""The temporary files being written, and what a stop (SIGTERM, SIGHUP, Ctrl-C) does to them.

Why not raise an exception from the signal handler, as this module's predecessor did: a
Python signal handler runs between two bytecodes wherever the main thread happens to be,
also inside a finaliser (`IOBase.__del__` reading `LZMAFile.closed`, for one) or any code
that swallows exceptions. There the exception is printed as "Exception ignored" and
dropped, and the writer went on, renamed its file and exited 0 after SIGTERM (a test that
flaked under CPU load, issue 29 F). So:

- SIGTERM and SIGHUP with no handler of their own (the default would kill the process
  anyway) get `_exit_removing`: it deletes the registered files, says so on stderr in one
  line and ends the process with `os._exit(128 + signum)`. Nothing can swallow that, and
  no rename can follow it.
- A signal that already has a Python handler (Ctrl-C's KeyboardInterrupt, arsdecode's
  `Terminated`) keeps it, wrapped: the exception it raises is also recorded, and the writer
  checks the record before and after its rename (`raise_if_stopped`), so an exception that
  something swallowed is raised again there, and the file is not renamed into place.
- An ignored signal (`nohup`, a background job's SIGINT) stays ignored.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                     if hasattr(signal, name))
EXITING_SIGNALS = tuple(s for s in STOP_SIGNALS if s != getattr(signal, "SIGINT", None))
"""The signals whose default action ends the process (Ctrl-C's default raises instead)."""

_unfinished: dict[Path, str] = {}
"""Temporary file -> the user's output it becomes; removed by a stop."""
_stopped: list[BaseException] = []
"""The exception a wrapped handler raised while files were being written (at most one)."""
_installed: dict[int, Any] = {}
"""Signal -> the handler it had before ours, while ours is installed."""
_hook: list[Callable[[Any], Any]] = []
"""sys.unraisablehook before ours, while ours is installed."""
_depth = 0
"""How many `registered` blocks the main thread is in (handlers are installed by the first)."""


def remove_unfinished() -> list[str]:
    """Delete every registered temporary file; return the user's outputs actually removed."""
    removed = []
    for tmp, output in list(_unfinished.items()):
        try:
            tmp.unlink()
        except OSError:
            continue  # already renamed into place, or already gone
        removed.append(output)
    return removed


def _exit_removing(signum: int, frame: object) -> None:
    """SIGTERM/SIGHUP while writing: remove the unfinished files and end the process now."""
    removed = remove_unfinished()
    line = f"maxarpa: terminated by {signal.Signals(signum).name}"
    if removed:
        line += f"; removed the unfinished {', '.join(removed)}"
    with contextlib.suppress(Exception):  # stderr may be closed or in the middle of a write
        sys.stderr.flush()
    with contextlib.suppress(OSError):
        os.write(2, f"{line}\n".encode(errors="backslashreplace"))
    os._exit(128 + signum)


def _recording(previous: Callable[[int, Any], Any]) -> Callable[[int, Any], Any]:
    """`previous`, with the exception it raises recorded for `raise_if_stopped`."""

    def handler(signum: int, frame: Any) -> Any:
        try:
            return previous(signum, frame)
        except BaseException as err:
            _stopped[:] = [err]
            raise

    return handler


def _quiet_for_stops(unraisable: Any) -> None:
    """sys.unraisablehook: a recorded stop that a finaliser swallowed is not reported as
    "Exception ignored" with a traceback: `raise_if_stopped` raises it again."""
    if _stopped and unraisable.exc_value is _stopped[0]:
        return
    (_hook[0] if _hook else sys.__unraisablehook__)(unraisable)


def raise_if_stopped() -> None:
    """Raise again a stop exception that was raised while writing but did not arrive (some
    code swallowed it); the caller must then not put its file in place."""
    if _stopped:
        raise _stopped[0]


def forget_stop(err: BaseException) -> None:
    """`err` reached the writer's cleanup: it was not swallowed, so it needs no second raise."""
    if _stopped and _stopped[0] is err:
        _stopped.clear()


def _install() -> None:
    _hook[:] = [sys.unraisablehook]
    sys.unraisablehook = _quiet_for_stops
    for signum in STOP_SIGNALS:
        previous = signal.getsignal(signum)
        if previous in (signal.SIG_DFL, None) and signum in EXITING_SIGNALS:
            ours: Any = _exit_removing
        elif callable(previous):
            ours = _recording(previous)
        else:  # ignored (nohup), or SIGINT left at the default
            continue
        _installed[signum] = previous
        signal.signal(signum, ours)


def _restore() -> None:
    """Put the previous handlers back with the stop signals blocked, so that none arrives
    between the check for a pending signal and the switch (it would be dropped); one that
    arrives meanwhile is delivered after, to the handler it finds."""
    mask = (signal.pthread_sigmask(signal.SIG_BLOCK, set(_installed))
            if hasattr(signal, "pthread_sigmask") else None)
    pending: BaseException | None = None
    try:
        for signum, previous in list(_installed.items()):
            try:
                signal.signal(signum, previous)
            except BaseException as err:  # a pending stop's handler ran first and raised:
                pending = pending or err  # the switch did not happen yet
                signal.signal(signum, previous)
            del _installed[signum]
    finally:
        _stopped.clear()
        if _hook:
            sys.unraisablehook = _hook.pop()
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if pending is not None:
        raise pending


@contextlib.contextmanager
def registered(tmp: Path, output: str) -> Iterator[None]:
    """While the block runs, `tmp` (which becomes `output`) is removed by a stop, and the
    stop handlers above are in place (installed by the outermost block of the main thread;
    another thread only registers its file: only the main thread can set handlers)."""
    global _depth
    main = threading.current_thread() is threading.main_thread()
    _unfinished[tmp] = output
    if main:
        if _depth == 0:
            _install()
        _depth += 1
    try:
        yield
    finally:
        _unfinished.pop(tmp, None)
        if main:
            _depth -= 1
            if _depth == 0:
                _restore()
