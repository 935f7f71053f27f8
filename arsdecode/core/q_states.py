"""The storage of the q-automaton (`automaton.QAutomaton`): one `NodeStates` per lattice node.

Why a module apart from the automaton: this is the data (a node's states, their dense weight
and target matrices, the events a cache over q is told of, a batched fill request, the
exactness shortcut of backoff models), and `automaton.py` is Algorithm 2 over it. A confusion
network's layer i IS node i of its word lattice (one out-arc per candidate of position i + 1,
all into node i + 1; node L final), so the same storage serves both lattice kinds: the
(state x candidate) matrices of a layer are the (state x out-arc) matrices of its node.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from maxarpa.contexts import useful_context_tables
from maxarpa.model import Model
from maxarpa.rows import row_hashes

Context = tuple[int, ...]

Variant = Literal["all-edges", "paper"]
VARIANTS: tuple[str, ...] = ("all-edges", "paper")
DEFAULT_VARIANT: Variant = "all-edges"

ARS_HINT = "use --method full (the merged expansion, compiled) or raise --memory-budget"


_NO_STOP = np.full(4, -np.inf)  # the final weights of 4 new rows (copied: cheaper than full)


class NodeStates:
    """The states of one lattice node: contexts, out-edge weights and targets, final weights.

    Row s is state s; column j is the node's j-th outgoing arc (in the lattice's arc order; a
    confusion network's candidates of the next position). `targets` are state numbers local
    to the arc's destination node. `own_weight[s, j]`: the weight was queried at this row's
    own context (False: copied from the suffix state when the state was created, a valid but
    looser bound; epsilon columns, which hold no model term, are always True).
    """

    def __init__(self, width: int, prefixes: bool = True) -> None:
        """`prefixes=False`: no `by_prefix` index (a confusion network's, never read)."""
        self.width = width  # outgoing arcs of the node
        self.prefixes = prefixes
        self.contexts: list[Context] = []
        self.index: dict[Context, int] = {}
        self.by_suffix: dict[Context, list[int]] = {}  # suffix -> states whose context ends so
        self.by_prefix: dict[Context, list[tuple[int, int]]] = {}  # c[:-1] -> (c[-1], state)
        self.exact: list[bool] = []
        self.ctx_len = np.zeros(4, dtype=np.int64)
        self.weights = np.empty((4, width))  # a row is set when its state is added
        self.targets = np.zeros((4, width), dtype=np.int32)
        self.own_weight = np.zeros((4, width), dtype=bool)
        self.final = _NO_STOP.copy()

    def __len__(self) -> int:
        return len(self.contexts)

    @staticmethod
    def capacity(states: int) -> int:
        """The rows `add` has allocated once it holds `states` states (it doubles from 4)."""
        rows = 4
        while rows < states:
            rows *= 2
        return rows

    def row_bytes(self) -> int:
        """Bytes of one allocated row: weight (8), target (4) and own flag (1) per arc, final
        weight and context length (8 each)."""
        return self.width * 13 + 16

    def add(self, context: Context, exact: bool) -> int:
        s = len(self.contexts)
        if s == len(self.final):
            grow = max(4, s)
            self.weights = np.concatenate([self.weights, np.empty((grow, self.width))])
            self.targets = np.concatenate(
                [self.targets, np.zeros((grow, self.width), dtype=np.int32)])
            self.own_weight = np.concatenate(
                [self.own_weight, np.zeros((grow, self.width), dtype=bool)])
            self.final = np.concatenate([self.final, np.full(grow, -np.inf)])
            self.ctx_len = np.concatenate([self.ctx_len, np.zeros(grow, dtype=np.int64)])
        self.contexts.append(context)
        self.index[context] = s
        self.exact.append(exact)
        self.ctx_len[s] = len(context)
        for k in range(len(context) + 1):
            self.by_suffix.setdefault(context[len(context) - k:], []).append(s)
        if self.prefixes and context:
            self.by_prefix.setdefault(context[:-1], []).append((context[-1], s))
        return s

    def state_weights(self) -> np.ndarray:
        """The (states, width) weight matrix of the states created so far (a view)."""
        return self.weights[: len(self.contexts)]

    def state_targets(self) -> np.ndarray:
        """The (states, width) target matrix of the states created so far (a view)."""
        return self.targets[: len(self.contexts)]

    def nbytes(self) -> int:
        """The bytes of the node's arrays as allocated."""
        return sum(a.nbytes for a in (self.weights, self.targets, self.own_weight, self.final,
                                      self.ctx_len))


class AutomatonListener(Protocol):
    """What a cache over q is told when q changes (`viterbi.IncrementalViterbi` is one).

    Events come after the change is made, with node index i and state (row) indices.
    """

    def state_created(self, i: int, s: int, targets_row: np.ndarray) -> None:
        """State s of node i was created with these outgoing targets (weights to come)."""

    def rows_changed(self, rows: list[tuple[int, int]]) -> None:
        """Weights of these (node, state) rows were (re)queried."""

    def edges_moved(self, i: int, rows: np.ndarray, col: int, target: int) -> None:
        """Edges (rows, col) of node i now lead to the new state `target` of the arc's
        destination."""

    def columns_pruned(self, i: int, cols: np.ndarray) -> None:
        """Arcs `cols` of node i now weigh -inf in every row."""


@dataclass(frozen=True)
class FillRequest:
    """One batched model query for edge weights: `log_prob` if `exact`, else `log_bound`.

    `items`: (node, state, words, columns, stop) per row, in order; `columns` None is the
    whole row (every arc a word arc); `stop`: the last word is `</s>` (a final node)."""

    exact: bool
    contexts: np.ndarray  # (B, order - 1), left-padded with -1
    words: np.ndarray  # (B,)
    items: list


_EXTENDABLE: weakref.WeakKeyDictionary[Model, frozenset[int]] = weakref.WeakKeyDictionary()


def extendable_contexts(ngram: Model) -> frozenset[int]:
    """Hashes (`maxarpa.table.row_hashes` of the -1 left-padded row) of every context that is
    a PROPER suffix of a useful context of the backoff model (`maxarpa.contexts`).

    Why: a context c that is not one is exact wherever it stands. Every history h ending with
    c has its longest useful suffix cut(h) inside c (a longer one would end with c, making c
    its proper suffix), so cut(h) = cut(c) and p(w | h) = p(w | cut(c)) = p(w | c) for every
    w. A hash collision only makes a context look extendable: it stays inexact (safe).
    Cached per model."""
    if ngram not in _EXTENDABLE:
        rows, lens, _ = useful_context_tables(ngram)
        width = rows.shape[1]
        parts = []
        for n in range(1, width + 1):  # contexts of n words: drop their k oldest words
            sel = rows[lens == n]
            for k in range(1, n + 1) if len(sel) else ():
                cut = sel.copy()
                cut[:, :width - n + k] = -1
                parts.append(cut)
        hashes = row_hashes(np.concatenate(parts)) if parts else np.zeros(0, np.uint64)
        _EXTENDABLE[ngram] = frozenset(np.unique(hashes).tolist())
    return _EXTENDABLE[ngram]


_MASK = (1 << 64) - 1
_MIX = 0x9E3779B97F4A7C15  # maxarpa.table's multiplier


def context_hash(context: Context, width: int) -> int:
    """`maxarpa.table.row_hashes` of the context's -1 left-padded row of `width` words, in
    Python integers: one context at a time, several times faster than a numpy call."""
    h = 0
    row = (-1,) * (width - len(context)) + tuple(context)
    for j, x in enumerate(row):
        h = (((h ^ (x & _MASK)) * _MIX) + j + 1) & _MASK
    return h
