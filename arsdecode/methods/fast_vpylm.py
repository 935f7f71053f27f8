"""The compiled full DP of a trained VPYLM (`VpylmLM`): its states and its context tree's
tables for `arsdecode.native._core.FullDP` with a `VpCore`.

Why: a VPYLM had no compiled path, so `auto` ran ARS on it, about 40x plain's time on the SMS
bench (issue 34). Its factor p(w | h) depends on h only through the path u_0 .. u_D that h
walks down the (finite) context tree, so a fixed table of states serves it, as an ARPA
table's useful contexts serve a backoff model.

The states are VpylmLM.minimal_context's cuts: a context cut to its longest suffix that begins
some node's context (oldest word first). Their set P, the prefixes of the node contexts, is
prefix-closed, so it is a table of useful contexts in FullDP's layout (gid 0 the empty
context, gids ascending with length, key = gid(prefix) * V + last word), and FullDP's
failure links give cut(c + w) = the longest suffix of c + w in P, which is minimal_context's
cut (its docstring: cut(c + w) = cut(cut(c) + w)). A cut keeps at least the D words of the
walk, so p(w | cut) = p(w | h).

The factors and the bounds are computed in C from the tree (`_vpylm.pxi`) in VpylmLM's own
float64 operations: the child links, the restaurants (c_uw, t_uw), per node q, c, t and its
depth's discount and strength, and the tail maxima M_v of the root and its children (the
bound after one word, VpylmLM.bound). Built once per model (cached on it).
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from arsdecode.methods.compiled_kinds import SkiRental
from arsdecode.methods.fast_mixture import vocabulary_core
from arsdecode.model.vpylm import VpylmLM
from arsdecode.native import _core
from maxarpa.contexts import EMPTY_KEY, rows_from_keys

Tables = tuple[np.ndarray, np.ndarray, np.ndarray]  # rows, lens, keys (FullDP's layout)

_DP: weakref.WeakKeyDictionary[VpylmLM, _core.FullDP] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()

SETUP_NGRAMS_PER_NODE = 6
"""auto's setup estimate of a VPYLM, in cost_model.setup_seconds's n-grams per tree node
(the tail maxima, the state tables and the hashes: 1.1-1.3 CPU-s for the SMS bench's
depth-8 model of 199k nodes)."""
SETUP_NGRAMS_PER_NODE_TAIL_BUILT = 1.5
"""The same once the model's tail maxima are built (its ARS bounds build them too): the state
tables, the hashes and FullDP's failure links, 0.25-0.3 CPU-s on that model."""


ARS_TIME_FACTOR = 10.0
"""ARS's time on a VPYLM over its time on the n-gram table of the same data (bench_targets,
SMS lattices: 4-16x by lattice, 11x mean): auto's ARS estimate is cost_model's times this."""
PAIR_TIME_FACTOR = 1.5
"""The compiled DP's time per pair on a VPYLM over a table's (bench_targets: 1.4-1.5x)."""

charge = SkiRental().charge
"""auto's ski-rental account of this kind (`compiled_kinds.SkiRental`)."""


def setup_ngrams(lm: VpylmLM) -> int:
    """What building `vpylm_dp(lm)` costs, in units of cost_model.setup_seconds (n-grams)."""
    if lm in _DP:
        return 0
    per_node = SETUP_NGRAMS_PER_NODE_TAIL_BUILT if lm.tail_max_built else SETUP_NGRAMS_PER_NODE
    return int(per_node * len(lm.counts.parent))


def is_built(lm: VpylmLM) -> bool:
    return lm in _DP


def state_tables(lm: VpylmLM) -> Tables:
    """P, the prefixes of the node contexts (oldest word first), in FullDP's layout, built
    level by level: a node of depth >= L gives the prefix of length L of its context, whose
    key is the gid of its prefix of length L - 1 times V plus its L-th oldest word (the word
    of its ancestor L - 1 steps up). One sort per level gives the level and each gid."""
    counts = lm.counts
    vocab = len(lm.vocab)
    width = lm.max_depth
    parent = np.asarray(counts.parent, dtype=np.int64)
    word = np.asarray(counts.word, dtype=np.int64)
    depth = np.asarray(lm.depth, dtype=np.int64)
    v = np.uint64(vocab)
    anc = np.arange(len(parent), dtype=np.int64)  # per node: its ancestor L - 1 steps up
    gid = np.zeros(len(parent), dtype=np.int64)  # per node: gid of its prefix of length L - 1
    all_lens = [np.zeros(1, dtype=np.int32)]
    all_keys = [np.array([EMPTY_KEY], dtype=np.uint64)]
    n = 1
    for length in range(1, width + 1):
        live = np.flatnonzero(depth >= length)
        if not len(live):
            break
        if length > 1:
            anc[live] = parent[anc[live]]
        keys = gid[live].astype(np.uint64) * v + word[anc[live]].astype(np.uint64)
        level, inverse = np.unique(keys, return_inverse=True)
        gid[live] = n + inverse.reshape(-1)
        all_lens.append(np.full(len(level), length, dtype=np.int32))
        all_keys.append(level)
        n += len(level)
    lens = np.concatenate(all_lens)
    keys_all = np.concatenate(all_keys)
    return np.ascontiguousarray(rows_from_keys(lens, keys_all, vocab, width)), lens, keys_all


def _hash(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    slots, bits = _core.build_hash(keys)
    return keys, slots, bits


def vp_core(lm: VpylmLM) -> _core.VpCore:
    """The tree's tables for the compiled walk and bound (`_vpylm.pxi`)."""
    counts = lm.counts
    vocab = np.uint64(len(lm.vocab))
    n = len(counts.parent)
    parent = np.asarray(counts.parent, dtype=np.int64)
    child_keys, child_slots, child_bits = _hash(
        parent[1:].astype(np.uint64) * vocab + np.asarray(counts.word)[1:].astype(np.uint64))
    rest = np.asarray(counts.restaurants, dtype=np.int64).reshape(-1, 4)
    rest_keys, rest_slots, rest_bits = _hash(
        rest[:, 0].astype(np.uint64) * vocab + rest[:, 1].astype(np.uint64))
    has_child = np.zeros(n, dtype=np.uint8)
    has_child[parent[1:]] = 1
    tail = lm.tail_max()
    tk: list[int] = []
    tv: list[float] = []
    for node in [0, *lm.children[0].values()]:  # the bound reads depth <= 1 only
        m = tail[node]
        if m:
            tk.extend(node * int(vocab) + w for w in m)
            tv.extend(m.values())
    tail_keys, tail_slots, tail_bits = _hash(np.array(tk, dtype=np.uint64))
    depth = np.asarray(lm.depth, dtype=np.int64)
    # per depth; a depth past the lists holds only empty restaurants (c = 0), never read
    pad = max(0, int(depth.max()) + 1 - len(counts.discounts))
    disc = np.concatenate([np.asarray(counts.discounts, dtype=np.float64), np.zeros(pad)])
    strength = np.concatenate([np.asarray(counts.strengths, dtype=np.float64), np.ones(pad)])
    return _core.VpCore(
        len(lm.vocab), lm.max_depth, lm.bos, lm.base,
        child_keys, child_slots, child_bits, np.ascontiguousarray(np.arange(1, n)),
        rest_keys, rest_slots, rest_bits,
        np.ascontiguousarray(rest[:, 2], dtype=np.float64),
        np.ascontiguousarray(rest[:, 3], dtype=np.float64),
        tail_keys, tail_slots, tail_bits, np.array(tv, dtype=np.float64), has_child,
        np.ascontiguousarray(lm.q, dtype=np.float64),
        np.ascontiguousarray(lm.c, dtype=np.float64),
        np.ascontiguousarray(lm.t, dtype=np.float64),
        np.ascontiguousarray(disc[depth]), np.ascontiguousarray(strength[depth]),
        *_sparse_bound_tables(lm, tail))


LNK_SLACK = 1e-13
"""Added to ln K (`_sparse_bound_tables`): more than the few ulps by which K * P_root(y) and
the bound's own q_0 P_root(y) + (1 - q_0) beta_c P_root(y) may differ, so K's bound stays one."""


def _sparse_bound_tables(lm: VpylmLM, tail: list[dict[int, float] | None]
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per word x (`vp_backward` in _vpylm.pxi): its child c of the root (-1: none); ln K,
    K = q_0 + (1 - q_0) beta_c with beta_c = (th + d t_c) / (th + c_c) the share P_c gives
    a word absent from its restaurant (1 when c has no customers); and, as CSR, its
    exceptions: the words of c's restaurant and those below c (M_c's), whose bound is not
    K * P_root."""
    vocab = len(lm.vocab)
    child0 = np.full(vocab, -1, dtype=np.int64)
    lnk = np.zeros(vocab)
    sizes = np.zeros(vocab, dtype=np.int64)
    lists: list[np.ndarray] = []
    q0 = lm.q[0]
    for x in sorted(lm.children[0]):
        c = lm.children[0][x]
        child0[x] = c
        if lm.c[c]:
            m = int(lm.depth[c])
            d, th = lm.counts.discounts[m], lm.counts.strengths[m]
            beta = (th + d * lm.t[c]) / (th + lm.c[c])
        else:
            beta = 1.0
        lnk[x] = np.log(q0 + (1.0 - q0) * beta) + LNK_SLACK
        words = set(lm.rest[c]) | set(tail[c] or ())
        lists.append(np.array(sorted(words), dtype=np.int64))
        sizes[x] = len(words)
    ex_off = np.zeros(vocab + 1, dtype=np.int64)
    np.cumsum(sizes, out=ex_off[1:])
    ex_word = np.concatenate(lists) if lists else np.empty(0, dtype=np.int64)
    return child0, lnk, ex_off, np.ascontiguousarray(ex_word, dtype=np.int64)


def vpylm_dp(lm: VpylmLM) -> _core.FullDP:
    """The FullDP of `lm` over its states (`state_tables`) with its `VpCore`, built once per
    model (threads asking at once build it once)."""
    got = _DP.get(lm)
    if got is not None:
        return got
    with _LOCK:
        if lm not in _DP:
            rows, lens, keys = state_tables(lm)
            slots, bits = _core.build_hash(keys)
            _DP[lm] = _core.FullDP(vocabulary_core(len(lm.vocab), lm.order), rows, lens, keys,
                                   slots, bits, vp=vp_core(lm))
        return _DP[lm]


# What `compiled_kinds.CompiledKind` asks of this module besides the functions above.


def compilable(lm: VpylmLM) -> bool:
    """Always: every VPYLM's states are its context tree's prefixes (module docstring)."""
    return True


def build_dp(lm: VpylmLM) -> _core.FullDP:
    return vpylm_dp(lm)
