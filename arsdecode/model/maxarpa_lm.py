"""The target-model interface: what the q-automaton, the target p and the full DP ask of a model.

Why an interface: the engine only needs, for (context, word) pairs in batches, the exact
log-probability and an upper bound on it over every left extension of the context, plus two
structural facts (when a context is exact at a position, and the shortest context that gives
the same probabilities). Anything that answers these can be a target: a backoff n-gram
(`MaxArpaLM` over `maxarpa.Model`), a log-linear n-gram or a variable-order Markov model, with
no change to `automaton.py`, `target.py` or `full.py`.

Conventions: natural log everywhere; a context is a (B, k) int64 array of word ids, oldest word
first, left-padded with -1 (maxarpa's batch layout); k = order - 1 in the engine.

Exactness (the certificate's precondition): at layer i the history is `<s> x_1 .. x_i`. A state
context c (a suffix of that history) determines p(. | history) iff c has at least order - 1
words, or c IS the whole history (i + 1 words). A context that merely starts with `<s>` is not
enough: `<s>` may occur inside a history (a model listing `<s> <s>`), and then a short context
starting with it is a suffix of a longer history whose probabilities differ.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from arsdecode.errors import ModelError
from maxarpa.constants import LN10
from maxarpa.model import Model


@runtime_checkable
class TargetModel(Protocol):
    """What the engine needs from a language model (all values natural log)."""

    order: int  # contexts have at most order - 1 words
    bos: int  # id of <s>: the history before the first token
    eos: int  # id of </s>: the final factor

    def ids(self, tokens: Sequence[str]) -> np.ndarray:
        """int64 id of each token (an unknown token gets the model's unknown-word id)."""
        ...

    def word(self, word_id: int) -> str:
        """The surface form of an id (for display and export)."""
        ...

    def log_prob(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        """ln p(word | context) per row; contexts (B, order - 1) left-padded with -1."""
        ...

    def log_bound(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        """Per row, an upper bound of ln p(word | z + context) over every left extension z."""
        ...

    def is_exact(self, position: int, context: Sequence[int]) -> bool:
        """Whether `context`, a suffix of the history `<s> x_1..x_position`, fixes p there."""
        ...

    def minimal_context(self, contexts: np.ndarray) -> np.ndarray:
        """Each row cut to the shortest suffix c' with p(w | c) = p(w | c') for every w and
        cut(c + w) = cut(cut(c) + w) (the full DP merges states by it); -1 left padding."""
        ...


class NgramWalk(Protocol):
    """The log10 batch walk behind `MaxArpaLM` (maxarpa.Model, or a compiled core)."""

    def log10p_batch(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray: ...

    def max_log10p_batch(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray: ...


class MaxArpaLM:
    """`TargetModel` over a maxarpa.Model: backoff n-gram with max-backoff bounds.

    By default the queries run on the compiled walk (`arsdecode.native`), whose tables hold
    the model's values converted from log10 to ln once, when the adapter is built. `walk`
    replaces it by any object with maxarpa's log10 `log10p_batch` / `max_log10p_batch` (e.g.
    the maxarpa.Model itself, the numpy reference), converted to ln in `_ln`. Either way q's
    exact edges and p's factors both come from `log_prob`, so they are the same float64
    numbers and the certificate compares like with like.
    """

    def __init__(self, model: Model, walk: NgramWalk | None = None) -> None:
        if model.bos_id is None or model.eos_id is None:
            raise ModelError(
                f"{model.source or 'model'}: no <s> or </s> in the vocabulary; the sentence "
                "boundaries are needed to score a path"
            )
        self.model = model
        self.walk: NgramWalk | None = walk
        self._log_prob: Callable[[np.ndarray, np.ndarray], np.ndarray]
        self._log_bound: Callable[[np.ndarray, np.ndarray], np.ndarray]
        if walk is None:
            from arsdecode.native import native_ngram

            fast = native_ngram(model)
            self._log_prob, self._log_bound = fast.log_prob, fast.log_bound
        else:
            self._log_prob = lambda c, w: self._ln(walk.log10p_batch(c, w))
            self._log_bound = lambda c, w: self._ln(walk.max_log10p_batch(c, w))
        self.order = model.order
        self.bos = int(model.bos_id)
        self.eos = int(model.eos_id)
        self._useful: _UsefulContexts | None = None

    def ids(self, tokens: Sequence[str]) -> np.ndarray:
        unk = self.model.unk_id
        if unk is None:  # maxarpa raises its one-line error for an unknown word
            return self.model.ids(list(tokens)).astype(np.int64)
        get = self.model.word_to_id.get
        return np.array([get(t, unk) for t in tokens], dtype=np.int64)

    def word(self, word_id: int) -> str:
        return self.model.vocab[word_id]

    @staticmethod
    def _ln(log10: np.ndarray) -> np.ndarray:
        return LN10 * log10

    def log_prob(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        return self._log_prob(contexts, words)

    def log_bound(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        return self._log_bound(contexts, words)

    def is_exact(self, position: int, context: Sequence[int]) -> bool:
        n = len(context)
        return n >= self.order - 1 or (n == position + 1 and n > 0 and context[0] == self.bos)

    def minimal_context(self, contexts: np.ndarray) -> np.ndarray:
        if self._useful is None:
            self._useful = _UsefulContexts(self.model)
        return self._useful.cut(contexts)


_ADAPTERS: weakref.WeakKeyDictionary[Model, MaxArpaLM] = weakref.WeakKeyDictionary()


def as_target_model(lm: Model | TargetModel) -> TargetModel:
    """The engine's view of `lm`: maxarpa Models are wrapped once (and cached per model, so
    the context tables of `minimal_context` are built once); other targets pass through."""
    if isinstance(lm, Model):
        if lm not in _ADAPTERS:
            _ADAPTERS[lm] = MaxArpaLM(lm)
        return _ADAPTERS[lm]
    return lm


def context_rows(contexts: Sequence[Sequence[int]], width: int) -> np.ndarray:
    """Contexts as a (B, width) int64 array, last `width` words kept, left-padded with -1."""
    rows = np.full((len(contexts), width), -1, dtype=np.int64)
    if width:
        for r, ctx in enumerate(contexts):
            tail = list(ctx)[-width:]
            if tail:
                rows[r, width - len(tail) :] = tail
    return rows


class _UsefulContexts:
    """Forward-keyed sorted tables of the useful contexts of a backoff model, lengths 1..n-1.

    Useful: a proper prefix of a listed n-gram, or a listed n-gram with a nonzero backoff. Every
    listed n-gram that can match after a context c, and every nonzero backoff the query adds,
    lies inside c's longest useful suffix, so p(w | c) = p(w | cut(c)) for every w, and cutting
    commutes with appending a word (KenLM's state minimisation). Useful contexts are
    prefix-closed, so each is found by walking from its oldest word: key = index(prefix) * V + w.
    """

    def __init__(self, lm: Model) -> None:
        trie = lm.trie
        n, v = trie.order, trie.vocab_size
        self.v = np.uint64(v)
        parts: list[list[np.ndarray]] = [[] for _ in range(n)]
        for k, node in enumerate(trie.nodes, start=1):
            listed = node.rows[node.listed].astype(np.int64)
            for j in range(1, k):
                parts[j].append(listed[:, :j])
            if k < n:
                parts[k].append(node.rows[node.listed & (node.log10bow != 0)].astype(np.int64))
        self.first = np.zeros(v, dtype=bool)
        self.keys: list[np.ndarray] = [np.empty(0, np.uint64), np.empty(0, np.uint64)]
        for j in range(1, n):
            rows = np.concatenate(parts[j]) if parts[j] else np.empty((0, j), np.int64)
            if j == 1:
                self.first[rows[:, 0]] = True
                continue
            parent = self.lookup(rows[:, :-1])
            if not (parent >= 0).all():
                raise ModelError(f"{lm.source}: useful contexts are not prefix-closed")
            keys = parent.astype(np.uint64) * self.v + rows[:, -1].astype(np.uint64)
            self.keys.append(np.unique(keys))

    def lookup(self, rows: np.ndarray) -> np.ndarray:
        """Index of each row (B, j) among useful contexts of length j, or -1."""
        b, j = rows.shape
        w0 = rows[:, 0]
        idx = np.where((w0 >= 0) & self.first[np.maximum(w0, 0)], w0, -1)
        for k in range(2, j + 1):
            ok = (idx >= 0) & (rows[:, k - 1] >= 0)
            table = self.keys[k]
            found = np.full(b, -1, dtype=np.int64)
            if ok.any() and len(table):
                key = idx[ok].astype(np.uint64) * self.v + rows[ok, k - 1].astype(np.uint64)
                pos = np.minimum(np.searchsorted(table, key), len(table) - 1)
                found[ok] = np.where(table[pos] == key, pos, -1)
            idx = found
        return idx

    def cut(self, ctx: np.ndarray) -> np.ndarray:
        """Replace each context row by its longest useful suffix (left-padded with -1)."""
        b, w = ctx.shape
        keep = np.zeros(b, dtype=np.int64)
        todo = np.arange(b)
        for j in range(w, 0, -1):
            if len(todo) == 0:
                break
            hit = self.lookup(ctx[todo, w - j :]) >= 0
            keep[todo[hit]] = j
            todo = todo[~hit]
        return np.where(np.arange(w)[None, :] >= (w - keep)[:, None], ctx, -1)
