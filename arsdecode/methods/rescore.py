"""The rescored lattice: a word lattice with the new LM's scores on its links (issue 32).

Why: after rescoring, a lattice-tool or HTK user passes the lattice on (to consensus decoding,
to another rescoring pass, to HResults); the file must carry the new LM scores as `l=`, so that
any SLF decoder (`acscale * a + lmscale * l`) finds the same best path as the engine. An n-gram
score depends on the words before, which one lattice node need not determine; the lattice
written is therefore the exact expansion the full DP builds (`expansion_dp.dag_expand`: one node
per (lattice node, merged LM context) state, KenLM-style merging, no pruning), in which every
link's LM score is fixed. Where the topology already fixes the context (every node one
state), the expansion is the lattice itself.

Each link of the expansion carries:
    a = the lattice arc's ln weight (acoustic, pronunciation, word penalty: all but the LM),
    l = the LM's ln probability of its word in its context (epsilon links: 0), unscaled,
    p = its exact posterior probability (forward-backward over the expansion);
and the header says `lmscale=` (the LM weight of the target) and `acscale=1`. The `</s>`
factor and each final node's weight go on a `!NULL` link from each final state to one end node,
so a path's score is the sum over its links and nothing is lost. Read back with its `l=` kept
(`read_slf(..., keep_lm_score=True)`), the file's paths are the expansion's, with the same
scores: the round trip the tests check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from arsdecode.core.semiring import quiet
from arsdecode.lattice import WordLattice
from arsdecode.lattice.slf_write import write_scored_links
from arsdecode.methods.expansion_dp import dag_expand
from arsdecode.methods.expansion_posteriors import expansion_sums
from arsdecode.model import ModelLike, as_target_model


@dataclass(frozen=True)
class RescoredLattice:
    """The expansion as links (module docstring). Node 0 is the start, `n_nodes - 1` the end;
    every array has one entry per link; `words` None is `!NULL`."""

    n_nodes: int
    src: np.ndarray
    dst: np.ndarray
    words: list[str | None]
    acoustic: np.ndarray  # ln, the lattice's part
    lm: np.ndarray  # ln, the LM's part before the LM scale
    posteriors: np.ndarray
    lm_scale: float
    log_Z: float


def rescored_lattice(lm: ModelLike, wl: WordLattice, *, lm_scale: float = 1.0,
                     max_bytes: int | None = None) -> RescoredLattice:
    """The expansion of `wl` under `lm` (a target whose LM part is `lm_scale` times the LM's
    ln p: the CLI's `--lm-scale`), with every link's parts and exact posterior."""
    ex = dag_expand(as_target_model(lm), wl, max_bytes=max_bytes)
    node_of_state = np.repeat(np.arange(wl.n_nodes), np.diff(ex.node_start))
    acoustic = wl.log_weights[ex.arc]
    with quiet():
        lm_part = (ex.weight - acoustic) / lm_scale
    finals = np.flatnonzero(ex.final > -np.inf)
    final_weight = np.array([wl.finals.get(int(u), -np.inf) for u in node_of_state[finals]])
    end = ex.n_states
    src = np.concatenate([ex.src, finals])
    dst = np.concatenate([ex.dst, np.full(len(finals), end, dtype=np.int64)])
    words: list[str | None] = [wl.words[a] for a in ex.arc.tolist()] + [None] * len(finals)
    with quiet():
        end_lm = (ex.final[finals] - final_weight) / lm_scale
    alpha, beta, log_z = expansion_sums(ex, wl.source)
    with quiet():
        link_log = np.concatenate([alpha[ex.src] + ex.weight + beta[ex.dst],
                                   alpha[finals] + ex.final[finals]])
        posteriors = np.exp(link_log - log_z)
    return RescoredLattice(
        n_nodes=end + 1, src=src, dst=dst, words=words,
        acoustic=np.concatenate([acoustic, final_weight]),
        lm=np.concatenate([lm_part, end_lm]), posteriors=posteriors, lm_scale=lm_scale,
        log_Z=log_z)


def write_rescored_slf(r: RescoredLattice, out: TextIO, *, base: float = math.e,
                       utterance: str | None = None, htk_quotes: bool = True) -> None:
    """`r` as SLF (module docstring), through `slf_write.write_scored_links`."""
    links = list(zip(r.src.tolist(), r.dst.tolist(), r.words, strict=True))
    write_scored_links(out, r.n_nodes, links, r.acoustic.tolist(), r.lm.tolist(),
                       r.posteriors.tolist(),
                       lmscale=r.lm_scale, base=base, utterance=utterance,
                       htk_quotes=htk_quotes)
