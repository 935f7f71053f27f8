"""Corpus runs (arsdecode.batch): every id once, results equal to single-item calls, resumable.

The model is the embedded state_union 5-gram converted to a memory-mapped binary in a temporary
directory; the items are noisy keypad SMS lattices (tasks.sms.keypad). The slow tests use a
real Dask LocalCluster with two worker processes, and kill clients and workers for real.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from stop_signals import default_stop_signals

import maxarpa
from arsdecode.api import DEFAULT_LM
from arsdecode.batch.client import run_batch
from arsdecode.batch.io import ChunkWriter, read_done
from arsdecode.batch.worker import TaskSpec, item_seed
from arsdecode.errors import BatchError, ObservationError
from arsdecode.lattice import Lattice
from arsdecode.methods.ars import sample
from arsdecode.methods.dispatch import decode
from arsdecode.tasks.sms.keypad import KeypadChannel, sample_sentence

REPO_ROOT = Path(__file__).resolve().parent.parent
SENTENCES = [
    "the state of the union is strong .",
    "we must work together .",
    "i ask the congress to act now .",
    "our economy is growing .",
    "we will not fail .",
    "the american people want jobs .",
]
DECODE_FIELDS = ("tokens", "log_p", "log_q", "certified", "iterations", "states", "method")
SAMPLE_FIELDS = ("samples", "log_p", "seed", "trials", "acceptance_rate", "log_Z")


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("batch_model") / "state_union.npz"
    maxarpa.convert(DEFAULT_LM, path, binary=True)
    return path


@pytest.fixture(scope="module")
def lm(model_path):
    return maxarpa.load(model_path, mmap=True)


def make_items(lm, count: int, top_k: int = 12, seed: int = 5) -> list[dict]:
    """`count` lattice items; ids are strings, except every seventh, an integer."""
    channel = KeypadChannel.from_vocab(lm.vocab)
    rng = np.random.default_rng(seed)
    items = []
    for i in range(count):
        obs = sample_sentence(SENTENCES[i % len(SENTENCES)].split(), rng)
        item_id = i if i % 7 == 3 else f"sms-{i}"
        items.append({"id": item_id, **channel.build_lattice(obs, top_k=top_k).to_json_obj()})
    return items


def write_jsonl(path: Path, objs: list, extra_lines: tuple[str, ...] = ()) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs) + "".join(extra_lines))
    return path


def read_lines(path: Path) -> list[dict]:
    text = path.read_text()
    assert text == "" or text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def by_id(lines: list[dict]) -> dict:
    """Lines keyed by id, asserting that no id appears twice."""
    keys = [json.dumps(line["id"]) for line in lines]
    assert len(keys) == len(set(keys)), "an id was written twice"
    return {k: line for k, line in zip(keys, lines)}


def single_decode(lm, item: dict) -> dict:
    r = decode(lm, Lattice.from_json_obj(item))
    return {f: getattr(r, f) for f in DECODE_FIELDS}


def single_sample(lm, item: dict, n: int, seed: int) -> dict:
    s = item_seed(seed, item["id"])
    r = sample(lm, Lattice.from_json_obj(item), n, s)
    return {"samples": r.samples, "log_p": r.log_p, "seed": s, "trials": r.trials,
            "acceptance_rate": r.acceptance_rate, "log_Z": r.log_Z}


def assert_results(lines: list[dict], expected: dict[str, dict], fields: tuple[str, ...]):
    """Every expected id exactly once, each with exactly the single-item result."""
    got = by_id(lines)
    assert set(got) == set(expected)
    for key, want in expected.items():
        assert {f: got[key][f] for f in fields} == want, key
        times = [got[key][f] for f in ("seconds", "chunk_mean_seconds") if f in got[key]]
        assert len(times) == 1 and times[0] >= 0


@pytest.fixture(scope="module")
def items(lm):
    return make_items(lm, 40)


@pytest.fixture(scope="module")
def decoded(lm, items) -> dict[str, dict]:
    return {json.dumps(it["id"]): single_decode(lm, it) for it in items}


# ---- in-process runs (no Dask) ---------------------------------------------------------

def test_item_seed_is_a_hash_of_seed_and_id():
    digest = hashlib.sha256(b'7\x00"sms-1"').digest()
    assert item_seed(7, "sms-1") == int.from_bytes(digest[:8], "little")
    assert item_seed(7, "sms-1") != item_seed(8, "sms-1")
    assert item_seed(7, 1) != item_seed(7, "1")  # the id's JSON, not its str()


def test_tapered_chunks_shrink_to_single_items_at_the_end():
    from arsdecode.batch.io import Item, tapered_chunks

    items = [Item(str(i), i, i + 1, "", None) for i in range(100)]
    sizes = [len(c) for c in tapered_chunks(items, 16, 100, lambda: 2)]
    assert sum(sizes) == 100 and max(sizes) == 16
    assert sizes == sorted(sizes, reverse=True) and sizes[-3:] == [1, 1, 1]
    assert [it for c in tapered_chunks(items, 16, 100, lambda: 2) for it in c] == items
    # An estimate that is too low (say, blank lines counted out) still yields every item.
    assert sum(len(c) for c in tapered_chunks(items, 16, 10, lambda: 4)) == 100


def test_in_process_decode_equals_single_item(tmp_path, model_path, items, decoded):
    src = write_jsonl(tmp_path / "in.jsonl", items)
    out = tmp_path / "out.jsonl"
    stats = run_batch(TaskSpec("decode", str(model_path)), src, out, chunk_size=6)
    assert (stats.written, stats.errors, stats.done_before) == (len(items), 0, 0)
    lines = read_lines(out)
    assert [line["id"] for line in lines] == [it["id"] for it in items]  # in-process: in order
    assert_results(lines, decoded, DECODE_FIELDS)
    assert all(line["certified"] for line in lines)


def test_sample_equals_single_item_whatever_the_chunking(tmp_path, model_path, lm, items):
    some = items[:12]
    src = write_jsonl(tmp_path / "in.jsonl", some)
    spec = TaskSpec("sample", str(model_path), n=4, seed=11)
    expected = {json.dumps(it["id"]): single_sample(lm, it, 4, 11) for it in some}
    for size in (1, 5):
        out = tmp_path / f"out{size}.jsonl"
        run_batch(spec, src, out, chunk_size=size)
        assert_results(read_lines(out), expected, SAMPLE_FIELDS)
    assert len({json.dumps(e["samples"]) for e in expected.values()}) > 1


def test_bad_lines_become_error_lines_and_the_run_goes_on(tmp_path, model_path, items, decoded):
    good = items[:5]
    bad = (
        "not json\n",
        '{"positions": [[["the", 0.0]]]}\n',  # no id
        '{"id": true, "positions": [[["the", 0.0]]]}\n',  # a bool is not an id
        '["a", "list"]\n',
        '{"id": "empty", "positions": []}\n',
        '{"id": "nan", "positions": [[["the", NaN]]]}\n',
        '{"id": "cand", "positions": [[["the"]]]}\n',
        json.dumps(good[0]) + "\n",  # a repeated id
        "\n",  # blank lines are skipped
        '{"id": "tail", "positions": [[["the", 0.0]], [["union", 0.0]]]}\n',
    )
    src = write_jsonl(tmp_path / "in.jsonl", good, bad)
    out = tmp_path / "out.jsonl"
    stats = run_batch(TaskSpec("decode", str(model_path)), src, out, chunk_size=3)
    lines = read_lines(out)
    assert stats.errors == 8 and stats.written == len(lines) == 14
    errors = [line for line in lines if "error" in line]
    assert [e["line"] for e in errors] == [6, 7, 8, 9, 10, 11, 12, 13]
    assert [e["id"] for e in errors] == [None, None, None, None, "empty", None, "cand", None]
    for e in errors:
        assert e["error"].startswith(f"line {e['line']}: ") and "\n" not in e["error"]
        assert set(e) == {"id", "line", "error"}
    assert "repeats line 1" in errors[-1]["error"]
    ok = [line for line in lines if "error" not in line]
    assert [line["id"] for line in ok] == [it["id"] for it in good] + ["tail"]
    assert_results(ok[:5], {json.dumps(it["id"]): decoded[json.dumps(it["id"])] for it in good},
                   DECODE_FIELDS)
    assert ok[5]["tokens"] == ["the", "union"]
    # A rerun finds every line (errors included) done, and writes nothing.
    again = run_batch(TaskSpec("decode", str(model_path)), src, out)
    assert (again.written, again.done_before) == (0, 14)
    assert read_lines(out) == lines


def test_a_bug_in_a_worker_stops_the_run_and_an_input_error_does_not(tmp_path, model_path,
                                                                      items, monkeypatch):
    """Only the library's input errors become error lines. A plain ValueError (what a numpy
    shape bug raises) propagates from the worker, on the whole-chunk path (`decode_many`) and
    on the one-item path (`solve_one`: sampling, or a chunk that `decode_many` rejected)."""
    import arsdecode.methods.dispatch as dispatch
    from arsdecode.batch import worker

    src = write_jsonl(tmp_path / "in.jsonl", items[:4])

    def bug(*args, **kwargs):
        raise ValueError("operands could not be broadcast together")

    def chunk_with_a_bad_item(*args, **kwargs):
        raise ObservationError("one item of the chunk is bad")

    def bad_input(spec, lm, item, lattice):
        raise ObservationError(f"line {item.lineno}: a word no tag can emit")

    def run(task: str, name: str):
        return run_batch(TaskSpec(task, str(model_path)), src, tmp_path / name, chunk_size=2)

    monkeypatch.setattr(dispatch, "decode_many", bug)
    with pytest.raises(ValueError, match="broadcast"):
        run("decode", "chunk_bug.jsonl")
    assert not (tmp_path / "chunk_bug.jsonl").exists()  # nothing written, no file left behind

    monkeypatch.setattr(dispatch, "decode_many", chunk_with_a_bad_item)
    monkeypatch.setattr(worker, "solve_one", bug)
    for task in ("decode", "sample"):
        with pytest.raises(ValueError, match="broadcast"):
            run(task, f"{task}_bug.jsonl")
        assert not (tmp_path / f"{task}_bug.jsonl").exists()

    monkeypatch.setattr(worker, "solve_one", bad_input)
    for task in ("decode", "sample"):
        stats = run(task, f"{task}.jsonl")
        lines = read_lines(tmp_path / f"{task}.jsonl")
        assert (stats.written, stats.errors) == (4, 4)
        assert [e["error"] for e in lines] == [f"line {k}: a word no tag can emit"
                                               for k in (1, 2, 3, 4)]
        assert [e["id"] for e in lines] == [it["id"] for it in items[:4]]


def test_resume_skips_done_ids_and_cuts_a_truncated_tail(tmp_path, model_path, items, decoded):
    spec = TaskSpec("decode", str(model_path))
    out = tmp_path / "out.jsonl"
    run_batch(spec, write_jsonl(tmp_path / "first.jsonl", items[:15]), out, chunk_size=4)
    whole = out.read_bytes()
    half_line = json.dumps({"id": items[15]["id"], "tokens": ["the"]}).encode()[:25]
    out.write_bytes(whole + half_line)  # a crash in the middle of a write
    assert json.dumps(items[15]["id"]) not in read_done_copy(out, tmp_path)
    stats = run_batch(spec, write_jsonl(tmp_path / "all.jsonl", items), out, chunk_size=4)
    assert (stats.done_before, stats.written) == (15, len(items) - 15)
    assert out.read_bytes().startswith(whole)
    assert_results(read_lines(out), decoded, DECODE_FIELDS)


def read_done_copy(path: Path, tmp_path: Path) -> set[str]:
    """read_done on a copy (it truncates the file it reads)."""
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(path.read_bytes())
    done = read_done(copy)
    assert copy.read_bytes().endswith(b"\n")
    return done


def test_an_output_file_that_is_not_ours_is_refused(tmp_path, model_path, items):
    src = write_jsonl(tmp_path / "in.jsonl", items[:2])
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "a", "tokens": []}\nsome notes\n')
    with pytest.raises(BatchError, match=r"out\.jsonl:2: not a batch result line"):
        run_batch(TaskSpec("decode", str(model_path)), src, out)
    assert out.read_text() == '{"id": "a", "tokens": []}\nsome notes\n'


def test_two_runs_cannot_write_one_file(tmp_path, model_path, items):
    src = write_jsonl(tmp_path / "in.jsonl", items[:2])
    out = tmp_path / "out.jsonl"
    holder = ChunkWriter(out)  # as a run in progress holds it
    try:
        with pytest.raises(BatchError, match="another batch run is writing"):
            run_batch(TaskSpec("decode", str(model_path)), src, out)
    finally:
        holder.close()
    assert run_batch(TaskSpec("decode", str(model_path)), src, out).written == 2


def test_a_worker_loads_a_model_once_and_again_when_rewritten(tmp_path, model_path):
    from arsdecode.batch import worker as batch

    path = tmp_path / "copy.npz"
    path.write_bytes(model_path.read_bytes())
    spec = TaskSpec("decode", str(path))
    first, _ = batch.worker_models(spec)
    assert batch.worker_models(spec)[0] is first
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert batch.worker_models(spec)[0] is not first
    assert sum(key[0][0] == str(path) for key in batch._WORKER_MODELS) == 1


def run_cli(*args, timeout=300, **kw):
    return subprocess.run([sys.executable, "-m", "arsdecode", "batch", *args],
                          capture_output=True, text=True, timeout=timeout, **kw)


def test_cli_converts_a_text_model_once_and_rejects_bad_options(tmp_path, lm, items):
    src = write_jsonl(tmp_path / "in.jsonl", items[:3])
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = run_cli("--lm", str(DEFAULT_LM), "--in", str(src), "--out", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    assert "converting" in proc.stderr and "wrote 3 lines (0 errors)" in proc.stderr
    assert len(list((tmp_path / "cache" / "arsdecode" / "models").glob("*.npz"))) == 1
    assert not (tmp_path / ".arsdecode-models").exists()  # nothing beside --out
    assert "item/s" not in proc.stderr  # no progress bar when stderr is piped
    proc = run_cli("--lm", str(DEFAULT_LM), "--in", str(src), "--out", str(out), env=env)
    assert proc.returncode == 0 and "converting" not in proc.stderr
    assert "wrote 0 lines (0 errors), 3 already done" in proc.stderr
    for bad in (["--in", str(tmp_path / "missing.jsonl")], ["--workers", "2", "--scheduler",
                                                          "tcp://127.0.0.1:1", "--in", str(src)]):
        proc = run_cli("--lm", str(DEFAULT_LM), "--out", str(tmp_path / "o2.jsonl"), *bad)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith("arsdecode: ") and "Traceback" not in proc.stderr


def test_progress_bar_on_a_terminal(tmp_path, model_path, items):
    import fcntl
    import struct
    import termios

    src = write_jsonl(tmp_path / "in.jsonl", items[:6])
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "arsdecode", "batch", "--lm", str(model_path), "--in", str(src),
         "--out", str(tmp_path / "out.jsonl"), "--chunk-size", "2"], stderr=slave)
    os.close(slave)
    shown = b""
    while chunk := _read_pty(master):
        shown += chunk
    assert proc.wait(timeout=60) == 0
    assert b"6/6" in shown and b"item/s" in shown


def _read_pty(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except OSError:  # the child closed the terminal
        return b""


def test_a_sample_line_is_reproduced_by_the_single_item_command(tmp_path, model_path, items):
    src = write_jsonl(tmp_path / "in.jsonl", items[:2])
    out = tmp_path / "out.jsonl"
    proc = run_cli("--lm", str(model_path), "--in", str(src), "--out", str(out),
                   "--task", "sample", "-n", "5", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    line = read_lines(out)[1]
    assert line["seed"] == item_seed(3, items[1]["id"])
    write_jsonl(tmp_path / "one.json", [{"positions": items[1]["positions"]}])
    single = subprocess.run(
        [sys.executable, "-m", "arsdecode", "sample", "--lm", str(model_path), "--lattice",
         str(tmp_path / "one.json"), "-n", "5", "--seed", str(line["seed"]), "--json"],
        capture_output=True, text=True, timeout=300)
    assert single.returncode == 0, single.stderr
    assert {k: json.loads(single.stdout)[k] for k in ("samples", "log_p")} == \
        {k: line[k] for k in ("samples", "log_p")}


# ---- a real Dask cluster ------------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    import logging

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=logging.ERROR) as lc:
        with distributed.Client(lc) as client:
            yield lc.scheduler_address, client


@pytest.fixture(scope="module")
def many(lm):
    """Enough items for a run of several seconds on two workers (to interrupt it)."""
    return make_items(lm, 240, top_k=25, seed=9)


@pytest.fixture(scope="module")
def many_decoded(lm, many) -> dict[str, dict]:
    return {json.dumps(it["id"]): single_decode(lm, it) for it in many}


def count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def wait_for(predicate, timeout: float = 120.0, every: float = 0.02) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("timed out")
        time.sleep(every)


@pytest.mark.slow
def test_cluster_every_id_once_equal_to_single_items(tmp_path, cluster, model_path, items,
                                                     decoded, lm):
    address, _ = cluster
    src = write_jsonl(tmp_path / "in.jsonl", items)
    out = tmp_path / "out.jsonl"
    stats = run_batch(TaskSpec("decode", str(model_path)), src, out, scheduler=address,
                      chunk_size=3)
    assert stats.written == len(items)
    assert_results(read_lines(out), decoded, DECODE_FIELDS)
    ordered = tmp_path / "ordered.jsonl"
    run_batch(TaskSpec("decode", str(model_path)), src, ordered, scheduler=address,
              chunk_size=2, ordered=True)
    assert [line["id"] for line in read_lines(ordered)] == [it["id"] for it in items]
    some = items[:10]
    spec = TaskSpec("sample", str(model_path), n=3, seed=5)
    sampled = tmp_path / "sampled.jsonl"
    run_batch(spec, write_jsonl(tmp_path / "some.jsonl", some), sampled, scheduler=address,
              chunk_size=1)
    expected = {json.dumps(it["id"]): single_sample(lm, it, 3, 5) for it in some}
    assert_results(read_lines(sampled), expected, SAMPLE_FIELDS)
    # A worker that cannot open the model fails the run with the worker's own error.
    with pytest.raises(FileNotFoundError, match="missing.npz"):
        run_batch(TaskSpec("decode", str(tmp_path / "missing.npz")), src,
                  tmp_path / "none.jsonl", scheduler=address)
    assert not (tmp_path / "none.jsonl").exists()


@pytest.mark.slow
def test_cli_local_cluster_interrupted_then_resumed(tmp_path, model_path, many, many_decoded):
    pytest.importorskip("distributed")
    src = write_jsonl(tmp_path / "in.jsonl", many)
    out = tmp_path / "out.jsonl"
    args = ("--lm", str(model_path), "--in", str(src), "--out", str(out), "--workers", "2",
            "--chunk-size", "4")
    proc = subprocess.Popen([sys.executable, "-m", "arsdecode", "batch", *args],
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=default_stop_signals)
    try:
        wait_for(lambda: count_lines(out) >= 20 or proc.poll() is not None)
        assert proc.poll() is None, proc.stderr.read()
        os.killpg(proc.pid, signal.SIGINT)  # as a Ctrl-C at the terminal: the whole group
        assert proc.wait(timeout=120) == 130
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "interrupted" in proc.stderr.read()
    first = count_lines(out)
    assert 20 <= first < len(many)
    again = run_cli(*args)
    assert again.returncode == 0, again.stderr
    assert f"{first} already done" in again.stderr
    assert_results(read_lines(out), many_decoded, DECODE_FIELDS)


@pytest.mark.slow
def test_client_killed_then_resumed(tmp_path, cluster, model_path, many, many_decoded):
    address, _ = cluster
    src = write_jsonl(tmp_path / "in.jsonl", many)
    out = tmp_path / "out.jsonl"
    args = ("--lm", str(model_path), "--in", str(src), "--out", str(out), "--scheduler",
            address, "--chunk-size", "4")
    proc = subprocess.Popen([sys.executable, "-m", "arsdecode", "batch", *args],
                            stderr=subprocess.DEVNULL)
    wait_for(lambda: count_lines(out) >= 30 or proc.poll() is not None)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert 30 <= count_lines(out) < len(many)
    again = run_cli(*args)
    assert again.returncode == 0, again.stderr
    assert_results(read_lines(out), many_decoded, DECODE_FIELDS)


@pytest.mark.slow
def test_a_killed_worker_loses_nothing_and_duplicates_nothing(tmp_path, cluster, model_path,
                                                              many, many_decoded):
    address, client = cluster
    client.wait_for_workers(2, timeout=120)
    src = write_jsonl(tmp_path / "in.jsonl", many)
    out = tmp_path / "out.jsonl"
    args = ("--lm", str(model_path), "--in", str(src), "--out", str(out), "--scheduler",
            address, "--chunk-size", "8")
    proc = subprocess.Popen([sys.executable, "-m", "arsdecode", "batch", *args],
                            stderr=subprocess.PIPE, text=True)
    try:
        pids = client.run(os.getpid)
        victim = sorted(pids)[0]
        # Kill it while it holds a chunk, after some results are already written.
        wait_for(lambda: count_lines(out) >= 16 and client.processing()[victim])
        os.kill(pids[victim], signal.SIGKILL)
        assert proc.wait(timeout=300) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert_results(read_lines(out), many_decoded, DECODE_FIELDS)
    client.wait_for_workers(2, timeout=120)  # the nanny restarted it
    assert pids[victim] not in client.run(os.getpid).values()


def poison_plugin(poison_id):
    """A worker plugin that kills its worker process (os._exit, as the kernel's OOM killer
    would) whenever it starts a chunk holding `poison_id`. Defined in a function so that
    cloudpickle ships the class by value to worker processes that cannot import this file."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class KillOnPoison(WorkerPlugin):
        name = "kill-on-poison"

        def setup(self, worker):
            self.worker = worker

        def transition(self, key, start, finish, **kwargs):
            if finish != "executing":
                return
            args = getattr(self.worker.state.tasks[key].run_spec, "args", ())
            chunk = args[1] if len(args) == 2 and isinstance(args[1], list) else []
            if any(getattr(item, "id", None) == poison_id for item in chunk):
                os._exit(1)

    return KillOnPoison()


@pytest.mark.slow
def test_an_item_that_kills_its_workers_becomes_an_error_line(tmp_path, model_path, items,
                                                              decoded):
    """A chunk that keeps killing its workers is split; only the item that still kills them
    becomes an error line, every other id gets its single-item result, once."""
    distributed = pytest.importorskip("distributed")
    import dask

    from arsdecode.batch.client import local_cluster

    poison = items[5]["id"]
    src = write_jsonl(tmp_path / "in.jsonl", items[:12])
    expected = {k: v for k, v in decoded.items()
                if k in {json.dumps(it["id"]) for it in items[:12]} and k != json.dumps(poison)}
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), local_cluster(2) as lc:
        with distributed.Client(lc) as client:  # closed before run_batch opens its own
            client.register_plugin(poison_plugin(poison))
        for ordered, chunk in ((False, 4), (True, 3)):
            out = tmp_path / f"out-{ordered}.jsonl"
            stats = run_batch(TaskSpec("decode", str(model_path)), src, out,
                              scheduler=lc.scheduler_address, chunk_size=chunk, ordered=ordered)
            assert (stats.written, stats.errors) == (12, 1)
            lines = read_lines(out)
            if ordered:
                assert [line["id"] for line in lines] == [it["id"] for it in items[:12]]
            bad = [line for line in lines if line["id"] == poison]
            assert bad == [{"id": poison, "line": 6, "error":
                            "line 6: killed the workers running it repeatedly (out of memory?)"}]
            assert_results([line for line in lines if line["id"] != poison], expected,
                           DECODE_FIELDS)


@pytest.mark.slow
def test_tag_task_on_the_cluster_equals_single_sentences(tmp_path, cluster):
    from arsdecode.tasks.pos.emissions import TnTEmissions
    from arsdecode.tasks.pos.evaluation import read_tagged
    from data_prep.pos_data import DataError, default_data_dir, prepare

    try:
        data_dir = default_data_dir()
    except DataError:  # a worktree has no ../shared: use the session's shared data
        data_dir = Path("/work/shared/data/nltk")
    models = tmp_path / "pos"
    prepare(models, data_dir, orders=[3])
    sentences = [[w for w, _ in s] for s in read_tagged(models / "test.tsv")[:30]]
    objs = [{"id": f"t{i}", "tokens": words} for i, words in enumerate(sentences)]
    src = write_jsonl(tmp_path / "in.jsonl", objs, ('{"id": "none", "tokens": []}\n',))
    out = tmp_path / "out.jsonl"
    address, _ = cluster
    proc = run_cli("--task", "tag", "--models", str(models), "--order", "3", "--in", str(src),
                   "--out", str(out), "--scheduler", address, "--ordered")
    assert proc.returncode == 0, proc.stderr
    lines = read_lines(out)
    assert [line["id"] for line in lines] == [o["id"] for o in objs] + ["none"]
    assert lines[-1]["error"].startswith("line 31: ") and "tags" not in lines[-1]
    lm = maxarpa.load(models / "tags.3.maxarpa")
    emissions = TnTEmissions.load(models / "emissions.json.gz")
    for obj, line in zip(objs, lines):
        r = decode(lm, emissions.lattice(obj["tokens"]))
        assert (line["tokens"], line["tags"], line["log_p"], line["certified"]) == \
            (obj["tokens"], r.tokens, r.log_p, True)


@pytest.mark.slow
def test_local_cluster_workers_are_quiet():
    """`--workers N` starts workers without Dask's stack profiler and with slow timers (they
    contend with the decode for the GIL), and with worker saturation 1.0."""
    distributed = pytest.importorskip("distributed")
    import dask

    from arsdecode.batch.client import QUIET_WORKERS, local_cluster

    with local_cluster(1) as lc, distributed.Client(lc) as client:
        seen = client.run(lambda: {k: dask.config.get(k) for k in QUIET_WORKERS})
        assert list(seen.values()) == [QUIET_WORKERS]
        assert lc.scheduler.WORKER_SATURATION == 1.0
