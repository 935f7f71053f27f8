"""arsdecode's compiled hot path: the batched n-gram walk and the merged full-model DP.

Why compiled: a POS query is a few dozen (context, word) rows, where numpy's per-call overhead
is most of the cost, and the full DP's inner loop is per (state, candidate) pair. The kernels
are Cython compiled to C++ at install time (`pip install -e .` / `pip install .`), so nothing
is compiled when a command runs. See docs/performance.md for the measurements behind the choice.

There is no silent fallback: if the extension was not built, importing this package raises an
ImportError saying how to build it.

Public API (plain functions on arrays, natural log):
    NativeNgram.from_model(lm)        tables of a maxarpa.Model, converted from log10 to ln once
    native_ngram(lm)                  the same, cached per model object
    NativeNgram.log_prob(contexts, words) / .log_bound(contexts, words) -> float64 (B,)
    MAX_ORDER                         the highest model order the core takes (64)

Every id and offset a caller passes is checked before the kernels index with it, raising the
arsdecode.errors classes (OptionError, LatticeError, ModelError); tests/test_native_safety.py.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

try:
    from arsdecode.native import _core  # type: ignore[attr-defined]  # compiled extension, no stubs
except ImportError as err:  # pragma: no cover - exercised only on a broken install
    raise ImportError(
        "arsdecode's compiled core (arsdecode.native._core) is not built or does not load "
        f"({err}); rebuild it with `pip install -e .` (or `python setup.py build_ext --inplace`)"
        " in the source tree, which needs a C++ compiler and Cython"
    ) from err

from arsdecode.errors import ModelError, OptionError
from maxarpa.constants import LN10
from maxarpa.model import Model

__all__ = ["MAX_ORDER", "NativeNgram", "native_ngram", "_core"]

MAX_ORDER: int = _core.MAX_ORDER
"""The highest model order the compiled core takes (its walks keep a context's backoffs in a
fixed stack buffer); a higher order is refused when the model's tables are built."""


class NativeNgram:
    """A maxarpa model's trie as flat arrays in ln, answered by the compiled walk."""

    def __init__(self, core: _core.NgramCore, vocab_size: int, bos_id: int | None,
                 eos_id: int | None) -> None:
        self.core = core
        self.order = core.order
        self.vocab_size = vocab_size
        self.bos_id = bos_id
        self.eos_id = eos_id

    @classmethod
    def from_model(cls, lm: Model) -> NativeNgram:
        """Copy the trie's keys, hash slots and values (log10 -> ln, once) into flat arrays.

        Raises ModelError (naming the file) if the model has no max-backoff bounds or its
        order is above MAX_ORDER.
        """
        trie = lm.trie
        n = trie.order
        if n > MAX_ORDER:
            raise ModelError(f"{lm.source or 'model'}: order {n} is above the compiled core's "
                             f"maximum of {MAX_ORDER}")
        node_off = np.zeros(n + 1, dtype=np.int64)
        slot_off = np.zeros(n + 1, dtype=np.int64)
        bits = np.zeros(n, dtype=np.int32)
        keys, slots, lp, lbow, lmf, lmbow = [], [], [], [], [], []
        for k, node in enumerate(trie.nodes, start=1):
            if node.mf is None or node.mbow is None:
                raise ModelError(f"{lm.source or 'model'}: the model has no max-backoff bounds")
            node_off[k] = node_off[k - 1] + len(node.keys)
            keys.append(node.keys.astype(np.uint64))
            if k >= 2:
                hslots, bits[k - 1] = _core.build_hash(np.ascontiguousarray(node.keys, np.uint64))
                slots.append(hslots)
                slot_off[k] = slot_off[k - 1] + len(hslots)
            else:
                slot_off[k] = 0
            lp.append(LN10 * node.log10p)
            lbow.append(LN10 * node.log10bow)
            lmf.append(LN10 * node.mf)
            lmbow.append(LN10 * node.mbow)

        def cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
            return np.ascontiguousarray(np.concatenate(parts) if parts else np.empty(0), dtype)

        core = _core.NgramCore(
            n, trie.vocab_size, node_off, cat(keys, np.uint64), cat(slots, np.int32),
            slot_off, bits, cat(lp, np.float64), cat(lbow, np.float64), cat(lmf, np.float64),
            cat(lmbow, np.float64),
        )
        return cls(core, trie.vocab_size, lm.bos_id, lm.eos_id)

    def log_prob(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        """ln p(word | context) per row; `contexts` (B, k) ids left-padded with -1.

        Raises OptionError for a word id outside [0, V) or a context id >= V (negative context
        ids are padding); checked in the compiled core before it runs without the GIL.
        """
        return self.core.walk(_ctx(contexts), _words(words), False)

    def log_bound(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        """ln of the max-backoff bound max_z p(word | z context) per row."""
        return self.core.walk(_ctx(contexts), _words(words), True)


def _ctx(contexts: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(contexts, dtype=np.int64)
    if a.ndim != 2:
        raise OptionError("contexts must be a 2-D array (B, k)")
    return a


def _words(words: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(words, dtype=np.int64).reshape(-1)


_CACHE: weakref.WeakKeyDictionary[Model, NativeNgram] = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.Lock()  # threads asking for a new model's tables build them once


def native_ngram(lm: Model) -> NativeNgram:
    """`NativeNgram.from_model(lm)`, built once per model object."""
    hit = _CACHE.get(lm)
    if hit is None:
        with _CACHE_LOCK:
            hit = _CACHE.get(lm)
            if hit is None:
                hit = _CACHE[lm] = NativeNgram.from_model(lm)
    return hit
