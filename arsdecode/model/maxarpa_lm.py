"""`MaxArpaLM`: the `TargetModel` over a maxarpa.Model, made once per model by `as_target_model`.

Why an adapter: maxarpa answers in log10 over its own trie; the engine asks in ln through
`TargetModel` (arsdecode.model.interface). The adapter converts once (the compiled walk's tables
are in ln), keeps the n-gram as `.ngram` (the `HasNgramTables` capability the compiled full DP
and the cost model use) and cuts contexts with maxarpa's useful-context tables
(`maxarpa.contexts.UsefulContexts`, the same tables the compiled full DP merges states by).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Protocol

import numpy as np

from arsdecode.errors import ModelError
from arsdecode.model.interface import ModelLike, TargetModel
from maxarpa.constants import LN10
from maxarpa.contexts import UsefulContexts
from maxarpa.model import Model


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
        self.ngram = model
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
        self._useful: UsefulContexts | None = None

    def ids(self, tokens: Sequence[str]) -> np.ndarray:
        unk = self.ngram.unk_id
        if unk is None:  # maxarpa raises its one-line error for an unknown word
            return self.ngram.ids(list(tokens)).astype(np.int64)
        # map + fromiter: a third less than a list comprehension (a lattice's every candidate)
        return np.fromiter(map(self.ngram.word_to_id.get, tokens, repeat(unk)), np.int64,
                           len(tokens))

    def word(self, word_id: int) -> str:
        return self.ngram.vocab[word_id]

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
        """Each row cut to its longest useful suffix (`maxarpa.contexts.UsefulContexts`), whose
        tables are built (or read from the binary model) on the first call."""
        if self._useful is None:
            self._useful = UsefulContexts.of(self.ngram)
        return self._useful.cut(contexts)


_ADAPTERS: weakref.WeakKeyDictionary[Model, MaxArpaLM] = weakref.WeakKeyDictionary()


def as_target_model(lm: ModelLike) -> TargetModel:
    """The engine's view of `lm`: maxarpa Models are wrapped once (and cached per model, so
    the context tables of `minimal_context` are built once); other targets, adapters included,
    pass through unchanged, so calling it again on its result is free (idempotent)."""
    if isinstance(lm, Model):
        if lm not in _ADAPTERS:
            _ADAPTERS[lm] = MaxArpaLM(lm)
        return _ADAPTERS[lm]
    return lm
