"""Progress and log lines shared by the experiment scripts.

Why one place: every long experiment shows a tqdm bar on a terminal, stays quiet when piped,
and stamps its phase messages the same way.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable

from tqdm import tqdm


def progress(items: Iterable, desc: str, total: int | None = None) -> Iterable:
    """tqdm on an interactive terminal, silent otherwise."""
    return tqdm(items, desc=desc, total=total, disable=not sys.stderr.isatty(), leave=False,
                smoothing=0.05)


def say(msg: str) -> None:
    """A time-stamped phase message on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)
