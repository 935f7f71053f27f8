"""Corpus runs: decode, sample or tag a JSONL file of items, in-process or on a Dask cluster.

Why this shape:
- **One writer.** Workers never touch the output. They return finished chunks as JSON lines;
  the client alone appends each chunk with one write, then flush and fsync. A crash can only
  leave a truncated last line, which the next run cuts off before appending.
- **Resumable, never twice.** A run first reads the ids already in --out and skips them. A
  worker killed mid-chunk returns nothing, so Dask reruns the chunk elsewhere and it is written
  once, when its result reaches the client. An advisory lock keeps two runs off one file.
- **Deterministic.** Sampling seeds are `item_seed(seed, id)`: a hash of (seed, id), not of
  the position, the worker or the chunk, so results do not depend on the number of workers.
- **Shared model.** Tasks carry a path, not a model: each worker process loads the binary
  model once (`_WORKER_MODELS`, keyed by path) and keeps it for every chunk it runs.

Output lines are `{"id", ...fields of the single-item command}`, or `{"id", "line",
"error"}` for an input line that cannot be run; `"id": null` when the line has no usable id.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arsdecode.batch.io import (
    BatchError,
    ChunkWriter,
    Item,
    StreamWriter,
    chunked,
    count_lines,
    read_done,
    scan_input,
    tapered_chunks,
)
from arsdecode.errors import ArsDecodeError
from arsdecode.termination import Terminated
from maxarpa.config import DEFAULT_CONFIG, Config

TASKS = ("decode", "sample", "tag")
DEFAULT_CHUNK = 16


@dataclass(frozen=True)
class TaskSpec:
    """What every item of a run does; small and picklable, sent with each chunk."""

    task: str = "decode"
    lm: str = ""  # path of the binary model, valid on every worker
    emissions: str | None = None  # tag: path of emissions.json.gz
    n: int = 1  # sample: samples per item
    seed: int = 0  # sample: run seed; item seeds derive from (seed, id)
    variant: str | None = None  # None: the engine's default refinement variant
    max_iterations: int | None = None
    method: str = "auto"  # decode/tag: the exact method, as `arsdecode decode --method`
    batch: int = 100
    target_ar: float = 0.2
    ar_window: int = 100
    config: Config = DEFAULT_CONFIG  # strictness of the model, as `--lm`'s flags say


@dataclass(frozen=True)
class BatchStats:
    done_before: int  # result lines already in --out
    written: int  # lines this run appended
    errors: int  # of which error lines
    seconds: float


def item_seed(seed: int, item_id: Any) -> int:
    """The sampling seed of one item: 64 bits of sha256(seed, JSON id). The single-item command
    `arsdecode sample --seed item_seed(S, id)` reproduces the batch line exactly."""
    digest = hashlib.sha256(f"{int(seed)}\0{json.dumps(item_id)}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


# ---- the worker side ----------------------------------------------------------------------

_WORKER_MODELS: dict[tuple, tuple[Any, Any]] = {}


def load_shared_model(path: str, config: Config = DEFAULT_CONFIG):
    """The model a worker keeps for the whole run: the binary model's arrays memory-mapped
    read-only, so every worker process on a machine shares one copy in the page cache."""
    import maxarpa

    return maxarpa.load(path, mmap=True, config=config)


def worker_models(spec: TaskSpec) -> tuple[Any, Any]:
    """(lm, emissions) of this worker process, loaded on its first chunk and then reused.

    Keyed by path, size and mtime: a long-lived worker of an external cluster reloads a model
    file that was rewritten between runs, and drops the older copy."""
    key: tuple = (*((p, *_stamp(p)) for p in (spec.lm, spec.emissions) if p is not None),
                  spec.config)
    if key not in _WORKER_MODELS:
        emissions = None
        if spec.emissions is not None:
            from arsdecode.tasks.pos.models import load_emissions

            emissions = load_emissions(spec.emissions)
        lm = load_shared_model(spec.lm, spec.config)
        for old in [k for k in _WORKER_MODELS if k[0][0] == spec.lm]:
            del _WORKER_MODELS[old]
        _WORKER_MODELS[key] = (lm, emissions)
    return _WORKER_MODELS[key]


def _stamp(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def _lattice(spec: TaskSpec, item: Item, emissions) -> tuple[Any, list[str] | None]:
    from arsdecode.lattice import Lattice, json_constant

    obj = json.loads(item.text, parse_constant=json_constant)  # the grammar of lattice files
    where = f"line {item.lineno}"
    if spec.task != "tag":
        return Lattice.from_json_obj(obj, source=where), None
    words = obj.get("tokens")
    if not isinstance(words, list) or not words or not all(isinstance(w, str) for w in words):
        raise ArsDecodeError(f'{where}: "tokens" must be a non-empty list of strings')
    return emissions.lattice(words), words


def solve_one(spec: TaskSpec, lm, item: Item, lattice) -> dict:
    """The fields of the single-item command for one lattice."""
    from arsdecode.methods.ars import sample
    from arsdecode.methods.dispatch import decode

    start = time.perf_counter()
    engine = _engine(spec)
    if spec.task == "sample":
        seed = item_seed(spec.seed, item.id)
        s = sample(lm, lattice, spec.n, seed, batch=spec.batch, target_ar=spec.target_ar,
                   ar_window=spec.ar_window, **engine)
        return {"samples": s.samples, "log_p": s.log_p, "seed": seed, "trials": s.trials,
                "acceptance_rate": s.acceptance_rate, "log_Z": s.log_Z,
                "seconds": time.perf_counter() - start}
    r = decode(lm, lattice, method=spec.method,  # type: ignore[arg-type]
               max_iterations=spec.max_iterations, **engine)
    return _decode_fields(r, {"seconds": time.perf_counter() - start})


def _engine(spec: TaskSpec) -> dict[str, Any]:
    return {} if spec.variant is None else {"variant": spec.variant}


def _decode_fields(r, timing: dict[str, float]) -> dict:
    """The fields of `arsdecode decode --json` that a batch line carries, and its time:
    {"seconds": s} measured for the item, or {"chunk_mean_seconds": s} when only its chunk
    could be timed (the name says which, so nobody reads a chunk's average as one item's)."""
    return {"tokens": r.tokens, "log_p": r.log_p, "log_q": r.log_q, "certified": r.certified,
            "iterations": r.iterations, "states": r.states, "method": r.method, **timing}


def solve_chunk(spec: TaskSpec, lm, items: list[Item], lattices: list) -> list[dict | str]:
    """All lattices of a chunk in one call: a result dict, or an error message, per item.

    Decoding runs `methods.dispatch.decode_many` on the whole chunk (the compiled full DP in
    one call, ARS in lockstep with batched queries; each item's result is the one the
    single-item command gives). If it rejects one item (say, a lattice with no possible
    path), the chunk is redone item by item so only that item becomes an error line.
    """
    if spec.task != "sample" and items:
        from arsdecode.methods.dispatch import decode_many

        start = time.perf_counter()
        try:
            results = decode_many(lm, lattices, method=spec.method,  # type: ignore[arg-type]
                                  max_iterations=spec.max_iterations, **_engine(spec))
        except ValueError:  # the library's input errors: find the item, one at a time
            pass
        else:
            # One compiled call for the whole chunk: no item can be timed on its own.
            each = {"chunk_mean_seconds": (time.perf_counter() - start) / len(items)}
            return [_decode_fields(r, each) for r in results]
    out: list[dict | str] = []
    for item, lattice in zip(items, lattices):
        try:
            out.append(solve_one(spec, lm, item, lattice))
        except ValueError as err:  # the library's input errors (ArsDecodeError, MaxArpaError)
            out.append(error_message(item, err))
    return out


def error_message(item: Item, err: Exception) -> str:
    """One line naming the input line once: `line N: what went wrong`."""
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    where = f"line {item.lineno}:"
    return text if text.startswith(where) else f"{where} {text}"


def run_chunk(spec: TaskSpec, items: list[Item]) -> list[str]:
    """Worker entry point: the JSON output lines of one chunk, in its order."""
    lm, emissions = worker_models(spec)
    ready: list[Item] = []
    lattices: list = []
    words: dict[int, list[str]] = {}  # tag: the sentence of item k
    answers: dict[int, dict | str] = {}
    for k, item in enumerate(items):
        if item.error is not None:
            answers[k] = item.error
            continue
        try:
            lattice, sentence = _lattice(spec, item, emissions)
        except ValueError as err:
            answers[k] = error_message(item, err)
            continue
        ready.append(item)
        lattices.append(lattice)
        if sentence is not None:
            words[k] = sentence
    solved = iter(solve_chunk(spec, lm, ready, lattices))
    lines = []
    for k, item in enumerate(items):
        answer = answers[k] if k in answers else next(solved)
        if isinstance(answer, str):
            line = {"id": item.id, "line": item.lineno, "error": answer}
        elif spec.task == "tag":  # as `arsdecode tag --json`: the words, then their tags
            tags = emissions.penn_tags(answer.pop("tokens"))  # decoded states -> tags
            line = {"id": item.id, "tokens": words[k], "tags": tags, **answer}
        else:
            line = {"id": item.id, **answer}
        lines.append(json.dumps(line))
    return lines


# ---- the client side: scheduling -------------------------------------------------------

def _run_in_process(spec: TaskSpec, chunks: Iterator[list[Item]]) -> Iterator[list[str]]:
    for chunk in chunks:
        yield run_chunk(spec, chunk)


def _run_on_dask(client, spec: TaskSpec, chunks: Iterator[list[Item]], ordered: bool
                 ) -> Iterator[list[str]]:
    """Chunks as they finish (or in input order), with a bounded number in flight so the
    input is streamed and the client's memory stays flat.

    A chunk that kills the workers running it repeatedly (Dask's KilledWorker, after
    `distributed.scheduler.allowed-failures` retries; typically an item that runs out of
    memory) is split: each of its items is retried on its own, and only an item that still
    kills its workers becomes an error line. One pathological lattice costs its own line, not
    the run.
    """
    from distributed import KilledWorker, as_completed

    # This client's loop, explicitly: as_completed() defaults to the process's *default*
    # client, which is another one when the caller has a Client of its own open (the
    # futures' events then get awaited on two loops and fail).
    pending = as_completed(loop=client.loop)
    job_of: dict[Any, tuple[int, int | None]] = {}  # future -> (chunk index, item or None)
    items_of: dict[int, list[Item]] = {}  # chunks in flight, by index
    split: dict[int, dict[int, list[str]]] = {}  # split chunks: item position -> its lines
    buffered: dict[int, list[str]] = {}
    next_index = next_out = 0
    exhausted = False

    def fill() -> None:
        nonlocal next_index, exhausted
        # Three chunks per worker thread keep every worker busy while results travel back;
        # asked again each time, since workers may join or leave an external cluster.
        window = max(4, 3 * sum(client.nthreads().values()))
        while not exhausted and len(items_of) + len(buffered) < window:
            chunk = next(chunks, None)
            if chunk is None:
                exhausted = True
                return
            items_of[next_index] = chunk
            submit(next_index, None, chunk)
            next_index += 1

    def submit(index: int, position: int | None, chunk: list[Item]) -> None:
        fut = client.submit(run_chunk, spec, chunk, pure=False)
        job_of[fut] = (index, position)
        pending.add(fut)

    def finished(index: int, lines: list[str]) -> Iterator[list[str]]:
        del items_of[index]
        if not ordered:
            yield lines
            return
        nonlocal next_out
        buffered[index] = lines
        while next_out in buffered:
            yield buffered.pop(next_out)
            next_out += 1

    fill()
    for fut in pending:
        index, position = job_of.pop(fut)
        try:
            lines = fut.result()  # a bug in a task re-raises here with its traceback
        except KilledWorker:
            items = items_of[index]
            if position is None and len(items) > 1:  # isolate the item that kills workers
                split[index] = {}
                for k, item in enumerate(items):
                    submit(index, k, [item])
                continue
            item = items[0 if position is None else position]
            lines = [json.dumps({"id": item.id, "line": item.lineno, "error": (
                f"line {item.lineno}: killed the workers running it repeatedly "
                "(out of memory?)")})]
        if position is not None:
            split[index][position] = lines
            if len(split[index]) < len(items_of[index]):
                continue
            parts = split.pop(index)
            lines = [line for k in sorted(parts) for line in parts[k]]
        yield from finished(index, lines)
        fill()


def _dask_client(workers: int, scheduler: str | None):
    try:
        from distributed import Client
    except ImportError:
        raise BatchError("Dask is not installed: pip install 'arsdecode[batch]', or use "
                         "--workers 1") from None
    if scheduler:
        try:
            return Client(scheduler, timeout="30s"), None
        except (OSError, ValueError) as err:  # unreachable, timed out, or a malformed address
            raise BatchError(f"cannot reach the Dask scheduler {scheduler}: {err}") from None
    # Worker processes inherit an ignored SIGINT, so a Ctrl-C at the terminal (sent to the whole
    # process group) reaches only the client, which stops cleanly and closes the cluster.
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        cluster = local_cluster(workers)
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
    return Client(cluster), cluster


QUIET_WORKERS = {
    "distributed.scheduler.worker-saturation": 1.0,
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
}


def local_cluster(workers: int):
    """A LocalCluster of `workers` single-threaded processes, for `--workers N`.

    Worker saturation 1.0: the scheduler hands a worker its next chunk only when the last one
    is done, so a worker that dies was holding exactly the chunk it ran. (With Dask's default
    of 1.1 it also holds a queued chunk, which Dask then counts as suspect too: an innocent
    chunk queued behind one that kills its workers could be given up with it.) A chunk takes
    seconds, so the scheduler's round trip between chunks costs nothing measurable.

    Quieter workers: a worker's event loop shares the GIL with the decode. Dask's defaults
    wake it 50 times a second (the tick watchdog) and sample the decode's stack 100 times a
    second (the profiler, for a dashboard we do not start); measured on 2 cores, they took
    0.8 s of each worker's 8 s and slowed the decode itself (bench/bench_batch.py). The memory
    monitor still runs, once a second, so a worker over its memory limit is still restarted.
    """
    import logging

    import dask
    from distributed import LocalCluster

    with dask.config.set(QUIET_WORKERS):
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                            dashboard_address=None, silence_logs=logging.ERROR)


STDIO = "-"
"""`--in -` reads the items from stdin; `--out -` writes the results to stdout (no resuming:
a stream has no lines already done, and cannot be locked or fsynced)."""


def run_batch(
    spec: TaskSpec,
    in_path: str | Path,
    out_path: str | Path,
    *,
    workers: int = 1,
    scheduler: str | None = None,
    chunk_size: int = DEFAULT_CHUNK,
    ordered: bool = False,
    progress: bool | None = None,
    retry_errors: bool = False,
) -> BatchStats:
    """Run `spec` over every item of `in_path` not yet in `out_path`, appending to it.

    `workers=1` without `scheduler` runs in this process (no Dask); `workers>1` starts a
    LocalCluster of that many single-threaded processes; `scheduler` uses a running cluster.
    "-" as `in_path` is stdin, as `out_path` stdout. `retry_errors` first drops the error
    lines from `out_path`, so their items are run again; every other result stays.

    A stop request (Ctrl-C or SIGTERM) ends the run after the chunk being written; the
    exception then goes on up, after one line on stderr saying how much was written.

    Raises:
        BatchError: --in is missing or a directory, --out holds lines that are not results,
            or another run holds it. (An item that kills its workers repeatedly becomes an
            error line; see _run_on_dask.)
    """
    from_stdin, to_stdout = str(in_path) == STDIO, str(out_path) == STDIO
    in_path, out_path = Path(in_path), Path(out_path)
    if spec.task not in TASKS:
        raise BatchError(f"unknown task {spec.task!r} (one of {', '.join(TASKS)})")
    if chunk_size < 1 or workers < 1 or spec.n < 1 or spec.batch < 1:
        raise BatchError("--chunk-size, --workers, -n and --batch must be at least 1")
    if not from_stdin:
        if in_path.is_dir():
            raise BatchError(f"{in_path}: is a directory; --in takes a JSONL file")
        if not in_path.is_file():
            raise BatchError(f"{in_path}: no such input file")
    if not to_stdout and out_path.is_dir():
        raise BatchError(f"{out_path}: is a directory; --out takes a JSONL file")
    if (not (from_stdin or to_stdout) and out_path.exists()
            and out_path.resolve() == in_path.resolve()):
        raise BatchError(f"{out_path}: --out must not be the input file")
    start = time.perf_counter()
    created = not to_stdout and not out_path.exists()
    # lock first, then read: no other run can append meanwhile
    writer = StreamWriter() if to_stdout else ChunkWriter(out_path)
    client = cluster = None
    written = errors = 0
    try:
        done = set() if to_stdout else read_done(out_path, drop_errors=retry_errors)
        if retry_errors and isinstance(writer, ChunkWriter):
            writer.reopen()  # read_done replaced the file: append to (and lock) the new one
        source = sys.stdin.buffer if from_stdin else in_path
        todo = scan_input(source, done)
        first = next(todo, None)
        if first is None:  # all done already: no cluster to start
            return BatchStats(len(done), 0, 0, time.perf_counter() - start)
        todo = itertools.chain([first], todo)
        # Lines left to do, an estimate that steers chunk sizes and the progress bar; a
        # stream cannot be counted ahead, so its chunks stay full-size.
        remaining = None if from_stdin else count_lines(in_path) - len(done)
        if workers == 1 and scheduler is None:
            results = _run_in_process(spec, chunked(todo, chunk_size))
        else:
            client, cluster = _dask_client(workers, scheduler)
            def parallel() -> int:  # asked per chunk: an external cluster's workers come and go
                return sum(client.nthreads().values())

            estimate = remaining if remaining is not None else 2 * chunk_size * parallel()
            chunks = tapered_chunks(todo, chunk_size, estimate, parallel)
            results = _run_on_dask(client, spec, chunks, ordered)
        bar = _progress_bar(remaining, progress)
        with _StopRequest() as stop:
            for lines in results:
                writer.write(lines)
                written += len(lines)
                errors += sum('"error": ' in line for line in lines)  # values escape quotes
                bar.update(len(lines))
                if stop.requested:
                    raise stop.requested
        bar.close()
    except BaseException as err:
        if created and written == 0:  # leave no empty file behind a run that could not start
            out_path.unlink(missing_ok=True)
        if isinstance(err, KeyboardInterrupt):  # Ctrl-C or SIGTERM: say what is kept
            print(f"arsdecode batch: stopped after writing {written} lines ({errors} errors); "
                  "the same command resumes the run", file=sys.stderr)
        raise
    finally:
        writer.close()
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    return BatchStats(len(done), written, errors, time.perf_counter() - start)


class _StopRequest:
    """The first Ctrl-C (SIGINT) or SIGTERM stops the run after the next chunk is written, so
    the client never leaves a Dask call half-way; a second one interrupts at once. Nothing is
    lost either way: unwritten chunks are simply redone by the next run. `requested` is the
    exception to raise once the chunk is written (KeyboardInterrupt, or `Terminated`)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested: KeyboardInterrupt | None = None
        self.previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        stop = Terminated(signum) if signum != signal.SIGINT else KeyboardInterrupt()
        if self.requested:
            raise stop
        self.requested = stop
        again = "Ctrl-C" if signum == signal.SIGINT else "the signal"
        print(f"arsdecode batch: stopping after the next chunk ({again} again to stop now)",
              file=sys.stderr)

    def __enter__(self) -> _StopRequest:
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self.previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self.previous.items():
            if handler is not None:
                signal.signal(signum, handler)


def _progress_bar(total: int | None, progress: bool | None):
    """tqdm with items/s on a terminal; silent when stderr is piped (unless forced). `total`
    is the lines left to do, None when unknown (stdin)."""
    from tqdm import tqdm

    show = sys.stderr.isatty() if progress is None else progress
    total = max(0, total) if show and total is not None else None
    return tqdm(total=total, unit="item", disable=not show, file=sys.stderr, smoothing=0.1)
