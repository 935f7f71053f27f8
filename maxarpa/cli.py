"""The `maxarpa` command: convert ARPA to MAX-ARPA, describe a model, answer queries.

Why errors are caught here and nowhere else: the library raises precise exceptions; the CLI's
job is to turn any of them into one line on stderr and exit status 2, with no traceback and no
half-written output (writers use a temporary file and a rename).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from maxarpa.arpa import format_log10
from maxarpa.errors import MaxArpaError
from maxarpa.load import convert, load
from maxarpa.output import TerminatedBySignal

EXIT_BAD_INPUT = 2
EXIT_VERIFY_FAILED = 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="maxarpa", description="ARPA n-gram models with exact max-backoff bounds (log10)."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    conv = sub.add_parser("convert", help="convert an ARPA file to MAX-ARPA")
    conv.add_argument("input", help="ARPA file (plain, .gz, .bz2 or .xz); with --binary, "
                      "also MAX-ARPA")
    conv.add_argument("output", help="MAX-ARPA file to write")
    conv.add_argument("--quiet", action="store_true", help="no progress bar")
    conv.add_argument("--binary", action="store_true",
                      help="write the binary companion (.npz arrays) instead of MAX-ARPA text")
    info = sub.add_parser("info", help="order, vocabulary, counts and positive backoffs")
    info.add_argument("model", help="ARPA or MAX-ARPA file")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    query = sub.add_parser(
        "query", help="read n-grams on stdin, print log10p<TAB>max_log10p per line"
    )
    query.add_argument("model", help="ARPA or MAX-ARPA file")
    verify = sub.add_parser(
        "verify", help="recompute the bounds of a MAX-ARPA or binary file and compare them "
        "with the stored ones (exit 0: equal; 1: the first differing n-gram is printed)"
    )
    verify.add_argument("model", help="MAX-ARPA (plain or compressed) or binary (.npz) file")
    return parser


def cmd_convert(args: argparse.Namespace) -> int:
    show = sys.stderr.isatty() and not args.quiet
    start = time.perf_counter()
    if show:
        print(f"reading {args.input} ...", file=sys.stderr)
    if args.binary or not show:
        convert(args.input, args.output, binary=args.binary)
        return 0
    from tqdm import tqdm

    with tqdm(unit="ngram", desc="converting", file=sys.stderr) as bar:
        convert(args.input, args.output, progress=bar.update)
    print(f"done in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    model = load(args.model, mmap=True)  # a binary model is mapped, not copied
    blanks = [int((~node.listed).sum()) for node in model.trie.nodes]
    facts = {
        "model": str(args.model),
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
    model = load(args.model, mmap=True)  # a binary model is mapped, not copied
    n = model.order
    contexts: list[list[int]] = []
    words: list[int] = []
    for lineno, raw in enumerate(sys.stdin.buffer, start=1):
        tokens = raw.decode("utf-8", "surrogateescape").split()  # words are bytes (arpa.py)
        if not tokens:
            raise MaxArpaError(f"<stdin>:{lineno}: empty query line")
        ctx = model.ids(tokens[:-1][-(n - 1) :] if n > 1 else []).tolist()
        contexts.append([-1] * (n - 1 - len(ctx)) + ctx)
        words.append(model.word_id(tokens[-1]))
    if not words:
        return 0
    ctx_arr = np.asarray(contexts, dtype=np.int32).reshape(len(words), n - 1)
    word_arr = np.asarray(words, dtype=np.int32)
    logp = model.log10p_batch(ctx_arr, word_arr)
    maxp = model.max_log10p_batch(ctx_arr, word_arr)
    out = sys.stdout
    for a, b in zip(logp.tolist(), maxp.tolist()):
        out.write(f"{format_log10(a)}\t{format_log10(b)}\n")
    return 0


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
    handlers = {"convert": cmd_convert, "info": cmd_info, "query": cmd_query,
                "verify": cmd_verify}
    try:
        status = handlers[args.command](args)
        sys.stdout.flush()  # a closed pipe must surface here, not at interpreter exit
        return status
    except MaxArpaError as err:
        print(f"maxarpa: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("maxarpa: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `maxarpa query ... | head -1`: the reader left; exit quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush is silent
        return 0
    except TerminatedBySignal as err:  # SIGTERM/SIGHUP while writing: the output was cleaned
        print(f"maxarpa: terminated by signal {err.signum}; no output written", file=sys.stderr)
        return 128 + err.signum
    except OSError as err:
        name = getattr(err, "filename", None) or Path(getattr(args, "output", "")).name
        print(f"maxarpa: {name}: {err.strerror or err}", file=sys.stderr)
        return EXIT_BAD_INPUT
