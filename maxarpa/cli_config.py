"""Command-line flags for `maxarpa.Config`, shared by the `maxarpa` and `arsdecode` CLIs.

Why a module of its own: the library's errors tell the user to change one `Config` field
("Config(sentence_marker_missing='accept') adds it"). A command-line user must be able to do
the same, on every command that loads a model, under the same name. So the flags are made
from the dataclass fields themselves, one flag per field, named after it (`_` becomes `-`):
adding a field to `Config` without a flag here fails at import (`FIELD_HELP` has no entry).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import typing

from maxarpa.config import ACTIONS, Config

FIELD_HELP: dict[str, str] = {
    "sentence_marker_missing": "a model without <s> or </s>: raise (refuse it, KenLM's "
                               "default), warn or accept (add the marker as a unigram)",
    "positive_log_probability": "a listed log10 probability above 0: raise (refuse), warn or "
                                "accept (keep the value as written)",
    "unknown_missing": "a model without <unk>: raise (load it, but refuse a query naming an "
                       "unknown word), warn or accept (add <unk> with "
                       "--unknown-missing-log10p)",
    "unknown_missing_log10p": "log10 p of the <unk> added to a model without one",
    "untrusted_bounds": "a MAX-ARPA or binary file without a matching digest (not written by "
                        "maxarpa, or edited): recompute its bounds (safe) or refuse it, naming "
                        "the first wrong n-gram",
    "verify_bounds": "recompute every bound stored in a MAX-ARPA or binary file and refuse the "
                     "file if one differs (slow; for files you did not make)",
}

_CONFIG_MENTION = re.compile(r"Config\((\w+)=(?:'([^']*)'|([^)]*))\)")


def flag_name(field: str) -> str:
    """The command-line flag of a `Config` field: `unknown_missing` -> `--unknown-missing`."""
    return "--" + field.replace("_", "-")


def log10_value(text: str) -> float:
    """A log10 probability: a number <= 0 (an argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if math.isnan(value) or value > 0:
        raise argparse.ArgumentTypeError(f"must be a log10 probability <= 0, got {text}")
    return value


def add_config_options(parser: argparse.ArgumentParser) -> None:
    """Add one flag per `Config` field to `parser`, in a group of its own. Every default is
    None ("the Config default"), so `config_from_args` builds exactly `Config()` when no flag
    is given."""
    group = parser.add_argument_group(
        "model strictness (maxarpa.Config; one flag per field, defaults as KenLM)")
    hints = typing.get_type_hints(Config)
    for field in dataclasses.fields(Config):
        help_text = FIELD_HELP[field.name] + f" (default: {field.default})"
        if field.type in ("bool", bool):
            group.add_argument(flag_name(field.name), dest=_dest(field.name),
                               action="store_true", default=None, help=help_text)
        elif field.type in ("float", float):
            group.add_argument(flag_name(field.name), dest=_dest(field.name), type=log10_value,
                               default=None, metavar="LOG10P", help=help_text)
        else:  # a Literal of words: its own choices (raise/warn/accept, recompute/refuse)
            choices = typing.get_args(hints[field.name]) or ACTIONS
            group.add_argument(flag_name(field.name), dest=_dest(field.name), choices=choices,
                               default=None, metavar="{" + ",".join(choices) + "}",
                               help=help_text)


def config_from_args(args: argparse.Namespace) -> Config:
    """The `Config` the flags of `add_config_options` ask for (`Config()` when none was given)."""
    given = {f.name: getattr(args, _dest(f.name)) for f in dataclasses.fields(Config)}
    return Config(**{name: value for name, value in given.items() if value is not None})


def with_flag_hints(message: str) -> str:
    """`message` with each `Config(field='value')` it suggests followed by the matching flag,
    so a command-line user reads what to type: "... Config(unknown_missing='accept')
    (command line: --unknown-missing accept) ..."."""

    def hint(match: re.Match[str]) -> str:
        field, value = match.group(1), match.group(2) or match.group(3)
        if field not in {f.name for f in dataclasses.fields(Config)}:
            return match.group(0)
        flag = flag_name(field)
        typed = flag if value in ("True", "true") else f"{flag} {value}"
        return f"{match.group(0)} (command line: {typed})"

    return _CONFIG_MENTION.sub(hint, message)


def _dest(field: str) -> str:
    """The argparse destination of a field's flag, prefixed so it never collides with a
    command's own options (both CLIs have a `--json`, `--variant`, ...)."""
    return f"config_{field}"
