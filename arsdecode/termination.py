"""SIGTERM and SIGHUP handled as Ctrl-C is: the run stops, keeps what it wrote, and says so.

Why: a job scheduler or a closed terminal ends a process with SIGTERM or SIGHUP, whose
default action kills Python at once: `sample` and `batch` then died silently (exit 143), with
no word of what was kept, while Ctrl-C reported it. Raising an exception instead lets every
cleanup the code already has for Ctrl-C run (temporary files removed, the batch output left
with whole chunks, streamed samples kept), and the command line report how much was done.
"""

from __future__ import annotations

import signal
import threading

TERMINATION_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP")
                            if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread. A KeyboardInterrupt, so that whatever
    cleans up after Ctrl-C also cleans up after it; the exit status is 128 + signal number,
    as the shell reports a process the signal killed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(signum)


def raise_on_termination() -> None:
    """From now on, SIGTERM and SIGHUP raise `Terminated` in the main thread, unless someone
    installed a handler of their own (an embedding program), which is kept."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in TERMINATION_SIGNALS:
        if signal.getsignal(signum) in (signal.SIG_DFL, None):
            signal.signal(signum, _raise_terminated)
