"""The process entry of the `arsdecode` command: the console script and `python -m arsdecode`.

Why a module of its own: a one-lattice run is mostly start-up (issue 34's goal is 0.15 s for
the whole process), and about a tenth of it was CPython's cyclic collector walking the objects
that imports create (numpy's among them), again and again as they pile up, and once more at
exit. Nothing those imports build is garbage, so the collector is paused while the CLI's modules
load, and what they built is then frozen (`gc.freeze`: moved to a generation no collection
visits, as a pre-fork server does) before collection resumes for the command's own work. Only a
process that starts here does this; `arsdecode.cli.main.main`, called in process by a library
user or a test, leaves their collector alone.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence


def load_main() -> Callable[[Sequence[str] | None], int]:
    """Import the CLI with the collector paused, freeze what the imports built, and resume
    collection: the command's own allocations are collected as usual."""
    gc.disable()
    try:
        from arsdecode.cli.main import main
    finally:
        gc.freeze()
        gc.enable()
    return main


def main() -> int:
    """The `arsdecode` console script."""
    return load_main()(None)
