"""Plain-tag LMs for the EWT experiments (experiments/pos_ewt.py, pos_ewt_caps.py).

The shipped tagger decodes over capitalised states (`arsdecode.tasks.pos.cap`), and
`data_prep.ewt` builds those LMs in work/ewt. The experiments compare it with plain tag states,
so they need plain tag LMs beside them: under work/ewt/plain, built only where missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from data_prep.pos_data import DataError, convert_maxarpa, deleted_interpolation_arpa


def build_plain_lms(train: Sequence[Sequence[tuple[str, str]]], out: Path,
                    orders: Sequence[int]) -> None:
    """tags.<n>.maxarpa over plain tags under `out`, built only where missing."""
    seqs = [[t for _, t in s] for s in train]
    out.mkdir(parents=True, exist_ok=True)
    for n in orders:
        maxarpa = out / f"tags.{n}.maxarpa"
        if maxarpa.is_file():
            continue
        arpa, _ = deleted_interpolation_arpa(seqs, n, out / f"tags.{n}.arpa")
        if not convert_maxarpa(arpa, maxarpa):
            raise DataError(f"cannot convert {arpa} to MAX-ARPA")
