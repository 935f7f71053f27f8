"""Strictness from the command line: one flag per `maxarpa.Config` field, the same on every
command that loads a model (`maxarpa convert/info/query`, `arsdecode decode/sample/marginals/
sms/batch`), and `arsdecode.load_lm(path, config=...)`. Each flag is tested on a real broken
file from ../shared/data/arpa when there is one (skipped when absent) and on a small
generated file (always run): refused by default, accepted with the flag."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

import arsdecode
from arpa_fixtures import VALID, edited
from maxarpa import Config, load
from maxarpa.errors import FormatError

PY = sys.executable
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "arpa"
FIELDS = [f.name for f in dataclasses.fields(Config)]
COMMANDS = [("maxarpa", "convert"), ("maxarpa", "info"), ("maxarpa", "query"),
            ("arsdecode", "decode"), ("arsdecode", "sample"), ("arsdecode", "marginals"),
            ("arsdecode", "sms"), ("arsdecode", "batch"),
            ("arsdecode", "disambig")]

NO_BOS = edited(l7=None, l12=None, l2="ngram 1=3", l3="ngram 2=1")  # no <s> at all
NO_UNK = edited(l6=None, l2="ngram 1=3")
POSITIVE = edited(l9="0.25\ta\t0.2")  # log10 p(a) = +0.25


def run(tool: str, args, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", tool, *map(str, args)], input=stdin, capture_output=True,
                          text=True, timeout=300)


def flag(field: str) -> str:
    return "--" + field.replace("_", "-")


def shared(name: str) -> Path:
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"{path} not found (../shared/data/arpa)")
    return path


def generated(tmp_path: Path, text: str, name: str = "m.arpa") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def refused_then_accepted(tool_args, field: str, value: str | None, tool: str = "maxarpa",
                          stdin: str = "") -> subprocess.CompletedProcess:
    """Run without the flag (must exit 2 with one line naming the flag), then with it (must
    succeed); return the accepted run."""
    refused = run(tool, tool_args, stdin)
    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert flag(field) in refused.stderr, refused.stderr  # the message says what to type
    extra = [flag(field)] + ([value] if value is not None else [])
    accepted = run(tool, [*tool_args[:1], *extra, *tool_args[1:]], stdin)
    assert accepted.returncode == 0, accepted.stderr
    return accepted


# ------------------------------------------------------------------------------------------
# Every field, every command


@pytest.mark.parametrize(("tool", "command"), COMMANDS, ids=[c for _, c in COMMANDS])
def test_every_config_field_has_a_flag_on_every_command(tool, command):
    proc = run(tool, [command, "--help"])
    assert proc.returncode == 0, proc.stderr
    for field in FIELDS:
        assert flag(field) in proc.stdout, (command, field)


def test_an_impossible_value_is_a_usage_error():
    proc = run("maxarpa", ["info", "--unknown-missing-log10p", "0.5", "x.arpa"])
    assert proc.returncode == 2 and "--unknown-missing-log10p" in proc.stderr
    assert "must be a log10 probability <= 0" in proc.stderr
    proc = run("maxarpa", ["info", "--sentence-marker-missing", "ignore", "x.arpa"])
    assert proc.returncode == 2 and "--sentence-marker-missing" in proc.stderr
    assert "invalid choice: 'ignore'" in proc.stderr


# ------------------------------------------------------------------------------------------
# sentence_marker_missing


@pytest.mark.parametrize("source", ["shared", "generated"])
def test_sentence_marker_missing_on_maxarpa(tmp_path, source):
    path = (shared("set1/kaldi_missing_bos.arpa") if source == "shared"
            else generated(tmp_path, NO_BOS))
    out = tmp_path / "out.maxarpa"
    refused_then_accepted(["convert", path, out], "sentence_marker_missing", "accept")
    model = load(out)
    assert model.bos_id is not None and model.vocab[model.bos_id] == "<s>"
    refused_then_accepted(["info", path], "sentence_marker_missing", "accept")
    warned = run("maxarpa", ["info", "--sentence-marker-missing", "warn", path])
    assert warned.returncode == 0 and warned.stderr.startswith("maxarpa: warning: ")


@pytest.mark.parametrize("source", ["shared", "generated"])
@pytest.mark.parametrize("command", ["decode", "sample", "marginals"])
def test_sentence_marker_missing_on_arsdecode(tmp_path, source, command):
    path = (shared("set1/kaldi_missing_bos.arpa") if source == "shared"
            else generated(tmp_path, NO_BOS))
    lattice = tmp_path / "lattice.json"
    lattice.write_text(json.dumps({"positions": [[["a", 0.0]], [["a", -1.0], ["b", -0.5]]]
                                   if source == "shared" else [[["a", 0.0]]]}))
    args = [command, "--lm", path, "--lattice", lattice] + (["-n", "3"] if command != "decode"
                                                            else [])
    accepted = refused_then_accepted(args, "sentence_marker_missing", "accept",
                                     tool="arsdecode")
    assert accepted.stdout.strip()


def test_sentence_marker_missing_on_sms(tmp_path):
    path = generated(tmp_path, NO_BOS)
    accepted = refused_then_accepted(["sms", "2", "--lm", path], "sentence_marker_missing",
                                     "accept", tool="arsdecode")
    assert accepted.stdout.split()[0] == "a"


def test_sentence_marker_missing_on_batch(tmp_path):
    path = generated(tmp_path, NO_BOS)
    items = tmp_path / "in.jsonl"
    items.write_text(json.dumps({"id": 1, "positions": [[["a", 0.0]]]}) + "\n")
    out = tmp_path / "out.jsonl"
    refused = run("arsdecode", ["batch", "--lm", path, "--in", items, "--out", out])
    assert refused.returncode == 2 and "--sentence-marker-missing" in refused.stderr
    accepted = run("arsdecode", ["batch", "--sentence-marker-missing", "accept", "--lm", path,
                                 "--in", items, "--out", out])
    assert accepted.returncode == 0, accepted.stderr
    assert json.loads(out.read_text().splitlines()[0])["tokens"] == ["a"]


def test_load_lm_takes_a_config(tmp_path):
    path = generated(tmp_path, NO_BOS)
    with pytest.raises(FormatError, match="no <s>"):
        arsdecode.load_lm(path)
    lm = arsdecode.load_lm(path, config=Config(sentence_marker_missing="accept"))
    assert lm.bos_id is not None
    if (SHARED / "set1/kaldi_missing_bos.arpa").is_file():
        real = SHARED / "set1/kaldi_missing_bos.arpa"
        with pytest.raises(FormatError):
            arsdecode.load_lm(real)
        assert arsdecode.load_lm(real, config=Config(sentence_marker_missing="accept")).bos_id


# ------------------------------------------------------------------------------------------
# positive_log_probability (no real file of the shared sets has one: generated only)


def test_positive_log_probability(tmp_path):
    path = generated(tmp_path, POSITIVE)
    accepted = refused_then_accepted(["query", path], "positive_log_probability", "accept",
                                     stdin="a\n")
    assert float(accepted.stdout.split("\t")[0]) == 0.25
    out = tmp_path / "out.maxarpa"
    refused_then_accepted(["convert", path, out], "positive_log_probability", "accept")
    assert load(out, config=Config(positive_log_probability="accept")).log10p("a", []) == 0.25


# ------------------------------------------------------------------------------------------
# unknown_missing and unknown_missing_log10p


@pytest.mark.parametrize("source", ["shared", "generated"])
def test_unknown_missing(tmp_path, source):
    path = (shared("set1/kenlm_test_nounk.arpa") if source == "shared"
            else generated(tmp_path, NO_UNK))
    accepted = refused_then_accepted(["query", "--sentence", path], "unknown_missing", "accept",
                                     stdin="a zzz\n")
    cells = accepted.stdout.splitlines()[0].split("\t")
    zzz = cells[1].split(" ")
    model = load(path, config=Config(unknown_missing="accept"))
    assert zzz[0] == f"zzz={model.unk_id}"
    assert float(zzz[2]) == model.log10p("zzz", ["<s>", "a"])  # -100 plus a's backoff
    assert accepted.stdout.splitlines()[0].endswith("OOV: 1")
    if source == "shared":  # KenLM also scores the OOV word at -100 here
        kenlm = pytest.importorskip("kenlm")
        scores = list(kenlm.Model(str(path)).full_scores("a zzz"))
        for cell, (p, _, _) in zip(cells, scores):
            assert float(cell.split(" ")[2]) == pytest.approx(p, abs=1e-4)


@pytest.mark.parametrize("source", ["shared", "generated"])
def test_unknown_missing_log10p(tmp_path, source):
    path = (shared("set1/kenlm_test_nounk.arpa") if source == "shared"
            else generated(tmp_path, NO_UNK))
    default = run("maxarpa", ["query", "--unknown-missing", "accept", path], stdin="zzz\n")
    assert default.returncode == 0 and float(default.stdout.split("\t")[0]) == -100.0
    chosen = run("maxarpa", ["query", "--unknown-missing", "accept", "--unknown-missing-log10p",
                             "-7.5", path], stdin="zzz\n")
    assert chosen.returncode == 0, chosen.stderr
    model = load(path, config=Config(unknown_missing="accept", unknown_missing_log10p=-7.5))
    assert float(chosen.stdout.split("\t")[0]) == model.log10p("zzz", []) == -7.5


def test_unknown_missing_log10p_refused_line_is_the_unknown_word(tmp_path):
    """Without --unknown-missing, the log10p flag alone changes nothing: still refused."""
    path = generated(tmp_path, NO_UNK)
    proc = run("maxarpa", ["query", "--unknown-missing-log10p", "-7.5", path], stdin="zzz\n")
    assert proc.returncode == 2 and "<stdin>:1: unknown word 'zzz'" in proc.stderr


# ------------------------------------------------------------------------------------------
# verify_bounds: a MAX-ARPA file with one stored bound raised (still a bound, so the cheap
# checks of every load pass it)


def _raise_one_bound(src: Path, dest: Path, word: str) -> None:
    lines = src.read_text().split("\n")
    for i, line in enumerate(lines):
        fields = line.split("\t")
        if len(fields) == 5 and fields[1] == word:
            fields[3] = repr(float(fields[3]) + 0.25)
            lines[i] = "\t".join(fields)
            break
    else:
        raise AssertionError(f"no unigram {word} in {src}")
    dest.write_text("\n".join(lines))


@pytest.mark.parametrize("source", ["shared", "generated"])
def test_verify_bounds(tmp_path, source):
    path = (shared("set1/kenlm_test.arpa") if source == "shared" else generated(tmp_path, VALID))
    good = tmp_path / "good.maxarpa"
    assert run("maxarpa", ["convert", path, good]).returncode == 0
    bad = tmp_path / "bad.maxarpa"
    _raise_one_bound(good, bad, "beyond" if source == "shared" else "a")
    assert run("maxarpa", ["info", bad]).returncode == 0  # the default does not recompute
    proc = run("maxarpa", ["info", "--verify-bounds", bad])
    assert proc.returncode == 2 and "stored bounds differ" in proc.stderr, proc.stderr
    assert run("maxarpa", ["info", "--verify-bounds", good]).returncode == 0
    lattice = tmp_path / "lattice.json"
    lattice.write_text(json.dumps({"positions": [[["a", 0.0]]]}))
    assert run("arsdecode", ["decode", "--lm", bad, "--lattice", lattice]).returncode == 0
    proc = run("arsdecode", ["decode", "--verify-bounds", "--lm", bad, "--lattice", lattice])
    assert proc.returncode == 2 and "stored bounds differ" in proc.stderr
