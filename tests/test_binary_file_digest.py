"""A mapped format-3 binary's digest, computed from plain reads of the file (issue 34).

Why these tests: `read_binary_checked` no longer hashes a mapped file through its mapping
(which made every page resident); it reads the same bytes with pread, a chunk at a time, and
derives absent members as the reader does. The trust must be exactly the same: checked against
an independent reference, the digest over the arrays as the reader builds them
(`table_digest_v2`, the path a non-mapped load takes), on random models with every member
layout (absent backoffs, listed flags, bounds; float32 and float64 bounds), over chunk
boundaries; a changed byte in any hashed member is caught mapped as it is copied; and a file
cut short after it was mapped is refused with a one-line error naming the file and member.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import maxarpa
import maxarpa.binary_format as bf
import maxarpa.file_digest as fd
from arpa_fixtures import arpa_texts
from maxarpa.binary_format import read_binary, read_binary_checked
from maxarpa.binary_write import write_binary
from maxarpa.config import PERMISSIVE
from maxarpa.digest import table_digest_v2
from maxarpa.errors import FormatError


def _binary(text: str, tmp_path: Path) -> Path:
    arpa = tmp_path / "m.arpa"
    arpa.write_text(text)
    out = tmp_path / "m.npz"
    write_binary(maxarpa.load(arpa, config=PERMISSIVE), out, bounds_verified=True)
    return out


def _hashed_members(path: Path) -> list[str]:
    """The members the table digest covers (not magic, order, the digests, the context
    tables)."""
    with zipfile.ZipFile(path) as zf:
        names = [i.filename.removesuffix(".npy") for i in zf.infolist()]
    return [n for n in names if n.rsplit("_", 1)[0] in
            ("keys", "log10p", "log10bow", "listed", "mf", "mbow")]


@settings(max_examples=60, deadline=None)
@given(arpa_texts(min_order=1, max_order=4, max_vocab=5, drop_prefix_contexts=None),
       st.sampled_from([8, 24, 1 << 20]))
def test_the_file_digest_is_the_arrays_digest(tmp_path_factory, drawn, chunk):
    """Mapped, the digest read from the file is the stored one and the one over the arrays
    as read (mapped and copied), whatever the chunk size (8 bytes: one value per read)."""
    out = _binary(drawn[0], tmp_path_factory.mktemp("fd"))
    old, fd.READ_CHUNK = fd.READ_CHUNK, chunk
    try:
        mapped, digest, matches = read_binary_checked(out, mmap=True)
    finally:
        fd.READ_CHUNK = old
    copied = read_binary(out)
    assert digest is not None and matches
    assert digest[1] == table_digest_v2(mapped.vocab, mapped.trie)
    assert digest[1] == table_digest_v2(copied.vocab, copied.trie)


@settings(max_examples=25, deadline=None)
@given(arpa_texts(min_order=2, max_order=3, max_vocab=4), st.data())
def test_a_changed_byte_in_any_hashed_member_is_caught_mapped_as_copied(
        tmp_path_factory, drawn, data):
    tmp_path = tmp_path_factory.mktemp("flip")
    out = _binary(drawn[0], tmp_path)
    member = data.draw(st.sampled_from(_hashed_members(out)))
    offset, dtype, shape, _ = bf._member_layout(str(out))[member]
    size = int(np.prod(shape)) * dtype.itemsize
    if size == 0:
        return
    at = offset + data.draw(st.integers(0, size - 1))
    raw = bytearray(out.read_bytes())
    raw[at] ^= 1 if dtype.kind == "b" else 0x40  # a bool stays a valid bool
    bad = tmp_path / "bad.npz"
    bad.write_bytes(bytes(raw))
    verdicts = []
    for mmap in (False, True):
        try:
            verdicts.append(read_binary_checked(bad, mmap=mmap)[2])
        except FormatError as err:  # e.g. a key changed out of order
            verdicts.append(str(err))
    assert verdicts[0] == verdicts[1]
    assert verdicts[0] is not True


def test_a_file_cut_after_it_was_mapped_is_refused_as_truncated(tmp_path):
    """The digest reads the file after the arrays were mapped: a file cut in between is a
    FormatError naming the file and the member, as a file cut before loading is."""
    from arsdecode.testing.random_arpa import random_arpa_text

    out = _binary(random_arpa_text(5, 3, 12), tmp_path)
    layout = bf._member_layout(str(out))
    model = read_binary(out)  # copied: nothing mapped that the cut could take away
    size = out.stat().st_size
    with open(out, "rb", buffering=0) as raw:
        os.truncate(out, size // 2)
        with pytest.raises(FormatError, match=r"truncated maxarpa binary file \(\w+\)") as err:
            fd.file_digest(raw, str(out), layout, model)
    assert str(out) in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(FormatError) as cut_before:  # cut before loading: refused too
        maxarpa.load(out, mmap=True)
    assert str(out) in str(cut_before.value) and "\n" not in str(cut_before.value)
