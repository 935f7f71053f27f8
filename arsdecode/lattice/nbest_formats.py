"""n-best lists of a word lattice in the formats the next tool reads (issue 32).

Why: a lattice-tool or Kaldi user passes n-best lists on to rescoring and system combination
scripts that parse one of a few fixed layouts. Every list here holds the same exact paths;
only the layout and the units differ. A path's score splits into its lattice part (acoustic:
the arcs' and the final node's ln weights, word penalty included) and its LM part (the
target's ln p of `<s> words </s>`, before the LM scale), so that a tool can rescale them.

    text            rank<TAB>log_p<TAB>words                 ln, the total score (as `decode`)
    srilm           acoustic lm nwords w1 ... wn             log10, SRILM's n-best format
                                                             (lattice-tool -out-nbest-dir;
                                                             nbest-format(5), the third form)
    NBestList1.0    NBestList1.0 header, then                SRILM's bytelog: round(ln p *
                    (bytelog) w1 ... wn                      10000.5 / 1024), of the total
    kaldi           NAME-k w1 ... wn                         Kaldi's names of n-best entries
                                                             (lattice-to-nbest: NAME-1,
                                                             NAME-2, ...), as nbest-to-linear
                                                             and int2sym.pl print them

An empty path (every arc epsilon) is a line with no words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from arsdecode.lattice.word_lattice import WordLattice

NBEST_FORMATS = ("text", "srilm", "NBestList1.0", "kaldi")
LN10 = math.log(10)
BYTELOG_PER_LN = 10000.5 / 1024.0


@dataclass(frozen=True)
class NbestEntry:
    """One hypothesis: its words, its total ln score, and that score's two parts (ln)."""

    tokens: list[str]
    log_p: float
    acoustic_ln: float
    lm_ln: float


def nbest_entries(wl: WordLattice, paths: Sequence, lm_scale: float = 1.0) -> list[NbestEntry]:
    """The entries of `paths` (each with `tokens`, `arcs` and `log_p`, as `DagPath`): the
    acoustic part from the lattice's arcs and final weight, the LM part the rest, divided by
    the LM scale (so `acoustic + lm_scale * lm == log_p`)."""
    out = []
    for p in paths:
        arcs = list(p.arcs)
        final = int(wl.dst[arcs[-1]]) if arcs else wl.start
        acoustic = float(sum(float(wl.log_weights[a]) for a in arcs)) + wl.finals[final]
        out.append(NbestEntry(list(p.tokens), p.log_p, acoustic,
                              (p.log_p - acoustic) / lm_scale))
    return out


def format_nbest(entries: Sequence[NbestEntry], fmt: str, name: str = "utt") -> str:
    """The text of an n-best list in `fmt` (module docstring), one line per hypothesis."""
    if fmt == "text":
        lines = [f"{k}\t{e.log_p:.6f}\t{' '.join(e.tokens)}" for k, e in enumerate(entries, 1)]
    elif fmt == "srilm":
        lines = [" ".join([repr(e.acoustic_ln / LN10), repr(e.lm_ln / LN10),
                           str(len(e.tokens)), *e.tokens]) for e in entries]
    elif fmt == "NBestList1.0":
        lines = ["NBestList1.0"] + [f"({bytelog(e.log_p)}) {' '.join(e.tokens)}".rstrip()
                                    for e in entries]
    elif fmt == "kaldi":
        lines = [" ".join([f"{name}-{k}", *e.tokens]) for k, e in enumerate(entries, 1)]
    else:
        raise ValueError(f"unknown n-best format {fmt!r}")
    return "\n".join(lines) + "\n" if lines else ""


def bytelog(log_p: float) -> int | str:
    """SRILM's LogPtoBytelog of a natural-log score (rounding halves to even)."""
    if log_p == -math.inf:
        return "-inf"
    return round(log_p * BYTELOG_PER_LN)
