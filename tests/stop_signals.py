"""The signal dispositions a child process of a stop-signal test starts with.

Why: a process inherits an *ignored* signal, and Python keeps it ignored. A job a shell starts
in the background inherits SIGINT ignored; one started under `nohup` (or by a CI runner that
detaches it) inherits SIGHUP ignored. A test of what Ctrl-C, SIGTERM or SIGHUP does to a
command must not depend on how the test run itself was started, so its child gets the
default disposition of all three, as in a terminal. (Under nohup the SIGHUP tests failed.)
"""

from __future__ import annotations

import signal

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def default_stop_signals() -> None:
    """`preexec_fn` for subprocess: SIG_DFL for SIGINT, SIGTERM and SIGHUP in the child."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
