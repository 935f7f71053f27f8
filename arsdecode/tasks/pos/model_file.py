"""The file of a POS emission model: its counts and settings as gzipped, versioned JSON.

Why a module of its own: what is stored (the counts; every statistic is derived on load), the
format's versions and what an older file means, and the one-line errors for a file that is
missing or not a model are the file's business, apart from the model (`emissions`), which
only hands over and takes back its lexicon and settings.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arsdecode.errors import ModelError

FORMAT = "arsdecode.pos.TnTEmissions"
# 2 added suffix_alpha (version 1 files meant TnT theta, None); 3 added capitalisation,
# skip_case_variants and closed_tags (older files mean False, False, (): the model they were).
FORMAT_VERSION = 3


class PosModelError(ModelError):
    """The POS models are missing, incomplete or not POS models."""


def write_model_file(path: str | Path, settings: Mapping[str, Any],
                     lexicon: Mapping[str, Mapping[str, int]]) -> Path:
    """Write the settings and the word -> {tag: count} lexicon to `path` (through a
    temporary file, so a reader never sees half a model); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    obj = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "settings": dict(settings),
        "lexicon": lexicon,
    }
    tmp = path.with_name(path.name + ".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    tmp.replace(path)
    return path


def read_model_file(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(lexicon, settings) of a model written by `write_model_file`, any version; a wrong file
    is a one-line PosModelError."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            obj = json.load(f)
    except (OSError, EOFError, json.JSONDecodeError) as err:
        raise PosModelError(f"{path}: cannot read POS emission model: {err}") from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise PosModelError(f"{path}: not a POS emission model ({FORMAT})")
    if obj.get("version") not in (1, 2, FORMAT_VERSION):
        raise PosModelError(f"{path}: unsupported model version {obj.get('version')!r}")
    settings = {"suffix_alpha": None, **obj["settings"]}  # version 1: TnT's theta
    return obj["lexicon"], settings  # versions 1, 2: no settings for the new flags
