"""The binary companion of MAX-ARPA: the same table as numpy arrays in one uncompressed .npz.

Why: the text format is for exchange and inspection, but parsing millions of lines of text
costs seconds; the arrays load at disk speed, or are memory-mapped without any copy. The
content is the MAX-ARPA table (listed and blank nodes, logp, bow, mf, mbow, all log10), the
bounds rounded up to float32 (below).

Why a stored (uncompressed) zip of .npy members rather than a directory: one file is easy to
copy and to hand to many worker processes, `numpy.load` can still open it for inspection, and
every member's bytes sit contiguously in the file, so `read_binary(..., mmap=True)` maps each
array in place (after parsing the zip local header and the .npy header). The writer pads each
local header so that every array's data starts on a 64-byte boundary. Several processes that
map the same file share its pages through the OS page cache: one copy in RAM per machine.

Layout (format 3, `maxarpa-binary-3`; docs/max-arpa-format.md): members `magic`, `order`,
`vocab_utf8` (uint8: the words joined by "\\n", encoded as UTF-8 with surrogateescape, so
non-UTF-8 words keep their bytes), and for each order k `keys_k` (uint64), `log10p_k` (float64,
exact), `log10bow_k` (float64; absent when all 0), `listed_k` (bool; absent when all True),
`mf_k` and `mbow_k` (float32 rounded up, `maxarpa.compact`; absent where they equal log10p
and log10bow, as on the highest order), and `digest` ("xxh3_128-v2:<hex>", maxarpa.digest's
rowless digest over the arrays as read back). No word rows: they follow from the keys and are
rebuilt when first asked for (`OrderNodes.rows`), which queries and decoders never do.

Why the bounds may be float32 and the probabilities may not: p is the model, and every score
read from the binary file must be the ARPA text's, bit for bit (the certificate compares q's
exact edges with p's factors, both from `log10p`); mf and mbow are upper bounds, and a bound
rounded up is still a bound, so the decoder's answer is as exact as before and its q at most
a float32 step looser. Format 3 halves the file (issue 34: 367 -> 185 MiB on the 5.4M-n-gram
bench model, KenLM's probing binary 127 MiB).

The writer (`maxarpa.binary_write`: `write_binary`, and its parts `write_preamble`,
`write_order`, `write_trailer`, with which `maxarpa.streamed` writes one order at a time)
writes it; this module reads it.

Formats 1 and 2 (`keys_k rows_k log10p_k log10bow_k listed_k mf_k mbow_k`, all float64,
`ctx_lens`, digest "xxh3_128:<hex>" as MAX-ARPA's) are still read, mapped or not.

Optional members `ctx_counts ctx_keys` (format 2: `ctx_lens ctx_keys`): the useful-context
tables of the merged full DP (`maxarpa.contexts`; their rows are rebuilt from the keys when
first used, their lengths from the counts per length), written by default so that a process
decoding with the full DP does not build them (seconds on a large model, every process;
`contexts.build_keys`). A file without them still loads; the tables are then built when first
needed, as before. They are used only under `ctx_digest`, the hash of the file's `digest` and
the two stored arrays: wrong tables would merge states that differ, so they are trusted
exactly when the table they describe is (a file whose digest does not match is recomputed into
a new model, which does not inherit them).
"""

from __future__ import annotations

import mmap as mmap_module
import os
import struct
import zipfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from maxarpa.checks import check_binary_shapes
from maxarpa.compact import widened
from maxarpa.contexts import attach
from maxarpa.digest import ALGORITHM_V2, arrays_digest, digest_matches
from maxarpa.errors import FormatError
from maxarpa.file_digest import file_digest
from maxarpa.keywalk import rows_from_parent, unigram_rows
from maxarpa.model import Model
from maxarpa.table import OrderNodes, Trie

MAGIC = "maxarpa-binary-3"
MAGIC_V2 = "maxarpa-binary-2"
READABLE_MAGICS = ("maxarpa-binary-1", MAGIC_V2, MAGIC)
ZIP_MAGIC = b"PK\x03\x04"
FIELDS = ("keys", "rows", "log10p", "log10bow", "listed", "mf", "mbow")  # formats 1 and 2
CONTEXT_MEMBERS = ("ctx_lens", "ctx_keys")  # optional: maxarpa.contexts' tables (formats 1, 2)
CONTEXT_MEMBERS_V3 = ("ctx_counts", "ctx_keys")  # format 3: contexts per length, not lens
ALIGN = 64
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # the zip local file header (as zipfile's)
_ZIP64_EXTRA = 20  # zipfile adds this to the local header when force_zip64 is set
_PAD_ID = 0xA1A1  # an extra-field id no reader interprets: pure padding
# Stored context tables as read: (lens, the arrays their ctx_digest covers, keys).
ContextTables = tuple[np.ndarray, list[np.ndarray], np.ndarray]


def is_binary(path: str | Path) -> bool:
    """True when `path` starts like a zip file (the maxarpa binary is an .npz)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == ZIP_MAGIC
    except OSError:
        return False


def _member_layout(path: str) -> dict[str, tuple[int, np.dtype, tuple[int, ...], bool]]:
    """For each .npy member: (data offset in the file, dtype, shape, fortran_order)."""
    layout = {}
    with zipfile.ZipFile(path) as zf, open(path, "rb") as fh:
        for info in zf.infolist():
            if info.compress_type != zipfile.ZIP_STORED:
                raise FormatError(path, None, f"member {info.filename} is compressed; "
                                  "write the file with `maxarpa convert --binary`")
            fh.seek(info.header_offset)
            local = _LOCAL_HEADER.unpack(fh.read(_LOCAL_HEADER.size))
            if local[0] != ZIP_MAGIC:
                raise FormatError(path, None, f"bad zip local header for {info.filename}")
            fh.seek(info.header_offset + _LOCAL_HEADER.size + local[10] + local[11])
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
            if dtype.hasobject:
                raise FormatError(path, None, f"member {info.filename} holds Python objects")
            layout[info.filename.removesuffix(".npy")] = (fh.tell(), dtype, shape, fortran)
    return layout


def read_binary(path: str | Path, mmap: bool = False) -> Model:
    """Load a model written by `write_binary` (log10 values, as in MAX-ARPA); nothing is
    recomputed or checked but the array shapes (`maxarpa.load` checks the rest).

    Raises:
        FormatError: the file is not a maxarpa binary, or is truncated or corrupt.
    """
    return read_binary_with_digest(path, mmap=mmap)[0]


def read_binary_with_digest(path: str | Path, mmap: bool = False
                            ) -> tuple[Model, tuple[str, str] | None]:
    """`read_binary`, and the file's `digest` member as (algorithm, hex), None if absent."""
    return _read(path, mmap)[:2]


def read_binary_checked(path: str | Path, mmap: bool = False
                        ) -> tuple[Model, tuple[str, str] | None, bool]:
    """`read_binary_with_digest`, and whether the digest matches the arrays as read
    (`maxarpa.digest.digest_matches`; False when there is none).

    Why here rather than by the caller over the arrays: hashing a mapped file through its
    mapping makes every page of it resident in this process (176 MB for a 5.4M-n-gram model,
    where a decode touches a few MB). A mapped format-3 file is hashed from plain reads of
    the same open file, a chunk at a time, through the page cache: the same bytes the
    mapping shows, the same digest, checked in full before the model is returned, while
    only the pages a decode touches become the process's (issue 34).
    """
    model, digest, matches = _read(path, mmap)
    if matches is None:
        matches = digest_matches(digest, model.vocab, model.trie)
    return model, digest, matches


def _read(path: str | Path, mmap: bool) -> tuple[Model, tuple[str, str] | None, bool | None]:
    """The reader behind `read_binary_with_digest` and `read_binary_checked`: the model, its
    digest, and whether it matches when computed from the file (None: not computed here).

    Args:
        path: the .npz file.
        mmap: map the arrays from the file instead of reading them. The arrays are then
            read-only views of the page cache, shared by every process that maps the file;
            queries work on them unchanged (their hash indexes are built lazily in RAM).

    Returns:
        The model; its `source` is `path`.

    Raises:
        FormatError: the file is not a maxarpa binary, or is truncated or corrupt.
    """
    path = str(path)
    try:
        layout = _member_layout(path)
        size = os.path.getsize(path)
        matches: bool | None = None
        if mmap:
            # Not pre-faulted (no MAP_POPULATE): the digest is read from the file apart
            # (`maxarpa.file_digest`), so only the pages a decode touches become resident. `raw`
            # stays open until then: the digest reads the very file that is mapped.
            raw = open(path, "rb", buffering=0)  # closed below, in finally
            buffer = mmap_module.mmap(raw.fileno(), 0, flags=mmap_module.MAP_SHARED,
                                      prot=mmap_module.PROT_READ)

        def get(name: str) -> np.ndarray:
            if name not in layout:
                raise FormatError(path, None, f"not a maxarpa binary file (no {name!r})")
            offset, dtype, shape, fortran = layout[name]
            count = int(np.prod(shape, dtype=np.int64))
            if offset + count * dtype.itemsize > size:
                raise FormatError(path, None, f"truncated maxarpa binary file ({name})")
            if mmap:
                flat = np.frombuffer(buffer, dtype=dtype, count=count, offset=offset)
            else:
                with open(path, "rb") as fh:
                    fh.seek(offset)
                    flat = np.fromfile(fh, dtype=dtype, count=count)
            return flat.reshape(shape, order="F" if fortran else "C")

        magic = str(get("magic")[()]) if "magic" in layout else ""
        if magic not in READABLE_MAGICS:
            raise FormatError(path, None, "not a maxarpa binary file")
        if "vocab_utf8" in layout:
            vocab = bytes(get("vocab_utf8")).decode("utf-8", "surrogateescape").split("\n")
        else:
            vocab = str(get("vocab")[()]).split("\n")
        digest = _split_digest(str(get("digest")[()])) if "digest" in layout else None
        ctx_digest = (_split_digest(str(get("ctx_digest")[()])) if "ctx_digest" in layout
                      else None)
        n = int(get("order")[()])
        trie = Trie(len(vocab), [])
        tables: ContextTables | None
        if magic == MAGIC:
            _read_orders_v3(trie, n, layout, get, frozen=mmap)
            tables = _context_tables_v3(layout, get, n)
        else:
            for k in range(1, n + 1):
                trie.nodes.append(OrderNodes(**{f: get(f"{f}_{k}") for f in FIELDS}))
            tables = None
            if all(name in layout for name in CONTEXT_MEMBERS):
                lens, keys = (get(name) for name in CONTEXT_MEMBERS)
                tables = (lens, [lens, keys], keys)
        check_binary_shapes(trie, path)
        model = Model(vocab, trie, path)
        if mmap and magic == MAGIC and digest is not None and digest[0] == ALGORITHM_V2:
            matches = digest[1] == file_digest(raw, path, layout, model)
        if tables is not None and digest is not None and ctx_digest is not None and (
                ctx_digest == (digest[0], arrays_digest(digest[1], tables[1]))):
            attach(model, tables[0], tables[2])
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError, struct.error) as err:
        if isinstance(err, FormatError):
            raise
        raise FormatError(path, None, f"corrupt maxarpa binary file ({err})") from None
    finally:
        if mmap and "raw" in locals():
            raw.close()  # the mapping keeps the file's pages; the descriptor is not needed
    return model, digest, matches


def _read_orders_v3(trie: Trie, n: int, layout: dict, get, frozen: bool) -> None:
    """Format 3's orders into `trie`: rows rebuilt from the keys when first read, absent
    members derived (log10bow 0, listed True, mf = log10p, mbow = log10bow), float32
    bounds widened to float64 (exactly: every float32 is a float64). With `frozen` (a
    mapped file) the derived arrays are read-only too, like the mapped ones."""
    def done(arr: np.ndarray) -> np.ndarray:
        if frozen:
            arr.flags.writeable = False
        return arr

    for k in range(1, n + 1):
        keys = get(f"keys_{k}")
        m = len(keys)
        log10p = get(f"log10p_{k}")
        log10bow = get(f"log10bow_{k}") if f"log10bow_{k}" in layout else done(np.zeros(m))
        if f"listed_{k}" in layout:
            listed = get(f"listed_{k}")
        elif frozen:  # read-only anyway: one True seen m times, no m bytes (5 MB, issue 34)
            listed = np.broadcast_to(np.True_, (m,))
        else:
            listed = np.ones(m, dtype=np.bool_)
        mf = done(widened(_bound(layout, get, f"mf_{k}"), log10p))
        mbow = done(widened(_bound(layout, get, f"mbow_{k}"), log10bow))
        if k == 1:
            rows = _lazy(partial(unigram_rows, keys), frozen)
        else:
            rows = _lazy(partial(rows_from_parent, keys, trie.nodes[k - 2], trie.vocab_size),
                         frozen)
        trie.nodes.append(OrderNodes(keys, rows, log10p, log10bow, listed, mf=mf, mbow=mbow))
        trie.bounds_rounded |= any(f"{name}_{k}" in layout and layout[f"{name}_{k}"][1] ==
                                   np.float32 for name in ("mf", "mbow"))


def _lazy(make: Callable[[], np.ndarray], frozen: bool) -> Callable[[], np.ndarray]:
    """`make`, whose result is read-only when `frozen` (a partial, so a model stays
    picklable: worker processes may receive it)."""
    return partial(_made_rows, make, frozen)


def _made_rows(make: Callable[[], np.ndarray], frozen: bool) -> np.ndarray:
    rows = make()
    rows.flags.writeable = not frozen
    return rows


def _bound(layout: dict, get, name: str) -> np.ndarray | None:
    """A stored bound (float32 rounded up, or float64), None if absent."""
    if name not in layout:
        return None
    value = get(name)
    if value.dtype not in (np.float32, np.float64):
        raise ValueError(f"{name} is {value.dtype}, not float32 or float64")
    return value


def _context_tables_v3(layout: dict, get, n: int) -> ContextTables | None:
    """(lens, the arrays `ctx_digest` covers, keys) of format 3's stored context tables, or
    None if absent; the per-context lengths are expanded from the count of each length."""
    if not all(name in layout for name in CONTEXT_MEMBERS_V3):
        return None
    counts, keys = (get(name) for name in CONTEXT_MEMBERS_V3)
    if counts.ndim != 1 or len(counts) > max(n, 1) or (counts < 0).any() or int(
            counts.sum()) != len(keys):
        raise ValueError("useful-context counts do not match their keys")
    lens = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
    return lens, [counts, keys], keys


def _split_digest(text: str) -> tuple[str, str] | None:
    """"algorithm:hex" as a pair; None for anything else (an untrusted file, not an error)."""
    algorithm, _, hexdigest = text.partition(":")
    return (algorithm, hexdigest) if hexdigest else None
