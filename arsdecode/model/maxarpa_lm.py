"""`MaxArpaLM`: the `TargetModel` over a maxarpa.Model, made once per model by `as_target_model`.

Why an adapter: maxarpa answers in log10 over its own trie; the engine asks in ln through
`TargetModel` (arsdecode.model.interface). The adapter converts once (the compiled walk's tables
are in ln), keeps the n-gram as `.ngram` (the `HasNgramTables` capability the compiled full DP
and the cost model use) and cuts contexts with maxarpa's useful-context tables
(`maxarpa.contexts.UsefulContexts`, the same tables the compiled full DP merges states by).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any, Protocol

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
        self._log_prob: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
        self._log_bound: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
        if walk is not None:
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

    def _compiled(self) -> None:
        """Build the compiled walk's tables on the first query, not with the adapter: a model
        that is only a component of a mixture is queried through its tables in place
        (`log10_core`), and its natural-log copy (40 bytes an n-gram) would go unused."""
        from arsdecode.native import native_ngram

        fast = native_ngram(self.ngram)
        self._log_prob, self._log_bound = fast.log_prob, fast.log_bound

    def log_prob(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        if self._log_prob is None:
            self._compiled()
        assert self._log_prob is not None
        return self._log_prob(contexts, words)

    def log_bound(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        if self._log_bound is None:
            self._compiled()
        assert self._log_bound is not None
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
_LOG10: weakref.WeakKeyDictionary[Model, Any] = weakref.WeakKeyDictionary()
_LOG10_LOCK = threading.Lock()  # threads asking for a new model's tables build them once


def log10_core(model: Model) -> Any:
    """`model`'s tables for the compiled walk, read where the model holds them (a mapped
    binary file's pages, or the arrays read from text), in log10, with each order's children
    offsets (`_core.Log10Core`); once per model object. Its walks return `NativeNgram`'s numbers
    bit for bit, without NativeNgram's natural-log copy of every value (issue 34: about
    260 MB for `-mix-lm`'s 5.4M-n-gram model); what the mixture's walks read.

    Raises ModelError (naming the file) if the model has no max-backoff bounds or its order
    is above the compiled core's maximum."""
    from arsdecode.native import built_once

    return built_once(_LOG10, _LOG10_LOCK, model, _build_log10_core)


def _build_log10_core(model: Model) -> Any:
    from arsdecode.native import MAX_ORDER, _core

    trie = model.trie
    if trie.order > MAX_ORDER:
        raise ModelError(f"{model.source or 'model'}: order {trie.order} is above the compiled "
                         f"core's maximum of {MAX_ORDER}")
    if any(b is None for node in trie.nodes for b in node.stored_bounds()):
        raise ModelError(f"{model.source or 'model'}: the model has no max-backoff bounds")
    arrays: dict[str, list[np.ndarray]] = {name: [] for name in
                                           ("keys", "lp", "lbow", "lmf", "lmbow")}
    for node in trie.nodes:
        arrays["keys"].append(np.ascontiguousarray(node.keys, dtype=np.uint64))  # a view
        for name, value in (("lp", node.log10p), ("lbow", node.log10bow)):
            arrays[name].append(np.ascontiguousarray(value, dtype=np.float64))
        # The bounds as the model holds them: a format-3 file's float32 stay float32, read
        # in place and widened per value by the walk (issue 34: no 60 MB float64 copy).
        for name, value in zip(("lmf", "lmbow"), node.stored_bounds(), strict=True):
            kind = np.float32 if value.dtype == np.float32 else np.float64
            arrays[name].append(np.ascontiguousarray(value, dtype=kind))
    return _core.Log10Core(trie.vocab_size, LN10, arrays["keys"], arrays["lp"], arrays["lbow"],
                           arrays["lmf"], arrays["lmbow"])


def as_target_model(lm: ModelLike) -> TargetModel:
    """The engine's view of `lm`: maxarpa Models are wrapped once (and cached per model, so
    the context tables of `minimal_context` are built once); other targets, adapters included,
    pass through unchanged, so calling it again on its result is free (idempotent)."""
    if isinstance(lm, Model):
        if lm not in _ADAPTERS:
            _ADAPTERS[lm] = MaxArpaLM(lm)
        return _ADAPTERS[lm]
    return lm
