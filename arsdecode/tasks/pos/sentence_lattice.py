"""A POS sentence as a lattice: one position per word, its candidates the tags that can emit it.

Why a module of its own: the plain emission model (`emissions.TnTEmissions`) and the
capitalised one (`cap.CapEmissions`) have different candidates but the same lattice rules
(the sentence-initial flags, the optional beam, the refusals of an empty sentence or a bare
string); each calls this with its own `candidates`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from arsdecode.errors import ObservationError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.tasks.pos.initial import initial_flags


def emission_lattice(candidates: Callable[..., tuple[tuple[str, float], ...]],
                     words: Sequence[str], beam: float | None = None) -> Lattice:
    """The POS lattice of `words`: one position per word, its candidates
    `candidates(word, initial=...)` (hidden symbol, ln emission), cut to `beam` nats below the
    position's best if given. Shared by the plain and the capitalised emission models, whose
    candidates differ but whose lattice rules do not."""
    if isinstance(words, str):
        raise ObservationError("lattice() expects a sequence of words, not one string")
    if len(words) == 0:
        raise ObservationError("cannot build a POS lattice for an empty sentence")
    if beam is not None and not beam >= 0:
        raise OptionError(f"beam must be a non-negative number of nats, got {beam!r}")
    positions = []
    for w, initial in zip(words, initial_flags(words), strict=True):
        cands = candidates(w, initial=initial)
        if beam is not None:
            top = max(lp for _, lp in cands)
            cands = tuple(c for c in cands if c[1] >= top - beam)
        positions.append(list(cands))
    return Lattice.from_lists(positions, source="pos lattice")
