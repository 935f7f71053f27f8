"""Tag LMs for the EWT experiments (experiments/pos_ewt.py): plain tags and capitalised states.

The capitalisation feature itself (TnT's C=True: states "tag^class") lives in the package,
`arsdecode.tasks.pos.cap`, and is the shipped tagger's model; `data_prep.ewt` builds its LMs
for shipping. The experiments compare it with plain tag states, so they need both kinds of
LM side by side: under work/ewt/plain and work/ewt/cap, built only where missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from arsdecode.tasks.pos.cap import CapEmissions, cap_sequences  # noqa: F401 (re-exported)
from data_prep.pos_data import DataError, convert_maxarpa, deleted_interpolation_arpa


def _build(seqs: list[list[str]], out: Path, orders: Sequence[int]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for n in orders:
        maxarpa = out / f"tags.{n}.maxarpa"
        if maxarpa.is_file():
            continue
        arpa, _ = deleted_interpolation_arpa(seqs, n, out / f"tags.{n}.arpa")
        if not convert_maxarpa(arpa, maxarpa):
            raise DataError(f"cannot convert {arpa} to MAX-ARPA")


def build_cap_lms(train: Sequence[Sequence[tuple[str, str]]], out: Path,
                  orders: Sequence[int]) -> None:
    """tags.<n>.maxarpa over (tag, class) states under `out`, built only where missing."""
    _build(cap_sequences(train), out, orders)


def build_plain_lms(train: Sequence[Sequence[tuple[str, str]]], out: Path,
                    orders: Sequence[int]) -> None:
    """tags.<n>.maxarpa over plain tags under `out`, built only where missing."""
    _build([[t for _, t in s] for s in train], out, orders)
