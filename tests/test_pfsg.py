"""SRILM PFSG lattices (issue 32): read, write, decode, and the vocabulary conventions.

The reader is checked against an independent walk of the PFSG text (words on nodes, costs in
bytelogs), the writer by reading back, and SRILM's own SPINE test lattices are decoded with
SRILM's test 4-gram against brute force over every path scored by KenLM.
"""

from __future__ import annotations

import gzip
import json
import math
import random
from pathlib import Path

import pytest
from cli_in_process import in_process_cli as _cli

from arsdecode import api
from arsdecode.errors import LatticeError
from arsdecode.lattice.lattice_files import read_word_lattice, sniff_format, write_word_lattice
from arsdecode.lattice.pfsg import BYTELOG_SCALE, parse_pfsg
from arsdecode.testing.brute_dag import brute_dag, random_word_lattice

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "lattices"
SPINE = sorted((SHARED / "srilm").glob("g07a01_unpr_A_*.gz"))
SPINE_LM = SHARED / "lm" / "spine2000+2001-gridlabel+spell.4bo.gz"
needs_spine = pytest.mark.skipif(not SPINE or not SPINE_LM.exists(),
                                 reason=f"SRILM's PFSG test lattices not found under {SHARED}")

SMALL = """name small
nodes 6 NULL a b NULL c NULL
initial 0
final 5
transitions 7
0 1 -10000
0 2 -20001
1 3 0
2 3 -5000
0 4 -30000
3 5 0
4 5 -1
"""


def walk_pfsg(text: str) -> dict[tuple[str, ...], float]:
    """Every path of a one-grammar PFSG as {words: best ln weight}, read straight from the text
    (independent of the reader): a path emits the word of every node it enters."""
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    head = {f[0]: f[1:] for f in lines[:5]}
    words = head["nodes"][1:]
    initial, final = int(head["initial"][0]), int(head["final"][0])
    out: dict[int, list[tuple[int, float]]] = {}
    for f in lines[5:]:
        out.setdefault(int(f[0]), []).append((int(f[1]), int(f[2]) / BYTELOG_SCALE))
    paths: dict[tuple[str, ...], float] = {}

    def go(node: int, emitted: tuple[str, ...], weight: float) -> None:
        if node == final:
            paths[emitted] = max(paths.get(emitted, -math.inf), weight)
        for nxt, w in out.get(node, []):
            word = words[nxt]
            go(nxt, emitted if word == "NULL" else (*emitted, word), weight + w)

    go(initial, (), 0.0)
    return paths


def lattice_paths(wl) -> dict[tuple[str, ...], float]:
    best: dict[tuple[str, ...], float] = {}
    for arcs, final in wl.paths():
        words = tuple(wl.path_words(arcs))
        w = sum(float(wl.log_weights[a]) for a in arcs) + wl.finals[final]
        best[words] = max(best.get(words, -math.inf), w)
    return best


def test_reader_equals_an_independent_walk_of_the_text():
    wl = parse_pfsg(SMALL, keep_lm_score=True)
    want = walk_pfsg(SMALL)
    got = lattice_paths(wl)
    assert got.keys() == want.keys() == {("a",), ("b",), ("c",)}
    for words, w in want.items():
        assert got[words] == pytest.approx(w, abs=1e-12)


def test_costs_are_dropped_unless_kept():
    """A lattice-tool lattice's costs are the old LM's: rescoring replaces them."""
    wl = parse_pfsg(SMALL)
    assert set(lattice_paths(wl).values()) == {0.0}


def test_written_pfsg_reads_back_with_the_same_paths(random_lms, tmp_path):
    model = random_lms[3]
    wl = random_word_lattice(random.Random(5), model.words, max_nodes=6)
    path = tmp_path / "lat.pfsg"
    write_word_lattice(wl, path)
    again = read_word_lattice(path, keep_lm_score=True)
    got, want = lattice_paths(again), lattice_paths(wl)
    assert got.keys() == want.keys()
    for words, w in want.items():  # rounded to bytelogs: half a unit per arc and final
        assert abs(got[words] - w) <= (len(words) + 2) * 0.5 / BYTELOG_SCALE + 1e-12


def test_a_file_named_without_a_format_suffix_is_sniffed(tmp_path):
    path = tmp_path / "g07_lattice.gz"
    path.write_bytes(gzip.compress(SMALL.encode()))
    assert sniff_format(SMALL) == "pfsg"
    assert lattice_paths(read_word_lattice(path)).keys() == {("a",), ("b",), ("c",)}


@pytest.mark.parametrize("text, message", [
    ("name x\nnodes 2 NULL a\ninitial 0\nfinal 1\ntransitions 2\n0 1 5\n",
     "x.pfsg:5: transitions 2, but the file has 1 transition lines"),
    ("name x\nnodes 3 NULL a\ninitial 0\nfinal 1\ntransitions 1\n0 1 5\n",
     "x.pfsg:2: nodes 3, but the line names 2 words"),
    ("name x\nnodes 2 NULL a\ninitial 0\nfinal 1\ntransitions 1\n0 7 5\n",
     "x.pfsg:6: node 7 does not exist"),
    ("name x\nnodes 2 NULL a\ninitial 0\nfinal 1\ntransitions 1\n0 1 -3.5\n",
     "x.pfsg:6: the cost '-3.5' is not an integer bytelog"),
    ("name x\nnodes 2 NULL a\ninitial 0\nfinal 1\ntransitions 1\n0 1\n",
     "x.pfsg:6: a transition is 'from to cost'"),
    ("name x\nnodes 2 NULL a\ninitial 0\nfinal 1\ntransitions 1\n0 1 0\nname y\n",
     "x.pfsg:7: a second grammar"),
    ("name x\nnodes 2 NULL a\ntransitions 1\n0 1 0\n",
     "x.pfsg:3: the transitions come before the initial, final line"),
    ("name x\nnodes 2 a b\ninitial 0\nfinal 1\ntransitions 1\n0 1 0\n",
     "the initial node 0 has the word 'a'"),
    ("name x\nnodes 2 NULL a\ninitial 0\nfinal 1\ntransitions 2\n0 1 0\n1 0 0\n",
     "cycle"),
    ("I=0 W=a\n", "x.pfsg:1: expected one of the header lines"),
])
def test_malformed_pfsg_is_one_line_naming_the_file_and_line(tmp_path, text, message):
    path = tmp_path / "x.pfsg"
    path.write_text(text)
    with pytest.raises(LatticeError) as err:
        read_word_lattice(path)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_cli_error_on_a_bad_pfsg_is_one_line(random_lms, tmp_path, capsys):
    path = tmp_path / "bad.pfsg"
    path.write_text("name x\nnodes 2 NULL a\ninitial 0\nfinal 1\ntransitions 2\n0 1 5\n")
    code, out, err = _cli(capsys, "decode", "--lm", str(random_lms[3].path), "--lattice",
                          str(path))
    assert code != 0 and out == ""
    assert err.strip().count("\n") == 0 and "bad.pfsg:5:" in err and "Traceback" not in err


# ----- SRILM's SPINE lattices, with SRILM's 4-gram, against KenLM over every path ----------


@pytest.fixture(scope="module")
def spine():
    kenlm = pytest.importorskip("kenlm")
    import maxarpa

    return maxarpa.load(str(SPINE_LM)), kenlm.Model(str(SPINE_LM))


@needs_spine
def test_spine_lattice_decodes_to_the_brute_force_best_by_kenlm(spine):
    lm, km = spine
    wl = read_word_lattice(SPINE[0])  # -pau- is epsilon, as lattice-tool reads it
    assert "-pau-" not in wl.words and wl.num_paths() < 10_000

    def kenlm_ln(words: tuple[str, ...]) -> float:
        return km.score(" ".join(words), bos=True, eos=True) * math.log(10)

    brute = brute_dag(wl, kenlm_ln)
    for method in ("full", "ars"):
        r = api.decode(lm, wl, method=method)
        assert r.certified
        assert abs(r.log_p - brute.best_log_p) <= 1e-4  # KenLM scores in float32
        assert abs(kenlm_ln(tuple(r.tokens)) - r.log_p) <= 1e-4
    _, log_z = api.lattice_posteriors(lm, wl)
    assert log_z == pytest.approx(brute.log_Z, abs=1e-4)


@needs_spine
def test_keep_pause_scores_the_pause_as_a_word(spine, capsys):
    lm, _ = spine
    assert "-pau-" in read_word_lattice(SPINE[0], epsilon_words=()).words
    code, out, err = _cli(capsys, "decode", "--lm", str(SPINE_LM), "--lattice", str(SPINE[0]),
                          "--keep-pause")
    assert code != 0 and "-pau-" in err  # the SPINE 4-gram has no <unk> and no -pau-
    code, out, err = _cli(capsys, "decode", "--lm", str(SPINE_LM), "--lattice", str(SPINE[0]),
                          "--json")
    assert code == 0, err
    got = json.loads(out)
    want = api.decode(lm, read_word_lattice(SPINE[0]))
    assert got["tokens"] == want.tokens and got["certified"]
