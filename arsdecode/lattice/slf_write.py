"""Writing HTK SLF: a word lattice (with its arc posteriors), and best paths or an n-best list
as a lattice of parallel chains.

Why a module of its own: writing is the other direction of the format, with its own choices
(one end node, `p=` posteriors; `arsdecode.lattice.slf`'s docstring, "Writing"), used by
`--write-lattice` and the k-best output; the reader's rules and errors are in `slf` and the
field syntax both share in `slf_fields`. Both names are still importable from `slf`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TextIO

import numpy as np

from arsdecode.errors import LatticeError
from arsdecode.lattice.slf_fields import EPSILON_WORDS, NULL_WORD, quoted
from arsdecode.lattice.word_lattice import RawArc, WordLattice


def write_slf(wl: WordLattice, out: TextIO, *, posteriors: Sequence[float] | None = None,
              base: float = math.e, utterance: str | None = None,
              htk_quotes: bool = True) -> None:
    """Write `wl` as SLF (module docstring, "Writing"): words on links, `a=` the arc's ln
    weight in log `base` (e or 10), `p=` each arc's posterior probability when given (one
    per arc of `wl`, linear, as lattice-tool writes them). `htk_quotes=False` writes words
    as they are, for lattice-tool without -htk-quotes (`slf_fields.quoted`)."""
    if base <= 0 or base == 1:
        raise LatticeError(f"{wl.source}: cannot write SLF with log base {base}")
    if posteriors is not None and len(posteriors) != wl.n_arcs:
        raise LatticeError(f"{wl.source}: {len(posteriors)} posteriors for {wl.n_arcs} arcs")
    for word in wl.words:
        if word in EPSILON_WORDS:
            raise LatticeError(f"{wl.source}: the word {word!r} would read back as epsilon; "
                               "SLF cannot hold it as a word")
    out_degree = np.bincount(wl.src, minlength=wl.n_nodes)
    plain = (len(wl.finals) == 1 and all(w == 0.0 and out_degree[f] == 0
                                         for f, w in wl.finals.items()))
    extra: list[tuple[int, int, str | None, float, float | None]] = []
    n_nodes = wl.n_nodes
    if plain:
        end = next(iter(wl.finals))
    else:
        end = n_nodes
        n_nodes += 1
        ending = _final_posteriors(wl, posteriors) if posteriors is not None else None
        for f, w in wl.finals.items():
            extra.append((f, end, None, w, None if ending is None else ending[f]))
    rows: list[tuple[int, int, str | None, float, float | None]] = [
        (s, d, word, w, None if posteriors is None else float(posteriors[k]))
        for k, (s, d, word, w) in enumerate(zip(wl.src.tolist(), wl.dst.tolist(), wl.words,
                                                wl.log_weights.tolist()))]
    rows += extra
    scale = _write_head(out, n_nodes, len(rows), end, base, utterance)
    for j, (s, d, word, w, p) in enumerate(rows):
        label = NULL_WORD if word is None else quoted(word, htk_quotes)
        line = f"J={j} S={s} E={d} W={label} a={w * scale!r}"
        if p is not None:
            line += f" p={p!r}"
        out.write(line + "\n")


def write_scored_links(out: TextIO, n_nodes: int, links: Sequence[tuple[int, int, str | None]],
                       acoustic: Sequence[float], lm: Sequence[float],
                       posteriors: Sequence[float] | None, *, lmscale: float,
                       base: float = math.e, utterance: str | None = None,
                       htk_quotes: bool = True) -> None:
    """Write a lattice whose links carry `a=` (all but the LM) and `l=` (the LM's score,
    unscaled) apart, with `lmscale=` and `acscale=1.0` in the header, so that an SLF decoder
    scores each link `a + lmscale * l`: a rescored lattice (`methods.rescore`). Node 0 is the
    start, node `n_nodes - 1` the end; scores are ln, written in log `base`."""
    if base <= 0 or base == 1:
        raise ValueError(f"cannot write SLF with log base {base}")
    scale = _write_head(out, n_nodes, len(links), n_nodes - 1, base, utterance,
                        f"lmscale={lmscale!r} acscale=1.0 wdpenalty=0.0")
    for j, (s, d, word) in enumerate(links):
        label = NULL_WORD if word is None else quoted(word, htk_quotes)
        line = (f"J={j} S={s} E={d} W={label} a={float(acoustic[j]) * scale!r} "
                f"l={float(lm[j]) * scale!r}")
        if posteriors is not None:
            line += f" p={float(posteriors[j])!r}"
        out.write(line + "\n")


def _write_head(out: TextIO, n_nodes: int, n_links: int, end: int, base: float,
                utterance: str | None, scales: str | None = None) -> float:
    """The header and node lines every written lattice has; the factor from ln to log
    `base` for its scores."""
    out.write("VERSION=1.1\n")
    if utterance is not None:
        out.write(f"UTTERANCE={quoted(utterance)}\n")
    if base != math.e:
        out.write(f"base={base!r}\n")
    if scales is not None:
        out.write(scales + "\n")
    out.write(f"start=0 end={end}\n")
    out.write(f"N={n_nodes} L={n_links}\n")
    for i in range(n_nodes):
        out.write(f"I={i}\n")
    return 1.0 if base == math.e else 1.0 / math.log(base)


def _final_posteriors(wl: WordLattice, posteriors: Sequence[float]) -> dict[int, float]:
    """The probability that a path ends at each final node, from the arc posteriors: what
    enters the node (1 for the start) minus what leaves it, clipped to [0, 1]."""
    through = np.zeros(wl.n_nodes)
    through[0] = 1.0
    leaving = np.zeros(wl.n_nodes)
    p = np.asarray(posteriors, dtype=np.float64)
    np.add.at(through, wl.dst, p)
    np.add.at(leaving, wl.src, p)
    return {f: float(min(1.0, max(0.0, through[f] - leaving[f]))) for f in wl.finals}


def paths_lattice(wl: WordLattice, paths: Sequence[Sequence[int]]) -> WordLattice:
    """The best path or an n-best list as a lattice of parallel chains: one chain per path
    (its arcs, words and ln weights as in `wl`, the final weight added to its last arc),
    from one start node to one end node.

    Why one lattice and not one file per path: every SLF reader (HTK's HLRescore and
    HResults, SRILM lattice-tool, Kaldi's SLF scripts) reads one lattice per file, and a
    lattice of parallel chains is an ordinary one: its paths are exactly the n hypotheses with
    their scores, decoding it again gives the same list, and an n-best list stays one file per
    input lattice, as lattice-tool's -out-lattice-dir keeps it. Each path is a sequence of arc
    indices of `wl` from the start node to a final node (the empty path when the start node
    is final)."""
    if not paths:
        raise LatticeError(f"{wl.source}: no path to write")
    arcs: list[RawArc] = []
    n = 2  # 0: start, 1: end
    for k, path in enumerate(paths):
        node = 0
        for a in path:
            if not 0 <= a < wl.n_arcs or int(wl.src[a]) != node:
                raise LatticeError(f"{wl.source}: path {k} is not a path of the lattice "
                                   f"(arc {a})")
            node = int(wl.dst[a])
        if node not in wl.finals:
            raise LatticeError(f"{wl.source}: path {k} does not end at a final node")
        if not path:
            arcs.append((0, 1, None, wl.finals[node]))
            continue
        prev = 0
        for i, a in enumerate(path):
            last = i == len(path) - 1
            weight = float(wl.log_weights[a]) + (wl.finals[node] if last else 0.0)
            nxt = 1 if last else n
            if not last:
                n += 1
            arcs.append((prev, nxt, wl.words[a], weight))
            prev = nxt
    return WordLattice.build(n, 0, {1: 0.0}, arcs, source=wl.source)
