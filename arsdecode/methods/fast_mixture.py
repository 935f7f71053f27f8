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
contexts has one union id mapping to it (`_preimages`): then translating is a bijection on
them, and a union word it cannot see (-1) lies in no context of U_i, as the view ends there.
With `missing="unk"`, several union words map to a component's `<unk>`; where that `<unk>`
stands in one of the component's useful contexts, the context is written once per union word
mapping to it (the component cannot tell them apart, so each is a context it distinguishes),
which keeps the equality above. When that would multiply the contexts past UNION_GROWTH,
the mixture has no compiled path (`mixture_dp` returns None, and the callers run ARS or the
numpy reference as before).

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

from arsdecode.errors import ModelError
from arsdecode.methods.compiled_kinds import SkiRental
from arsdecode.model.interpolated import InterpolatedLM
from arsdecode.model.maxarpa_lm import log10_core
from arsdecode.native import _core
from maxarpa.constants import LN10
from maxarpa.contexts import EMPTY_KEY, context_counts, has_stored_tables
from maxarpa.model import Model

Tables = tuple[np.ndarray, np.ndarray]  # counts by length, keys (FullDP's, without rows)

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


def dp_order(lm: InterpolatedLM) -> int:
    """The DP's order: the largest of the active components' (a component with weight 0 adds
    nothing to p, so its longer contexts would only split states)."""
    return max(lm.components[i].order for i in lm._active)


def tables_built(lm: InterpolatedLM) -> bool:
    """Whether the union tables of `lm`'s components are built in this process."""
    return _key(lm) in _UNION.get(_active_models(lm)[0], {})


def _preimages(table: np.ndarray, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """Component id w -> the union ids mapping to it, as CSR (offsets (vocab + 1,), ids)."""
    seen = np.flatnonzero(table >= 0)
    order = np.argsort(table[seen], kind="stable")
    off = np.zeros(vocab + 1, dtype=np.int64)
    np.cumsum(np.bincount(table[seen], minlength=vocab), out=off[1:])
    return off, seen[order].astype(np.int64)


def union_tables(lm: InterpolatedLM) -> Tables | None:
    """U, the union of the active components' useful contexts in union ids (module docstring),
    or None when writing them in union ids would pass UNION_GROWTH times their own count."""
    models = _active_models(lm)
    key = _key(lm)
    with _LOCK:
        cache = _UNION.setdefault(models[0], {})
        if key in cache:
            return cache[key]
    out = _build_union(lm, models)
    with _LOCK:
        cache[key] = out
    return out


UNION_GROWTH = 4
"""The most union contexts per component context (plus UNION_SLACK): past it, a `<unk>` in the
components' contexts that many union words map to (missing="unk") has no compiled path."""
UNION_SLACK = 100_000


def _build_union(lm: InterpolatedLM, models: list[Model]) -> Tables | None:
    """Level by level (context length), every component context written with every union id
    of each of its words (`_preimages`: one, except for a `<unk>` standing for the words the
    component lacks), keyed by its union parent's gid; the union's gids in key order.

    Returns (the number of contexts of each length 0..n-1, keys). Memory (issue 34): the
    union's keys are written level by level into one array allocated at the components'
    total count (grown only when a `<unk>` expands); no rows (the DP reads a context's
    words from its keys, `mix_walk_gid`) and no per-context lengths (FullDP derives them);
    a level's temporaries are int32 where they index gids (checked to fit); the
    components' own rows are not asked for."""
    vocab = len(lm.vocab)
    width = dp_order(lm) - 1
    v = np.uint64(vocab)
    parts = []
    for i, model in zip(lm._active, models, strict=True):
        # the count of each length, not a length per context nor rows (unused here)
        counts_i, keys = context_counts(model)
        starts = np.zeros(len(counts_i) + 1, dtype=np.int64)
        np.cumsum(counts_i, out=starts[1:])
        parts.append((starts, np.asarray(keys), len(model.vocab),
                      *_preimages(lm._maps[i], len(model.vocab))))
    total = sum(len(p[1]) for p in parts)
    cap = UNION_GROWTH * total + UNION_SLACK
    if cap >= GID_LIMIT:
        raise ModelError(f"the mixture's components have {total:,} useful contexts together; "
                         f"the compiled DP numbers them in 32 bits (at most {GID_LIMIT:,} "
                         f"over {UNION_GROWTH} per context)")
    # Room for one union context per component context (the count when every word has one
    # union id), grown by half when a `<unk>`'s union words need more.
    keys_u = np.empty(total, dtype=np.uint64)
    counts = np.zeros(width + 1, dtype=np.int64)
    counts[0] = 1
    keys_u[0] = EMPTY_KEY  # never a real parent * V + word
    # per component, the previous level: (its first component gid, the component gids when
    # not every one of that range, the union gid of each)
    pairs: list[tuple[int, np.ndarray | None, np.ndarray]] = [
        (0, None, np.zeros(1, dtype=np.int32)) for _ in parts]
    n = 1
    for length in range(1, width + 1):
        found: list[tuple[int, np.ndarray | None, np.ndarray]] = []
        for part, prev in zip(parts, pairs, strict=True):
            starts, keys = part[0], part[1]
            lo, hi = (int(starts[min(x, len(starts) - 1)]) for x in (length, length + 1))
            cg, ukeys = _level_keys(keys[lo:hi], lo, part[2:], prev, v)
            n += len(ukeys)  # an upper bound until the level is merged
            if n > cap:
                return None
            found.append((lo, cg, ukeys))
        level_keys = sum(len(f[2]) for f in found)
        n -= level_keys
        if not level_keys:
            break
        if n + level_keys > len(keys_u):
            keys_u = _grown(keys_u, n, max(n + level_keys, len(keys_u) * 3 // 2))
        count = _merge_level(found, keys_u, n)
        pairs = found  # _merge_level replaced each entry's keys by their gids
        counts[length] = count
        n += count
    return counts, keys_u[:n]


KEYS_CHUNK = 1 << 18
"""Component contexts translated at a time (bounds `_level_keys`' temporaries)."""


def _level_keys(k: np.ndarray, lo: int, part: tuple, prev: tuple[int, np.ndarray | None,
                np.ndarray], v: np.uint64) -> tuple[np.ndarray | None, np.ndarray]:
    """One component's contexts of one length (keys `k`, gids lo..) in union keys: (their
    component gids, None when one each in order, and the union keys). `part`: the
    component's vocabulary size and the preimage CSR; `prev`: the previous level's pairs.

    A chunk at a time while every word has one union id (the common case, whose temporaries
    were tens of MB on the 5.4M-n-gram model); else every union parent times every union id
    of the word (a `<unk>`'s union words), whole."""
    cv, pre_off, pre_ids = part
    c0, pc, pu = prev
    ukeys = np.empty(len(k), dtype=np.uint64)
    if pc is None:
        for a in range(0, len(k), KEYS_CHUNK):
            chunk = k[a:a + KEYS_CHUNK]
            parent = np.floor_divide(chunk, np.uint64(cv)).view(np.int64)  # ids < 2**63
            word = np.remainder(chunk, np.uint64(cv)).view(np.int64)
            if (pre_off[word + 1] - pre_off[word] != 1).any():
                break
            parent -= c0
            out = ukeys[a:a + len(chunk)]
            np.multiply(pu[parent], v, out=out, dtype=np.uint64, casting="unsafe")
            out += pre_ids[pre_off[word]].astype(np.uint64)
        else:
            return None, ukeys
    parent = np.floor_divide(k, np.uint64(cv)).view(np.int64)
    word = np.remainder(k, np.uint64(cv)).view(np.int64)
    n_pre = pre_off[word + 1] - pre_off[word]
    every_pc = np.arange(c0, c0 + len(pu)) if pc is None else pc
    p_lo = np.searchsorted(every_pc, parent)
    p_hi = np.searchsorted(every_pc, parent, "right")
    count = (p_hi - p_lo) * n_pre
    n_all = int(count.sum())
    x = np.repeat(np.arange(len(k)), count)
    r = np.arange(n_all) - np.repeat(np.cumsum(count) - count, count)
    par = pu[p_lo[x] + r // n_pre[x]]
    uw = pre_ids[pre_off[word[x]] + r % n_pre[x]]
    return (lo + x).astype(np.int64), par.astype(np.uint64) * v + uw.astype(np.uint64)


def _merge_level(found: list, keys_u: np.ndarray, n: int) -> int:
    """The union of one level's keys from every component, sorted and deduplicated, written
    at keys_u[n:]; each entry of `found` (lo, cg, ukeys) then holds its keys' gids (int32)
    instead of the keys. Returns the level's count.

    One sort gives the level and every gid. Keys are below n_ctx * V (38 bits for -mix-lm's
    general model), so each is packed with its index into one uint64 and the array sorted in
    place: no permutation beside it (issue 34: the union's build was the mixture's peak);
    keys too wide for that take an argsort. Ranks and sorted keys are made a chunk at a time."""
    sizes = [len(f[2]) for f in found]
    every = np.concatenate([f[2] for f in found])
    for i, (lo, cg, _) in enumerate(found):
        found[i] = (lo, cg, None)  # `every` holds the keys now
    m = len(every)
    shift = max(1, (m - 1).bit_length())
    packed = int(every.max()).bit_length() + shift <= 64
    if packed:
        every <<= np.uint64(shift)
        every |= np.arange(m, dtype=np.uint64)
        every.sort()
        order = None
    else:
        order = np.argsort(every, kind="stable")
    gids = np.empty(m, dtype=np.int32)
    count = 0
    prev = None
    for a in range(0, m, KEYS_CHUNK):
        if order is None:
            chunk = every[a:a + KEYS_CHUNK]
            vals = chunk >> np.uint64(shift)
            at = (chunk & np.uint64((1 << shift) - 1)).view(np.int64)
        else:
            at = order[a:a + KEYS_CHUNK]
            vals = every[at]
        new = np.empty(len(vals), dtype=bool)
        new[0] = prev is None or vals[0] != prev
        np.not_equal(vals[1:], vals[:-1], out=new[1:])
        prev = vals[-1]
        rank = np.cumsum(new, dtype=np.int64)
        rank += n + count - 1
        gids[at] = rank
        fresh = vals[new]
        keys_u[n + count:n + count + len(fresh)] = fresh
        count += len(fresh)
    del every, order
    ends = np.cumsum(sizes)
    for i, ((lo, cg, _), end, size) in enumerate(zip(found, ends, sizes, strict=True)):
        found[i] = (lo, cg, gids[end - size:end])
    return count


GID_LIMIT = 2**31 - 1
"""The most union contexts the compiled DP numbers (int32 gids, its failure links' type)."""


def _grown(a: np.ndarray, n: int, room: int) -> np.ndarray:
    """`a`'s first n entries in a new array of `room` entries (along the first axis)."""
    out = np.empty((room, *a.shape[1:]), dtype=a.dtype)
    out[:n] = a[:n]
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


def bigram_index(core: _core.Log10Core, vocab: int) -> tuple[np.ndarray, ...]:
    """A component's bigram rows (key = y * V + x, sorted) grouped by their first word x:
    offsets (vocab + 1,) and rows, ascending y within x (a stable counting sort); the offsets
    of each last word y's rows (one range each, the keys being sorted); each row's first word
    and, in the grouped order, each row's last word (int32: read without a division)."""
    off = np.zeros(vocab + 1, dtype=np.int64)
    if core.order < 2:
        none = np.empty(0, dtype=np.int32)
        return off, np.empty(0, dtype=np.int64), off.copy(), none, none
    bigrams = core.arrays[0][1]  # order 2's keys, where the model holds them
    first = (bigrams % np.uint64(vocab)).astype(np.int32)
    np.cumsum(np.bincount(first, minlength=vocab), out=off[1:])
    last = (bigrams // np.uint64(vocab)).astype(np.int32)
    pred = np.zeros(vocab + 1, dtype=np.int64)
    np.cumsum(np.bincount(last, minlength=vocab), out=pred[1:])
    rows = np.argsort(first, kind="stable").astype(np.int64)
    return off, rows, pred, first, np.ascontiguousarray(last[rows])


def mix_core(lm: InterpolatedLM) -> _core.MixCore:
    """The active components' tables (`log10_core`: read in place), maps and ln weights, with
    the per-word tables of the sparse bound pass: uni(y) = ln sum_i lambda_i p_i(y)
    (unigrams), maxb(x) = the largest of x's max backoffs over the components (0 for one that
    cannot see x, or of order 1). ln p of a unigram is LN10 * its log10 p, the product the
    walks form."""
    vocab = len(lm.vocab)
    cores, maps, offs, rows, preds, firsts, lasts = [], [], [], [], [], [], []
    uni = np.full(vocab, -np.inf)
    maxb = np.full(vocab, -np.inf)
    for lw, i in zip(lm._log_weights, lm._active, strict=True):
        model = lm.components[i].ngram
        core = log10_core(model)
        table = np.ascontiguousarray(lm._maps[i], dtype=np.int64)
        cores.append(core)
        maps.append(table)
        off, row, pred, first, last = bigram_index(core, len(model.vocab))
        firsts.append(first)
        lasts.append(last)
        offs.append(off)
        rows.append(row)
        preds.append(pred)
        # order 1's log10 p and mbow (float32 if the file stores it so: widened exactly
        # before the product, as the walk widens it; a float32 * float would stay float32)
        lp10, lmbow10 = core.arrays[1][0], core.arrays[4][0]
        seen = table >= 0
        term = np.full(vocab, -np.inf)
        term[seen] = lw + LN10 * lp10[table[seen]]
        uni = np.logaddexp(uni, term)
        back = np.zeros(vocab)
        if model.order >= 2:
            back[seen] = LN10 * lmbow10[table[seen]].astype(np.float64)
        maxb = np.maximum(maxb, back)
    return _core.MixCore(cores, maps, offs, rows, preds, firsts, lasts,
                         np.ascontiguousarray(lm._log_weights, np.float64), uni, maxb)


def mixture_dp(lm: InterpolatedLM) -> _core.FullDP | None:
    """A new FullDP over `lm`'s union states with its MixCore, or None (no compiled path: a
    component's useful contexts hold its `<unk>`, which too many union words map to)."""
    tables = union_tables(lm)
    if tables is None:
        return None
    _, keys = tables  # no rows, lengths or hash: FullDP reads the keys (see _build_union)
    return _core.FullDP(vocabulary_core(len(lm.vocab), dp_order(lm)), None, None, keys, None,
                        0, mix=mix_core(lm))


# What `compiled_kinds.CompiledKind` asks of this module (a mixture costs as one table per pair
# and per ARS step; its set-up is the merge of its components' tables).

ARS_TIME_FACTOR = 1.0
PAIR_TIME_FACTOR = 1.0


def compilable(lm: InterpolatedLM) -> bool:
    """Whether to try: always; `build_dp` gives None when the union states cannot be exact."""
    return True


def setup_ngrams(lm: InterpolatedLM) -> int:
    """The components' n-grams whose useful-context tables are built (none stored), plus the
    union's merge and DP at a sixteenth of that per component n-gram: the SMS bench's pair
    (0.8 M n-grams without stored tables, 5.4 M with) sets up in 0.79 CPU-s since the union
    holds keys only (issue 34), estimated 1.21 s (it was 2.9 s, a third, for 1.8 s then)."""
    models = [c.ngram for c in lm.components]
    return (sum(sum(m.counts) for m in models if not has_stored_tables(m))
            + sum(sum(m.counts) for m in models) // 16)


charge = SkiRental().charge
"""auto's ski-rental account of mixtures (`compiled_kinds.SkiRental`)."""


def is_built(lm: InterpolatedLM) -> bool:
    return tables_built(lm)


def build_dp(lm: InterpolatedLM) -> _core.FullDP | None:
    return mixture_dp(lm)
