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
from collections.abc import Callable
from typing import TypeVar

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
        for node in trie.nodes:
            if node.mf is None or node.mbow is None:
                raise ModelError(f"{lm.source or 'model'}: the model has no max-backoff bounds")
        node_off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum([len(node.keys) for node in trie.nodes], out=node_off[1:])
        slot_off = np.zeros(n + 1, dtype=np.int64)
        bits = np.zeros(n, dtype=np.int32)
        # Each array is allocated once at its final size and filled level by level (issue 34:
        # per-level products then a concatenation held every value three times at the peak,
        # 555 MB for a 5.4M-n-gram model). The values are the same float64 products.
        total = int(node_off[n])
        keys = np.empty(total, dtype=np.uint64)
        lp, lbow, lmf, lmbow = (np.empty(total, dtype=np.float64) for _ in range(4))
        hashes = []
        for k, node in enumerate(trie.nodes, start=1):
            at = slice(int(node_off[k - 1]), int(node_off[k]))
            keys[at] = node.keys
            for out, log10 in ((lp, node.log10p), (lbow, node.log10bow), (lmf, node.mf),
                               (lmbow, node.mbow)):
                out[at] = LN10 * log10  # one level's product at a time
            if k >= 2:
                hslots, bits[k - 1] = _core.build_hash(keys[at])
                hashes.append(hslots)
                slot_off[k] = slot_off[k - 1] + len(hslots)
        slots = np.concatenate(hashes).astype(np.int32, copy=False) if hashes else \
            np.empty(0, dtype=np.int32)
        del hashes
        core = _core.NgramCore(n, trie.vocab_size, node_off, keys, slots, slot_off, bits, lp,
                               lbow, lmf, lmbow)
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


Built = TypeVar("Built")


def built_once(cache: weakref.WeakKeyDictionary[Model, Built], lock: threading.Lock,
               model: Model, build: Callable[[Model], Built]) -> Built:
    """`cache[model]`, made by `build(model)` on the first ask: one build per model object,
    however many threads ask for a new model's tables at once (the check is repeated under
    `lock`), and no lock taken once it is built. The compiled core's per-model tables
    (`native_ngram`, `model.maxarpa_lm.log10_core`) are each kept this way."""
    hit = cache.get(model)
    if hit is None:
        with lock:
            hit = cache.get(model)
            if hit is None:
                hit = cache[model] = build(model)
    return hit


_CACHE: weakref.WeakKeyDictionary[Model, NativeNgram] = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.Lock()


def native_ngram(lm: Model) -> NativeNgram:
    """`NativeNgram.from_model(lm)`, built once per model object (`built_once`)."""
    return built_once(_CACHE, _CACHE_LOCK, lm, NativeNgram.from_model)
