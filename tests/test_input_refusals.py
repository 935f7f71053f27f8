"""No traceback from any input (issue 29 C): inputs that were accepted and then died, or that
died at once, are refused at load with one line naming the file and what is wrong, or read.

Why subprocesses for the command line: the promise is what a user sees (one stderr line, exit
status 2, no traceback; the bytes printed), so those tests run the real command on real files
the test writes: a small ARPA model (in Latin-1 where words are bytes), SLF, OpenFst text,
JSON lattices, a VPYLM trained by `arsdecode train-vpylm`.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from arsdecode.errors import LatticeError, ModelError, OptionError
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.lattice.lattice_files import sniff_format
from arsdecode.lattice.slf import parse_slf
from arsdecode.model.limits import LARGEST_LN
from arsdecode.model.loglinear import read_features
from maxarpa.bound import LARGEST_LOG10
from maxarpa.constants import LN10

ARPA = """\\data\\
ngram 1=6
ngram 2=4

\\1-grams:
-1.0\t<s>\t-0.3
-0.6\t</s>
-0.7\tthe\t-0.2
-0.8\tcat\t-0.2
-0.9\tsat\t-0.1
-1.5\t<unk>

\\2-grams:
-0.2\t<s> the
-0.3\tthe cat
-0.25\tcat sat
-0.1\tsat </s>

\\end\\
"""

SLF = "VERSION=1.0\nN=4 L=4\nJ=0 S=0 E=1 W=the a=-0.5\nJ=1 S=0 E=1 W=a a=-1\n" \
      "J=2 S=1 E=2 W=cat a=-0.2\nJ=3 S=2 E=3 W=sat a=-0.1\n"


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arsdecode", *args], input=stdin,
                          capture_output=True, timeout=120)


def check_error(proc: subprocess.CompletedProcess, *words: str) -> str:
    """Exit 2, one stderr line naming each of `words`, no traceback; the line."""
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, (proc.returncode, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, (w, err)
    return err


@pytest.fixture()
def arpa(tmp_path) -> Path:
    path = tmp_path / "small.arpa"
    path.write_text(ARPA)
    return path


def write_json(path: Path, obj: object) -> Path:
    path.write_text(json.dumps(obj))
    return path


# ---- JSON nested 100k deep --------------------------------------------------------------


def test_json_nested_100k_deep_is_one_line_from_a_file_and_stdin(arpa, tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "deep.json"
    path.write_text(deep)
    check_error(run("decode", "--lm", str(arpa), "--lattice", str(path)),
                str(path), "nested too deeply")
    check_error(run("decode", "--lm", str(arpa), "--lattice", "-", stdin=deep.encode()),
                "<stdin>", "nested too deeply")
    with pytest.raises(LatticeError, match="nested too deeply"):
        Lattice.from_json_file(path)


# ---- tokens: a lone surrogate, white space ----------------------------------------------


def test_a_lone_surrogate_is_refused_at_load_naming_token_and_position(arpa, tmp_path):
    path = tmp_path / "s.json"
    path.write_text('{"positions": [[["the", 0.0]], [["cat", 0.0], ["\\ud800", -1.0]]]}')
    with pytest.raises(LatticeError) as err:
        Lattice.from_json_file(path)
    assert "position 1" in str(err.value) and "'\\ud800'" in str(err.value)
    check_error(run("decode", "--lm", str(arpa), "--lattice", str(path)),
                "position 1", "\\ud800", "surrogate")
    dag = write_json(tmp_path / "dag.json", {"start": 0, "finals": {"2": 0.0},
                                             "arcs": [[0, 1, "the", 0.0], [1, 2, "\ud800", 0.0]]})
    check_error(run("decode", "--lm", str(arpa), "--lattice", str(dag)), "arc 1", "surrogate")
    # An escaped byte (U+DC80..U+DCFF, how maxarpa reads a Latin-1 word) is a word.
    assert Lattice.from_lists([[("caf\udce9", 0.0)]]).tokens == (("caf\udce9",),)


@pytest.mark.parametrize("token", ["the union", "the\tunion", "x\n"])
def test_a_token_with_white_space_is_refused(tmp_path, token):
    with pytest.raises(LatticeError, match="white space") as err:
        Lattice.from_lists([[("a", 0.0)], [("b", 0.0), (token, 0.0)]], source="t.json")
    assert str(err.value).startswith("t.json: position 1:") and repr(token) in str(err.value)
    with pytest.raises(LatticeError, match="white space"):
        WordLattice.from_json_obj({"start": 0, "finals": {"1": 0.0},
                                   "arcs": [[0, 1, token.strip() + " y", 0.0]]})


def test_a_token_with_white_space_is_refused_by_the_command(arpa, tmp_path):
    path = write_json(tmp_path / "sp.json", {"positions": [[["the union", 0.0]],
                                                           [["cat", 0.0]]]})
    check_error(run("decode", "--lm", str(arpa), "--lattice", str(path)),
                str(path), "'the union'", "white space")


# ---- weights that overflow: the ARPA reader's limit -------------------------------------


def test_the_limit_is_the_arpa_readers():
    assert LARGEST_LN == LARGEST_LOG10 * LN10
    assert math.isfinite(LARGEST_LN * 2**32)
    ok = Lattice.from_lists([[("a", LARGEST_LN)], [("b", -1e308)]])  # -1e308: still legal
    assert ok.log_emissions[0][0] == LARGEST_LN
    with pytest.raises(LatticeError, match="too large"):
        Lattice.from_lists([[("a", math.nextafter(LARGEST_LN, math.inf))]])
    with pytest.raises(LatticeError, match="too large"):
        WordLattice.build(2, 0, {1: 1e300}, [(0, 1, "a", 0.0)])


def test_lattice_weights_of_1e308_name_the_overflow(arpa, tmp_path):
    path = write_json(tmp_path / "big.json", {"positions": [[["the", 1e308], ["cat", 1e308]],
                                                            [["the", 1e308]]]})
    check_error(run("decode", "--lm", str(arpa), "--lattice", str(path)),
                "position 0", "1e+308", "too large", "overflow")
    slf = tmp_path / "big.slf"
    slf.write_text(SLF.replace("a=-0.5", "a=1e308"))
    err = check_error(run("decode", "--lm", str(arpa), "--lattice", str(slf)),
                      f"{slf}:3:", "too large")
    assert "probability zero" not in err


def test_feature_weights_of_1e308_name_the_overflow(arpa, tmp_path):
    features = tmp_path / "f.tsv"
    features.write_text("the cat\t1e308\ncat\t1e308\n")
    lattice = write_json(tmp_path / "l.json", {"positions": [[["the", 0.0], ["cat", 0.0]],
                                                             [["cat", 0.0]]]})
    err = check_error(run("decode", "--lm", str(arpa), "--lattice", str(lattice),
                          "--features", str(features)), f"{features}:1:", "too large")
    assert "--max-iterations" not in err
    features.write_text("the cat\t-1e308\n")
    with pytest.raises(ModelError, match="too large"):
        read_features(features)
    features.write_text("the cat\t-1e298\n")
    assert read_features(features)[0].weight == -1e298


# ---- SLF: a cycle and no end node --------------------------------------------------------


def test_an_slf_cycle_without_an_end_node_is_named_as_the_cycle():
    text = "N=3 L=3\nJ=0 S=0 E=1 W=the\nJ=1 S=1 E=2 W=cat\nJ=2 S=2 E=1 W=sat\n"
    with pytest.raises(LatticeError) as err:
        parse_slf(text, source="c.slf")
    assert str(err.value) == "c.slf:4: the arc 2 -> 1 closes a cycle (a lattice must be acyclic)"


# ---- stdin -------------------------------------------------------------------------------


@pytest.mark.parametrize("text, fmt", [
    (SLF, "slf"), ("# c\n\nUTTERANCE=x\nN=1 L=0\n", "slf"), ("0 1 the\n1\n", "fst"),
    ("utt1\n0\t1\tthe\tthe\n1\n", "fst"), ('  {"positions": []}', "json"), ("[]", "json"),
    ("hello world\n", None), ("", None)])
def test_sniff_format(text, fmt):
    assert sniff_format(text) == fmt


def test_a_word_lattice_on_stdin_is_read_by_its_format(arpa, tmp_path):
    path = tmp_path / "l.slf"
    path.write_text(SLF)
    from_file = run("decode", "--lm", str(arpa), "--lattice", str(path), "--json")
    assert from_file.returncode == 0, from_file.stderr
    fst = "0 1 the the 0.5\n0 1 a a 1\n1 2 cat cat 0.2\n2 3 sat sat 0.1\n3\n"  # costs: -ln
    for text in (SLF, fst):
        piped = run("decode", "--lm", str(arpa), "--lattice", "-", "--json", stdin=text.encode())
        assert piped.returncode == 0, piped.stderr
        got, want = json.loads(piped.stdout), json.loads(from_file.stdout)
        assert got["words"] == want["words"] == ["the", "cat", "sat"]
        assert got["log_p"] == pytest.approx(want["log_p"], abs=1e-12)
    check_error(run("decode", "--lm", str(arpa), "--lattice", "-", stdin=b"hello world\n"),
                "<stdin>", "--format")


def test_two_inputs_on_stdin_are_refused(arpa, tmp_path):
    check_error(run("decode", "--lm", "-", "--lattice", "-", stdin=ARPA.encode()),
                "--lm and --lattice", "stdin")
    check_error(run("disambig", "--map", "-", "--text", "-", "--lm", str(arpa), stdin=b""),
                "--map and --text")


# ---- messages ----------------------------------------------------------------------------


def test_segment_help_shows_the_default_values():
    from arsdecode.cli import segment
    from arsdecode.tasks.segment import (
        DEFAULT_UNKNOWN_MAX_LENGTH,
        DEFAULT_UNKNOWN_PENALTY_PER_CHAR,
    )

    assert segment.FLAT_UNKNOWN_PENALTY == DEFAULT_UNKNOWN_PENALTY_PER_CHAR
    assert segment.UNKNOWN_MAX_LENGTH == DEFAULT_UNKNOWN_MAX_LENGTH
    shown = " ".join(run("segment", "--help").stdout.decode().split())
    assert "model used 2.5)" in shown and "(default 12)" in shown
    assert "DEFAULT_UNKNOWN" not in shown


def test_a_model_given_to_the_wrong_flag_says_which_flag(arpa, tmp_path):
    text = tmp_path / "train.txt"
    text.write_text("the cat sat\ncat sat the\n")
    vpylm = tmp_path / "m.vpylm.npz"
    trained = run("train-vpylm", "--text", str(text), "--out", str(vpylm), "--sweeps", "1")
    assert trained.returncode == 0, trained.stderr
    lattice = write_json(tmp_path / "l.json", {"positions": [[["the", 0.0]], [["cat", 0.0]]]})
    check_error(run("decode", "--lm", str(vpylm), "--lattice", str(lattice)),
                str(vpylm), "--vpylm")
    err = check_error(run("decode", "--vpylm", str(arpa), "--lattice", str(lattice)),
                      str(arpa), "not a VPYLM model")
    assert err.count("not a VPYLM model") == 1


def test_option_error_names_no_vpylm_for_other_files(arpa, tmp_path):
    """--lm on a file that is neither: maxarpa's own message, not the VPYLM hint."""
    bad = write_json(tmp_path / "x.json", {"a": 1})
    err = check_error(run("decode", "--lm", str(bad), "--lattice", str(bad)), str(bad))
    assert "--vpylm" not in err and OptionError.__name__ not in err


# ---- byte-transparent disambig inputs ----------------------------------------------------

LATIN_ARPA = """\\data\\
ngram 1=6
ngram 2=5

\\1-grams:
-1.0\t<s>\t-0.3
-0.6\t</s>
-0.7\tcafé\t-0.2
-0.8\tcrème\t-0.2
-0.9\tcafe\t-0.1
-1.5\t<unk>

\\2-grams:
-0.2\t<s> café
-0.3\tcafé crème
-0.25\tcafe crème
-0.1\tcrème </s>
-0.4\t<s> cafe

\\end\\
"""
LATIN_MAP = "CAFÉ café 0.7 cafe 0.3\nCRÈME crème 0.5 creme 0.5\n"
LATIN_TEXT = "CAFÉ CRÈME\nCAFÉ\n\nCRÈME CAFÉ crème\n"


@pytest.mark.parametrize("flags", [(), ("--nbest", "3"), ("--posteriors", "--totals"),
                                   ("--keep-unk", "--fb")])
def test_latin1_map_text_and_arpa_decode_as_their_utf8_twins(tmp_path, flags):
    """SRILM treats words as bytes, and so does maxarpa's ARPA reader: a Latin-1 map, text
    and model must decode exactly as the same problem in UTF-8, and print the same words in
    their own bytes (this run said "not UTF-8 text: byte 0xe9")."""
    out = {}
    for encoding in ("latin-1", "utf-8"):
        d = tmp_path / encoding
        d.mkdir()
        for name, text in (("lm.arpa", LATIN_ARPA), ("map", LATIN_MAP), ("text", LATIN_TEXT)):
            (d / name).write_bytes(text.encode(encoding))
        extra = () if "--keep-unk" in flags else ("--keep-unk",)
        proc = run("disambig", "--map", str(d / "map"), "--text", str(d / "text"), "--lm",
                   str(d / "lm.arpa"), *flags, *extra)
        assert proc.returncode == 0, proc.stderr
        out[encoding] = proc.stdout
    assert b"\xe8" in out["latin-1"] and b"\xc3" not in out["latin-1"]
    assert out["latin-1"] == out["utf-8"].decode("utf-8").encode("latin-1")


def test_latin1_map_decode_prints_bytes(tmp_path):
    for name, text in (("lm.arpa", LATIN_ARPA), ("map", LATIN_MAP), ("text", "CAFÉ CRÈME\n")):
        (tmp_path / name).write_bytes(text.encode("latin-1"))
    proc = run("decode", "--lm", str(tmp_path / "lm.arpa"), "--map", str(tmp_path / "map"),
               "--text", str(tmp_path / "text"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "café crème".encode("latin-1")


def test_the_uncertified_message_names_max_iterations_only_when_it_was_given(capsys):
    """Issue 29 C: a result left uncertified with no --max-iterations (scores too large for
    the bound to close) said "stopped after 1 iterations (--max-iterations)", a flag the user
    had never given."""
    from arsdecode.cli.output import report_uncertified

    report_uncertified(1, None)
    err = capsys.readouterr().err
    assert "UNCERTIFIED" in err and "--max-iterations" not in err and "not finite" in err
    report_uncertified(3, 3)
    err = capsys.readouterr().err
    assert "stopped after 3 iterations (--max-iterations 3)" in err
