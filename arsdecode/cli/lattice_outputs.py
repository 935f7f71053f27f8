"""What `decode` writes beside the best path of a word lattice: the rescored lattice, the word
mesh and its consensus, CTM lines (issue 32).

Why a module of its own: these outputs share one thing, the exact posteriors under the
target (optionally flattened by --posterior-scale, `arc_posteriors`), and are written the same
way for one lattice and for a run over many (`cli.lattice_list`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

from arsdecode.errors import OptionError
from arsdecode.lattice.word_lattice import WordLattice


def word_mesh(lm: Any, wl: WordLattice, pivot: Sequence[int],
              posterior_scale: float = 1.0) -> Any:
    """The word mesh of exact posteriors around the best path (`lattice.mesh`)."""
    from arsdecode.lattice.mesh import build_mesh

    return build_mesh(wl, arc_posteriors(lm, wl, posterior_scale), pivot)


def arc_posteriors(lm: Any, wl: WordLattice, posterior_scale: float = 1.0) -> Any:
    """Every arc's exact posterior under the target, or, with `posterior_scale` S, under the
    target's scores divided by S (every path's probability ∝ exp(score / S)): the flattening
    lattice-tool's `-posterior-scale` applies, usually S = the LM scale, because acoustic
    scores overstate their confidence. Exact for that distribution."""
    import dataclasses

    from arsdecode.api import lattice_posteriors
    from arsdecode.model.target_spec import weighted_target

    if posterior_scale != 1.0:
        if not (math.isfinite(posterior_scale) and posterior_scale > 0):
            raise OptionError(f"--posterior-scale must be a finite number > 0, got "
                              f"{posterior_scale!r}")
        wl = dataclasses.replace(
            wl, log_weights=wl.log_weights / posterior_scale,
            finals={f: w / posterior_scale for f, w in wl.finals.items()})
        lm = weighted_target(lm, lm_weight=1.0 / posterior_scale)
    post, _ = lattice_posteriors(lm, wl)
    return post


def print_ctm(lm: Any, wl: WordLattice, arcs: Sequence[int], name: str,
              posterior_scale: float = 1.0) -> None:
    """--ctm: the path's CTM lines (`lattice.ctm`), confidences from the exact posteriors."""
    from arsdecode.lattice.ctm import ctm_lines

    if wl.node_times is None:  # before the posteriors' work
        raise OptionError(f"{wl.source}: --ctm needs node times (SLF t= on every node)")
    post = arc_posteriors(lm, wl, posterior_scale)
    for line in ctm_lines(wl, arcs, post, name):
        print(line)
    sys.stdout.flush()


def write_rescored(lm: Any, wl: WordLattice, out: str, lm_scale: float, name: str,
                   htk_quotes: bool = True) -> None:
    """--write-lattice of `decode`: the rescored lattice (`methods.rescore`), written whole
    or not at all, compressed by its suffix."""
    import io

    from arsdecode.lattice.lattice_files import write_text_output
    from arsdecode.methods.rescore import rescored_lattice, write_rescored_slf

    text = io.StringIO()
    write_rescored_slf(rescored_lattice(lm, wl, lm_scale=lm_scale), text, utterance=name,
                       htk_quotes=htk_quotes)
    write_text_output(out, text.getvalue())
