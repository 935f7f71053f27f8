"""`arsdecode batch` and `sample` on the edges (issue 19, sections C and D): runs where every
line fails, --retry-errors, stdin and stdout, SIGTERM, the option grammar, honest timings.

Real runs of the command on the shipped 5-gram (converted once to a binary model, as a batch
run does) and small lattices written by the tests.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import maxarpa
from arsdecode.api import DEFAULT_LM
from stream_lines import first_line

LATTICE = {"positions": [[["the", -0.1], ["a", -1.0]], [["nation", -0.2], ["people", -0.3]],
                         [["is", 0.0], ["was", -0.4]]]}


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "state_union.npz"
    maxarpa.convert(DEFAULT_LM, path, binary=True)
    return path


def batch(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arsdecode", "batch", *args],
                          capture_output=True, text=True, timeout=300, **kwargs)


def write_items(path: Path, count: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"x{i}", **LATTICE}) + "\n"
                            for i in range(count)))
    return path


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def one_line_error(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    for w in words:
        assert w in proc.stderr, (w, proc.stderr)


def test_a_run_where_every_line_fails_exits_2_and_retry_errors_redoes_them(tmp_path, model):
    src = write_items(tmp_path / "in.jsonl", 4)
    out = tmp_path / "out.jsonl"
    failed = batch("--lm", str(model), "--in", str(src), "--out", str(out), "--task", "tag")
    assert failed.returncode == 2, failed.stderr
    assert "every one of the 4 lines failed" in failed.stderr
    assert all("error" in line for line in lines_of(out))
    # without --retry-errors, the error lines count as done; with it, they run again
    again = batch("--lm", str(model), "--in", str(src), "--out", str(out))
    assert again.returncode == 0 and "4 already done" in again.stderr
    retried = batch("--lm", str(model), "--in", str(src), "--out", str(out), "--retry-errors")
    assert retried.returncode == 0, retried.stderr
    assert "wrote 4 lines (0 errors), 0 already done" in retried.stderr
    results = lines_of(out)
    assert sorted(r["id"] for r in results) == ["x0", "x1", "x2", "x3"]  # each id once
    assert all("error" not in r and r["certified"] for r in results)


def test_retry_errors_keeps_the_good_lines_as_they_are(tmp_path, model):
    src = tmp_path / "in.jsonl"
    bad = {"id": "bad", "positions": [[["the", float("nan")]]]}
    src.write_text(json.dumps({"id": "good", **LATTICE}) + "\n"
                   + json.dumps(bad).replace("NaN", '"oops"') + "\n")
    out = tmp_path / "out.jsonl"
    first = batch("--lm", str(model), "--in", str(src), "--out", str(out))
    assert first.returncode == 0, first.stderr  # one line of two failed: not a failed run
    good_line = next(line for line in out.read_text().splitlines() if '"good"' in line)
    src.write_text(json.dumps({"id": "good", **LATTICE}) + "\n"
                   + json.dumps({"id": "bad", **LATTICE}) + "\n")
    retried = batch("--lm", str(model), "--in", str(src), "--out", str(out), "--retry-errors")
    assert retried.returncode == 0, retried.stderr
    assert "wrote 1 lines (0 errors), 1 already done" in retried.stderr
    text = out.read_text().splitlines()
    assert text[0] == good_line and len(text) == 2  # the good line untouched, not redone
    assert json.loads(text[1])["id"] == "bad" and "error" not in json.loads(text[1])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]


def test_in_directory_and_dash_for_stdin_and_stdout(tmp_path, model):
    one_line_error(batch("--lm", str(model), "--in", str(tmp_path), "--out",
                         str(tmp_path / "o.jsonl")), "directory")
    src = write_items(tmp_path / "in.jsonl", 3)
    proc = batch("--lm", str(model), "--in", "-", "--out", "-", input=src.read_text())
    assert proc.returncode == 0, proc.stderr
    streamed = [json.loads(line) for line in proc.stdout.splitlines()]
    out = tmp_path / "out.jsonl"
    assert batch("--lm", str(model), "--in", "-", "--out", str(out),
                 input=src.read_text()).returncode == 0
    from_file = lines_of(out)
    assert [r["id"] for r in streamed] == ["x0", "x1", "x2"]
    assert [r["tokens"] for r in streamed] == [r["tokens"] for r in from_file]
    assert not (tmp_path / "-").exists()


def test_sampling_batch_that_cannot_fit_is_refused(tmp_path, model):
    src = write_items(tmp_path / "in.jsonl", 1)
    proc = batch("--lm", str(model), "--in", str(src), "--out", str(tmp_path / "o.jsonl"),
                 "--task", "sample", "--batch", "99999999999")
    one_line_error(proc, "--batch 99999999999", "memory")
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("value", ["0", "-1"])
def test_workers_below_one_are_refused_alike(tmp_path, model, value):
    src = write_items(tmp_path / "in.jsonl", 1)
    proc = batch("--lm", str(model), "--in", str(src), "--out", str(tmp_path / "o.jsonl"),
                 "--workers", value)
    one_line_error(proc, "--workers", ">= 1")
    assert not (tmp_path / "o.jsonl").exists()


def test_batch_lines_and_lattice_files_share_one_grammar(tmp_path, model):
    """-Infinity is a weight in both; NaN in neither."""
    ruled_out = {"positions": [[["the", float("-inf")], ["a", -1.0]], [["nation", 0.0]]]}
    lattice = tmp_path / "lat.json"
    lattice.write_text(json.dumps(ruled_out))
    single = subprocess.run([sys.executable, "-m", "arsdecode", "decode", "--lm", str(model),
                             "--lattice", str(lattice), "--json"], capture_output=True,
                            text=True, timeout=120)
    assert single.returncode == 0, single.stderr
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": 1, **ruled_out}) + "\n"
                   + json.dumps({"id": 2, **ruled_out}).replace("-Infinity", "NaN") + "\n")
    out = tmp_path / "out.jsonl"
    assert batch("--lm", str(model), "--in", str(src), "--out", str(out)).returncode == 0
    first, second = lines_of(out)
    assert first["tokens"] == json.loads(single.stdout)["tokens"] == ["a", "nation"]
    assert "NaN" in second["error"]
    lattice.write_text(json.dumps(ruled_out).replace("-Infinity", "NaN"))
    single = subprocess.run([sys.executable, "-m", "arsdecode", "decode", "--lm", str(model),
                             "--lattice", str(lattice)], capture_output=True, text=True,
                            timeout=120)
    assert single.returncode == 2 and "NaN" in single.stderr


def test_batch_times_say_whether_they_are_per_item(tmp_path, model):
    src = write_items(tmp_path / "in.jsonl", 4)
    out = tmp_path / "decoded.jsonl"
    assert batch("--lm", str(model), "--in", str(src), "--out", str(out),
                 "--chunk-size", "4").returncode == 0
    for line in lines_of(out):  # four lattices decoded in one call: a chunk's mean
        assert "seconds" not in line and line["chunk_mean_seconds"] >= 0
    out = tmp_path / "sampled.jsonl"
    assert batch("--lm", str(model), "--in", str(src), "--out", str(out), "--task", "sample",
                 "-n", "3").returncode == 0
    for line in lines_of(out):  # sampled one item at a time: its own time
        assert "chunk_mean_seconds" not in line and line["seconds"] >= 0


def test_tag_file_json_timing_says_it_is_a_chunk_mean(tmp_path):
    text = tmp_path / "sents.txt"
    text.write_text("The dog barked .\nA cat sat .\n")
    proc = subprocess.run([sys.executable, "-m", "arsdecode", "tag", "--file", str(text),
                           "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for line in proc.stdout.splitlines():
        timing = json.loads(line)["timing"]
        assert "seconds" not in timing and timing["chunk_mean_seconds"] >= 0
        assert timing["chunk_sentences"] == 2
    proc = subprocess.run([sys.executable, "-m", "arsdecode", "tag", "The dog barked .",
                           "--json"], capture_output=True, text=True, timeout=120)
    assert json.loads(proc.stdout)["timing"]["seconds"] >= 0  # one sentence: its own time


def wait_for_lines(path: Path, count: int, proc: subprocess.Popen, timeout: float = 120):
    end = time.monotonic() + timeout
    while not (path.exists() and path.read_bytes().count(b"\n") >= count):
        if proc.poll() is not None:
            raise AssertionError(f"ended early ({proc.returncode}): {proc.stderr.read()}")
        if time.monotonic() > end:
            raise AssertionError("timed out")
        time.sleep(0.02)


def test_sigterm_stops_a_batch_run_like_ctrl_c(tmp_path, model):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, **LATTICE}) + "\n" for i in range(3000)))
    out = tmp_path / "out.jsonl"
    args = ("--lm", str(model), "--in", str(src), "--out", str(out), "--task", "sample",
            "-n", "20", "--chunk-size", "2")
    proc = subprocess.Popen([sys.executable, "-m", "arsdecode", "batch", *args],
                            stderr=subprocess.PIPE, text=True)
    wait_for_lines(out, 4, proc)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 143
    err = proc.stderr.read()
    kept = out.read_bytes().count(b"\n")
    assert f"stopped after writing {kept} lines" in err and "SIGTERM" in err, err
    assert "Traceback" not in err and 4 <= kept < 3000
    assert out.read_text().endswith("\n")  # whole lines only
    again = batch(*args)
    assert again.returncode == 0 and f"{kept} already done" in again.stderr
    ids = [line["id"] for line in lines_of(out)]
    assert sorted(ids) == list(range(3000))


def test_sigterm_stops_sampling_and_keeps_the_streamed_samples(tmp_path):
    lattice = tmp_path / "lat.json"
    lattice.write_text(json.dumps(LATTICE))
    proc = subprocess.Popen(
        [sys.executable, "-m", "arsdecode", "sample", "--lm", str(DEFAULT_LM), "--lattice",
         str(lattice), "-n", "100000000", "--jsonl"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, bufsize=0)
    first = first_line(proc)  # unbuffered: nothing after it is lost to communicate()
    assert first, proc.stderr.read()
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    rest_bytes, err_bytes = proc.communicate(timeout=60)
    rest, err = rest_bytes.decode(), err_bytes.decode()
    assert proc.returncode == 143, err
    lines = [first.decode(), *rest.splitlines()]
    assert all(len(json.loads(line)["tokens"]) == 3 for line in lines)
    assert f"stopped after {len(lines)} of 100000000 samples" in err, err
    assert "terminated by SIGTERM" in err and "Traceback" not in err
    assert os.path.exists(lattice)
