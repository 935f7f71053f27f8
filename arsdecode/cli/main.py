"""The `arsdecode` command: exact decoding and sampling of lattices, and the two task demos.

Why errors stop here: the library raises `ArsDecodeError` (and maxarpa `MaxArpaError`) for bad
input; this front end turns exactly those, and OSError on files, into one line on stderr and
exit status 2, with no traceback. Anything else is a bug and keeps its traceback. Results go
to stdout as text for people or, with --json, as JSON for scripts (natural-log fields).
Every command is registered in the one table `COMMANDS`; task modules never import this one.
Why the table names modules instead of importing them: a run imports only its own command's
module (start-up is a large share of a short run such as `arsdecode tag --file`); the full
parser, every command module loaded, is built for --help, --version and mistyped commands. A
command module imports at its top only what builds its parser; the engine (methods/, core/)
is imported by its handler, so no parser, not even the full one, loads the decoder.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from collections.abc import Sequence

import arsdecode.cli._one_blas_thread  # noqa: F401 (first: before numpy loads)
from arsdecode import __version__
from arsdecode.cli.options import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_STATUS_HELP,
    LATTICE_HELP,
    UNITS_HELP,
    Parser,
    epilog,
    refuse_two_stdin,
)
from arsdecode.cli.output import buffer_stdout, bytes_transparent_stdout
from arsdecode.errors import ArsDecodeError
from arsdecode.termination import Terminated, raise_on_termination
from maxarpa.cli_config import with_flag_hints
from maxarpa.errors import MaxArpaError

EPILOG = epilog(UNITS_HELP, LATTICE_HELP, EXIT_STATUS_HELP)

COMMANDS: dict[str, str] = {
    "decode": "arsdecode.cli.lattice:add_decode_parser",
    "sample": "arsdecode.cli.lattice:add_sample_parser",
    "sms": "arsdecode.cli.sms:add_parser",
    "tag": "arsdecode.cli.tag:add_parser",
    "marginals": "arsdecode.cli.marginals:add_parser",
    "batch": "arsdecode.cli.batch:add_parser",
    "disambig": "arsdecode.cli.disambig:add_parser",
    "segment": "arsdecode.cli.segment:add_parser",
    "train-vpylm": "arsdecode.cli.vpylm:add_parser",
    "train-trf": "arsdecode.cli.trf:add_parser",
}
"""Every sub-command, in --help order: name -> "module:function" adding its parser (which sets
`handler`, args -> exit status)."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `arsdecode` parser: every sub-command, or only `command` (a key of COMMANDS), so
    that the other commands' modules are not imported."""
    parser = Parser(
        prog="arsdecode",
        description="Exact decoding and sampling in high-order HMMs whose hidden layer is an "
                    "n-gram LM (Carter, Dymetman & Bouchard 2012).",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"arsdecode {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, target in COMMANDS.items():
        if command is None or name == command:
            module, function = target.split(":")
            getattr(importlib.import_module(module), function)(sub)
    return parser


def _first_line(err: BaseException) -> str:
    text = str(err)
    return text.splitlines()[0] if text else type(err).__name__


OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EIO})
"""Errors of a write that cannot go on (full disk, file size limit, quota, device error)."""


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's final flush of output that can no
    longer be written is silent (no "Exception ignored" after our one line)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None  # else the full parser
    args = build_parser(command).parse_args(argv)
    bytes_transparent_stdout()  # first: buffer_stdout's wrapper keeps its errors setting
    buffer_stdout()
    raise_on_termination()
    try:
        refuse_two_stdin(args)
        if getattr(args, "memory_budget", None) is not None:
            from arsdecode.methods.dispatch import set_memory_budget

            set_memory_budget(args.memory_budget << 20)
        return args.handler(args)
    except (ArsDecodeError, MaxArpaError) as err:  # bad input; anything else is a bug
        print(f"arsdecode: {with_flag_hints(_first_line(err))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # `arsdecode ... | head -1`: the reader has all it wanted
        _drop_stdout()
        return EXIT_OK
    except OSError as err:
        if err.filename:
            where = f"{err.filename}: "
        elif err.errno in OUTPUT_ERRNOS:  # a write to stdout (files name themselves)
            where = "cannot write the output: "
            _drop_stdout()
        else:
            where = ""
        print(f"arsdecode: {where}{err.strerror or err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Terminated as err:  # SIGTERM/SIGHUP, handled as Ctrl-C is
        print(f"arsdecode: terminated by {err.name}", file=sys.stderr)
        return err.exit_status
    except KeyboardInterrupt:
        print("arsdecode: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
