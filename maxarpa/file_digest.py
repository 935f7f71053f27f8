"""The table digest of a mapped format-3 binary file, computed from plain reads of the file.

Why (issue 34): hashing a mapped file through its mapping made every page of it resident in
the reading process (176 MB for a 5.4M-n-gram model, where a decode touches a few MB), and
the mapping was pre-faulted for that. `maxarpa.binary_format` now maps without pre-faulting
and checks the digest here: the same bytes, read with pread from the very file descriptor it
mapped, a chunk at a time into one reused buffer, hashed as `maxarpa.digest.DigestV2` hashes
the arrays (`add_order_pieces`). The pages stay in the page cache; the digest is checked in
full before the model is returned, as before. Cost: one more copy of the file through the CPU
(about 0.01 CPU-s per 100 MB here).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import partial
from typing import BinaryIO

import numpy as np

from maxarpa.digest import DigestV2
from maxarpa.errors import FormatError
from maxarpa.model import Model

READ_CHUNK = 1 << 18
"""Bytes per read (`file_digest`): 256 KiB, which stays in the CPU's cache between the copy
and the hash (0.021-0.023 CPU-s for the 176 MB bench model, against 0.020-0.035 at 1 MiB and
0.029 at 64 KiB, best of 7 on this shared machine)."""


def file_digest(raw: BinaryIO, path: str, layout: dict, model: Model) -> str:
    """ALGORITHM_V2's digest of a format-3 file's table as `maxarpa.binary_format` builds it,
    computed from plain reads of `raw` (the open file that is mapped), READ_CHUNK bytes at a
    time into one reused buffer, instead of through the mapping: the same bytes, hashed the
    same way (`DigestV2.add_order_pieces`), while the file's pages stay in the page cache.
    Absent members are derived as the reader derives them (zeros, ones, mf = log10p, mbow =
    log10bow). A file cut short after it was mapped is refused as truncated."""
    digest = DigestV2(model.vocab, model.order)
    member = partial(_member_values, raw, path, layout)
    for k in range(model.order, 0, -1):
        m = int(np.prod(layout[f"keys_{k}"][2], dtype=np.int64))
        digest.add_order_pieces(m, (
            member(m, f"keys_{k}"), member(m, f"log10p_{k}"), member(m, f"log10bow_{k}"),
            member(m, f"mf_{k}", f"log10p_{k}"), member(m, f"mbow_{k}", f"log10bow_{k}"),
            member(m, f"listed_{k}", fill=1, dtype="?")))
    return digest.hexdigest()


def _member_values(raw: BinaryIO, path: str, layout: dict, m: int, name: str,
                   default: str | None = None, fill: int = 0, dtype: str = "<f8"
                   ) -> tuple[np.dtype, Iterator[np.ndarray]]:
    """(dtype, pieces) of member `name` as the reader builds it: read from the file; else
    member `default` (mf is log10p, mbow log10bow, when absent); else `m` values `fill`."""
    if name in layout:
        offset, stored, shape, _ = layout[name]
        count = int(np.prod(shape, dtype=np.int64))
        return stored, _pieces(raw, path, name, offset, stored, count)
    if default is not None:
        return _member_values(raw, path, layout, m, default, None, fill, dtype)
    return np.dtype(dtype), _filled(np.dtype(dtype), fill, m)


def _pieces(raw: BinaryIO, path: str, name: str, offset: int, dtype: np.dtype, count: int
            ) -> Iterator[np.ndarray]:
    """A member's `count` values, read a chunk at a time into one reused buffer (each piece
    is hashed before the next is read)."""
    step = max(1, READ_CHUNK // dtype.itemsize)
    buf = np.empty(min(step, count), dtype=dtype)
    if count == 0:
        yield buf
    for lo in range(0, count, step):
        piece = buf[: min(step, count - lo)]
        view = piece.view(np.uint8).data  # bytes, writable: pread fills the piece
        got = 0
        while got < len(view):
            n = os.preadv(raw.fileno(), [view[got:]], offset + lo * dtype.itemsize + got)
            if n == 0:
                raise FormatError(path, None, f"truncated maxarpa binary file ({name})")
            got += n
        yield piece


def _filled(dtype: np.dtype, fill: int, count: int) -> Iterator[np.ndarray]:
    """An absent member's values (all `fill`), a chunk at a time."""
    step = max(1, READ_CHUNK // dtype.itemsize)
    buf = np.full(min(step, count), fill, dtype=dtype)
    if count == 0:
        yield buf
    for lo in range(0, count, step):
        yield buf[: min(step, count - lo)]
