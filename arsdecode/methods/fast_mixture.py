"""The compiled full DP of a mixture of n-gram tables (`InterpolatedLM`): its merged states and
its components' tables for `arsdecode.native._core.FullDP` with a `MixCore`.

Why: `-mix-lm` (two or more ARPA files interpolated) had no compiled path, so `auto` ran ARS
on it, 6.8x plain's time on the SMS bench (issue 34). Its factors are the components' own
walks, combined in float64 (`_mixture.pxi`); what the DP needs besides is its state space.

The states. InterpolatedLM's cut of a context c is the suffix of length max_i l_i(c), l_i
the length of component i's own cut of its view of c (see interpolated.py's docstring).
Let U_i be component i's useful contexts written in union ids, and U their union. U is
prefix-closed (each U_i is), and the longest suffix of c in U is max_i (the longest in U_i)
= max_i l_i(c), provided that a suffix of c lies in U_i exactly when component i's view of
it lies in its own useful contexts. That holds when every word of component i's useful
contexts has one union id mapping to it (`_one_preimage`): then translating is a bijection on
them, and a union word it cannot see (-1) lies in no context of U_i, as the view ends there.
With `missing="unk"`, several union words map to a component's `<unk>`; if that `<unk>`
stands in one of the component's useful contexts, the union's cut would miss contexts the
component distinguishes, so such a mixture has no compiled path (`mixture_dp` returns None,
and the callers run ARS or the numpy reference as before).

So U is a table of useful contexts of the union vocabulary, in FullDP's layout (gid 0 the
empty context, gids ascending with length, key = gid(prefix) * V + last word), and the DP's
failure links, cut and caches are the plain ones. Built once per set of components (cached
on them: a target rebuilt with other weights reuses it), in a few numpy passes over the
components' tables.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from arsdecode.model.interpolated import InterpolatedLM
from arsdecode.native import _core, native_ngram
from maxarpa.contexts import EMPTY_KEY, has_stored_tables, rows_from_keys, useful_context_tables
from maxarpa.model import Model

Tables = tuple[np.ndarray, np.ndarray, np.ndarray]  # rows, lens, keys (FullDP's layout)

# Union tables by their components (the first active component's model holds the entries,
# keyed by the whole set): weights change nothing in them, so a target rebuilt with other
# weights, or afresh as the benches do, reuses them.
_UNION: weakref.WeakKeyDictionary[Model, dict[tuple, Tables | None]] = \
    weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _key(lm: InterpolatedLM) -> tuple:
    return (lm.missing, tuple(id(c.ngram) for c in lm.components), tuple(lm._active))


def _active_models(lm: InterpolatedLM) -> list[Model]:
    return [lm.components[i].ngram for i in lm._active]


def tables_built(lm: InterpolatedLM) -> bool:
    """Whether the union tables of `lm`'s components are built in this process."""
    return _key(lm) in _UNION.get(_active_models(lm)[0], {})


def setup_is_cheap(lm: InterpolatedLM) -> bool:
    """Whether building the union tables costs little: built already, or every component
    stores its own useful contexts (what is left is the merge, numpy passes)."""
    return tables_built(lm) or all(has_stored_tables(m) for m in _active_models(lm))


def _inverse(table: np.ndarray, vocab: int) -> np.ndarray:
    """Component id -> its one union id; -2 where several union ids map to it."""
    seen = table >= 0
    counts = np.bincount(table[seen], minlength=vocab)
    inv = np.full(vocab, -1, dtype=np.int64)
    inv[table[seen]] = np.flatnonzero(seen)
    inv[counts > 1] = -2
    return inv


def union_tables(lm: InterpolatedLM) -> Tables | None:
    """U, the union of the active components' useful contexts in union ids (module docstring),
    or None when a component's useful context holds a word with several union ids."""
    models = _active_models(lm)
    key = _key(lm)
    with _LOCK:
        cache = _UNION.setdefault(models[0], {})
        if key in cache:
            return cache[key]
    vocab = len(lm.vocab)
    width = lm.order - 1
    parts = []
    for i, model in zip(lm._active, models, strict=True):
        rows, lens, keys = useful_context_tables(model)
        inv = _inverse(lm._maps[i], len(model.vocab))
        words = (keys[1:] % np.uint64(len(model.vocab))).astype(np.int64)
        if len(words) and (inv[words] < 0).any():
            with _LOCK:
                cache[key] = None
            return None
        parts.append((np.asarray(lens), np.asarray(keys), inv, len(model.vocab)))
    gid_of = [np.zeros(len(p[0]), dtype=np.int64) for p in parts]  # component gid -> union gid
    all_lens = [np.zeros(1, dtype=np.int32)]
    all_keys = [np.array([EMPTY_KEY], dtype=np.uint64)]  # never a real parent * V + word
    n = 1
    v = np.uint64(vocab)
    for length in range(1, width + 1):
        found = []
        spans = []
        for (lens, keys, inv, cv), gids in zip(parts, gid_of, strict=True):
            lo, hi = np.searchsorted(lens, [length, length + 1])
            spans.append((int(lo), int(hi)))
            if hi > lo:
                k = keys[lo:hi]
                parent = (k // np.uint64(cv)).astype(np.int64)
                word = inv[(k % np.uint64(cv)).astype(np.int64)]
                found.append(gids[parent].astype(np.uint64) * v + word.astype(np.uint64))
            else:
                found.append(np.empty(0, dtype=np.uint64))
        level = np.unique(np.concatenate(found))
        if not len(level):
            break
        for (lo, hi), ukeys, gids in zip(spans, found, gid_of, strict=True):
            gids[lo:hi] = n + np.searchsorted(level, ukeys)
        all_lens.append(np.full(len(level), length, dtype=np.int32))
        all_keys.append(level)
        n += len(level)
    lens_u = np.concatenate(all_lens)
    keys_u = np.concatenate(all_keys)
    rows_u = rows_from_keys(lens_u, keys_u, vocab, width)
    out = (np.ascontiguousarray(rows_u), lens_u, keys_u)
    with _LOCK:
        cache[key] = out
    return out


def vocabulary_core(vocab: int, order: int) -> _core.NgramCore:
    """An NgramCore with the union vocabulary and the mixture's order and no n-gram: what
    FullDP reads of its `core` when a `MixCore` gives every probability (sizes only)."""
    node_off = np.full(order + 1, vocab, dtype=np.int64)
    node_off[0] = 0
    slot_off = np.zeros(order + 1, dtype=np.int64)
    slot_off[2:] = 2 * np.arange(1, order, dtype=np.int64)
    bits = np.ones(order, dtype=np.int32)
    zeros = np.zeros(vocab)
    return _core.NgramCore(order, vocab, node_off, np.zeros(vocab, dtype=np.uint64),
                           np.full(int(slot_off[-1]), -1, dtype=np.int32), slot_off, bits,
                           zeros, zeros.copy(), zeros.copy(), zeros.copy())


def mix_core(lm: InterpolatedLM) -> _core.MixCore:
    """The active components' tables, maps and ln weights, with the per-word tables of the
    sparse bound pass: uni(y) = ln sum_i lambda_i p_i(y) (unigrams), maxb(x) = the largest
    of x's max backoffs over the components (0 for one that cannot see x, or of order 1)."""
    vocab = len(lm.vocab)
    cores, maps, invs = [], [], []
    uni = np.full(vocab, -np.inf)
    maxb = np.full(vocab, -np.inf)
    for lw, i in zip(lm._log_weights, lm._active, strict=True):
        model = lm.components[i].ngram
        core = native_ngram(model).core
        table = np.ascontiguousarray(lm._maps[i], dtype=np.int64)
        cores.append(core)
        maps.append(table)
        invs.append(_inverse(table, len(model.vocab)))
        lp, lmbow = np.asarray(core.arrays[5]), np.asarray(core.arrays[8])
        seen = table >= 0
        term = np.full(vocab, -np.inf)
        term[seen] = lw + lp[table[seen]]
        uni = np.logaddexp(uni, term)
        back = np.zeros(vocab)
        if model.order >= 2:
            back[seen] = lmbow[table[seen]]
        maxb = np.maximum(maxb, back)
    return _core.MixCore(cores, maps, invs, np.ascontiguousarray(lm._log_weights, np.float64),
                         uni, maxb)


def mixture_dp(lm: InterpolatedLM) -> _core.FullDP | None:
    """A new FullDP over `lm`'s union states with its MixCore, or None (no compiled path: a
    component's useful contexts hold its `<unk>`, which several union words map to)."""
    tables = union_tables(lm)
    if tables is None:
        return None
    rows, lens, keys = tables
    slots, bits = _core.build_hash(keys)
    return _core.FullDP(vocabulary_core(len(lm.vocab), lm.order), rows, lens, keys, slots,
                        bits, mix=mix_core(lm))
