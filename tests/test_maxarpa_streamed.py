"""Issue 34's streamed `convert --binary` (`maxarpa.streamed`): the file it writes is byte for
byte the one `load(rounded_bounds=True)` + `write_binary` write, or it declines and writes
nothing (the command then converts that way, which names every fault).

Reference: the in-memory path, itself checked against the exact bounds and the writer's own
rounding (tests/test_maxarpa_keyed.py). Random models draw positive backoffs (the sparse exact
mbow and the absent-extension term), -inf, pruned files and files out of key order.
"""

from __future__ import annotations

import gzip
import math
import os
import resource
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_maxarpa_keyed import key_ordered, sorted_text

import maxarpa
from arpa_fixtures import arpa_texts
from maxarpa.binary_write import write_binary
from maxarpa.config import DEFAULT_CONFIG, PERMISSIVE, Config
from maxarpa.errors import FormatError
from maxarpa.keyed import read_sorted_arpa
from maxarpa.streamed import convert_streamed

ROOT = Path(__file__).resolve().parent.parent


def reference_bytes(path: Path, out: Path, config: Config) -> bytes | None:
    """The in-memory conversion's file, None where it refuses the model."""
    try:
        model = maxarpa.load(path, config=config, rounded_bounds=True)
    except FormatError:
        return None
    write_binary(model, out, bounds_verified=True)
    return out.read_bytes()


def check_streamed(path: Path, d: Path, config: Config) -> bool:
    """The streamed file equals the reference, or nothing is written; True when taken."""
    out = d / "streamed.npz"
    out.unlink(missing_ok=True)
    try:
        taken = convert_streamed(path, out, config)
    except FormatError:  # only what the reference raises too (header, marks)
        assert reference_bytes(path, d / "reference.npz", config) is None
        return False
    if not taken:
        assert not out.exists()
        return False
    assert reference_bytes(path, d / "reference.npz", config) == out.read_bytes()
    assert sorted(p.name for p in d.iterdir() if p.name.startswith(".")) == []  # no scratch
    return True


TAKEN: list[bool] = []


@settings(max_examples=80, deadline=None)
@given(arpa_texts(min_order=1, max_order=5, max_vocab=6, drop_prefix_contexts=None,
                  neg_inf=True))
def test_streamed_file_is_the_in_memory_one(tmp_path_factory, drawn):
    text, _ = drawn
    d = tmp_path_factory.mktemp("streamed")
    for name, body in (("sorted.arpa", key_ordered(text)), ("drawn.arpa", text)):
        path = d / name
        path.write_text(body)
        for config in (PERMISSIVE, DEFAULT_CONFIG):
            taken = check_streamed(path, d, config)
            if name == "sorted.arpa":
                TAKEN.append(taken)


def test_the_random_models_mostly_take_the_streamed_path():
    """Guards the test above against checking only declines (runs after it)."""
    if not TAKEN:
        pytest.skip("run with the test above")
    assert sum(TAKEN) >= len(TAKEN) // 4


def with_positive_backoffs(text: str) -> str:
    """Every backoff made positive (+0.3): exact mbow positive everywhere below the top, so
    every order takes the absent-extension term."""
    out = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and not line.startswith("\\"):
            fields[2] = repr(abs(float(fields[2])) + 0.3)
        out.append("\t".join(fields))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_positive_backoffs_take_the_absent_term(tmp_path, order):
    path = tmp_path / "pos.arpa"
    path.write_text(with_positive_backoffs(sorted_text(seed=order, order=order)))
    assert check_streamed(path, tmp_path, PERMISSIVE) or order == 1


def test_lmplz_files_take_the_streamed_path(real_models, tmp_path):
    for order in (3, 5):
        assert check_streamed(real_models.paths[order], tmp_path, DEFAULT_CONFIG)
    packed = tmp_path / "lm.arpa.gz"  # compressed input: the same stream, decompressed
    packed.write_bytes(gzip.compress(real_models.paths[3].read_bytes()))
    assert check_streamed(packed, tmp_path, DEFAULT_CONFIG)


@pytest.mark.parametrize("change", ["nan", "positive", "huge", "unsorted", "no_bos"])
def test_declined_files_write_nothing(tmp_path, change):
    """Each file the in-memory path must judge (a refusal, a warning, a word to add, another
    order of lines) is declined before the output exists."""
    lines = sorted_text(seed=5, order=3).splitlines()
    two = lines.index("\\2-grams:")
    first = next(i for i in range(two + 1, len(lines)) if lines[i].strip())
    fields = lines[first].split("\t")
    if change == "nan":
        fields[0] = "nan"
    elif change == "positive":
        fields[0] = "0.5"
    elif change == "huge":
        fields[0] = "-1e300"
    if change in ("nan", "positive", "huge"):
        lines[first] = "\t".join(fields)
    elif change == "unsorted":
        second = next(i for i in range(first + 1, len(lines)) if lines[i].strip())
        lines[first], lines[second] = lines[second], lines[first]
    else:
        lines = [line.replace("<s>", "<S>") for line in lines]
    path = tmp_path / "x.arpa"
    path.write_text("\n".join(lines) + "\n")
    assert not convert_streamed(path, tmp_path / "out.npz", PERMISSIVE)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.arpa"]


def test_the_command_writes_the_streamed_file_and_falls_back(tmp_path):
    """`maxarpa convert --binary` takes the streamed path for a key-ordered file and the
    in-memory one for another: the same file as `maxarpa.convert` either way; a bad line is
    one line naming the file and line, exit 2 (a format error), nothing written."""
    sorted_path = tmp_path / "sorted.arpa"
    sorted_path.write_text(sorted_text(seed=7, order=4))
    lines = sorted_path.read_text().splitlines()
    two = lines.index("\\2-grams:")
    first = next(i for i in range(two + 1, len(lines)) if lines[i].strip())
    second = next(i for i in range(first + 1, len(lines)) if lines[i].strip())
    lines[first], lines[second] = lines[second], lines[first]
    unsorted_path = tmp_path / "unsorted.arpa"
    unsorted_path.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for path in (sorted_path, unsorted_path):
        out, ref = tmp_path / f"{path.stem}.npz", tmp_path / f"{path.stem}.ref.npz"
        subprocess.run([sys.executable, "-m", "maxarpa", "convert", "--binary", "--quiet",
                        str(path), str(out)], check=True, env=env, cwd=tmp_path)
        maxarpa.convert(path, ref, binary=True)
        assert out.read_bytes() == ref.read_bytes()
        model = maxarpa.load(out, mmap=True)
        assert math.isclose(model.trie.nodes[0].log10p.sum(),
                            maxarpa.load(path).trie.nodes[0].log10p.sum())
    lines = sorted_path.read_text().splitlines()
    lines[first] = "\t".join(["-0.5x", *lines[first].split("\t")[1:]])
    bad = tmp_path / "bad.arpa"
    bad.write_text("\n".join(lines) + "\n")
    proc = subprocess.run([sys.executable, "-m", "maxarpa", "convert", "--binary", str(bad),
                           str(tmp_path / "bad.npz")], env=env, cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and not (tmp_path / "bad.npz").exists()
    assert proc.stderr.startswith(f"maxarpa: {bad}:{first + 1}:")
    assert proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr


NUMBER = st.builds(
    lambda sign, whole, point, frac: sign + whole + point + frac,
    st.sampled_from(["", "-", "+"]), st.text("0123456789", max_size=17),
    st.sampled_from([".", ""]), st.text("0123456789", max_size=17),
).filter(lambda s: any(c.isdigit() for c in s) and ("." in s or s.lstrip("+-").isdigit()))
FIXED = ["0.1", "-0", "-0.0", "+0", ".5", "5.", "-.5", "123456789012345", "9007199254740993",
         "-0.000000000000001", "0.30000000000000004", "-1.2345678901234", "-99", "1e0",
         # 17 digits, where m / 10^f is not the correctly rounded value: from_chars reads them
         "-39150.008063608377", "-8280814141.2917366", "-218594.68585017754",
         "-78048196151702.821", "-0.1234567890123456", "-1.000000000000001"]


@settings(max_examples=40, deadline=None)
@given(st.lists(NUMBER, min_size=1, max_size=60))
def test_numbers_read_as_pythons_float(tmp_path_factory, numbers):
    """The parser's exact fast path for short decimals (m / 10^f, both exact) and its
    from_chars path both read every number as Python's float() does, bit for bit."""
    numbers = FIXED + numbers
    lines = ["\\data\\", f"ngram 1={len(numbers)}", "", "\\1-grams:"]
    lines += [f"{x}\tw{i}\t{x}" for i, x in enumerate(numbers)]
    path = tmp_path_factory.mktemp("numbers") / "n.arpa"
    path.write_text("\n".join([*lines, "", "\\end\\", ""]))
    parsed = read_sorted_arpa(path)
    assert parsed is not None
    node = parsed[1].nodes[0]
    want = np.array([float(x) for x in numbers])
    for got in (node.log10p, node.log10bow):
        assert got.view(np.uint64).tolist() == want.view(np.uint64).tolist()


def _file_size_limit() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))


def test_the_streamed_command_writes_through_a_fifo_follows_a_symlink_and_fails_whole(
        tmp_path):
    """As tests/test_output_paths.py checks for every command, on a key-ordered file (the
    streamed path): a FIFO gets the bytes and stays a FIFO, a symbolic link's file is
    replaced, and a write stopped by the file size limit (the scratch file's first) is one
    line, exit 2, with nothing sent and no temporary or scratch file left."""
    src = tmp_path / "in" / "m.arpa"
    src.parent.mkdir()
    src.write_text(sorted_text(seed=9, order=3))
    temporaries = tmp_path / "tmpdir"
    temporaries.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(temporaries)}

    def run(out: Path, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "maxarpa", "convert", "--binary",
                               str(src), str(out)], env=env, cwd=tmp_path, timeout=300,
                              capture_output=True, text=True, **kwargs)

    plain = tmp_path / "plain.npz"
    assert run(plain).returncode == 0
    assert convert_streamed(src, tmp_path / "again.npz", DEFAULT_CONFIG)
    assert (tmp_path / "again.npz").read_bytes() == plain.read_bytes()
    fifo = tmp_path / "fifo.npz"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert run(fifo).returncode == 0
    reader.join(60)
    assert got == [plain.read_bytes()] and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "target.npz").write_bytes(b"old")
    link = tmp_path / "link.npz"
    link.symlink_to(elsewhere / "target.npz")
    assert run(link).returncode == 0
    assert link.is_symlink() and (elsewhere / "target.npz").read_bytes() == plain.read_bytes()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["target.npz"]
    limited = tmp_path / "limited.npz"
    proc = run(limited, preexec_fn=_file_size_limit)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.endswith(f": {limited}: cannot write the output: File too large\n")
    assert not limited.exists() and list(temporaries.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "again.npz", "elsewhere", "fifo.npz", "in", "link.npz", "plain.npz", "tmpdir"]
