"""Run `arsdecode` in this process, as the tests of several commands do.

Why in process: a subprocess per case would cost a second of start-up each; `cli.main` is the
same entry point the installed command calls, and capsys captures what it prints.
"""

from __future__ import annotations


def in_process_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `arsdecode ARGV...`, argparse's exits included."""
    from arsdecode.cli import main as cli

    try:
        code = cli.main(list(argv))
    except SystemExit as stop:  # argparse's errors
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err
