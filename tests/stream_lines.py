"""Reading a child process's streamed output line by line, without losing any of it.

Why: a buffered `proc.stdout.readline()` reads ahead past the first line, and a later
`proc.communicate()` reads the file descriptor itself, so what the readline had buffered is
lost and `rest` starts with a cut line (a flaky failure that depends on how fast the child
writes). Reading the first line byte by byte from an unbuffered pipe (`bufsize=0`) leaves
everything after it in the pipe.
"""

from __future__ import annotations

import subprocess


def first_line(proc: subprocess.Popen) -> bytes:
    """The first line the child writes to its stdout (opened with bufsize=0, binary), or what
    came before it ended; blocks until the line is out."""
    line = b""
    while not line.endswith(b"\n"):
        byte = proc.stdout.read(1)
        if not byte:
            break
        line += byte
    return line
