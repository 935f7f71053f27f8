"""Where the POS tagger's models come from: `--models`, `$ARSDECODE_POS_MODELS`, the shipped one.

Why one lookup: the CLI (`arsdecode tag`) and the library (`arsdecode.tag`) must find the same
models, and a directory the user named must never be silently replaced by another one. A model
directory holds `emissions.json.gz` and a tag LM `tags.{order}.npz` (maxarpa's binary, made by
`maxarpa convert --binary`; loads without parsing), `tags.{order}.maxarpa[.gz]` or
`tags.{order}.arpa[.gz]`, preferred in that order (log10 as every model file). An emission
model saved with `capitalisation` (the shipped one) goes with a tag LM over (tag, class) states
and is loaded as `pos_cap.CapEmissions` (`load_emissions`); older files load as they were.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

import maxarpa
from arsdecode.tasks.pos.cap import CapEmissions
from arsdecode.tasks.pos.emissions import TnTEmissions
from arsdecode.tasks.pos.model_file import PosModelError
from maxarpa.model import Model

ENV_VAR = "ARSDECODE_POS_MODELS"
SHIPPED_DIR = Path(__file__).resolve().parents[2] / "data" / "pos"
"""The tagger shipped with the package (trained on UD English Web Treebank, CC BY-SA 4.0)."""

PREFERRED_ORDER = 4  # the shipped EWT tagger's order, chosen on EWT dev (data_prep.ewt)
_LM_NAME = re.compile(r"^tags\.(\d+)\.(npz|maxarpa|arpa)(\.gz)?$")
_SUFFIXES = ("npz", "maxarpa.gz", "maxarpa", "arpa.gz", "arpa")


def models_dir(arg: str | Path | None = None) -> Path:
    """The model directory: `arg` if given, else `$ARSDECODE_POS_MODELS` if set, else the
    shipped one. A named directory that does not exist is an error (PosModelError), never a
    reason to look elsewhere."""
    if arg is not None and str(arg) != "":
        where, d = "--models", Path(arg)
    elif os.environ.get(ENV_VAR):
        where, d = f"${ENV_VAR}", Path(os.environ[ENV_VAR])
    else:
        where, d = "the shipped tagger", SHIPPED_DIR
    if not d.is_dir():
        hint = ("; reinstall arsdecode, or build models with `python -m data_prep.pos_data "
                "--out DIR` and pass --models DIR") if where == "the shipped tagger" else ""
        raise PosModelError(f"{d}: POS model directory not found ({where}){hint}")
    return d


def available_orders(d: Path) -> list[int]:
    """Orders of the tag LMs present in `d`, ascending."""
    found = {int(m.group(1)) for p in d.iterdir() if (m := _LM_NAME.match(p.name))}
    return sorted(found)


def tag_lm_path(d: Path, order: int | None) -> Path:
    """The tag LM file of `order` in `d` (default: 5 if present, else the highest order)."""
    orders = available_orders(d)
    if not orders:
        raise PosModelError(f"{d}: no tag LM (expected tags.ORDER.maxarpa[.gz] or .arpa[.gz])")
    if order is None:
        order = PREFERRED_ORDER if PREFERRED_ORDER in orders else orders[-1]
    for suffix in _SUFFIXES:
        p = d / f"tags.{order}.{suffix}"
        if p.is_file():
            return p
    raise PosModelError(f"{d}: no tag LM of order {order} (orders present: "
                        f"{', '.join(map(str, orders))})")


Emissions = TnTEmissions | CapEmissions


def load_emissions(path: str | Path) -> Emissions:
    """The emission model of `path` as the taggers use it: `CapEmissions` when it was saved
    with capitalisation (its tag LM is over "tag^class" states), else the `TnTEmissions`."""
    em = TnTEmissions.load(path)
    return CapEmissions(em) if em.capitalisation else em


def load_models(arg: str | Path | None = None, order: int | None = None
                ) -> tuple[Model, Emissions]:
    """The tag LM and the emission model, found as `models_dir` says; cached per file."""
    d = models_dir(arg)
    lm_path = tag_lm_path(d, order)
    em_path = d / "emissions.json.gz"
    if not em_path.is_file():
        raise PosModelError(f"{d}: no emissions.json.gz")
    return _load(str(lm_path.resolve()), str(em_path.resolve()))


@lru_cache(maxsize=4)
def _load(lm_path: str, em_path: str) -> tuple[Model, Emissions]:
    return maxarpa.load(lm_path), load_emissions(em_path)
