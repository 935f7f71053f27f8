"""The digest of a model's numeric content, written into every MAX-ARPA and binary file.

Why: the decoder certifies its answer with the stored bounds mf and mbow, and the cheap load
checks (maxarpa.checks) cannot see every wrong bound (a positive backoff reached through an
absent extension). Recomputing every bound on every load costs about as much as building the
model from ARPA. A digest is far cheaper: a file whose digest matches its arrays holds exactly
the numbers this package wrote, and this package only writes bounds it computed (or
recomputed) from the file's own probabilities and backoffs. A file without a digest, or with
one that does not match (hand-edited, written by another tool), is not trusted: `maxarpa.load`
recomputes its bounds or refuses it (`Config.untrusted_bounds`).

The digest is not a signature: whoever edits a file and recomputes the digest on purpose gets
what they wrote. It guards against edits, truncation and foreign writers, not against forgery,
which no unkeyed hash could stop. Hence XXH3-128 rather than SHA-256: it detects accidental
change as surely and runs at memory speed (0.01 s against 0.13 s for 160 MB here), which keeps
the check a small share of loading a binary file, which is little more than reading its bytes.

What is hashed (XXH3-128, from the `xxhash` package): a version tag, the
vocabulary (the words' bytes joined by newlines), the order, and for each order its node count
and the arrays keys (uint64), rows (int32), log10p, log10bow, mf, mbow (float64) and listed
(bool), little-endian, in the table's order. The hash is over the arrays as a reader builds
them, so a text file and a binary file (format 2) of one table carry the same digest.

Format-3 binary files (`maxarpa.binary_format`) store no word rows: a reader rebuilds them
from the keys, so they carry no information of their own, and hashing them would force every
load to build them. Their digest, algorithm `xxh3_128-v2` (ALGORITHM_V2), is the same hash
under another tag without the rows: keys, log10p, log10bow, mf, mbow (float64, as the reader
widens them) and listed of each order, the orders from the highest down (the order the
writer rounds them in, `maxarpa.compact`). `digest_matches` checks either kind.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import xxhash

from maxarpa.checks import verify_bounds
from maxarpa.table import Trie

ALGORITHM = "xxh3_128"
ALGORITHM_V2 = "xxh3_128-v2"  # no rows: format-3 binary files
_TAG = b"maxarpa-digest-1\n"
_TAG_V2 = b"maxarpa-digest-2\n"
_LAYOUT = (("keys", "<u8"), ("rows", "<i4"), ("log10p", "<f8"), ("log10bow", "<f8"),
           ("mf", "<f8"), ("mbow", "<f8"), ("listed", "?"))


def table_digest(vocab: list[str], trie: Trie) -> str:
    """The hex digest of the table's numeric content (see the module docstring).

    Arrays already in the hashed dtype and contiguous (as every reader builds them) are hashed
    in place, without a copy; memory-mapped arrays are read once from the page cache.
    """
    h = xxhash.xxh3_128()
    h.update(_TAG)
    h.update("\n".join(vocab).encode("utf-8", "surrogateescape"))
    h.update(f"\norder {trie.order}\n".encode())
    for node in trie.nodes:
        h.update(f"{len(node.keys)}\n".encode())
        for field, dtype in _LAYOUT:
            arr = getattr(node, field)
            if arr.dtype.kind != np.dtype(dtype).kind:  # a corrupt file: hash as is, no cast
                h.update(f"unexpected {arr.dtype.str}".encode())
                dtype = arr.dtype
            h.update(np.ascontiguousarray(arr, dtype=dtype).view(np.uint8).data)
    return h.hexdigest()


HASH_CHUNK = 1 << 18  # values converted at a time by DigestV2 (the hash is streamed)
_LAYOUT_V2 = tuple(pair for pair in _LAYOUT if pair[0] != "rows")


def table_digest_v2(vocab: list[str], trie: Trie) -> str:
    """ALGORITHM_V2's hex digest of a table (the module docstring): rows are not read."""
    digest = DigestV2(vocab, trie.order)
    for node in reversed(trie.nodes):
        stored = dict(zip(("mf", "mbow"), node.stored_bounds()))  # float32 kept: no copy
        digest.add_order(len(node.keys), (stored[f] if f in stored else getattr(node, f)
                                          for f, _ in _LAYOUT_V2))
    return digest.hexdigest()


class DigestV2:
    """ALGORITHM_V2's digest, fed one order at a time from the highest order down (the order
    a format-3 writer rounds and writes them in), each order's arrays in _LAYOUT_V2's order,
    taken one at a time (a writer can make each just before it is hashed)."""

    def __init__(self, vocab: list[str], order: int) -> None:
        self._h = xxhash.xxh3_128()
        self._h.update(_TAG_V2)
        self._h.update("\n".join(vocab).encode("utf-8", "surrogateescape"))
        self._h.update(f"\norder {order}\n".encode())

    def add_order(self, count: int, arrays: Iterable[np.ndarray]) -> None:
        self.add_order_pieces(count, ((arr.dtype, (arr,)) for arr in arrays))

    def add_order_pieces(self, count: int,
                         fields: Iterable[tuple[np.dtype, Iterable[np.ndarray]]]) -> None:
        """`add_order` with each array given as (its dtype, its consecutive pieces): the same
        hash as over the whole arrays. Why: a reader can hash a mapped file from plain reads,
        a piece at a time, so that its pages stay in the page cache instead of all becoming
        resident in the process (`maxarpa.binary_format`, issue 34)."""
        self._h.update(f"{count}\n".encode())
        hashed = 0
        for (_, expected), (stored, pieces) in zip(_LAYOUT_V2, fields):
            dtype = np.dtype(expected)
            if stored.kind != dtype.kind:  # a corrupt file: hash as is, no cast
                self._h.update(f"unexpected {stored.str}".encode())
                dtype = stored
            for arr in pieces:
                if arr.dtype == dtype and arr.flags.c_contiguous:
                    self._h.update(arr.view(np.uint8).data)
                else:  # converted a chunk at a time (float32 bounds widened): no full copy
                    for lo in range(0, len(arr), HASH_CHUNK):
                        chunk = np.ascontiguousarray(arr[lo : lo + HASH_CHUNK], dtype=dtype)
                        self._h.update(chunk.view(np.uint8).data)
            hashed += 1
        assert hashed == len(_LAYOUT_V2)

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def digest_matches(digest: tuple[str, str] | None, vocab: list[str], trie: Trie) -> bool:
    """Whether a file's digest (algorithm, hex) is the table's, by its own algorithm."""
    if digest is None:
        return False
    if digest[0] == ALGORITHM:
        return digest[1] == table_digest(vocab, trie)
    if digest[0] == ALGORITHM_V2:
        return digest[1] == table_digest_v2(vocab, trie)
    return False


def arrays_digest(parent: str, arrays: list[np.ndarray]) -> str:
    """The hex digest of `parent` (another digest) followed by `arrays` as stored: for data
    derived from a table (the full DP's context tables), trusted only with that table."""
    h = xxhash.xxh3_128()
    h.update(_TAG + parent.encode("ascii", "replace"))
    for arr in arrays:
        h.update(f"\n{arr.dtype.str}{arr.shape}\n".encode())
        h.update(np.ascontiguousarray(arr).view(np.uint8).data)
    return h.hexdigest()


def without_negative_zeros(trie: Trie) -> None:
    """Replace each float array of the table that holds a -0.0 by a copy with 0.0 there.

    Why: the MAX-ARPA writer prints both zeros as `0`, which reads back as +0.0, so a digest
    of a table holding -0.0 (an ARPA file may say `-0`) would never match its own text file.
    Writers call this before hashing; the values are equal, so no query changes.
    """
    for node in trie.nodes:
        for field in ("log10p", "log10bow", "mf", "mbow"):
            arr = getattr(node, field)
            if len(arr) and has_negative_zero(arr):
                setattr(node, field, arr + 0.0)


def has_negative_zero(arr: np.ndarray) -> bool:
    """Whether a float array holds -0.0: by its bits, in one pass with no copy of the zeros
    (an all-zero backoff column made a full copy; issue 34)."""
    if arr.dtype == np.float64 and arr.flags.c_contiguous:
        return bool((arr.view(np.uint64) == np.uint64(1 << 63)).any())
    if arr.dtype == np.float32 and arr.flags.c_contiguous:
        return bool((arr.view(np.uint32) == np.uint32(1 << 31)).any())
    return bool(np.signbit(arr[arr == 0]).any())


def digest_to_write(vocab: list[str], trie: Trie, eos_id: int | None,
                    bounds_verified: bool) -> str | None:
    """The digest a writer stamps on the file, or None when the bounds are not known exact.

    Why the check: a digest tells every later load to trust the bounds, so it is only given
    to bounds this package computed. `bounds_verified` says the caller knows they are (a
    model from `maxarpa.load`, which computes, trusts by digest or recomputes every bound);
    otherwise (a table from the raw readers, or edited in memory) they are recomputed here and
    a table that differs is written without a digest, to be recomputed or refused on load.
    """
    if not bounds_trusted(vocab, trie, eos_id, bounds_verified):
        return None
    return table_digest(vocab, trie)


def bounds_trusted(vocab: list[str], trie: Trie, eos_id: int | None,
                   bounds_verified: bool) -> bool:
    """`digest_to_write`'s decision alone: whether a writer may stamp a digest (the bounds
    are verified, or recompute equal). Replaces -0.0 by 0.0 first, as every writer must."""
    without_negative_zeros(trie)  # `0` is written for both zeros: hash what reads back
    return bounds_verified or verify_bounds(trie, vocab, eos_id) is None
