"""`convert --binary` of a key-ordered ARPA file with each array in memory only while used.

Why: the conversion held the whole table, its bounds and its context tables at once (246 MiB
peak on the 5.4M-n-gram bench model against KenLM `build_binary`'s 120 MiB in the same run;
issue 34). Here every array is parked in an unlinked scratch file beside the output
(`Scratch`: written once, read back once, about 180 MB there, in the page cache of a disk,
not in this process) from the moment it is final until the step that needs it, and each step
loads only its own (96 MiB peak, at `build_binary`'s CPU time; bench/convert_phases.py gives
each step's):

1. parse (`keyed.parse_orders`): each order's log10p and backoffs parked as its section ends;
2. from the keys, each order's prefix rows and last words (int32), then the keys, parked;
3. the useful-context tables level by level from those (`contexts.useful_levels`), parked;
4. from the highest order down, the order's rounded bounds from the order above
   (`_rounded_order`), its members written to the file and hashed, and freed;
5. the digest and the context tables, as `binary_write.write_binary` writes them.

The file is byte for byte the one `load(rounded_bounds=True)` and `write_binary` write
(tests/test_maxarpa_streamed.py). A file this path does not take exactly as they do (not in
key order, a word to add, a NaN, a value too large, a positive log10 p, a bound above
float32) makes `convert_streamed` return False before the output exists, and the caller
converts as before, which names every fault and applies every `Config` rule.

Why the bounds need no exact float64 copy (the old path kept two orders' of them): an order's
stored bound is round_up(max(exact, recurrence on the rounded order above)), and the
recurrences are monotone, so the rounded recurrence is never below the exact value (it is
computed from values at least the exact ones: the rounded order above). The maximum is
therefore the rounded recurrence itself, which needs the exact mbow only where it is
positive (the absent-extension term of mf and the max(0, .) of mbow): kept as a sparse set.
"""

from __future__ import annotations

import lzma
import os
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from maxarpa.arpa import LineReader, open_binary
from maxarpa.binary_write import write_order, write_preamble, write_trailer
from maxarpa.bound import LARGEST_LOG10, best_absent_extension
from maxarpa.compact import Stored, round_up_f32
from maxarpa.config import Config
from maxarpa.contexts import EMPTY_KEY, useful_levels
from maxarpa.digest import DigestV2, has_negative_zero
from maxarpa.errors import FormatError
from maxarpa.keyed import parse_orders
from maxarpa.keywalk import prefix_rows
from maxarpa.model import Model
from maxarpa.output import atomic_output, check_output, output_target
from maxarpa.specials import adds_words
from maxarpa.table import OrderNodes, Trie

CHUNK = 1 << 18  # values checked or walked at a time
_PARKED = np.empty(0, dtype=np.uint64)  # in place of an order's keys once in the scratch file


class Declined(Exception):
    """The file is not one this path converts exactly as `load` would (see the module)."""


class Scratch:
    """Arrays parked in an unlinked file (nothing is left behind, whatever ends the
    process), each written once and read back once by `take`. A read or write that fails
    raises Declined: the caller converts in memory instead, and names any fault of its own
    output."""

    def __init__(self, directory: str | None) -> None:
        self._fh = tempfile.TemporaryFile(dir=directory, prefix=".maxarpa-scratch-",
                                          buffering=0)
        self._end = 0
        self._where: dict[str, tuple[int, np.dtype, int]] = {}

    def put(self, name: str, arr: np.ndarray) -> None:
        data = np.ascontiguousarray(arr).reshape(-1).view(np.uint8).data
        if not np.frombuffer(data, dtype=np.uint8).any():  # all zero bits (the highest
            self._where[name] = (-1, arr.dtype, len(arr))  # order's backoffs): np.zeros
            return
        offset, done = self._end, 0
        try:
            while done < len(data):
                done += os.pwrite(self._fh.fileno(), data[done:], offset + done)
        except OSError:  # a full disk, a file size limit: the in-memory path needs none
            raise Declined from None
        self._end += len(data)
        self._where[name] = (offset, arr.dtype, len(arr))

    def take(self, name: str) -> np.ndarray:
        offset, dtype, count = self._where.pop(name)
        if offset < 0:
            return np.zeros(count, dtype=dtype)  # pages mapped only when written
        arr = np.empty(count, dtype=dtype)
        view, done = arr.view(np.uint8).data, 0
        while done < len(view):
            try:
                got = os.preadv(self._fh.fileno(), [view[done:]], offset + done)
            except OSError:
                raise Declined from None
            if got <= 0:
                raise Declined  # the scratch file ended early
            done += got
        return arr

    def close(self) -> None:
        self._fh.close()


def convert_streamed(input: str | Path, output: str | Path, config: Config,
                     phase: Callable[[str], None] | None = None) -> bool:
    """Write `input` (an ARPA file) as a format-3 binary model at `output`, as
    `write_binary(load(input, config=config, rounded_bounds=True))` would; False (nothing
    written) for a file this path declines, which the caller then converts that way.
    `phase(name)` is called after each step (bench/convert_phases.py times them).

    Raises:
        FormatError: a bad header or section mark (as `load` raises them).
        OSError: `output` cannot be written (the message names it).
    """
    check_output(input, output, binary=True)
    done = phase if phase is not None else (lambda name: None)
    target = output_target(output)
    try:
        scratch = Scratch(None if target.through else str(target.path.parent))
    except OSError:
        return False  # (an unwritable directory: the in-memory path says so, naming it)
    try:
        try:
            parsed = _parse(str(input), scratch)
        except (OSError, EOFError, zlib.error, lzma.LZMAError, MemoryError):
            return False  # as `read_sorted_arpa`: the in-memory path names the fault
        if parsed is None:
            return False
        vocab, keys = parsed
        ids = Model(vocab, Trie(len(vocab), []), str(input))  # the special words' ids
        if adds_words(ids, config):
            return False
        done("parse")
        counts = _park_walks(scratch, keys, len(vocab))
        done("walks")
        ctx_counts = _context_keys(scratch, counts, len(vocab))
        done("contexts")
        with atomic_output(output) as tmp, open(tmp, "wb") as fh, zipfile.ZipFile(
                fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            write_preamble(zf, fh, len(counts), vocab)
            digest = DigestV2(vocab, len(counts))
            _write_orders(zf, fh, scratch, counts, len(vocab), ids.eos_id, digest)
            done("orders")
            write_trailer(zf, fh, digest.hexdigest(),
                          (ctx_counts, _take_context_keys(scratch, ctx_counts)))
        done("contexts written")
        return True
    except Declined:
        return False
    finally:
        scratch.close()


def _parse(path: str, scratch: Scratch) -> tuple[list[str], list[np.ndarray]] | None:
    """Parse, each order's values into the scratch file; (vocabulary, keys of each order),
    or None when the file is not in key order.

    Raises:
        Declined: a value `load` would refuse, warn about or not round to float32.
    """
    try:
        fh = open_binary(path)
    except FormatError:
        return None
    with fh:
        return parse_orders(LineReader(path, fh), lambda k, p, b: _park_values(scratch, k, p, b))


def _park_walks(scratch: Scratch, keys: list[np.ndarray], v: int) -> list[int]:
    """Each order's prefix rows (the order-(k-1) row of its first k-1 words) and last words,
    bottom-up, what the context tables need instead of the keys (`_context_keys`), into the
    scratch file, and each order's keys as soon as the walk is past them; the counts. The
    list `keys` is left empty."""
    counts = [len(key) for key in keys]
    pref = last = np.empty(0, dtype=np.int32)
    for k in range(1, len(keys) + 1):
        if k == 1:
            last = keys[0].astype(np.int32)
        else:
            pref = prefix_rows(keys[k - 1], keys[k - 2], v, pref if k > 2 else None)
            scratch.put(f"pref_{k}", pref)
            scratch.put(f"keys_{k - 1}", keys[k - 2])
            keys[k - 2] = _PARKED
            if k == len(keys):
                break
            below, last = last, np.empty(counts[k - 1], dtype=np.int32)
            for lo in range(0, counts[k - 1], CHUNK):  # small quotient arrays
                quotient = keys[k - 1][lo : lo + CHUNK] // np.uint64(v)
                last[lo : lo + CHUNK] = below[quotient.view(np.int64)]
            del below
        if k < len(keys):  # the tables stop one order below the highest
            scratch.put(f"last_{k}", last)
    if keys:
        scratch.put(f"keys_{len(keys)}", keys[-1])
    keys.clear()
    return counts


def _park_values(scratch: Scratch, k: int, log10p: np.ndarray, log10bow: np.ndarray) -> None:
    """One order's values into the scratch file, with +0.0 for -0.0 (as every writer makes
    them) and the checks `apply_config` would make (any fault: Declined)."""
    for arr in (log10p, log10bow):
        if has_negative_zero(arr):  # (reads only: an all-zero backoff column stays unmapped)
            arr += 0.0  # -0.0 + 0.0 is +0.0; every other value is unchanged
        # No NaN (max and min are NaN then), nothing beyond LARGEST_LOG10 but -inf; by
        # reductions, not an |x| array (13 MiB an order on the bench model).
        if len(arr) and not (float(arr.max()) <= LARGEST_LOG10 and float(arr.min()) >= (
                -LARGEST_LOG10) or _only_minus_inf_below(arr)):
            raise Declined
    if len(log10p) and float(log10p.max()) > 0:  # Config.positive_log_probability decides
        raise Declined
    scratch.put(f"bow_nonzero_{k}", log10bow != 0)
    scratch.put(f"log10p_{k}", log10p)
    scratch.put(f"log10bow_{k}", log10bow)


def _only_minus_inf_below(arr: np.ndarray) -> bool:
    """No NaN, nothing above LARGEST_LOG10, and only -inf below -LARGEST_LOG10 (a chunk at
    a time: the rare file with -inf values)."""
    for lo in range(0, len(arr), CHUNK):
        chunk = arr[lo : lo + CHUNK]
        if np.isnan(chunk).any() or ((np.abs(chunk) > LARGEST_LOG10) & (chunk != -np.inf)).any():
            return False
    return True


def _context_keys(scratch: Scratch, counts: list[int], vocab_size: int) -> np.ndarray:
    """The useful-context tables (`contexts.context_counts` of the model) from the parked
    prefix rows and last words: the counts of each length, and the keys parked level by
    level (`_take_context_keys`).

    Raises:
        Declined: a useful context is no node (not so in a suffix-closed, key-ordered file).
    """
    n = len(counts)
    width = max(n - 1, 0)
    levels = useful_levels(width, lambda k: scratch.take(f"pref_{k}"),
                           lambda k: np.ones(counts[k - 1], dtype=bool),
                           lambda j: scratch.take(f"bow_nonzero_{j}"), lambda j: counts[j - 1])
    if levels is None:
        raise Declined
    level, level_prefix = levels
    sizes = np.array([1] + [len(level[j]) for j in range(1, width + 1)], dtype=np.int64)
    v = np.uint64(vocab_size)
    gid_of = np.empty(0, dtype=np.int32)
    gid = 1
    for j in range(1, width + 1):  # each level's keys parked as made: one level in memory
        last, members = scratch.take(f"last_{j}"), level.pop(j)
        prefix = level_prefix.pop(j) if j > 1 else members
        key = np.empty(len(members), dtype=np.uint64)
        for lo in range(0, len(members), CHUNK):  # small temporaries
            key[lo : lo + CHUNK] = last[members[lo : lo + CHUNK]]
            if j > 1:
                gids = gid_of[prefix[lo : lo + CHUNK]]
                if (gids < 0).any():
                    raise Declined
                key[lo : lo + CHUNK] += gids.astype(np.uint64) * v
        del last, prefix
        scratch.put(f"ctx_keys_{j}", key)
        del key
        gid_of = np.full(counts[j - 1], -1, dtype=np.int32)
        gid_of[members] = np.arange(gid, gid + len(members), dtype=np.int32)
        gid += len(members)
    return sizes


def _take_context_keys(scratch: Scratch, sizes: np.ndarray) -> np.ndarray:
    """The context keys parked level by level by `_context_keys`, as one array."""
    keys = np.empty(int(sizes.sum()), dtype=np.uint64)
    keys[0] = EMPTY_KEY
    lo = 1
    for j in range(1, len(sizes)):
        keys[lo : lo + sizes[j]] = scratch.take(f"ctx_keys_{j}")
        lo += int(sizes[j])
    return keys


def _write_orders(zf: zipfile.ZipFile, fh, scratch: Scratch, counts: list[int],
                  vocab_size: int, eos_id: int | None, digest: DigestV2) -> None:
    """Each order's members, from the highest down, with its rounded bounds (the module's
    docstring), hashed as `write_binary` hashes them; each order's arrays are read back when
    its step needs them and freed after it."""
    n = len(counts)
    above: _Above | None = None
    for k in range(n, 0, -1):
        if above is None:  # the highest order stores no bounds: they are its own values
            stored = Stored(None, None)
            log10p, log10bow = scratch.take(f"log10p_{k}"), scratch.take(f"log10bow_{k}")
            positive = np.flatnonzero(log10bow > 0)
            exact = (positive, log10bow[positive])
            mf_above: np.ndarray | None = log10p
            mbow_above = log10bow if log10bow.view(np.uint64).any() else None
        else:
            stored, exact, log10p, log10bow = _rounded_order(scratch, k, above, counts,
                                                             vocab_size, eos_id)
            mf_above, mbow_above = stored.mf, stored.mbow
        above = None
        keys = scratch.take(f"keys_{k}")
        node = OrderNodes(keys, np.empty((0, k), np.int32), log10p, log10bow,
                          np.ones(len(keys), dtype=bool))
        write_order(zf, fh, k, node, stored, digest)
        del node, log10p, log10bow, stored
        above = _Above(keys, mf_above, mbow_above, exact)
        del keys, mf_above, mbow_above, exact  # `above` alone holds them: freed as used


class _Above:
    """What order k's bounds need of order k+1: its keys (the children of order k's
    nodes), its stored mf and mbow (float32; the highest order's own log10p and backoff,
    None for an all-zero one), and its exact mbow where positive (indices, values)."""

    def __init__(self, keys: np.ndarray, mf: np.ndarray | None, mbow: np.ndarray | None,
                 positive: tuple[np.ndarray, np.ndarray]) -> None:
        self.keys, self.mf, self.mbow, self.positive = keys, mf, mbow, positive


def _rounded_order(scratch: Scratch, k: int, above: _Above, counts: list[int],
                   vocab_size: int, eos_id: int | None
                   ) -> tuple[Stored, tuple[np.ndarray, np.ndarray], np.ndarray, np.ndarray]:
    """Order k's stored bounds (float32, rounded up), its exact mbow where positive, its
    log10p and its backoffs, from `above` (whose arrays are dropped as soon as used)."""
    from maxarpa.native import children_max_sorted

    m, v = counts[k - 1], np.uint64(vocab_size)
    assert above.mf is not None
    child_mf = children_max_sorted(above.keys, vocab_size, m, above.mf)
    above.mf = None
    # Exact mbow = bow + max(0, max over children): only positive children raise it.
    log10bow = scratch.take(f"log10bow_{k}")
    idx, val = above.positive
    parent = (above.keys[idx] // v).astype(np.int64)
    order = np.lexsort((-val, parent))
    first = order[np.r_[True, parent[order][1:] != parent[order][:-1]]] if len(idx) else order
    raised_at, raised = parent[first], log10bow[parent[first]] + val[first]
    positive_mask = log10bow > 0
    positive_mask[raised_at] = raised > 0
    positive = np.flatnonzero(positive_mask)
    del positive_mask
    exact_mbow = log10bow[positive]
    exact_mbow[np.searchsorted(positive, raised_at[raised > 0])] = raised[raised > 0]
    # mbow stored: round_up(bow + max(0, max of the rounded mbow above)).
    if above.mbow is None:  # an all-zero order above adds 0 everywhere
        mbow = round_up_f32(log10bow)
    else:
        child = children_max_sorted(above.keys, vocab_size, m, above.mbow)
        above.mbow = None
        np.maximum(child, 0.0, out=child)
        child += log10bow
        mbow = round_up_f32(child)
        del child
    candidates = positive[positive != eos_id] if k == 1 and eos_id is not None else positive
    if not len(candidates):
        above.keys = np.empty(0, dtype=np.uint64)  # used up
    # mf stored: round_up(max(log10p, max of the rounded mf above, log10p + absent term)).
    log10p = scratch.take(f"log10p_{k}")
    np.maximum(child_mf, log10p, out=child_mf)
    if len(candidates):
        absent = _absent_term(scratch, k, above.keys, counts, vocab_size, positive,
                              exact_mbow, eos_id)
        absent += log10p
        np.maximum(child_mf, absent, out=child_mf)
        del absent
    above.keys = np.empty(0, dtype=np.uint64)
    mf = round_up_f32(child_mf)
    if mf is None or mbow is None:
        raise Declined  # a bound above float32: `load` keeps that order's in float64
    return Stored(mf, mbow), (positive, exact_mbow), log10p, log10bow


def _absent_term(scratch: Scratch, k: int, keys_above: np.ndarray, counts: list[int],
                 vocab_size: int, positive: np.ndarray, exact_mbow: np.ndarray,
                 eos_id: int | None) -> np.ndarray:
    """`bound.best_absent_extension` of order k (only when some exact mbow there is
    positive: rare), on a table of the keys of orders 1..k+1, read back for it."""
    keys = [scratch.take(f"keys_{j}") for j in range(1, k + 1)]
    for j, key in enumerate(keys, start=1):
        scratch.put(f"keys_{j}", key)  # still needed by the orders below
    keys.append(keys_above)
    mbow = np.zeros(counts[k - 1])
    mbow[positive] = exact_mbow
    nodes = [OrderNodes(key, np.empty((0, j), np.int32), np.empty(0), np.empty(0),
                        np.ones(len(key), bool)) for j, key in enumerate(keys, start=1)]
    nodes[k - 1].mbow = mbow
    return best_absent_extension(Trie(vocab_size, nodes), k, eos_id)
