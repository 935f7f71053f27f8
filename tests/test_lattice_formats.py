"""Word-lattice files (issue 21): HTK SLF, OpenFst text and the JSON DAG, read and written.

The references: round trips (a WordLattice written and read back is the same lattice, or,
where SLF needs an extra end node, has the same paths with the same words and scores, found by
enumerating every path); hand-written SLF files in the HTK book's style whose expected ln
weights are worked out here by hand; OpenFst text printed by pynini and compiled by
pywrapfst, whose own path enumeration gives the words and costs; the confusion network
(`WordLattice.from_confusion`). Every malformed file gives one line naming the file and line.
"""

from __future__ import annotations

import gzip
import io
import json
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arsdecode.errors import LatticeError, OptionError
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.lattice.fst_text import (
    parse_fst_text,
    parse_symbol_table,
    read_fst_text,
    symbol_table,
    write_fst_text,
    write_symbol_table,
)
from arsdecode.lattice.lattice_files import format_of, read_word_lattice, write_word_lattice
from arsdecode.lattice.slf import SlfScales, parse_slf, paths_lattice, read_slf, write_slf
from arsdecode.lattice.slf_fields import split_fields

LN10 = math.log(10)
VOCAB = ["the", "a", "cat", "hat", "sat", "on", "mat", "it's", "ünï"]


# ----- helpers ---------------------------------------------------------------------------------


def assert_same(a: WordLattice, b: WordLattice) -> None:
    """Equal lattices: same nodes, arcs, words, weights (1e-12) and finals."""
    assert a.n_nodes == b.n_nodes
    assert a.src.tolist() == b.src.tolist()
    assert a.dst.tolist() == b.dst.tolist()
    assert a.words == b.words
    np.testing.assert_allclose(a.log_weights, b.log_weights, rtol=0, atol=1e-12)
    assert list(a.finals) == list(b.finals)
    np.testing.assert_allclose(list(a.finals.values()), list(b.finals.values()), rtol=0,
                               atol=1e-12)


def path_scores(wl: WordLattice) -> Counter:
    """Every path as (its words, its ln score rounded to 1e-9): brute force."""
    out: Counter = Counter()
    for arcs, final in wl.paths():
        score = sum(float(wl.log_weights[a]) for a in arcs) + wl.finals[final]
        out[(tuple(wl.path_words(arcs)), round(score, 9))] += 1
    return out


@st.composite
def word_lattices(draw, *, single_final: bool = False) -> WordLattice:
    """Random DAGs: a chain 0..n-1 (so some path exists) plus random forward arcs, epsilon
    and parallel arcs, several finals with final weights (or one final of weight 0)."""
    n = draw(st.integers(2, 7))
    weights = st.floats(-20, 5, allow_nan=False).map(lambda x: round(x, 6))
    words = st.one_of(st.none(), st.sampled_from(VOCAB))
    arcs = [(i, i + 1, draw(words), draw(weights)) for i in range(n - 1)]
    for _ in range(draw(st.integers(0, 10))):
        s = draw(st.integers(0, n - 2))
        d = draw(st.integers(s + 1, n - 1))
        arcs.append((s, d, draw(words), draw(weights)))
    if single_final:
        finals = {n - 1: 0.0}
    else:
        extra = draw(st.lists(st.integers(0, n - 2), max_size=3, unique=True))
        finals = {f: draw(weights) for f in [n - 1, *extra]}
    return WordLattice.build(n, 0, finals, arcs, source="random")


def one_line_error(fn, *args, match: str, **kwargs) -> str:
    with pytest.raises(LatticeError) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    assert "\n" not in msg
    assert match in msg, msg
    return msg


def slf(text: str, **kwargs) -> WordLattice:
    return parse_slf(text, source="t.slf", **kwargs).lattice


# ----- round trips -----------------------------------------------------------------------------

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(word_lattices())
def test_json_round_trip(wl):
    assert_same(WordLattice.from_json_obj(json.loads(json.dumps(wl.to_json_obj()))), wl)


@PROPS
@given(word_lattices(), st.booleans())
def test_fst_text_round_trip_with_symbols(wl, acceptor):
    buf = io.StringIO()
    write_fst_text(wl, buf, acceptor=acceptor)
    assert_same(parse_fst_text(buf.getvalue(), acceptor=acceptor), wl)
    if not acceptor or any(len(line.split()) == 3 for line in buf.getvalue().splitlines()):
        # the arc form inferred (an acceptor whose arcs all have weights reads ambiguously)
        assert_same(parse_fst_text(buf.getvalue()), wl)


@PROPS
@given(word_lattices(), st.booleans())
def test_fst_text_round_trip_with_ids_and_a_symbol_table(wl, acceptor):
    table = symbol_table(wl)
    text, syms = io.StringIO(), io.StringIO()
    write_fst_text(wl, text, symbols=table, acceptor=acceptor)
    write_symbol_table(table, syms)
    read_back = parse_fst_text(text.getvalue(), symbols=parse_symbol_table(syms.getvalue()),
                               acceptor=acceptor)
    assert_same(read_back, wl)


@PROPS
@given(word_lattices(single_final=True), st.sampled_from([math.e, 10.0]))
def test_slf_round_trip_of_a_single_end_lattice_is_exact(wl, base):
    buf = io.StringIO()
    write_slf(wl, buf, base=base)
    assert_same(slf(buf.getvalue()), wl)


@PROPS
@given(word_lattices())
def test_slf_round_trip_keeps_every_path_and_score(wl):
    """Several finals or final weights: one extra !NULL end node, the same paths."""
    buf = io.StringIO()
    write_slf(wl, buf)
    back = slf(buf.getvalue())
    assert path_scores(back) == path_scores(wl)
    plain = len(wl.finals) == 1 and list(wl.finals.values()) == [0.0] and \
        not len(wl.arcs_from(next(iter(wl.finals))))
    assert back.n_nodes == wl.n_nodes + (0 if plain else 1)


def exact_arc_posteriors(wl: WordLattice) -> tuple[np.ndarray, dict[int, float]]:
    """Arc posteriors and the probability of ending at each final, by enumeration (the
    lattice's own weights, no LM)."""
    paths = list(wl.paths())
    scores = np.array([sum(float(wl.log_weights[a]) for a in arcs) + wl.finals[f]
                       for arcs, f in paths])
    probs = np.exp(scores - scores.max())
    probs /= probs.sum()
    post = np.zeros(wl.n_arcs)
    ending = dict.fromkeys(wl.finals, 0.0)
    for (arcs, f), p in zip(paths, probs):
        for a in arcs:
            post[a] += p
        ending[f] += p
    return post, ending


@PROPS
@given(word_lattices())
def test_slf_posteriors_are_written_as_p_and_the_end_links_get_the_ending_probability(wl):
    post, ending = exact_arc_posteriors(wl)
    buf = io.StringIO()
    write_slf(wl, buf, posteriors=post.tolist())
    p_of: dict[tuple[int, int, str], list[float]] = {}
    for line in buf.getvalue().splitlines():
        if line.startswith("J="):
            f = dict(split_fields(line, "test"))  # the writer escapes it's as HTK does
            word = f["W"]
            p_of.setdefault((int(f["S"]), int(f["E"]), word), []).append(float(f["p"]))
    expected: dict[tuple[int, int, str], list[float]] = {}
    for k in range(wl.n_arcs):
        key = (int(wl.src[k]), int(wl.dst[k]), wl.words[k] or "!NULL")
        expected.setdefault(key, []).append(post[k])
    if len(p_of) > len(expected) or sum(map(len, p_of.values())) > wl.n_arcs:
        for f, p in ending.items():
            expected.setdefault((f, wl.n_nodes, "!NULL"), []).append(p)
    assert p_of.keys() == expected.keys()
    for key in expected:
        np.testing.assert_allclose(sorted(p_of[key]), sorted(expected[key]), atol=1e-9)


@PROPS
@given(word_lattices(), st.data())
def test_nbest_paths_as_an_slf_lattice_of_parallel_chains(wl, data):
    every = list(wl.paths())
    chosen = data.draw(st.lists(st.sampled_from(every), min_size=1, max_size=4))
    chains = paths_lattice(wl, [arcs for arcs, _ in chosen])
    expected = Counter()
    for arcs, f in chosen:
        score = sum(float(wl.log_weights[a]) for a in arcs) + wl.finals[f]
        expected[(tuple(wl.path_words(arcs)), round(score, 9))] += 1
    buf = io.StringIO()
    write_slf(chains, buf)
    back = slf(buf.getvalue())
    assert path_scores(back) == expected
    assert back.num_paths() == len(chosen)
    assert len(back.finals) == 1


def test_paths_lattice_refuses_a_path_that_is_not_one():
    wl = WordLattice.build(3, 0, {2: 0.0}, [(0, 1, "a", 0.0), (1, 2, "b", 0.0)])
    one_line_error(paths_lattice, wl, [[1]], match="path 0 is not a path")
    one_line_error(paths_lattice, wl, [[0]], match="does not end at a final node")
    one_line_error(paths_lattice, wl, [], match="no path")


@pytest.mark.parametrize("name,fmt", [
    ("x.slf", "slf"), ("x.lat.gz", "slf"), ("x.htk", "slf"), ("x.fst.txt", "fst"),
    ("x.fst", "fst"), ("x.FST.TXT.gz", "fst"), ("x.json", "json"), ("x.json.gz", "json")])
def test_files_round_trip_by_suffix(tmp_path, name, fmt):
    wl = WordLattice.build(4, 0, {3: 0.0}, [
        (0, 1, "the", -0.5), (0, 1, "a", -1.25), (1, 2, None, -0.1), (1, 3, "cat", -2.0),
        (2, 3, "hat", -0.75)], source="mem")
    path = tmp_path / name
    assert format_of(path) == fmt
    write_word_lattice(wl, path)
    if name.endswith(".gz"):
        assert gzip.open(path).read()  # really gzip
    assert_same(read_word_lattice(path), wl)
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary left


def test_an_explicit_format_overrides_the_suffix(tmp_path):
    wl = WordLattice.build(2, 0, {1: 0.0}, [(0, 1, "a", -1.0)])
    path = tmp_path / "lattice.data"
    write_word_lattice(wl, path, format="slf")
    assert path.read_text().startswith("VERSION=")
    assert_same(read_word_lattice(path, format="slf"), wl)
    assert_same(read_word_lattice(path), wl)  # a suffix that says nothing: told by its text
    opaque = tmp_path / "lattice.bin"
    opaque.write_bytes(b"\x00\x01 not a lattice\n")
    with pytest.raises(OptionError, match="cannot tell the lattice format"):
        read_word_lattice(opaque)
    with pytest.raises(OptionError, match="needs a format"):
        read_word_lattice("-")
    with pytest.raises(OptionError, match="unknown lattice format"):
        read_word_lattice(path, format="xml")


def test_a_failed_write_leaves_no_file(tmp_path):
    wl = WordLattice.build(2, 0, {1: 0.0}, [(0, 1, "<eps>", -1.0)])  # a word, not epsilon
    path = tmp_path / "x.fst.txt"
    one_line_error(write_word_lattice, wl, path, match="cannot be an OpenFst symbol")
    assert not list(tmp_path.iterdir())


# ----- the confusion network -------------------------------------------------------------------

CONFUSION = Lattice.from_lists([[("the", -0.1), ("a", -2.3)], [("cat", -0.5)],
                                [("sat", -0.7), ("hat", -1.2), ("mat", -4.0)]])


def test_a_confusion_network_as_slf_is_from_confusion():
    lines = []
    k = 0
    for i, (toks, emis) in enumerate(zip(CONFUSION.tokens, CONFUSION.log_emissions)):
        for tok, e in zip(toks, emis.tolist()):
            lines.append(f"J={k} S={i} E={i + 1} W={tok} a={e}")
            k += 1
    text = f"VERSION=1.0\nN={len(CONFUSION) + 1} L={k}\n" + "\n".join(lines) + "\n"
    assert_same(slf(text), WordLattice.from_confusion(CONFUSION))


def test_a_confusion_network_json_file_reads_as_from_confusion(tmp_path):
    path = tmp_path / "cn.json"
    path.write_text(json.dumps(CONFUSION.to_json_obj()))
    assert_same(read_word_lattice(path), WordLattice.from_confusion(CONFUSION))


# ----- hand-written SLF, HTK book style --------------------------------------------------------

WORDS_ON_NODES = """\
# words on nodes, as HVite writes them
VERSION=1.0
UTTERANCE=hello_world
lmscale=8.0 wdpenalty=-1.0
N=6 L=6
I=0 t=0.00 W=!NULL
I=1 t=0.20 W=HELLO v=1
I=2 t=0.30 W=YELLOW
I=3 t=0.50 W=WORLD
I=4 t=0.55 W=!NULL
I=5 t=0.60 W=</s>
J=0 S=0 E=1 a=-10.0 l=-2.0
J=1 S=0 E=2 a=-12.0 l=-3.0
J=2 S=1 E=3 a=-5.0 l=-1.0
J=3 S=2 E=3 a=-6.0
J=4 S=3 E=4 a=-0.5
J=5 S=4 E=5 a=0
"""


def test_words_on_nodes_with_the_lm_score_dropped():
    wl = slf(WORDS_ON_NODES)
    assert wl.words == ("HELLO", "YELLOW", "WORLD", "WORLD", None, None)
    # acscale 1 * a + wdpenalty (-1, word links only); l= dropped
    np.testing.assert_allclose(wl.log_weights, [-11, -13, -6, -7, -0.5, 0], atol=1e-12)
    assert wl.finals == {5: 0.0}


def test_keep_lm_score_and_caller_scales():
    wl = slf(WORDS_ON_NODES, keep_lm_score=True)
    np.testing.assert_allclose(wl.log_weights, [-10 - 16 - 1, -12 - 24 - 1, -5 - 8 - 1, -7,
                                                -0.5, 0], atol=1e-12)
    read = parse_slf(WORDS_ON_NODES, keep_lm_score=True,
                     scales=SlfScales(acscale=0.1, lmscale=1.0, wdpenalty=0.0))
    assert read.scales == SlfScales(acscale=0.1, lmscale=1.0, prscale=1.0, wdpenalty=0.0)
    assert read.header["U"] == "hello_world"
    np.testing.assert_allclose(read.lattice.log_weights, [-3, -4.2, -1.5, -0.6, -0.05, 0],
                               atol=1e-12)


def test_words_on_links_long_names_quotes_and_unknown_fields():
    text = """VERSION=1.1
NODES=3 LINKS=3
start=0 end=2
J=0 START=0 END=1 WORD="new\\"york" acoustic=-1.5 x1=7 foo=bar
J=1 S=0 E=1 W='it\\'s' a=-2
J=2 S=1 E=2 W=!NULL language=-4 ngram=-4 div=:a,0.1,-1:
"""
    wl = slf(text)
    assert wl.words == ('new"york', "it's", None)
    np.testing.assert_allclose(wl.log_weights, [-1.5, -2.0, 0.0], atol=1e-12)
    buf = io.StringIO()
    write_slf(wl, buf)
    assert 'W=new\\"york' in buf.getvalue() and "W=it\\'s" in buf.getvalue()  # HTK's escapes
    assert_same(slf(buf.getvalue()), wl)
    # A quoted word may not hold white space: it would print as two words (issue 29 C)
    one_line_error(slf, text.replace('new\\"york', "new york"),
                   match="t.slf:4: the word 'new york' holds white space")


def test_htk_octal_escapes_are_utf8_bytes():
    wl = slf("N=3 L=2\nJ=0 S=0 E=1 W=\\344\\275\\240 a=-1\nJ=1 S=1 E=2 W='a\\\\b'\n")
    assert wl.words == ("\u4f60", "a\\b")
    buf = io.StringIO()
    write_slf(wl, buf)
    assert_same(slf(buf.getvalue()), wl)
    one_line_error(slf, "N=2 L=1\nJ=0 S=0 E=1 W=\\344x\n", match="t.slf:2: field W=: its")


@pytest.mark.parametrize("base,a,expected", [
    ("10", "-2", -2 * LN10), ("2.718281828459045", "-2", -2.0), (None, "-2", -2.0),
    ("0", "0.01", math.log(0.01)), ("0.0", "1", 0.0), ("2", "-3", -3 * math.log(2))])
def test_base_converts_scores_to_natural_log(base, a, expected):
    head = f"base={base}\n" if base is not None else ""
    wl = slf(f"{head}N=2 L=1\nJ=0 S=0 E=1 W=x a={a}\n")
    assert wl.log_weights[0] == pytest.approx(expected, abs=1e-12)


def test_base_applies_to_every_score_field_and_the_header_penalty():
    text = ("base=10 acscale=0.5 prscale=2 wdpenalty=-1\nN=3 L=2\n"
            "J=0 S=0 E=1 W=x a=-2 r=-0.25 l=-3\nJ=1 S=1 E=2 W=!NULL a=-1 r=-1\n")
    wl = slf(text, keep_lm_score=True)
    np.testing.assert_allclose(
        wl.log_weights, [(0.5 * -2 + 2 * -0.25 + -3 - 1) * LN10, (0.5 * -1 + 2 * -1) * LN10],
        atol=1e-12)
    # a caller's word penalty is natural log
    wl = slf(text, scales=SlfScales(wdpenalty=-1.0))
    assert wl.log_weights[0] == pytest.approx((0.5 * -2 + 2 * -0.25) * LN10 - 1.0, abs=1e-12)


def test_a_linear_zero_score_drops_the_link():
    wl = slf("base=0\nN=3 L=3\nJ=0 S=0 E=1 W=a a=0.5\nJ=1 S=0 E=1 W=b a=0\n"
             "J=2 S=1 E=2 W=c a=1\n")
    assert wl.words == ("a", "c")
    np.testing.assert_allclose(wl.log_weights, [math.log(0.5), 0.0], atol=1e-12)


def test_sentence_markers_and_null_are_epsilon_and_several_ends_are_final():
    text = """N=5 L=4
I=0 W=<s>
I=1 W=one
I=2 W=two
I=3 W=three
I=4 W=</s>
J=0 S=0 E=1 a=-1
J=1 S=1 E=2 a=-1
J=2 S=1 E=3 a=-2
J=3 S=3 E=4 a=-3
"""
    wl = slf(text)
    assert path_scores(wl) == Counter({(("one", "two"), -2.0): 1,
                                       (("one", "three"), -6.0): 1})
    assert len(wl.finals) == 2


def test_a_node_acoustic_score_counts_on_links_taking_the_node_word():
    text = "N=3 L=3\nI=0\nI=1 W=a a=-4\nI=2 W=b\nJ=0 S=0 E=1 a=-1\nJ=1 S=0 E=1 W=c a=-1\n" \
           "J=2 S=1 E=2 a=-2\n"
    wl = slf(text)
    assert wl.words == ("a", "c", "b")
    np.testing.assert_allclose(wl.log_weights, [-5, -1, -2], atol=1e-12)


def test_read_slf_from_a_gzip_file(tmp_path):
    path = tmp_path / "x.lat.gz"
    with gzip.open(path, "wt") as fh:
        fh.write(WORDS_ON_NODES)
    assert_same(read_slf(path).lattice, slf(WORDS_ON_NODES))


# ----- malformed SLF ---------------------------------------------------------------------------


@pytest.mark.parametrize("text,line,what", [
    ("N=3 L=1\nJ=0 S=0 E=9 W=a\n", 2, "the link names the node 9, which does not exist"),
    ("N=4 L=2\nJ=0 S=0 E=1 W=a\nJ=1 S=2 E=3 W=b\n", None, "two start nodes"),
    ("N=3 L=2\nI=0\nI=1\nI=2\nJ=0 S=0 E=1 W=a\nJ=1 S=2 E=1 W=b\n", 4, "two start nodes"),
    ("N=3 L=2 start=0 end=2\nJ=0 S=0 E=1 W=a\nJ=1 S=2 E=1 W=b\n", None,
     "no path from the start node"),
    ("N=2 L=1\nJ=0 S0 E=1\n", 2, "bad field"),
    ("N=2 L=1\nJ=0 S=0 E=1 W=a a=-1.x\n", 2, "a=-1.x: not a number"),
    ("N=2 L=1\nJ=0 S=0 E=1 W=a a=nan\n", 2, "not a usable number"),
    ("N=2 L=1\nJ=0 S=0 E=x W=a\n", 2, "E=x: expected a non-negative integer"),
    ("N=2 L=1\nJ=0 S=0 E=1 W=\"a\n", 2, "quote \" is not closed"),
    ("N=2 L=1\nJ=0 S=0 E=1 W=a a=\n", 2, "has no value"),
    ("N=2 L=2\nJ=0 S=0 E=1 W=a\n", 1, "L=2 but the file has 1 links"),
    ("VERSION=1\nN=3 L=1\nI=0\nI=1\nJ=0 S=0 E=1 W=a\n", 2, "N=3 but the file has 2 nodes"),
    ("N=2 L=1\nI=0\nI=0\nJ=0 S=0 E=1\n", 3, "node 0 is defined twice"),
    ("N=2 L=2\nI=0\nI=3\nJ=0 S=0 E=1\nJ=1 S=0 E=1\n", 3, "node 3 is beyond N=2"),
    ("L=1\nJ=0 S=0 E=1\n", None, "no N= in the header"),
    ("N=3 L=3 start=0 end=2\nJ=0 S=0 E=1 W=a\nJ=1 S=1 E=2 W=b\nJ=2 S=2 E=1 W=c\n", 4,
     "closes a cycle"),
    ("N=2 L=1\nJ=0 S=0 W=a\n", 2, "the link has no E="),
    ("N=2 L=1\nJ=0 S=0 E=1\nN=2\n", 3, "after the nodes and links"),
    ("base=1\nN=2 L=1\nJ=0 S=0 E=1\n", 1, "a log base must be positive"),
    ("base=0\nN=2 L=1\nJ=0 S=0 E=1 a=-1\n", 3, "cannot be negative"),
    ("SUBLAT=x\nN=2 L=1\nJ=0 S=0 E=1\n", 1, "sub-lattices"),
    ("N=2 L=1 end=7\nJ=0 S=0 E=1\n", 1, "end=7: there is no node 7"),
    ("dir=b\nN=2 L=1\nJ=0 S=0 E=1\n", 1, "only forward lattices"),
    ("N=2 L=2\nJ=0 S=0 E=1\nJ=0 S=0 E=1\n", 3, "link 0 is defined twice"),
    ("N=2 L=1\nJ=0 S=0 E=1 a=1 a=2\n", 2, "field a= given twice"),
])
def test_malformed_slf_is_one_line_naming_file_and_line(text, line, what):
    msg = one_line_error(slf, text, match=what)
    assert msg.startswith("t.slf")
    if line is not None:
        assert msg.startswith(f"t.slf:{line}: "), msg


def test_unreadable_and_non_utf8_slf_files(tmp_path):
    one_line_error(read_slf, tmp_path / "missing.slf", match="missing.slf: cannot read")
    bad = tmp_path / "latin1.slf"
    bad.write_bytes(b"N=2 L=1\nJ=0 S=0 E=1 W=caf\xe9\n")
    one_line_error(read_slf, bad, match="not UTF-8")


def test_writing_a_word_that_reads_back_as_epsilon_is_refused():
    wl = WordLattice.build(2, 0, {1: 0.0}, [(0, 1, "!NULL", 0.0)])
    one_line_error(write_slf, wl, io.StringIO(), match="would read back as epsilon")


# ----- OpenFst text ----------------------------------------------------------------------------

SYMS = "<eps>\t0\nthe\t1\ncat\t2\nhat\t3\n"


def test_fst_text_by_symbols_and_by_ids_with_a_table():
    by_name = "0\t1\tthe\tthe\t0.5\n0\t1\tcat\tcat\t1.5\n1\t2\t<eps>\t<eps>\n1\t2\that\that\n" \
              "2\t0.25\n"
    by_id = "0 1 1 1 0.5\n0 1 2 2 1.5\n1 2 0 0\n1 2 3 3\n2 0.25\n"
    expected = WordLattice.build(3, 0, {2: -0.25}, [
        (0, 1, "the", -0.5), (0, 1, "cat", -1.5), (1, 2, None, 0.0), (1, 2, "hat", 0.0)])
    table = parse_symbol_table(SYMS)
    assert_same(parse_fst_text(by_name), expected)
    assert_same(parse_fst_text(by_name, symbols=table), expected)
    assert_same(parse_fst_text(by_id, symbols=table), expected)
    no_table = parse_fst_text(by_id)  # words are the ids' text
    assert no_table.words == ("1", "2", None, "3")


def test_fst_text_word_is_the_output_label_and_infinity_is_zero():
    text = "0 1 17 the 1.0\n0 1 18 cat Infinity\n1 2 19 <eps>\n2\n1 Infinity\n"
    wl = parse_fst_text(text, labels="names")
    assert wl.words == ("the", None)
    assert wl.finals == {2: 0.0}


def test_acceptor_lines_and_start_state_not_zero():
    wl = parse_fst_text("5 3 the 2\n5 3 cat\n3 1.5\n")
    assert wl.words == ("the", "cat")
    np.testing.assert_allclose(wl.log_weights, [-2.0, 0.0])
    assert wl.finals == {1: -1.5}
    assert wl.node_names == ("5", "3")


def test_kaldi_weight_pairs_with_an_acoustic_scale_and_a_key_line():
    text = "utt_001\n0\t1\t4\t1\t2.5,100\n0\t1\t5\t2\t1.0,120\n1\t2\t6\t3\t0,40\n" \
           "2\t0.5,0\n\n"
    table = parse_symbol_table(SYMS)
    wl = parse_fst_text(text, symbols=table, acoustic_scale=0.1)
    assert wl.words == ("the", "cat", "hat")
    np.testing.assert_allclose(wl.log_weights, [-12.5, -13.0, -4.0], atol=1e-12)
    assert wl.finals == {2: -0.5}
    # a CompactLattice acceptor: word graph,acoustic,transition-ids
    compact = "0 1 1 2.5,100,4_4_5\n1 2 3 0,40,6\n2 0.5,0,\n"
    wl = parse_fst_text(compact, symbols=table, acoustic_scale=0.1)
    np.testing.assert_allclose(wl.log_weights, [-12.5, -4.0], atol=1e-12)
    assert wl.words == ("the", "hat")


@pytest.mark.parametrize("text,line,what", [
    ("0 1 cat cat 1\n1\n", 1, "the symbol 'cat' is not in t.syms"),
    ("0 1 9 9 1\n1\n", 1, "the label id 9 is not in t.syms"),
    ("0 1 1 1 x\n1\n", 1, "the weight 'x' is not a number"),
    ("0 1 1 1 nan\n1\n", 1, "not a usable cost"),
    ("0 1 1 1 1 1\n1\n", 1, "6 fields"),
    ("0 1 1\n0 1 1 1 1\n1\n", 2, "arcs of 3 fields"),
    ("0 1 1 1\n1\n1\n", 3, "final twice"),
    ("0 -1 1 1\n1\n", 1, "the state '-1' is not a non-negative integer"),
    ("0 1 1 1\n1 0 2 2\n1\n", 2, "closes a cycle"),
    ("0 1 1 1\n1\n\nutt2\n0 1 1 1\n", 4, "a second lattice"),
    ("0 1 1 1\n", None, "no final state"),
    ("0 1 1 1\n2\n", None, "no path from the start node"),
    ("", None, "an empty FST"),
])
def test_malformed_fst_text_is_one_line_naming_file_and_line(text, line, what):
    table = parse_symbol_table("<eps> 0\nthe 1\nhat 2\n")
    msg = one_line_error(parse_fst_text, text, source="t.fst.txt", symbols=table,
                         symbols_name="t.syms", match=what)
    if line is not None:
        assert msg.startswith(f"t.fst.txt:{line}: "), msg
    else:
        assert msg.startswith("t.fst.txt: ")


@pytest.mark.parametrize("text,line,what", [
    ("<eps> 0\nthe\n", 2, "expected 'symbol id'"),
    ("<eps> 0\nthe 1\nthe 2\n", 3, "listed twice"),
    ("<eps> 0\nthe 0\n", 2, "the id 0 is listed twice"),
])
def test_malformed_symbol_table(text, line, what):
    msg = one_line_error(parse_symbol_table, text, source="w.txt", match=what)
    assert msg.startswith(f"w.txt:{line}: ")


def test_a_symbol_table_file_and_a_binary_fst_file(tmp_path):
    syms = tmp_path / "words.txt"
    syms.write_text(SYMS)
    fst = tmp_path / "lat.fst.txt"
    fst.write_text("0 1 1 1 0.5\n1\n")
    wl = read_fst_text(fst, symbols=syms)
    assert wl.words == ("the",)
    assert read_word_lattice(fst, symbols=syms).words == ("the",)
    fst.write_text("0 1 7 7 0.5\n1\n")
    one_line_error(read_fst_text, fst, symbols=syms, match=f"{fst}:1: the label id 7 is not "
                   f"in {syms}")
    binary = tmp_path / "lat.fst"
    binary.write_bytes((2125659606).to_bytes(4, "little") + b"\x07vector")
    one_line_error(read_word_lattice, binary, match="a binary OpenFst file")


# ----- pynini / pywrapfst cross-checks ---------------------------------------------------------

pynini = pytest.importorskip("pynini")


def _symbols(words):
    table = pynini.SymbolTable()
    table.add_symbol("<eps>", 0)
    for w in words:
        table.add_symbol(w)
    return table


def _pynini_paths(fst, table) -> list[tuple[tuple[str, ...], float]]:
    """pynini's own path enumeration: (words, ln score = -cost), sorted."""
    paths = fst.paths(input_token_type=table, output_token_type=table)
    return sorted((tuple(ostring.split()), -float(weight)) for _, ostring, weight in
                  paths.items())


def assert_paths_close(ours: Counter, theirs: list, tol: float = 1e-4) -> None:
    """The same paths; scores equal within `tol` (OpenFst's weights are float32)."""
    mine = sorted(key for key, count in ours.items() for _ in range(count))
    assert [w for w, _ in mine] == [w for w, _ in theirs]
    np.testing.assert_allclose([s for _, s in mine], [s for _, s in theirs], rtol=0, atol=tol)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(VOCAB[:7]), min_size=1, max_size=4),
                          st.floats(0, 10).map(lambda x: round(x, 4))),
                min_size=1, max_size=5, unique_by=lambda t: tuple(t[0])))
def test_a_pynini_acceptor_printed_reads_as_the_same_lattice(strings):
    table = _symbols(VOCAB[:7])
    fst = pynini.union(*(pynini.accep(" ".join(ws), weight=w, token_type=table)
                         for ws, w in strings)).optimize()
    text = fst.print(isymbols=table, osymbols=table)
    wl = parse_fst_text(text)
    assert_paths_close(path_scores(wl), _pynini_paths(fst, table))
    ids = parse_fst_text(fst.print(), symbols={table.find(i): i for i in range(
        table.num_symbols())})
    assert path_scores(ids) == path_scores(wl)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(word_lattices())
def test_our_fst_text_compiles_with_pywrapfst_to_the_same_paths(wl):
    import pywrapfst

    table = symbol_table(wl)
    syms = _symbols([w for w in table if w != "<eps>"])
    assert all(syms.find(w) == i for w, i in table.items())
    buf = io.StringIO()
    write_fst_text(wl, buf)
    compiler = pywrapfst.Compiler(isymbols=syms, osymbols=syms, keep_isymbols=True,
                                  keep_osymbols=True)
    compiler.write(buf.getvalue())
    compiled = compiler.compile()
    assert_paths_close(path_scores(wl), _pynini_paths(pynini.Fst.from_pywrapfst(compiled), syms))


def test_stdin_and_stdout_with_a_format(monkeypatch, capsys):
    import sys

    wl = WordLattice.build(3, 0, {2: 0.0}, [(0, 1, "the", -1.0), (1, 2, None, -0.5)])
    for fmt in ("slf", "fst", "json"):
        write_word_lattice(wl, "-", format=fmt)
        text = capsys.readouterr().out
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
        assert_same(read_word_lattice("-", format=fmt), wl)


def test_bad_json_names_the_file_and_line(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"start": 0,\n "finals": {"1": 0.0},\n "arcs": [[0, 1, "a", NaN]]}')
    one_line_error(read_word_lattice, path, match="weight NaN is not allowed")
    path.write_text('{"start": 0,\n "finals": {"1": 0.0},\n "arcs": [[0, 1, "a" 1]]}')
    one_line_error(read_word_lattice, path, match=f"{path}:3: invalid JSON")
