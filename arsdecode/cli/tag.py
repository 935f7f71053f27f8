"""`arsdecode tag`: exact POS tagging with a TnT-style HMM over a tag n-gram LM (paper 3.2).

Why this front end is thin: model lookup is `tasks.pos.models` (shared with `arsdecode.tag`),
the emission model is `tasks.pos.emissions`, decoding is the engine's (imported by the
handlers, so building the parser loads no decoder). Models are found in --models, then
$ARSDECODE_POS_MODELS, then the tagger shipped in the package; a directory the user named is
never silently replaced by another.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from arsdecode.cli.options import (
    EXIT_OK,
    EXIT_STATUS_HELP,
    UNITS_HELP,
    add_engine_options,
    add_method_option,
    add_sampling_options,
    check_batch_fits,
    epilog,
    int_at_least,
    positive_int,
)
from arsdecode.cli.output import check_writable, print_json, progress_bar
from arsdecode.errors import ObservationError, OptionError
from arsdecode.tasks.pos.models import ENV_VAR, PREFERRED_ORDER, load_models

FILE_CHUNK = 1000  # sentences per compiled call in --file mode (bounds memory, shows progress)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tag", help="exact POS tagging (word/TAG)",
        description="Exact most probable Penn Treebank tags of tokenised sentences (or exact "
                    "samples of them) under a TnT-style HMM whose hidden layer is a tag "
                    "n-gram LM.",
        epilog=epilog(f"models: --models DIR, else ${ENV_VAR}, else the tagger shipped in "
                      "arsdecode/data/pos/. A model directory holds emissions.json.gz and "
                      "tags.ORDER.maxarpa[.gz] (or .arpa[.gz]).", UNITS_HELP, EXIT_STATUS_HELP),
    )
    p.add_argument("sentence", nargs="?", default=None,
                   help="a tokenised sentence (words separated by spaces)")
    p.add_argument("--file", default=None,
                   help="tag one sentence per line of FILE ('-' for stdin); blank lines are "
                        "skipped")
    p.add_argument("--conll", default=None, metavar="OUT",
                   help="with --file: write word<TAB>tag lines, blank line between sentences")
    p.add_argument("--order", type=int_at_least(2), default=None,
                   help=f"tag LM order (default: {PREFERRED_ORDER} if the model directory has "
                        "it, else its highest)")
    p.add_argument("--models", default=None, metavar="DIR",
                   help=f"model directory (default: ${ENV_VAR}, else the shipped tagger)")
    p.add_argument("--sample", type=positive_int, default=None, metavar="N",
                   help="draw N exact samples; print them and posterior tag marginals")
    add_sampling_options(p, default_ar=0.6)
    add_engine_options(p)
    add_method_option(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if (args.sentence is None) == (args.file is None):
        raise OptionError("give either a sentence or --file")
    if args.sentence is not None and not args.sentence.split():
        raise ObservationError("empty input sentence")
    if args.conll is not None and args.file is None:
        raise OptionError("--conll needs --file")
    lm, emissions = load_models(args.models, args.order)
    if args.file is None:
        return tag_one(args, lm, emissions, args.sentence.split())
    return tag_file(args, lm, emissions)


def tag_one(args: argparse.Namespace, lm, emissions, words: list[str]) -> int:
    from arsdecode.api import decode

    start = time.perf_counter()
    lattice = emissions.lattice(words)
    if args.sample is None:
        r = decode(lm, lattice, method=args.method, variant=args.variant)
        tags = emissions.penn_tags(r.tokens)  # decoded states -> tags (see tasks.pos.cap)
        if args.json:
            print_json(tag_json(words, tags, r.log_p, time.perf_counter() - start,
                                r.method))
        else:
            print(" ".join(f"{w}/{t}" for w, t in zip(words, tags)))
        return EXIT_OK
    return sample_one(args, lm, lattice, words, start, emissions.penn_tags)


def sample_one(args: argparse.Namespace, lm, lattice, words: list[str], start: float,
               penn_tags: Callable[[Sequence[str]], list[str]] = list) -> int:
    from arsdecode.api import sample
    from arsdecode.methods.marginals import marginals_from_samples, marginals_json

    check_batch_fits(args.batch, lattice)
    r = sample(lm, lattice, args.sample, args.seed, batch=args.batch,
               target_ar=args.target_ar, ar_window=args.ar_window, variant=args.variant)
    # states -> tags: a position's states all share the word's class, so this is one to one
    r = replace(r, samples=[penn_tags(s) for s in r.samples])
    marginals = marginals_from_samples(r.samples)  # the code `arsdecode marginals` runs
    seconds = time.perf_counter() - start
    if args.json:
        print_json({"tokens": words, "samples": r.samples, "log_p": r.log_p,
                    "marginals": marginals_json(marginals), "trials": r.trials,
                    "acceptance_rate": r.acceptance_rate, "log_Z": r.log_Z,
                    "log_Z_ci": list(r.log_Z_ci), "timing": {"seconds": seconds}})
        return EXIT_OK
    print("count  tags")
    for tags, c, _ in r.ranked()[:10]:
        print(f"{c:>5}  {' '.join(tags)}")
    print("\nposterior tag marginals from the exact samples (95% interval):")
    for w, pos in zip(words, marginals):
        print(f"{w:<15} " + "  ".join(f"{m.token} {m.p:.3f} [{m.lo:.3f}, {m.hi:.3f}]"
                                      for m in pos[:3]))
    print(f"\nsamples={len(r.samples)} trials={r.trials} "
          f"acceptance_rate={r.acceptance_rate:.3f} seconds={seconds:.2f}")
    return EXIT_OK


def tag_json(words: list[str], tags: list[str], log_p: float, seconds: float,
             method: str) -> dict:
    """One tagged sentence: {"tokens", "tags", "log_p" (ln), "method" (the exact decoder
    that ran on it, "full" or "ars": auto's choice is visible), "timing": {"seconds"}}."""
    return {"tokens": words, "tags": tags, "log_p": log_p, "method": method,
            "timing": {"seconds": seconds}}


def read_text(path: str) -> str:
    """The UTF-8 text of `path` ('-': stdin); text that is not UTF-8 is an ObservationError
    naming the file and the byte, not a decoding traceback (nor, on stdin, silent U+FFFD)."""
    from arsdecode.lattice.input_files import utf8_text

    data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    return utf8_text(data, "<stdin>" if path == "-" else path, ObservationError)


def tag_file(args: argparse.Namespace, lm, emissions) -> int:
    """Tag every non-blank line (blank lines are skipped, in order: JSON/text output has one
    line per tagged sentence). --conll output is written whole, through a temporary file."""
    from arsdecode.tasks.pos.tag_many import tag_many

    if args.conll:
        check_writable(args.conll)
    lines = [line for line in read_text(args.file).splitlines() if line.split()]
    blocks: list[str] = []
    sentences = [line.split() for line in lines]
    with progress_bar(len(sentences), "sent") as bar:
        for lo in range(0, len(sentences), FILE_CHUNK):  # the corpus API, a chunk at a time
            chunk = sentences[lo : lo + FILE_CHUNK]
            start = time.perf_counter()
            r = tag_many(lm, emissions, chunk, method=args.method)
            r_tags = [emissions.penn_tags(t) for t in r.tags]  # states -> tags (pos.cap)
            each = (time.perf_counter() - start) / len(chunk)
            if not (args.conll or args.json):  # one write per chunk, not a print per line
                sys.stdout.write("".join(" ".join(map("/".join, zip(words, tags))) + "\n"
                                         for words, tags in zip(chunk, r_tags, strict=True)))
                sys.stdout.flush()
            for words, tags, log_p, method in zip(chunk, r_tags, r.log_p.tolist(), r.methods,
                                                  strict=True):
                if args.conll:
                    blocks.append("".join(f"{w}\t{t}\n" for w, t in zip(words, tags)) + "\n")
                elif args.json:
                    line = tag_json(words, tags, log_p, each, method)
                    # Tagged a chunk at a time (one compiled call): no sentence has a time of
                    # its own, so the field says it is the chunk's mean.
                    line["timing"] = {"chunk_mean_seconds": each, "chunk_sentences": len(chunk)}
                    print_json(line)
            bar.update(len(chunk))
    if args.conll:
        from maxarpa.output import atomic_output

        text = "".join(blocks)
        with atomic_output(args.conll) as tmp:
            tmp.write_text(text, encoding="utf-8")
    return EXIT_OK
