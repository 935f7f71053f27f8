"""The vocabulary conventions of lattice tools (issue 32): HTK's sentence markers, pauses,
noise and ignored words are skipped by the LM; --map-unk relabels unknown words.

Each is checked end to end on the CLI against brute force over the lattice's paths, with the
skipped words removed from (or the mapped word put into) the word sequences by the test itself.
"""

from __future__ import annotations

import json

import pytest
from cli_in_process import in_process_cli as _cli

from arsdecode.errors import LatticeError
from arsdecode.lattice.lattice_files import read_word_lattice
from arsdecode.lattice.vocabulary import lm_transparent_words
from arsdecode.lattice.word_lattice import WordLattice
from arsdecode.testing.brute_dag import brute_dag_model


def slf_text(words: list[list[str]]) -> str:
    """A confusion-network-shaped SLF lattice (words on links), one node per position."""
    links = []
    for i, cands in enumerate(words):
        for w in cands:
            links.append(f"J={len(links)} S={i} E={i + 1} W={w} a=-{0.5 + len(links) / 7:.3f}")
    head = [f"VERSION=1.0\nN={len(words) + 1} L={len(links)}"]
    nodes = [f"I={i}" for i in range(len(words) + 1)]
    return "\n".join(head + nodes + links) + "\n"


def best_by_brute_force(lm, wl: WordLattice) -> float:
    return brute_dag_model(lm, wl).best_log_p


@pytest.fixture
def model(random_lms):
    return random_lms[3]


def test_htk_markers_and_the_pause_are_skipped_by_default(model, tmp_path, capsys):
    a, b, c = model.words[:3]
    path = tmp_path / "lat.slf"
    path.write_text(slf_text([["!SENT_START"], [a, b, "-pau-"], [c, "-pau-"], ["!SENT_END"]]))
    wl = read_word_lattice(path)
    assert {w for w in wl.words if w is not None} == {a, b, c}
    kept = read_word_lattice(path, epsilon_words=())
    assert "!SENT_START" in kept.words and "-pau-" in kept.words
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--json")
    assert code == 0, err
    got = json.loads(out)
    assert abs(got["log_p"] - best_by_brute_force(model.lm, wl)) <= 1e-9
    assert "-pau-" not in got["tokens"] and "!SENT_START" not in got["tokens"]
    assert got["oov"]["count"] == 0


def test_keep_pause_scores_it_as_an_unknown_word(model, tmp_path, capsys):
    a, b = model.words[:2]
    path = tmp_path / "lat.slf"
    path.write_text(slf_text([[a, "-pau-"], [b]]))
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--keep-pause", "--json")
    if "<unk>" in model.lm.vocab:
        assert code == 0, err
        assert json.loads(out)["oov"]["tokens"] == ["-pau-"]
    else:
        assert code != 0 and "-pau-" in err


def test_default_fillers_and_sentence_markers_option(model, tmp_path, capsys):
    a, b = model.words[:2]
    path = tmp_path / "lat.slf"
    path.write_text(slf_text([["<S>"], [a, "[SPEECH]", "[NOISE]"], ["<sil>", b], ["</S>"]]))
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--sentence-markers", "<S>,</S>", "--json")
    assert code == 0, err
    got = json.loads(out)
    wl = read_word_lattice(path, epsilon_words=lm_transparent_words(
        sentence_markers=("<S>", "</S>")))
    assert {w for w in wl.words if w is not None} == {a, b}
    assert abs(got["log_p"] - best_by_brute_force(model.lm, wl)) <= 1e-9
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--sentence-markers", "<S>")
    assert code == 2 and "give two words" in err


def test_noise_and_ignore_vocab_files_skip_their_words(model, tmp_path, capsys):
    a, b = model.words[:2]
    path = tmp_path / "lat.slf"
    path.write_text(slf_text([[a, "[LAUGH]"], ["<breath>", b]]))
    noise, ignore = tmp_path / "noise.txt", tmp_path / "ignore.txt"
    noise.write_text("# fillers\n[LAUGH]\n")
    ignore.write_text("<breath> 0.5\n")
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--noise-vocab", str(noise), "--ignore-vocab", str(ignore), "--json")
    assert code == 0, err
    got = json.loads(out)
    wl = read_word_lattice(path, epsilon_words=lm_transparent_words(
        noise_words={"[LAUGH]"}, ignore_words={"<breath>"}))
    assert abs(got["log_p"] - best_by_brute_force(model.lm, wl)) <= 1e-9
    assert got["oov"]["count"] == 0


def test_map_unk_scores_unknown_words_as_the_given_word(model, tmp_path, capsys):
    a, b = model.words[:2]
    path = tmp_path / "lat.slf"
    path.write_text(slf_text([[a, "zzunknown"], [b, "qqunknown"]]))
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--map-unk", b, "--json")
    assert code == 0, err
    got = json.loads(out)
    mapped = read_word_lattice(path).with_words({"zzunknown": b, "qqunknown": b})
    assert abs(got["log_p"] - best_by_brute_force(model.lm, mapped)) <= 1e-9
    assert got["oov"]["count"] == 0
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--map-unk", "notaword")
    assert code != 0 and "--map-unk 'notaword': not a word of" in err
    assert err.strip().count("\n") == 0


def test_relabelling_as_a_sentence_marker_is_refused(model, tmp_path):
    path = tmp_path / "lat.slf"
    path.write_text(slf_text([[model.words[0]]]))
    wl = read_word_lattice(path)
    with pytest.raises(LatticeError, match="sentence marker"):
        wl.with_words({model.words[0]: "</s>"})
    assert wl.with_words({"absent": "x"}) is wl  # nothing to relabel: the lattice itself
