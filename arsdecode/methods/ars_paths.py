"""Algorithm 1's primitives that depend on a lattice's layout: a path's ln p, the check that
q >= p on it, and (on a word lattice) q's argmax and draws.

Why a module of its own: `ars.LatticePaths` is the one adapter of the q-automaton to
Algorithm 1 (`ars_loop.QPaths`) for every lattice kind, and only the layout differs between
the kinds. A confusion network's path is a list of candidate indices, scored by `Target`
(memoised factors) and found and drawn by the layered DPs of `core.inference` (the incremental
Viterbi); a word lattice's path is a list of arc numbers, scored here on its true history
(`paths_log_p`) and found and drawn by the package's one semiring sweep and sampler over
(node, state) blocks (`core.dag_dp`, q as a dense `QGraph`). Both sum q and p's terms in path
order from 0.0, so an exact path has q = p bit for bit.

A path with p above q beyond the tolerance is a broken bound: `check_bound` (a confusion
network's, naming the first factor where q fell below p) and `check_arcs_bound` raise
BoundViolationError; it is never certified or accepted. All values natural log.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

import arsdecode.core.dag_dp as dag_dp
from arsdecode.core.automaton import QAutomaton
from arsdecode.core.semiring import LogSumExp, MaxPlus, quiet
from arsdecode.core.target import Target
from arsdecode.core.tolerances import CERTIFICATE_TOL
from arsdecode.errors import BoundViolationError, NoPathError, OptionError
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.model import TargetModel, context_rows

__all__ = ["NO_PATH", "backward_sums", "check_arcs_bound", "check_bound", "check_depth", "draw",
           "no_path", "path_log_p", "paths_log_p", "viterbi"]

NO_PATH = "every path of the lattice has probability 0 under the model"


# ----- a confusion network: the bound check by factor -------------------------------------------
def check_bound(qa: QAutomaton, target: Target, idx: Sequence[int], log_q: float,
                log_p: float, tol: float = CERTIFICATE_TOL) -> None:
    """Raise BoundViolationError if p(x) > q(x) beyond `tol` on the path `idx`.

    Why: q >= p is what every certificate and every acceptance ratio rests on. One-sided,
    the decoder's test `log q - log p <= tol` also passes when p exceeds q, certifying a path
    on a broken bound, and a sampler that clips p/q to 1 silently draws from the wrong
    distribution. So wherever a path is scored under both, a violation is an error that
    names where q fell below p: the first factor (position, word, context) whose p term
    exceeds its q edge, found by rescoring the path factor by factor.
    """
    if not log_p > log_q + tol:
        return
    lattice = target.lattice
    L = len(idx)
    words = [int(target.token_ids[i][j]) for i, j in enumerate(idx)]
    factors = target.factors(words)
    states = qa.states_along(qa.index_steps(idx))
    history = ["<s>", *(lattice.tokens[i][j] for i, j in enumerate(idx))]
    width = max(target.width, 0)
    for i in range(L + 1):
        col = idx[i] if i < L else 0
        node = qa.nodes[i]
        q_term = float(node.weights[states[i], col] if i < L else node.final[states[i]])
        p_term = factors[i] + (float(lattice.log_emissions[i][col]) if i < L else 0.0)
        if p_term > q_term + tol:
            word = lattice.tokens[i][col] if i < L else "</s>"
            context = " ".join(history[max(0, i + 1 - width) : i + 1])
            bound_context = " ".join(qa.context_tokens(i, states[i])) or "(empty)"
            raise BoundViolationError(
                f"the bound is below the model at position {i + 1}: ln p({word} | {context}) "
                f"= {p_term!r} > its bound ln q = {q_term!r} (q's context: {bound_context}); "
                "the model's max-backoff bounds are wrong (check the file with "
                "`maxarpa verify`)")
    raise BoundViolationError(
        f"the bound is below the model on the path {' '.join(history[1:])!r}: ln p = "
        f"{log_p!r} > ln q = {log_q!r}; the model's max-backoff bounds are wrong")


# ----- a word lattice: p, the bound check, and the dynamic programs over q -----------------
def path_log_p(model: TargetModel, wl: WordLattice, arcs: Sequence[int], final: int) -> float:
    """ln p of a path (arc weights, final weight, LM with `<s>` and `</s>`); see
    `paths_log_p`."""
    return float(paths_log_p(model, wl, [arcs], [final])[0])


def paths_log_p(model: TargetModel, wl: WordLattice, paths: Sequence[Sequence[int]],
                finals: Sequence[int]) -> np.ndarray:
    """ln p of each path, with one batched `log_prob` call on the paths' true histories.

    Each path's terms (arc weight, plus ln p(w | history) on a word arc; final weight plus
    ln p(</s> | history)) are summed in path order from 0.0, exactly as
    `QAutomaton.log_q` sums q, so an exact path has q = p bit for bit (padding adds 0.0,
    which changes no float)."""
    width = max(model.order - 1, 0)
    ctxs: list[list[int]] = []
    words: list[int] = []
    all_words = [w for arcs in paths for a in arcs if (w := wl.words[a]) is not None]
    ids = model.ids(all_words).tolist() if all_words else []
    k = 0
    for arcs in paths:
        history = [model.bos]
        for a in arcs:
            if wl.words[a] is not None:
                ctxs.append(history[max(0, len(history) - width):] if width else [])
                history.append(int(ids[k]))
                words.append(int(ids[k]))
                k += 1
        ctxs.append(history[max(0, len(history) - width):] if width else [])
        words.append(model.eos)
    lp = np.asarray(model.log_prob(context_rows(ctxs, width), np.array(words, dtype=np.int64)),
                    dtype=np.float64)
    longest = max((len(arcs) for arcs in paths), default=0)
    terms = np.zeros((len(paths), longest))
    last = np.empty(len(paths))
    pos = 0
    with quiet():
        for i, (arcs, final) in enumerate(zip(paths, finals, strict=True)):
            if arcs:
                idx = np.asarray(arcs, dtype=np.int64)
                is_word = np.array([wl.words[x] is not None for x in arcs], dtype=bool)
                row = wl.log_weights[idx].copy()
                n_words = int(is_word.sum())
                row[is_word] += lp[pos:pos + n_words]
                terms[i, :len(arcs)] = row
                pos += n_words
            last[i] = np.float64(wl.finals[final]) + lp[pos]
            pos += 1
        total = np.zeros(len(paths))
        for j in range(longest):
            total = total + terms[:, j]
        return total + last


def _word_lattice(qa: QAutomaton) -> WordLattice:
    """The word lattice q was built over (this module's automata are built over one)."""
    assert isinstance(qa.lattice, WordLattice)
    return qa.lattice


def no_path(qa: QAutomaton) -> str:
    """The NoPathError message when q(X) = 0 (then p(X) = 0, as q >= p)."""
    return f"{_word_lattice(qa).source}: every path has probability zero under the model"


def check_arcs_bound(qa: QAutomaton, arcs: Sequence[int], log_q: float, log_p: float,
                     tol: float = CERTIFICATE_TOL) -> None:
    """BoundViolationError if p > q beyond `tol` on the path: q >= p is what the certificate
    and the acceptance ratio rest on, so a broken bound is an error, never clipped."""
    if log_p > log_q + tol:
        wl = _word_lattice(qa)
        words = " ".join(wl.path_words(arcs))
        raise BoundViolationError(
            f"the bound is below the model on the path {words!r} of {wl.source}: ln p = "
            f"{log_p!r} > ln q = {log_q!r}; the model's bounds are wrong (check the file "
            "with `maxarpa verify`)")


def viterbi(qa: QAutomaton) -> tuple[list[int], int, float]:
    """x* = argmax q: its arcs, its final node and ln q(x*) (summed in path order).

    The max-plus sweep keeps only each state's best value; the choices are recomputed along x*
    alone (stop on a tie with the best arc, else the first best arc: the smallest).
    Raises NoPathError when q (hence p) is zero on every path."""
    graph = dag_dp.QGraph(qa)
    best = dag_dp.backward(graph, MaxPlus)
    if best[0] == -np.inf:
        raise NoPathError(no_path(qa))
    path = dag_dp.best_path(graph, best)
    arcs = [int(qa.arc_lo[u]) + c for u, c in zip(path.nodes, path.columns, strict=True)]
    return arcs, path.final_node, qa.log_q(arcs, path.final_node)


def backward_sums(qa: QAutomaton) -> tuple[np.ndarray, np.ndarray]:
    """beta (global state numbering): ln of q's mass after each state, and the offsets."""
    graph = dag_dp.QGraph(qa)
    return dag_dp.backward(graph, LogSumExp), graph.offsets


def draw(qa: QAutomaton, n: int, rng: np.random.Generator
         ) -> tuple[list[list[int]], list[int], np.ndarray, float]:
    """n i.i.d. paths of q / q(X): their arcs, final nodes, ln q of each, and ln q(X).

    Forward sampling after backward filtering (`dag_dp.sample`): every walker draws, at each
    node it reaches, the stop or an arc with probability proportional to its weight times the
    mass after it. ln q of a path is summed along it in path order, as `QAutomaton.log_q`
    sums it."""
    graph = dag_dp.QGraph(qa)
    beta = dag_dp.backward(graph, LogSumExp)
    log_z = float(beta[0])
    if log_z == -math.inf:
        raise NoPathError(no_path(qa))
    drawn = dag_dp.sample(graph, beta, n, rng)
    off = graph.offsets
    arcs = drawn.paths(n, lambda src, col: qa.arc_lo[dag_dp.node_of(off, src)] + col)
    return arcs, dag_dp.node_of(off, drawn.final).tolist(), drawn.score, log_z


def check_depth(depth: int | None, lattice: Lattice | WordLattice) -> None:
    """The one validation of `depth`, which only a word lattice's refinement takes."""
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int)
                              or depth < 1):
        raise OptionError(f"depth (words a context gains per refinement step) must be an "
                          f"integer >= 1 or None, not {depth!r}")
    if depth != 1 and isinstance(lattice, Lattice):
        raise OptionError("depth applies to word lattices only (a confusion network's "
                          "refinement is the paper's, one word a step)")
