"""The SLF and OpenFst text readers hold numbers per arc, not Python objects (issue 34), and still
report the file's first error in the order the whole-file reader did.

Why: a real ASR lattice has ~10^4 links; the reader that kept a dict of field strings per link
peaked at ~1.5 KB a link (18 MB on the largest AMI lattice, more than the decode), so a
one-lattice process weighed more than lattice-tool's. The bounds here are per link, measured by
tracemalloc (Python's and numpy's allocations, deterministic), and fail on any return to an
object per link. The error-order cases are those the array reader has to defer: a line whose
numbers cannot be read is reported where the old reader reported it, after the header's and
the counts' errors and before the next line's.
"""

from __future__ import annotations

import random
import tracemalloc

import pytest

from arsdecode.errors import LatticeError
from arsdecode.lattice.fst_text import parse_fst_text, symbol_table, write_fst_text
from arsdecode.lattice.slf import parse_slf

LINKS = 20_000
BYTES_PER_LINK = 500  # the dict-per-link reader: ~1,500


def ami_like(n_nodes: int, n_links: int, seed: int = 0) -> str:
    """An SLF text shaped like the AMI lattices: words on nodes (`W=`, `v=`, `t=`), links
    with `a=`, `l=`, `r=`, every link going forward, one start and one end node."""
    rng = random.Random(seed)
    vocab = [f"W{i}" for i in range(800)]
    lines = ["VERSION=1.0", "UTTERANCE=synthetic", "lmscale=14.00  wdpenalty=0.00",
             "prscale=14.00", "acscale=1.00", f"N={n_nodes} L={n_links}",
             "I=0    t=0.00  W=!NULL"]
    lines += [f"I={i}    t={i / 100:.2f}  W={rng.choice(vocab):<20s} v=1"
              for i in range(1, n_nodes)]
    links = [(i, i + 1) for i in range(n_nodes - 1)]
    while len(links) < n_links:
        s = rng.randrange(n_nodes - 1)
        links.append((s, rng.randrange(s + 1, min(n_nodes, s + 30))))
    lines += [f"J={j:<6d} S={s:<6d} E={d:<6d} a={-rng.uniform(100, 2000):.2f}   "
              f"l={-rng.uniform(0, 20):.3f}   r=0.00"
              for j, (s, d) in enumerate(links)]
    return "\n".join(lines) + "\n"


def traced_peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_slf_reader_holds_numbers_per_link_not_objects():
    text = ami_like(LINKS // 2, LINKS)
    slf = parse_slf(text, source="big.slf")
    assert slf.lattice.n_arcs == LINKS  # every link is on a start-to-end path
    peak = traced_peak(lambda: parse_slf(text, source="big.slf"))
    assert peak / LINKS < BYTES_PER_LINK, f"{peak / LINKS:.0f} bytes per link"


def test_the_openfst_text_reader_holds_numbers_per_arc_not_objects():
    wl = parse_slf(ami_like(LINKS // 2, LINKS), source="big.slf").lattice
    table = symbol_table(wl)
    import io

    out = io.StringIO()
    write_fst_text(wl, out, symbols=table)
    text = out.getvalue()
    again = parse_fst_text(text, source="big.fst.txt", symbols=table)
    assert again.words == wl.words and again.log_weights.tolist() == pytest.approx(
        wl.log_weights.tolist(), rel=1e-6)  # fstprint's 6 decimals
    peak = traced_peak(lambda: parse_fst_text(text, source="big.fst.txt", symbols=table))
    assert peak / LINKS < BYTES_PER_LINK, f"{peak / LINKS:.0f} bytes per arc"


GOOD = ["N=3 L=2", "I=0", "I=1 W=a", "I=2 W=b", "J=0 S=0 E=1 a=-1", "J=1 S=1 E=2 a=-2"]


def error_of(lines: list[str]) -> str:
    with pytest.raises(LatticeError) as err:
        parse_slf("\n".join(lines) + "\n", source="x.slf")
    return str(err.value)


def test_good_lattice_reads():
    slf = parse_slf("\n".join(GOOD) + "\n", source="x.slf")
    assert slf.lattice.words == ("a", "b")
    assert slf.lattice.log_weights.tolist() == [-1.0, -2.0]


@pytest.mark.parametrize("lines, where, what", [
    # the header's count is checked before any link's numbers
    (["N=3 L=3", *GOOD[1:4], "J=0 S=0 E=1 a=zz", GOOD[5]], "x.slf:1", "L=3"),
    # a link to a missing node on line 5 comes before a bad number on line 6
    ([*GOOD[:4], "J=0 S=0 E=7 a=-1", "J=1 S=1 E=2 a=zz"], "x.slf:5", "node 7"),
    # within a line: the missing node before the bad number
    ([*GOOD[:4], "J=0 S=0 E=9 a=zz", GOOD[5]], "x.slf:5", "node 9"),
    # a bad base= before any link's numbers, though the links come first in the file
    (["base=1", *GOOD[:4], "J=0 S=0 E=1 a=zz", GOOD[5]], "x.slf:1", "base=1"),
    # a node's bad a= (nodes after the links in the file) before a link's bad number
    (["N=3 L=2", "J=0 S=0 E=1 a=zz", "J=1 S=1 E=2", "I=0", "I=1 W=a a=qq", "I=2"],
     "x.slf:5", "a=qq"),
    # a link without E= is reported at its line, after the earlier links
    ([*GOOD[:5], "J=1 S=1 a=-2"], "x.slf:6", "no E="),
    # a bad n= and l= come in the order the fields count: a=, n=, p=, r=, l=
    ([*GOOD[:4], "J=0 S=0 E=1 l=ll n=nn", GOOD[5]], "x.slf:5", "n=nn"),
])
def test_deferred_errors_keep_the_file_order(lines, where, what):
    message = error_of(lines)
    assert message.startswith(where + ":") and what in message, message
