"""The text readers' read buffer (`maxarpa.native.feed_sections`) at any chunk size.

Why: the buffer is anonymous memory that grows when a line is longer than the room left
(issue 34: a zeroed bytearray made 16 MiB resident for every model read). These tests read
the same ARPA and MAX-ARPA files with chunks of a few bytes, so that nearly every line
straddles a chunk and many are longer than one (the growing path), and check the tables
against the reads at the default chunk size, and against the line-by-line reference parser.
"""

from __future__ import annotations

import numpy as np
import pytest

import maxarpa.native
from arsdecode.testing.random_arpa import random_arpa_text
from arsdecode.testing.reference_arpa import parse_arpa
from maxarpa.arpa import read_arpa
from maxarpa.maxarpa_format import read_max_arpa, write_max_arpa


def _tables_equal(a, b) -> None:
    assert a.vocab == b.vocab and a.order == b.order
    for x, y in zip(a.trie.nodes, b.trie.nodes, strict=True):
        for f in ("keys", "log10p", "log10bow", "listed", "mf", "mbow"):
            assert np.array_equal(getattr(x, f), getattr(y, f)), f


@pytest.mark.parametrize("chunk", [1, 7, 64])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tiny_chunks_read_the_same_tables(tmp_path, monkeypatch, chunk, seed):
    text = random_arpa_text(seed, 3, 9)
    arpa = tmp_path / "m.arpa"
    arpa.write_text(text)
    ref = parse_arpa(text)
    whole = read_arpa(arpa)
    maxarpa_file = tmp_path / "m.maxarpa"
    write_max_arpa(maxarpa.load(arpa), maxarpa_file)
    expected = read_max_arpa(maxarpa_file)
    monkeypatch.setattr(maxarpa.native, "CHUNK_BYTES", chunk)
    small = read_arpa(arpa)
    assert small.vocab == whole.vocab
    for x, y in zip(small.orders, whole.orders, strict=True):
        assert np.array_equal(x.ids, y.ids) and np.array_equal(x.log10p, y.log10p)
        assert np.array_equal(x.log10bow, y.log10bow)
    got_p, got_bow = {}, {}  # every listed n-gram, against the line-by-line reference
    for x in small.orders:
        for ids, lp, bow in zip(x.ids.tolist(), x.log10p.tolist(), x.log10bow.tolist(),
                                strict=True):
            words = tuple(small.vocab[i] for i in ids)
            got_p[words] = lp
            if words in ref.bows:
                got_bow[words] = bow
    assert got_p == ref.probs and got_bow == ref.bows
    _tables_equal(read_max_arpa(maxarpa_file), expected)
