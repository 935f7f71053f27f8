"""Generic input I/O (issue 30): one module reads every input (stdin, gzip, UTF-8) and strips
compression suffixes, so a lattice reader does not bounce through the confusion-network module
and the CLI and the lattice layer tell a file's format the same way.
"""

from __future__ import annotations

import argparse
import gzip

import pytest

from arsdecode.cli.word_lattice import is_word_lattice
from arsdecode.errors import LatticeError, OptionError
from arsdecode.lattice.lattice_files import format_of
from scripts.import_graph import import_graph

READERS = ("arsdecode.lattice.slf", "arsdecode.lattice.fst_text",
           "arsdecode.lattice.disambig_map", "arsdecode.lattice.lattice_files")


def test_input_io_has_a_module_of_its_own_below_every_reader():
    """The SLF and OpenFst readers (and disambig's) read through input_files, which imports no
    other lattice module: reading an SLF file no longer needs the confusion network's I/O."""
    from arsdecode.lattice import input_files, slf

    graph = import_graph(typing_imports=True)
    assert not {m for m in graph["arsdecode.lattice.input_files"]
                if m.startswith("arsdecode.lattice")}
    for reader in ("arsdecode.lattice.slf", "arsdecode.lattice.fst_text",
                   "arsdecode.lattice.disambig_map"):
        assert "arsdecode.lattice.input_files" in graph[reader], reader
    assert slf.read_input_text is input_files.read_input_text
    assert input_files.read_input_text.__module__ == "arsdecode.lattice.input_files"


@pytest.mark.parametrize("name, stripped", [
    ("a.slf.gz", "a.slf"), ("a.slf.bz2", "a.slf"), ("a.fst.txt.xz", "a.fst.txt"),
    ("a.json", "a.json"), ("a.json.xz.gz", "a.json.xz"), ("a.gz", "a"),
])
def test_one_compression_suffix_is_stripped(name, stripped):
    from arsdecode.lattice.input_files import without_compression_suffix

    assert without_compression_suffix(name) == stripped


@pytest.mark.parametrize("name", ["x.json.bz2", "x.json.xz.gz", "x.slf.gz", "x.json.gz.slf",
                                  "x.fst.xz", "x.lat.bz2.gz"])
def test_the_cli_and_the_lattice_files_tell_a_format_alike(tmp_path, name):
    """The CLI asks whether --lattice is a word lattice before reading it, lattice_files picks
    the reader: both strip one compression suffix (they stripped differently, each with its
    own loop, and disagreed on "x.json.xz.gz")."""
    path = tmp_path / name
    args = argparse.Namespace(lattice=str(path), format=None)
    try:
        is_json = format_of(path) == "json"
    except OptionError:
        is_json = False  # no format: the word-lattice reader reports it
    assert is_word_lattice(args) is not is_json


def test_read_input_text_names_the_file_on_bad_bytes(tmp_path):
    from arsdecode.lattice.input_files import read_input_text

    path = tmp_path / "bad.slf"
    path.write_bytes(gzip.compress(b"VERSION=1.0\n"))
    with pytest.raises(LatticeError, match=r"bad\.slf:1: not UTF-8 text: byte 0x8b at offset 1 "
                                           r"\(gzip data: name the file \*\.gz\)"):
        read_input_text(path, "lattice")


def test_the_line_reader_and_the_whole_file_reader_agree_on_every_input(tmp_path):
    """`read_input_lines` (the segmenter's --file, read as it comes) and `read_input_text`
    open inputs through the one opener: the same lines from plain and gzip files, and the
    same one-line errors for a corrupt or truncated gzip file."""
    from arsdecode.lattice.input_files import read_input_lines, read_input_text

    text = "one\ntwo\r\nthree\n\nfour\v\nfive\x85\n\n"  # \v and NEL end lines too
    plain, packed = tmp_path / "a.txt", tmp_path / "a.txt.gz"
    plain.write_text(text, encoding="utf-8", newline="")
    packed.write_bytes(gzip.compress(text.encode()))
    for path in (plain, packed):
        assert list(read_input_lines(str(path))) == read_input_text(path, "text").splitlines()
    corrupt, truncated = tmp_path / "c.txt.gz", tmp_path / "t.txt.gz"
    corrupt.write_bytes(b"not gzip at all\n")
    truncated.write_bytes(gzip.compress(text.encode() * 50)[:-12])
    for path in (corrupt, truncated):
        with pytest.raises(LatticeError) as whole:
            read_input_text(path, "text")
        with pytest.raises(LatticeError) as lines:
            list(read_input_lines(str(path)))
        assert str(lines.value) == str(whole.value)
        assert str(lines.value).startswith(f"{path}: cannot read text: ")
