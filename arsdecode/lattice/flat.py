"""Many lattices as flat arrays: the layout the compiled full DP runs on.

Why in lattice/: it is a layout of lattices (offsets, candidate ids, ln emissions), not a
method. The compiled DP (`methods.fast_full`) runs on it, the auto policy
(`methods.dispatch`) reads the lattices' sizes from it, and `tasks.pos.tag_many` builds one
straight from its candidate rows, without a `Lattice` object per sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from arsdecode.errors import LatticeError
from arsdecode.lattice.confusion import Lattice


class _Ids(Protocol):
    """What the layout needs of a model: its id per token (maxarpa.Model, any TargetModel)."""

    def ids(self, tokens: Sequence[str], /) -> np.ndarray: ...


@dataclass(frozen=True)
class FlatLattices:
    """Many lattices as flat arrays (the layout `_core.FullDP.run` takes).

    Checked when made (LatticeError): each offset array starts at 0, never decreases and ends
    at the length of the array it indexes. Why here as well as in the compiled core: the error
    then points at the code that built the arrays, not at the later decode.
    """

    sent_off: np.ndarray  # (S + 1,) int64: positions of sentence s are sent_off[s]:sent_off[s+1]
    pos_off: np.ndarray  # (P + 1,) int64: candidates of position p are pos_off[p]:pos_off[p+1]
    cand_ids: np.ndarray  # (C,) int64 model word ids
    cand_emis: np.ndarray  # (C,) float64 ln emissions, -inf = forbidden

    def __post_init__(self) -> None:
        _check_offsets("sent_off", self.sent_off, len(self.pos_off) - 1)
        _check_offsets("pos_off", self.pos_off, len(self.cand_ids))
        if np.ndim(self.cand_ids) != 1 or np.shape(self.cand_emis) != np.shape(self.cand_ids):
            raise LatticeError("FlatLattices: cand_ids and cand_emis must be 1-D, of one length")

    @classmethod
    def from_lattices(cls, lm: _Ids, lattices: Sequence[Lattice]) -> FlatLattices:
        """The lattices in order, their tokens as `lm`'s ids."""
        widths = [w for lat in lattices for w in lat.widths]
        sent_off = np.zeros(len(lattices) + 1, dtype=np.int64)
        np.cumsum([len(lat) for lat in lattices], out=sent_off[1:])
        pos_off = np.zeros(len(widths) + 1, dtype=np.int64)
        np.cumsum(widths, out=pos_off[1:])
        toks = [t for lat in lattices for pos in lat.tokens for t in pos]
        emis = [lat.log_emissions[i] for lat in lattices for i in range(len(lat))]
        return cls(
            sent_off,
            pos_off,
            np.asarray(lm.ids(toks)).astype(np.int64),
            np.concatenate(emis).astype(np.float64) if emis else np.empty(0),
        )

    @property
    def n_lattices(self) -> int:
        return len(self.sent_off) - 1

    def take(self, lattices: Sequence[int]) -> FlatLattices:
        """The layout of the given lattices only, in that order (a rerun of some of them)."""
        pos = [np.arange(self.sent_off[s], self.sent_off[s + 1]) for s in lattices]
        positions = np.concatenate(pos) if pos else np.empty(0, dtype=np.int64)
        cands = [np.arange(self.pos_off[p], self.pos_off[p + 1]) for p in positions]
        candidates = np.concatenate(cands) if cands else np.empty(0, dtype=np.int64)
        sent_off = np.zeros(len(lattices) + 1, dtype=np.int64)
        np.cumsum([len(x) for x in pos], out=sent_off[1:])
        pos_off = np.zeros(len(positions) + 1, dtype=np.int64)
        np.cumsum(np.diff(self.pos_off)[positions], out=pos_off[1:])
        return FlatLattices(sent_off, pos_off, self.cand_ids[candidates],
                            self.cand_emis[candidates])


def _check_offsets(name: str, off: np.ndarray, end: int) -> None:
    """LatticeError unless `off` is 1-D, starts at 0, never decreases and ends at `end`."""
    off = np.asarray(off)
    if off.ndim != 1 or len(off) == 0 or off[0] != 0 or off[-1] != end:
        raise LatticeError(f"FlatLattices: {name} must run from 0 to {end}")
    drops = np.flatnonzero(off[1:] < off[:-1])
    if len(drops):
        raise LatticeError(f"FlatLattices: {name} decreases after index {int(drops[0])}")
