"""CTM lines (`utt channel start duration word confidence`) of a path through a timed lattice.

Why: scoring tools (NIST sclite, Kaldi's scoring scripts) and downstream alignment read a
recogniser's output as CTM, with the times the lattice carries (SLF node `t=`) and a confidence
per word. The confidence here is the word arc's exact posterior probability under the rescoring
target (the mass of every path through the arc), not an estimate from an n-best list or a
pruned lattice. A word spans from its arc's source node's time to its destination's; epsilon
arcs (`!NULL`, pauses the LM skips) give no line, as lattice-tool's `-output-ctm` skips them.
Times are printed with two decimals, as HTK's and lattice-tool's CTM; confidences with six.
"""

from __future__ import annotations

from collections.abc import Sequence

from arsdecode.errors import LatticeError
from arsdecode.lattice.word_lattice import WordLattice


def ctm_lines(wl: WordLattice, arcs: Sequence[int], posteriors: Sequence[float], name: str,
              channel: str = "1") -> list[str]:
    """One CTM line per word arc of the path `arcs` (module docstring)."""
    if wl.node_times is None:
        raise LatticeError(f"{wl.source}: the lattice has no node times (SLF t= on every "
                           "node), which CTM output needs")
    lines = []
    for a in arcs:
        word = wl.words[a]
        if word is None:
            continue
        start = wl.node_times[int(wl.src[a])]
        end = wl.node_times[int(wl.dst[a])]
        lines.append(f"{name} {channel} {start:.2f} {max(end - start, 0.0):.2f} {word} "
                     f"{min(max(float(posteriors[a]), 0.0), 1.0):.6f}")
    return lines
