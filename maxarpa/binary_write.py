"""The writer of maxarpa's binary format (format 3): `maxarpa.binary_format` says what the
file holds and why; this module only writes it.

Why apart from the reader: a process that decodes with a binary model reads it and never
writes one, and the writer is also what `maxarpa.streamed` writes with, one order at a time
(`write_preamble`, `write_order`, `write_trailer`), so that both paths write the same bytes.
"""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from maxarpa.binary_format import (
    _LOCAL_HEADER,
    _PAD_ID,
    _ZIP64_EXTRA,
    ALIGN,
    CONTEXT_MEMBERS_V3,
    MAGIC,
)
from maxarpa.compact import Stored, stored_orders
from maxarpa.contexts import context_counts
from maxarpa.digest import ALGORITHM_V2, DigestV2, arrays_digest, bounds_trusted
from maxarpa.model import Model
from maxarpa.output import atomic_output, check_output
from maxarpa.table import OrderNodes


def encode_vocab(vocab: list[str]) -> np.ndarray:
    """The words as UTF-8 bytes (surrogateescape keeps a non-UTF-8 word's own bytes)."""
    return np.frombuffer("\n".join(vocab).encode("utf-8", "surrogateescape"), dtype=np.uint8)


def _all_zero(a: np.ndarray) -> bool:
    """Every value is +0.0 (bit for bit: what np.zeros reads back as)."""
    return not np.asarray(a, dtype=np.float64).view(np.uint64).any()


def write_binary(model: Model, path: str | Path, *, bounds_verified: bool = False,
                 contexts: bool = True) -> None:
    """Write the model's table as an uncompressed, 64-byte aligned .npz (format 3) at `path`.

    The `digest` member is written as for MAX-ARPA text (`write_max_arpa`, which see for
    `bounds_verified`): only for a table whose bounds are exact (before their rounding up to
    float32, `maxarpa.compact`). With `contexts` (the default), also the useful-context
    tables (`maxarpa.contexts`, the stored ones if the model was read with them), so that
    readers need not build them, under `ctx_digest` when the table has a digest (readers use
    them only then).

    Written to a temporary file beside `path`, then renamed, so a failure (or SIGINT,
    SIGTERM, SIGHUP) never leaves a half-written model or a temporary file behind.

    Raises:
        OutputError: `path` has a compression suffix (a binary model is never compressed).
    """
    path = Path(path)
    check_output(None, path, binary=True)
    trie = model.trie
    trusted = bounds_trusted(model.vocab, trie, model.eos_id, bounds_verified)
    digest = DigestV2(model.vocab, trie.order) if trusted else None
    with atomic_output(path) as tmp, open(tmp, "wb") as fh, zipfile.ZipFile(
        fh, "w", zipfile.ZIP_STORED, allowZip64=True
    ) as zf:
        write_preamble(zf, fh, model.order, model.vocab)
        # Order by order from the highest down, as the bounds are rounded: one order's
        # rounded bounds in memory at a time (issue 34's conversion peak).
        for k, stored in stored_orders(trie, trusted):
            write_order(zf, fh, k, trie.nodes[k - 1], stored, digest)
            del stored
        hexdigest = digest.hexdigest() if digest is not None else None
        # The context tables are built last: never in memory beside rounded bounds.
        write_trailer(zf, fh, hexdigest, context_counts(model) if contexts else None)


def write_preamble(zf: zipfile.ZipFile, fh, order: int, vocab: list[str]) -> None:
    """The members before the orders: `magic`, `order`, `vocab_utf8`."""
    for name, arr in (("magic", np.array(MAGIC)), ("order", np.array(order)),
                      ("vocab_utf8", encode_vocab(vocab))):
        _write_member(zf, fh, f"{name}.npy", arr)


def write_order(zf: zipfile.ZipFile, fh, k: int, node: OrderNodes, stored: Stored,
                digest: DigestV2 | None) -> None:
    """Order k's members (absent columns left out), hashed into `digest` if given, over the
    arrays as `read_binary` will build them. Orders go from the highest down."""
    for name, arr in _order_members(node, stored):
        _write_member(zf, fh, f"{name}_{k}.npy", arr)
    if digest is not None:
        digest.add_order(len(node.keys), _as_read(node, stored))


def write_trailer(zf: zipfile.ZipFile, fh, hexdigest: str | None,
                  tables: tuple[np.ndarray, np.ndarray] | None) -> None:
    """The members after the orders: `digest` (if any), then the context tables (counts
    per length and keys, `contexts.context_counts`; if given) under `ctx_digest`."""
    if hexdigest is not None:
        _write_member(zf, fh, "digest.npy", np.array(f"{ALGORITHM_V2}:{hexdigest}"))
    if tables is None:
        return
    stored_ctx = [tables[0], np.ascontiguousarray(tables[1], dtype=np.uint64)]
    del tables
    for name, arr in zip(CONTEXT_MEMBERS_V3, stored_ctx, strict=True):
        _write_member(zf, fh, f"{name}.npy", arr)
    if hexdigest is not None:
        ctx_digest = f"{ALGORITHM_V2}:{arrays_digest(hexdigest, stored_ctx)}"
        _write_member(zf, fh, "ctx_digest.npy", np.array(ctx_digest))


def _order_members(node: OrderNodes, stored: Stored) -> Iterator[tuple[str, np.ndarray]]:
    """The members of one order (without the `_k` suffix): absent columns are left out."""
    yield "keys", np.ascontiguousarray(node.keys, dtype=np.uint64)
    yield "log10p", np.ascontiguousarray(node.log10p, dtype=np.float64)
    if not _all_zero(node.log10bow):  # absent: all 0 (the highest order's)
        yield "log10bow", np.ascontiguousarray(node.log10bow, dtype=np.float64)
    if not np.all(node.listed):  # absent: every node listed (a suffix-closed file)
        yield "listed", np.ascontiguousarray(node.listed, dtype=np.bool_)
    for name, value in (("mf", stored.mf), ("mbow", stored.mbow)):
        if value is not None:
            yield name, np.ascontiguousarray(value)


def _as_read(node: OrderNodes, stored: Stored) -> Iterator[np.ndarray]:
    """One order's arrays as `read_binary` builds them from a format-3 file, in the digest's
    order (maxarpa.digest.DigestV2), one at a time; float32 bounds are widened by the digest,
    a chunk at a time."""
    bow = np.asarray(node.log10bow, dtype=np.float64)
    yield node.keys
    yield node.log10p
    yield bow
    # float32 as stored: the digest widens them to float64 a chunk at a time
    yield stored.mf if stored.mf is not None else node.log10p
    yield stored.mbow if stored.mbow is not None else bow
    yield np.asarray(node.listed, dtype=np.bool_)


def _write_member(zf: zipfile.ZipFile, fh, name: str, arr: np.ndarray) -> None:
    """One stored .npy member whose data starts on an ALIGN boundary of the file.

    The .npy header itself pads to a multiple of 64 bytes, so aligning the start of the
    member aligns the data; an extra field in the local header provides the padding.
    """
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    fixed = _LOCAL_HEADER.size + len(name.encode()) + 4 + _ZIP64_EXTRA
    pad = -(fh.tell() + fixed) % ALIGN
    info.extra = struct.pack("<HH", _PAD_ID, pad) + b"\0" * pad
    with zf.open(info, "w", force_zip64=True) as out:
        if arr.dtype.kind in "biuf" and arr.flags.c_contiguous:
            # The .npy header, then the array's own bytes: `write_array` would copy a
            # stream's data chunk by chunk through `tobytes` (0.6 s of issue 34's write).
            np.lib.format.write_array_header_1_0(
                out, np.lib.format.header_data_from_array_1_0(arr))
            out.write(arr.reshape(-1).view(np.uint8).data)
        else:
            np.lib.format.write_array(out, arr, allow_pickle=False)
