"""HTK quoting that round-trips with lattice-tool (issue 32): with HTK quoting (the default,
lattice-tool -htk-quotes) quotes and backslashes are escaped, `IT\\'S`; without
(--no-htk-quotes, lattice-tool's default) every word is read and written as it is."""

from __future__ import annotations

import pytest
from cli_in_process import in_process_cli as _cli

from arsdecode.lattice.lattice_files import read_word_lattice, write_word_lattice
from arsdecode.lattice.slf_fields import quoted, split_fields
from arsdecode.lattice.word_lattice import WordLattice

WORDS = ["IT'S", "'EM", 'SAY"', "BACK\\SLASH", "PLAIN", "O'NEIL'S"]


@pytest.mark.parametrize("htk_quotes", [True, False])
@pytest.mark.parametrize("word", WORDS)
def test_every_word_reads_back_as_written(word, htk_quotes):
    text = f"J=0 S=0 E=1 W={quoted(word, htk_quotes)}"
    assert dict(split_fields(text, "x", htk_quotes))["W"] == word


def test_htk_quoting_escapes_with_a_backslash_as_htk():
    assert quoted("IT'S") == "IT\\'S" and quoted("'EM") == "\\'EM"
    assert quoted("PLAIN") == "PLAIN" and quoted("IT'S", htk_quotes=False) == "IT'S"


@pytest.mark.parametrize("htk_quotes", [True, False])
def test_lattices_round_trip_through_files(tmp_path, htk_quotes):
    arcs = [(0, 1, w, -0.5 * k) for k, w in enumerate(WORDS)]
    wl = WordLattice.build(2, 0, {1: 0.0}, arcs)
    path = tmp_path / "q.slf"
    write_word_lattice(wl, path, htk_quotes=htk_quotes)
    again = read_word_lattice(path, htk_quotes=htk_quotes)
    assert sorted(w for w in again.words if w) == sorted(WORDS)
    literal = read_word_lattice(path, htk_quotes=False)
    if htk_quotes:  # what lattice-tool without -htk-quotes would read: the escapes themselves
        assert "IT\\'S" in literal.words
    else:
        assert "IT'S" in literal.words


def test_cli_no_htk_quotes_reads_backslashes_literally(random_lms, tmp_path, capsys):
    model = random_lms[3]
    path = tmp_path / "q.slf"
    path.write_text("N=2 L=1\nI=0\nI=1\nJ=0 S=0 E=1 W=A\\'B a=-1\n")
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--no-htk-quotes", "--json")
    assert "A\\\\'B" in out or code != 0  # the literal word, scored as <unk> if the model has one
    code2, out2, _ = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--json")
    assert "A'B" in out2 or code2 != 0
