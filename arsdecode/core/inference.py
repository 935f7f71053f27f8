"""Inference on the q-automaton: Viterbi, log partition and sampling, via `dp.py`.

Everything derives from the one semiring-generic backward sweep (`dp.backward`) over the
automaton's per-layer weight and target matrices: max-plus values give the Viterbi path,
log-sum-exp values give ln q(X) and drive forward sampling. Decoding uses a tested fast path,
`incremental_best_values` (`viterbi.py`), which recomputes only the rows a refinement touched
and returns values identical (bit for bit) to the full max-plus sweep.
"""

from __future__ import annotations

import numpy as np

import arsdecode.core.dp as dp
from arsdecode.core.automaton import QAutomaton
from arsdecode.core.semiring import LogSumExp, MaxPlus, Semiring, quiet
from arsdecode.core.tolerances import PRUNE_MARGIN
from arsdecode.core.viterbi import incremental_viterbi
from arsdecode.errors import AutomatonError
from arsdecode.lattice import Lattice


def _network(qa: QAutomaton) -> Lattice:
    """The confusion network of a layered automaton (what this module's DPs run on; a word
    lattice's automaton runs on `dag_dp`)."""
    if not isinstance(qa.lattice, Lattice):
        raise AutomatonError("the layered dynamic programs run on a confusion network's "
                             "q-automaton; a word lattice's runs on core.dag_dp")
    return qa.lattice


def _arrays(qa: QAutomaton) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """A layered automaton's per-layer matrices and the last layer's final weights."""
    _network(qa)
    L = qa.n_nodes - 1
    weights = [qa.nodes[i].state_weights() for i in range(L)]
    targets = [qa.nodes[i].state_targets() for i in range(L)]
    return weights, targets, qa.nodes[L].final[: len(qa.nodes[L])].copy()


def backward_values(qa: QAutomaton, semiring: type[Semiring]) -> list[np.ndarray]:
    """Per layer, the best (`MaxPlus`) or total (`LogSumExp`) ln weight from each state to
    the end, </s> included."""
    return dp.backward(*_arrays(qa), semiring)


def incremental_best_values(qa: QAutomaton) -> list[np.ndarray]:
    """Per layer, the max-plus value of each state: the same values as the full sweep
    (`backward_values(qa, MaxPlus)`), recomputing only the rows a change reached
    (`viterbi.IncrementalViterbi`, attached to `qa` on first use)."""
    if not qa.track_pointers:  # a sampling automaton keeps no cache: the full sweep
        return backward_values(qa, MaxPlus)
    return incremental_viterbi(qa).values(qa)


def viterbi_indices(qa: QAutomaton) -> tuple[list[int], float]:
    """The argmax path of q (candidate indices) and its log q, forward-summed."""
    weights, targets, _ = _arrays(qa)
    idx = dp.best_path(weights, targets, incremental_best_values(qa))
    return idx, qa.log_q_indices(idx)


def prune_hopeless(qa: QAutomaton, lower_bound: float, margin: float = PRUNE_MARGIN) -> int:
    """Prune every candidate whose best path through q is below `lower_bound` - `margin`.

    `lower_bound` must be p(z) for a path z already found. For a candidate c at position i,
    max over states s of alpha(s) + W[s, c] + beta(T[s, c]) is the best q of any path through
    it; if that is < p(z), then p < p(z) on all those paths (q >= p), now and after any
    refinement (q only decreases), so the argmax of p avoids them. z itself is never pruned
    (its bound is >= q(z) >= p(z)); `margin` absorbs the rounding of the two sums. The
    forward pass costs one states x candidates sweep. Returns how many candidates died.
    """
    if lower_bound == -np.inf:
        return 0
    weights, targets, _ = _arrays(qa)
    beta = incremental_best_values(qa)
    alpha = dp.forward(weights, targets, [len(node) for node in qa.nodes], MaxPlus)
    killed = 0
    with quiet():
        for i in range(len(weights)):
            through = alpha[i][:, None] + weights[i] + beta[i + 1][targets[i]]
            dead = qa.alive[i] & (MaxPlus.sum(through, axis=0) < lower_bound - margin)
            if dead.any():
                qa.prune_columns(i, np.flatnonzero(dead))
                killed += int(dead.sum())
    return killed


def viterbi(qa: QAutomaton) -> tuple[list[str], float]:
    """The argmax path of q as tokens, and log q of it (natural log)."""
    idx, log_q = viterbi_indices(qa)
    return [_network(qa).tokens[i][j] for i, j in enumerate(idx)], log_q


def log_partition(qa: QAutomaton) -> float:
    """ln q(X): the total mass of q over every path of the lattice."""
    return dp.total(*_arrays(qa), LogSumExp)


def sample_indices(
    qa: QAutomaton, k: int, rng: np.random.Generator
) -> tuple[np.ndarray, float]:
    """Draw k i.i.d. paths from q / q(X) (candidate indices, shape (k, L)) and ln q(X).

    If q(X) = 0 no path is drawn (shape (0, L)) and ln q(X) = -inf is returned."""
    return dp.sample_layers(*_arrays(qa), k, rng)


def sample_paths(qa: QAutomaton, k: int, rng: np.random.Generator) -> list[list[str]]:
    """k exact samples from q, as token lists."""
    idx, _ = sample_indices(qa, k, rng)
    tokens = _network(qa).tokens
    return [[tokens[i][j] for i, j in enumerate(row)] for row in idx.tolist()]
