"""The `maxarpa` command line, run as a real subprocess (console script and `python -m`)."""

from __future__ import annotations

import gzip
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import maxarpa
from arpa_fixtures import MALFORMED, VALID
from arsdecode.testing.random_arpa import random_arpa_text
from arsdecode.testing.reference_arpa import parse_arpa
from maxarpa.query import display_log10

PY = sys.executable


def console_script() -> str:
    script = Path(PY).parent / "maxarpa"
    if script.is_file():
        return str(script)
    found = shutil.which("maxarpa")
    if not found:
        pytest.fail("console script `maxarpa` is not installed (pip install -e .)")
    return found


def run(args, stdin: str = "", script: bool = False) -> subprocess.CompletedProcess:
    cmd = [console_script()] if script else [PY, "-m", "maxarpa"]
    return subprocess.run(
        cmd + [str(a) for a in args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


RANDOM_TEXT = random_arpa_text(random.Random(77), 3, 5, 0.5, False, density=0.8)


# ------------------------------------------------------------------------------------------
# Happy paths


@pytest.mark.parametrize("script", [True, False], ids=["console-script", "python-m"])
def test_convert_writes_loadable_max_arpa(tmp_path, write_arpa, script):
    src = write_arpa(RANDOM_TEXT)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "model.maxarpa"
    proc = run(["convert", src, out], script=script)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in out_dir.iterdir()) == ["model.maxarpa"]
    ref = parse_arpa(RANDOM_TEXT)
    a, b = maxarpa.load(src), maxarpa.load(out)
    assert b.vocab == a.vocab and list(b.counts) == list(a.counts)
    for c in [(), ("w1",), ("<s>",), ("w0", "w2"), ("<s>", "w3")]:
        for w in ref.vocab:
            assert b.log10p(w, c) == a.log10p(w, c)
            assert b.max_log10p(w, c) == a.max_log10p(w, c)


def test_convert_reads_gzip_input(tmp_path, write_arpa):
    src = write_arpa(RANDOM_TEXT, compression="gz")
    out = tmp_path / "m.maxarpa"
    proc = run(["convert", src, out])
    assert proc.returncode == 0, proc.stderr
    assert maxarpa.load(out).vocab == maxarpa.load(write_arpa(RANDOM_TEXT)).vocab


def _info_value(out: str, pattern: str) -> int:
    m = re.search(pattern, out, re.M | re.I)
    assert m, f"no match for {pattern!r} in:\n{out}"
    return int(m.group(1))


@pytest.mark.parametrize("kind", ["arpa", "maxarpa"])
def test_info_prints_facts(tmp_path, write_arpa, kind):
    src = write_arpa(RANDOM_TEXT)
    model = maxarpa.load(src)
    assert model.positive_backoffs > 0
    if kind == "maxarpa":
        out = tmp_path / "m.maxarpa"
        assert run(["convert", src, out]).returncode == 0
        src = out
    proc = run(["info", src])
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert _info_value(text, r"^\s*order\D*?(\d+)\s*$") == model.order
    assert _info_value(text, r"^\s*vocab\w*\D*?(\d+)\s*$") == len(model.vocab)
    for k, count in enumerate(model.counts, start=1):
        assert _info_value(text, rf"^\s*ngram\s*{k}\b\D*?(\d+)\s*$") == count
    assert _info_value(text, r"^\s*positive\w*\D*?(\d+)\s*$") == model.positive_backoffs


def _query_lines(real_models, order: int) -> list[str]:
    rng = random.Random(13)
    lines = []
    for sent in real_models.held_out[:40]:
        toks = ["<s>", *sent.split(), "</s>"]
        for i in range(1, len(toks)):
            start = rng.choice([0, max(0, i - order + 1), max(1, i - 1), i, max(1, i - 6)])
            lines.append(" ".join(toks[start : i + 1]))
    lines += ["the", "zzzunknownword", "<s> zzzunknownword", "of the united states of america"]
    return lines


@pytest.mark.parametrize("kind", ["arpa", "maxarpa"])
def test_query_prints_api_values(real_models, tmp_path, kind):
    src = real_models.paths[3]
    model = maxarpa.load(src)
    if kind == "maxarpa":
        out = tmp_path / "m.maxarpa"
        assert run(["convert", src, out]).returncode == 0
        src = out
    lines = _query_lines(real_models, 3)
    proc = run(["query", src], stdin="\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    out_lines = proc.stdout.split("\n")
    assert out_lines[-1] == ""  # newline-terminated
    out_lines = out_lines[:-1]
    assert len(out_lines) == len(lines)
    for q, line in zip(lines, out_lines):
        fields = line.split("\t")
        assert len(fields) == 2, line
        toks = q.split()
        w, c = toks[-1], toks[:-1]
        # Printed for people: the API's value rounded to 12 significant digits (query.py).
        assert fields[0] == display_log10(model.log10p(w, c)), q
        assert fields[1] == display_log10(model.max_log10p(w, c)), q
        assert float(fields[1]) >= float(fields[0])


def test_query_minus_inf(tmp_path):
    src = tmp_path / "inf.arpa"
    src.write_text(VALID.replace("-0.1\t<s> a", "-inf\t<s> a"))
    proc = run(["query", src], stdin="<s> a\na\n")
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    assert len(rows) == 2
    assert float(rows[0][0]) == float("-inf") and float(rows[0][1]) == float("-inf")
    assert float(rows[1][0]) == pytest.approx(-0.4)
    assert float(rows[1][1]) == pytest.approx(0.2 - 0.4)  # through 'a a': bow(a) + p(a)
    assert float(rows[1][1]) == maxarpa.load(src).max_log10p("a", [])


def test_query_empty_stdin(write_arpa):
    proc = run(["query", write_arpa(VALID)], stdin="")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""


# ------------------------------------------------------------------------------------------
# Malformed input: exit 2, one line on stderr naming the file and line, nothing written


def assert_clean_failure(proc, path: Path, line: int | tuple[int, int] | None):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    err_lines = proc.stderr.strip("\n").split("\n")
    assert len(err_lines) == 1 and err_lines[0].strip(), proc.stderr
    msg = err_lines[0]
    assert path.name in msg, msg
    if line is not None:
        m = re.search(re.escape(path.name) + r":(\d+)\b", msg)
        assert m, f"no line number after the file name: {msg}"
        got = int(m.group(1))
        if isinstance(line, tuple):
            assert line[0] <= got <= line[1], msg
        else:
            assert got == line, msg
    assert proc.stdout == ""


CLI_CASES = ["bad_count", "non_numeric_prob", "truncated_mid_line", "missing_end"] + sorted(
    set(MALFORMED) - {"bad_count", "non_numeric_prob", "truncated_mid_line", "missing_end"}
)


@pytest.mark.parametrize("name", CLI_CASES)
def test_convert_malformed_exits_2_and_writes_nothing(tmp_path, name):
    text, line = MALFORMED[name]
    src = tmp_path / f"{name}.arpa"
    src.write_text(text)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "out.maxarpa"
    proc = run(["convert", src, out])
    assert_clean_failure(proc, src, line)
    assert not out.exists()
    assert list(out_dir.iterdir()) == []  # no temp file left either


@pytest.mark.parametrize("how", ["truncate", "flip", "not-gzip-after-magic"])
def test_convert_corrupt_gzip_exits_2_and_writes_nothing(tmp_path, how):
    data = bytearray(gzip.compress(RANDOM_TEXT.encode() * 20))
    if how == "truncate":
        data = data[: len(data) // 2]
    elif how == "flip":
        mid = len(data) // 2
        for i in range(mid, mid + 32):
            data[i] ^= 0xFF
    else:
        data = bytearray(b"\x1f\x8b" + b"garbage that is not deflate data" * 4)
    src = tmp_path / "corrupt.arpa.gz"
    src.write_bytes(bytes(data))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "out.maxarpa"
    proc = run(["convert", src, out])
    assert_clean_failure(proc, src, None)
    assert not out.exists()
    assert list(out_dir.iterdir()) == []


@pytest.mark.parametrize("command", ["info", "query"])
@pytest.mark.parametrize("name", ["bad_count", "non_numeric_prob", "missing_end"])
def test_info_and_query_on_malformed_exit_2(tmp_path, command, name):
    text, line = MALFORMED[name]
    src = tmp_path / f"{name}.arpa"
    src.write_text(text)
    proc = run([command, src], stdin="a\n")
    assert_clean_failure(proc, src, line)


def test_missing_input_file_exits_2(tmp_path):
    src = tmp_path / "no-such-model.arpa"
    out = tmp_path / "out.maxarpa"
    proc = run(["convert", src, out])
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert src.name in proc.stderr
    assert len(proc.stderr.strip().split("\n")) == 1
    assert not out.exists()


def test_convert_malformed_keeps_existing_output_untouched_or_absent(tmp_path):
    """A failed convert must not leave a half-written OUT (it writes via temp file + rename)."""
    text, _line = MALFORMED["truncated_after_line_12"]
    src = tmp_path / "bad.arpa"
    src.write_text(text)
    out = tmp_path / "out.maxarpa"
    out.write_text("previous\n")
    proc = run(["convert", src, out])
    assert proc.returncode == 2
    assert not out.exists() or out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) in (
        ["bad.arpa", "out.maxarpa"],
        ["bad.arpa"],
    )


def test_usage_error_is_not_a_traceback():
    proc = run(["convert"])
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
