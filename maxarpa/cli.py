"""The `maxarpa` command: convert ARPA to MAX-ARPA, describe a model, answer queries.

Why errors are caught here and nowhere else: the library raises precise exceptions; the CLI's
job is to turn any of them into one line on stderr and exit status 2, with no traceback and no
half-written output (writers use a temporary file and a rename).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from maxarpa.arpa import ENCODING, ERRORS, open_binary
from maxarpa.binary_format import is_binary
from maxarpa.binary_write import write_binary
from maxarpa.cli_config import add_config_options, config_from_args, with_flag_hints
from maxarpa.errors import MaxArpaError
from maxarpa.load import load
from maxarpa.maxarpa_format import is_max_arpa, write_max_arpa
from maxarpa.model import Model
from maxarpa.output import OutputError, check_output
from maxarpa.query import Totals, first_unknown, ngram_answers, sentence_answers
from maxarpa.spool import STDIN, display_name, needs_spooling, spooled, under_name
from maxarpa.streamed import convert_streamed

EXIT_BAD_INPUT = 2
EXIT_VERIFY_FAILED = 1
STDOUT = "-"
_COUNT = re.compile(rb"^\s*ngram\s+\d+\s*=\s*(\d+)\s*$")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="maxarpa", description="ARPA n-gram models with exact max-backoff bounds (log10).",
        epilog="A model argument may be `-` (standard input) or a pipe (`<(zcat m.arpa.gz)`); "
               "it is read once. Exit status: 0 success, 1 `verify` found a differing bound, "
               "2 bad input (one line on stderr).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    conv = sub.add_parser("convert", help="convert an ARPA file to MAX-ARPA")
    conv.add_argument("input", help="ARPA file (plain, .gz, .bz2 or .xz; `-`: standard input); "
                      "with --binary, also MAX-ARPA")
    conv.add_argument("output", help="MAX-ARPA file to write (`-`: standard output, text only)")
    conv.add_argument("--quiet", action="store_true", help="no progress bar")
    conv.add_argument("--binary", action="store_true",
                      help="write the binary companion (.npz arrays) instead of MAX-ARPA text")
    add_config_options(conv)
    info = sub.add_parser("info", help="order, vocabulary, counts and positive backoffs")
    info.add_argument("model", help="ARPA or MAX-ARPA file (`-`: standard input)")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    add_config_options(info)
    query = sub.add_parser(
        "query", help="answer each input line as it arrives: log10p<TAB>max_log10p of an "
        "n-gram, or with --sentence KenLM's per-word scores, totals and perplexity"
    )
    query.add_argument("model", help="ARPA, MAX-ARPA or binary file")
    query.add_argument("input", nargs="?", default=STDIN,
                       help="the lines to answer (default `-`: standard input)")
    query.add_argument("--sentence", action="store_true",
                       help="each line is a sentence (between <s> and </s>), as KenLM's "
                            "`query`: word=id length log10p per word, then Total and OOV; "
                            "perplexities at the end. An empty line is an empty sentence")
    add_config_options(query)
    verify = sub.add_parser(
        "verify", help="recompute the bounds of a MAX-ARPA or binary file and compare them "
        "with the stored ones (exit 0: equal; 1: the first differing n-gram is printed)"
    )
    verify.add_argument("model", help="MAX-ARPA (plain or compressed) or binary (.npz) file")
    return parser


def cmd_convert(args: argparse.Namespace) -> int:
    """Convert; input that can be read only once (`-`, a pipe) is first copied once, so its
    header can be read for the progress total and then parsed."""
    if needs_spooling(args.input):
        name = display_name(args.input)
        with spooled(args.input) as copy:
            return under_name(lambda: convert_file(args, copy, name), copy, name)
    return convert_file(args, args.input, args.input)


def convert_file(args: argparse.Namespace, input: str | Path, name: str) -> int:
    """Read `input` (shown as `name`) and write args.output, with progress bars (on a
    terminal) whose totals are known: the \\data\\ counts while reading, the rows while
    writing. An ARPA file in key order (lmplz's) converted with --binary streams instead,
    without bars (`maxarpa.streamed`: the same file at about 0.4x the memory, issue 34)."""
    config = config_from_args(args)
    to_stdout = args.output == STDOUT
    if to_stdout and args.binary:
        raise OutputError("-: a binary model cannot go to standard output (it is read back "
                          "by memory-mapping a file); give a file name")
    if not to_stdout:
        check_output(input, args.output, binary=args.binary)
    show = sys.stderr.isatty() and not args.quiet
    start = time.perf_counter()
    if args.binary and not is_binary(input) and not is_max_arpa(input) and convert_streamed(
            input, args.output, config):  # an ARPA file in key order (lmplz's): issue 34
        if show:
            print(f"{name}: done in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        return 0
    with progress_bar(show, header_total(input), "reading") as bar:
        model = load(input, config=config, rounded_bounds=args.binary)
        bar.total = total = sum(model.counts)
        bar.update(total - bar.n)
    rows = sum(len(node.keys) for node in model.trie.nodes)
    with progress_bar(show, rows, "writing") as bar:
        # `load` leaves no unchecked bound (as in maxarpa.convert): the writers need not
        # recompute them all again before stamping the digest (issue 34: 2 s and 55 MiB of
        # a 5.4M-n-gram conversion).
        if to_stdout:
            write_to_stdout(model, bar.update)
        elif args.binary:
            write_binary(model, args.output, bounds_verified=True)
            bar.update(rows)
        else:
            write_max_arpa(model, args.output, progress=bar.update, bounds_verified=True)
    if show:
        print(f"{name}: done in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


def write_to_stdout(model: Model, progress: Callable[[int], None]) -> None:
    """MAX-ARPA text on standard output: written to a private temporary file first (the
    writer needs a file), then copied, so an error while formatting sends nothing. `model`
    comes from `load`, so its bounds are exact (stamped with a digest unchecked)."""
    with tempfile.TemporaryDirectory(prefix="maxarpa-output-") as folder:
        tmp = Path(folder) / "model.maxarpa"
        write_max_arpa(model, tmp, progress=progress, bounds_verified=True)
        sys.stdout.flush()
        with open(tmp, "rb") as fh:
            shutil.copyfileobj(fh, sys.stdout.buffer, 1 << 20)


def header_total(path: str | Path) -> int | None:
    """The sum of the `ngram k=N` counts at the head of a text model, read without parsing
    the file; None when there is none (a binary model, a malformed file: the reader then
    reports it)."""
    if is_binary(path):
        return None
    total, seen = 0, False
    try:
        with open_binary(path) as fh:
            for _ in range(10_000):
                line = fh.readline(4096)
                if not line or line.startswith(b"\\1-grams:"):
                    break
                m = _COUNT.match(line)
                if m:
                    total, seen = total + int(m.group(1)), True
    except Exception:  # unreadable or corrupt: the reader reports it, with its line
        return None
    return total if seen else None


class _NoBar:
    """A progress bar nobody sees (stderr is not a terminal, or --quiet)."""

    def __init__(self, total: int | None) -> None:
        self.total, self.n = total, 0

    def update(self, n: int = 1) -> None:
        self.n += n

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def progress_bar(show: bool, total: int | None, desc: str) -> Any:
    """tqdm on stderr when `show`, else a silent counter with the same interface."""
    if not show:
        return _NoBar(total)
    from tqdm import tqdm

    return tqdm(total=total, unit="ngram", desc=desc, file=sys.stderr)


def cmd_info(args: argparse.Namespace) -> int:
    # a binary model is mapped, not copied
    model = load(args.model, mmap=True, config=config_from_args(args))
    blanks = [int((~node.listed).sum()) for node in model.trie.nodes]
    facts = {
        "model": display_name(args.model),
        "order": model.order,
        "vocab_size": len(model.vocab),
        "ngrams_by_order": {str(k): c for k, c in enumerate(model.counts, start=1)},
        "blank_suffix_nodes_by_order": {str(k): b for k, b in enumerate(blanks, start=1)},
        "positive_backoffs": model.positive_backoffs,
        "has_unk": model.unk_id is not None,
    }
    if args.json:
        import json

        print(json.dumps(facts))
        return 0
    print(f"model\t{facts['model']}")
    print(f"order\t{model.order}")
    print(f"vocab_size\t{len(model.vocab)}")
    for k, c in enumerate(model.counts, start=1):
        print(f"ngram {k}\t{c}")
    print(f"positive_backoffs\t{model.positive_backoffs}")
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    """Answer the lines as soon as they are read, flushed, so a caller can converse with the
    process line by line; lines that arrive together (a file) are answered as one batch. See
    maxarpa.query for the two output formats."""
    if args.model == STDIN and args.input == STDIN:
        raise MaxArpaError("-: the model and the queries cannot both come from standard "
                           "input; give the model as a file")
    model = load(args.model, mmap=True, config=config_from_args(args))  # a binary is mapped
    name = display_name(args.input)
    totals = Totals()
    fd = sys.stdin.fileno() if args.input == STDIN else open_input(args.input)
    first = 1
    try:
        for raw_lines in arriving_lines(fd):
            lines = [raw.decode(ENCODING, ERRORS).split() for raw in raw_lines]  # bytes words
            unknown = first_unknown(model, lines)
            if unknown is not None:
                index, word = unknown
                answered = (sentence_answers(model, lines[:index], totals) if args.sentence
                            else ngram_answers(model, lines[:index]))
                sys.stdout.write("".join(a + "\n" for a in answered))
                sys.stdout.flush()
                raise MaxArpaError(
                    f"{name}:{first + index}: unknown word '{word}' and the model "
                    f"{model.source} has no <unk>; --unknown-missing accept adds one")
            answers = (sentence_answers(model, lines, totals) if args.sentence
                       else ngram_answers(model, lines))
            sys.stdout.write("".join(a + "\n" for a in answers))
            sys.stdout.flush()
            first += len(lines)
    finally:
        if args.input != STDIN:
            os.close(fd)
    if args.sentence:
        sys.stdout.write(totals.summary() + "\n")
    return 0


def arriving_lines(fd: int, chunk: int = 1 << 16) -> Iterator[list[bytes]]:
    """The lines of `fd` in groups, each group as soon as it has arrived: one read returns
    what is there (a whole file chunk, or the one line an interactive caller wrote). A last
    line without a newline is yielded at the end."""
    rest = b""
    while True:
        data = os.read(fd, chunk)
        if not data:
            break
        lines = (rest + data).split(b"\n")
        rest = lines.pop()
        if lines:
            yield lines
    if rest:
        yield [rest]


def open_input(path: str) -> int:
    """A descriptor of the query input file, or a one-line error naming it."""
    try:
        return os.open(path, os.O_RDONLY)
    except OSError as err:
        raise MaxArpaError(f"{path}: cannot open: {err.strerror}") from None


def cmd_verify(args: argparse.Namespace) -> int:
    from maxarpa.binary_format import is_binary, read_binary
    from maxarpa.checks import check_structure, verify_bounds
    from maxarpa.maxarpa_format import is_max_arpa, read_max_arpa

    if is_binary(args.model):
        model = read_binary(args.model)
        check_structure(model.trie, model.source)
    elif is_max_arpa(args.model):
        model = read_max_arpa(args.model)
    else:
        raise MaxArpaError(f"{args.model}: not a MAX-ARPA or binary file (an ARPA file has no "
                           "stored bounds to verify)")
    problem = verify_bounds(model.trie, model.vocab, model.eos_id)
    if problem is not None:
        print(f"maxarpa: {args.model}: bounds differ from the recomputed ones: {problem}",
              file=sys.stderr)
        return EXIT_VERIFY_FAILED
    print(f"{args.model}: ok, every stored bound equals its recomputation")
    return 0


def return_freed_memory() -> None:
    """Have glibc give every large freed array back to the system at once.

    Why: after a large block is freed, glibc raises its mmap threshold (up to 32 MiB), so
    later numpy temporaries below it come from the heap, and the heap keeps their memory
    when they are freed. Converting a 5.4M-n-gram model then peaked 5% higher and stayed
    ~70 MiB above its live arrays. A fixed threshold (which also turns the dynamic one off)
    keeps every array of 128 KiB or more in its own mapping. On another C library, nothing
    happens. Only the command line does this: it changes the whole process.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    m_mmap_threshold = -3  # from glibc's malloc.h
    mallopt(m_mmap_threshold, 128 * 1024)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return_freed_memory()
    warnings.showwarning = show_warning  # type: ignore[assignment]  # extra args are ignored
    handlers = {"convert": cmd_convert, "info": cmd_info, "query": cmd_query,
                "verify": cmd_verify}
    try:
        status = handlers[args.command](args)
        sys.stdout.flush()  # a closed pipe must surface here, not at interpreter exit
        return status
    except MaxArpaError as err:
        report(with_flag_hints(str(err)))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        report("interrupted")
        return 130
    except BrokenPipeError:  # `maxarpa query ... | head -1`: the reader left; exit quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush is silent
        return 0
    except OSError as err:
        name = getattr(err, "filename", None) or getattr(args, "output", None) or "<stdout>"
        if name == STDOUT:
            name = "<stdout>"
        silence_stdout()  # what could not be written must not be retried at exit
        report(f"{name}: {err.strerror or err}")
        return EXIT_BAD_INPUT


def show_warning(message: Warning | str, category: type[Warning], *rest: Any) -> None:
    """A warning (a `Config` action "warn") as one line, `maxarpa: warning: ...`, not
    Python's two lines naming a source file of maxarpa."""
    report(f"warning: {message}")


def report(message: str) -> None:
    r"""One line on stderr, `maxarpa: message`.

    The library quotes words with `maxarpa.errors.shown` (UTF-8 as text, any other byte as
    `\xe9`, one backslash), so the line is plain text; a stray surrogate (a path given on the
    command line in another encoding) is written back as its own byte.
    """
    sys.stderr.flush()
    sys.stderr.buffer.write(f"maxarpa: {message}\n".encode(ENCODING, ERRORS))
    sys.stderr.buffer.flush()


def silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush of what could not be
    written (a full disk, a closed pipe) raises nothing more."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
