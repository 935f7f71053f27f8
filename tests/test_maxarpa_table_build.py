"""The suffix-closed table build's two ways of finding each n-gram's suffix (issue 34).

A file whose orders are sorted by reversed n-gram (lmplz's order) has every suffix found by
one forward scan of the order below (`table._file_order_suffixes`); any other file by the
hash walk. The walk is the reference: both must give the same table, array for array.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from arsdecode.testing.random_arpa import random_arpa_text
from maxarpa import table
from maxarpa.arpa import ArpaData, OrderArrays, read_arpa
from maxarpa.table import build_trie


def reordered(data: ArpaData, how: str, rng: np.random.Generator) -> ArpaData:
    """A copy of `data` with each order of two or more words in `how` order."""
    orders = [data.orders[0]]
    for arrays in data.orders[1:]:
        ids = arrays.ids
        if how == "reversed":
            perm = np.lexsort(ids.T)  # last word first: lmplz's order
        else:
            perm = rng.permutation(len(ids))
        orders.append(OrderArrays(np.ascontiguousarray(ids[perm]), arrays.log10p[perm].copy(),
                                  arrays.log10bow[perm].copy()))
    return ArpaData(list(data.vocab), orders)


@pytest.mark.parametrize("seed", range(10))
def test_scanned_suffixes_build_the_table_the_hash_walk_builds(seed, tmp_path, monkeypatch):
    rng = random.Random(seed)
    path = tmp_path / "m.arpa"
    path.write_text(random_arpa_text(rng, 2 + seed % 4, 3 + seed % 6, density=0.5))
    data = read_arpa(path)
    np_rng = np.random.default_rng(seed)
    sorted_data = reordered(data, "reversed", np_rng)
    scans = []
    real_scan = table._file_order_suffixes

    def recording_scan(d: ArpaData, k: int):
        found = real_scan(d, k)
        scans.append(found is not None)
        return found

    monkeypatch.setattr(table, "_file_order_suffixes", recording_scan)
    scanned = build_trie(sorted_data, str(path))
    assert scans and all(scans)  # every order was scanned, none walked
    scans.clear()
    walked = build_trie(reordered(data, "shuffled", np_rng), str(path))
    assert len(scanned.nodes) == len(walked.nodes)
    for a, b in zip(scanned.nodes, walked.nodes, strict=True):
        for field in ("keys", "rows", "log10p", "log10bow", "listed"):
            x, y = getattr(a, field), getattr(b, field)
            assert x.dtype == y.dtype and np.array_equal(x, y), field


def test_a_missing_suffix_is_not_scanned_past(tmp_path):
    """A k-gram whose suffix is not listed: the scan reports failure (never a wrong row) and
    the general build adds the blank suffix, as before."""
    path = tmp_path / "m.arpa"
    path.write_text("\\data\\\nngram 1=4\nngram 2=1\nngram 3=1\n\n\\1-grams:\n-1 <s> -0.5\n"
                    "-1 </s>\n-1 a -0.3\n-1 b -0.2\n\n\\2-grams:\n-0.4 <s> a -0.1\n\n"
                    "\\3-grams:\n-0.2 <s> a b\n\n\\end\\\n")
    data = read_arpa(path)
    assert table._file_order_suffixes(data, 3) is None  # "a b" is not listed
    trie = build_trie(data, str(path))
    assert trie.nodes[1].listed.tolist().count(False) == 1  # the blank "a b"


@pytest.mark.parametrize("bits", [3, 20, 40, 63, 64])
def test_sort_with_order_is_the_stable_argsort(bits):
    """The packed sort (keys narrow enough to share 64 bits with their index) and its
    fallback (wider keys) both give exactly numpy's stable argsort, ties included."""
    rng = np.random.default_rng(bits)
    for m in (0, 1, 2, 1000):
        keys = rng.integers(0, 2**bits, size=m, dtype=np.uint64, endpoint=False) if bits < 64 \
            else rng.integers(0, 2**63, size=m, dtype=np.uint64) * np.uint64(2)
        order = np.argsort(keys, kind="stable")
        ranked, got = table.sort_with_order(keys)
        assert got.dtype == np.int64 and np.array_equal(got, order)
        assert ranked.dtype == np.uint64 and np.array_equal(ranked, keys[order])
