"""An SLF header's counts allocate nothing (issue 29): N= is a number the file may not back.

Why: a three-line SLF claiming `N=10000000` took 37 s and 3.0 GB, and `N=1000000000` was
OOM-killed at 22.8 GB, because the reader sized its per-node lists by N. A node no link names
is on no path, so the lattice is sized by the nodes the lines name. tracemalloc counts the
reader's allocations (not RSS), so the bound cannot flake on a loaded machine.
"""

from __future__ import annotations

import tracemalloc

import pytest

from arsdecode.errors import LatticeError
from arsdecode.lattice.slf import parse_slf


def _peak_bytes(text: str):
    tracemalloc.start()
    try:
        read = parse_slf(text, source="big.slf")
        return read.lattice, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("n_nodes", [10**6, 10**9])
def test_a_large_node_count_with_three_lines_allocates_nothing(n_nodes):
    wl, peak = _peak_bytes(f"VERSION=1.0\nN={n_nodes} L=1\nJ=0 S=0 E=1 W=hello a=-2\n")
    assert peak < 2_000_000, peak  # 290 MB at N=10^6 before
    assert (wl.n_nodes, wl.words, wl.log_weights.tolist()) == (2, ("hello",), [-2.0])
    assert wl.node_names == ("0", "1")


def test_sparse_node_ids_keep_their_names_and_read_as_the_dense_file():
    big = 10**9
    sparse = parse_slf(f"N={big} L=3\nJ=0 S=7 E={big - 1} W=a a=-1\nJ=1 S={big - 1} E=12 W=b\n"
                       f"J=2 S=7 E=12 W=c a=-3\n").lattice
    dense = parse_slf("N=3 L=3\nJ=0 S=0 E=2 W=a a=-1\nJ=1 S=2 E=1 W=b\n"
                      "J=2 S=0 E=1 W=c a=-3\n").lattice
    assert sparse.node_names == ("7", str(big - 1), "12")
    assert (sparse.n_nodes, sparse.src.tolist(), sparse.dst.tolist(), sparse.words,
            sparse.log_weights.tolist(), dict(sparse.finals)) == (
        dense.n_nodes, dense.src.tolist(), dense.dst.tolist(), dense.words,
        dense.log_weights.tolist(), dict(dense.finals))


def test_a_named_start_and_end_off_every_link_are_still_checked():
    with pytest.raises(LatticeError, match=r"big.slf: no path from the start node 5 "):
        parse_slf(f"N={10**9} L=1 start=5 end=1\nJ=0 S=0 E=1 W=a\n", source="big.slf")
