"""Corpus runs: decode, sample or tag a JSONL file of items, in-process or on a Dask cluster.

This is the client side: it reads the input, hands chunks of items to workers
(`arsdecode.batch.worker.run_chunk`, in this process or on a Dask cluster), writes what comes
back, and handles stop requests and progress. Why this shape:
- **One writer.** Workers never touch the output. They return finished chunks as JSON lines;
  the client alone appends each chunk with one write, then flush and fsync. A crash can only
  leave a truncated last line, which the next run cuts off before appending.
- **Resumable, never twice.** A run first reads the ids already in --out and skips them. A
  worker killed mid-chunk returns nothing, so Dask reruns the chunk elsewhere and it is written
  once, when its result reaches the client. An advisory lock keeps two runs off one file.
- **A bug stops the run.** A worker turns only input errors into error lines (see
  `arsdecode.batch.worker`); any other exception reaches the client and goes on up.

Output lines are `{"id", ...fields of the single-item command}`, or `{"id", "line",
"error"}` for an input line that cannot be run; `"id": null` when the line has no usable id.
"""

from __future__ import annotations

import itertools
import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arsdecode.batch.io import (
    ChunkWriter,
    Item,
    StreamWriter,
    chunked,
    count_lines,
    read_done,
    scan_input,
    tapered_chunks,
)
from arsdecode.batch.worker import TASKS, TaskSpec, run_chunk
from arsdecode.errors import BatchError
from arsdecode.termination import Terminated

DEFAULT_CHUNK = 16


@dataclass(frozen=True)
class BatchStats:
    done_before: int  # result lines already in --out
    written: int  # lines this run appended
    errors: int  # of which error lines
    seconds: float


# ---- scheduling ---------------------------------------------------------------------------

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


def dask_client(workers: int, scheduler: str | None):
    """A Dask client of `workers` local processes (`local_cluster`), or of the scheduler at
    `scheduler`; and the local cluster to close after it (None for a scheduler)."""
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
            client, cluster = dask_client(workers, scheduler)
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
