"""`arsdecode segment`: exact word segmentation of text written without spaces (issues 21, 33).

Why a command: hashtags, URLs, OCR output and some scripts come without word boundaries. The
segmentation lattice (`arsdecode.tasks.segment`) has an arc for every vocabulary word found in
the text and an unknown-word arc, priced by a spelling model, for every other short substring;
the writer's case and digit transitions add soft bonuses for cutting there. Its exact best
path under the n-gram LM (by default the shipped general-English model,
arsdecode/data/segment/) is the segmentation, printed in the input's own characters and case.
"""

from __future__ import annotations

import argparse
import sys

from arsdecode.cli.options import (
    EXIT_OK,
    EXIT_STATUS_HELP,
    add_lm_strictness_options,
    epilog,
    lm_config,
    non_negative_float,
    positive_int,
    seed_int,
)
from arsdecode.cli.output import fixed, print_json, progress_bar
from arsdecode.errors import OptionError

FLAT_UNKNOWN_PENALTY = 2.5
"""The flat per-character penalty of issue 21's segmenter, named in --unknown-penalty's help:
the task's `DEFAULT_UNKNOWN_PENALTY_PER_CHAR` (a plain number here, so that --help imports no
segmentation code; a test keeps the two equal)."""
UNKNOWN_MAX_LENGTH = 12
"""The default of --max-unknown-length: the task's `DEFAULT_UNKNOWN_MAX_LENGTH` (a plain
constant, so that --help loads no engine; tests/test_segment_cli.py checks they agree)."""
BATCH = 2048
"""Lines of a --file read, segmented and written together (the file is streamed: a million
lines take the memory of one batch)."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "segment", help="exact word segmentation of text without spaces",
        description="Split text written without spaces (a hashtag, a URL, OCR output) into "
                    "words: the exact best path of its segmentation lattice under an n-gram "
                    "LM. Where the text has spaces or punctuation, no word crosses them; case "
                    "changes (iPhoneFor) and letter-digit changes (lions2009) make a cut "
                    "likelier there, never certain. The words keep the input's characters "
                    "and case (--lower: lower-cased).",
        epilog=epilog(EXIT_STATUS_HELP))
    p.add_argument("text", nargs="?", default=None, help="the text (or --file)")
    p.add_argument("--file", default=None,
                   help="segment every line of FILE ('-' for stdin); blank lines stay blank")
    p.add_argument("--lm", default=None,
                   help="ARPA, MAX-ARPA or maxarpa binary model (default: the shipped "
                        "general-English model, arsdecode/data/segment/, converted on first "
                        "use into a binary cache in $ARSDECODE_CACHE_DIR, else "
                        "$XDG_CACHE_HOME/arsdecode or ~/.cache/arsdecode); it needs <unk>")
    p.add_argument("--nbest", type=positive_int, default=None, metavar="K",
                   help="the K best distinct segmentations (word sequences), each exact")
    p.add_argument("--sample", type=positive_int, default=None, metavar="N",
                   help="N exact samples of the segmentation distribution instead")
    p.add_argument("--seed", type=seed_int, default=0, help="with --sample")
    p.add_argument("--unknown-penalty", type=non_negative_float, default=None, metavar="P",
                   help="score unknown words by a flat ln penalty of P per character (on top "
                        "of the LM's ln p(<unk>)) instead of the spelling model of the LM's "
                        f"vocabulary (issue 21's model used {FLAT_UNKNOWN_PENALTY})")
    p.add_argument("--max-unknown-length", type=positive_int, default=None, metavar="L",
                   help=f"longest unknown word, in characters (default {UNKNOWN_MAX_LENGTH})")
    p.add_argument("--lower", action="store_true",
                   help="print the words lower-cased, as the lattice sees them")
    p.add_argument("--no-cues", action="store_true",
                   help="ignore case and digit transitions (only spaces and punctuation count)")
    p.add_argument("--posteriors", action="store_true",
                   help="with --json: each offset's exact probability of being a cut")
    p.add_argument("--json", action="store_true", help="one JSON object per text")
    add_lm_strictness_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from arsdecode.api import load_lm, sample
    from arsdecode.batch.io import chunked
    from arsdecode.lattice.input_files import read_input_lines
    from arsdecode.tasks import segment as seg
    from arsdecode.tasks.segment.model_cache import load_shipped
    from arsdecode.tasks.segment.segmenter import (
        SEGMENT_LM,
        SEGMENT_SPELLING,
        Segmenter,
        SegmentOptions,
    )
    from arsdecode.tasks.segment.spelling import SpellingModel

    if (args.text is None) == (args.file is None):
        raise OptionError("give one text, or --file")
    if args.nbest is not None and args.sample is not None:
        raise OptionError("--nbest and --sample exclude each other")
    if args.posteriors and not args.json:
        raise OptionError("--posteriors needs --json")
    if args.lm is None:  # the shipped model, from its binary cache after the first run
        lm, trie = load_shipped(SEGMENT_LM, config=lm_config(args))
    else:
        lm, trie = load_lm(args.lm, config=lm_config(args)), None
    if lm.unk_id is None:
        raise OptionError(f"{args.lm}: the model has no <unk>, which scores unknown words "
                          "(load it with --unknown-missing accept, or use another model)")
    options = SegmentOptions(unknown_penalty=args.unknown_penalty,
                             unknown_max_length=args.max_unknown_length or UNKNOWN_MAX_LENGTH)
    if args.no_cues:
        options = SegmentOptions(cues=seg.NO_CUES, unknown_penalty=options.unknown_penalty,
                                 unknown_max_length=options.unknown_max_length)
    shipped = None if args.lm is not None else SpellingModel.load(SEGMENT_SPELLING)
    segmenter = Segmenter(lm, options, spelling=shipped, trie=trie)
    if args.nbest is None and args.sample is None:
        if args.file is None:
            res = segmenter.segment(args.text, posteriors=args.posteriors, lower=args.lower)
            print_json(res.to_json()) if args.json else print(" ".join(res.words))
            return EXIT_OK
        with progress_bar(count_lines(args.file), "line") as bar:
            for batch in chunked(read_input_lines(args.file), BATCH):
                results = segmenter.segment_many(batch, posteriors=args.posteriors,
                                                 lower=args.lower)
                if args.json:
                    for res in results:
                        print_json(res.to_json())
                else:
                    sys.stdout.write("".join(" ".join(r.words) + "\n" for r in results))
                bar.update(len(batch))
        return EXIT_OK
    for raw in [args.text] if args.file is None else read_input_lines(args.file):
        s = seg.SegmentInput.read(raw)
        if not s.text:
            print_json({"input": raw, "segmentations": []}) if args.json else print()
            continue
        wl = segmenter.lattice(s)
        if args.sample is not None:
            draws = sample(lm, wl, args.sample, args.seed)
            rows = [(seg.segmentation_words(d.words, s.text), d.log_p) for d in draws]
        else:
            rows = seg.best_segmentations(lm, wl, s.text, args.nbest)
        rows = [(s.words(w, lower=args.lower), lp) for w, lp in rows]
        if args.json:
            print_json({"input": raw, "segmentations": [{"words": w, "log_p": lp}
                                                         for w, lp in rows]})
        else:
            for words, log_p in rows:
                print(f"{fixed(log_p, 6)}\t{' '.join(words)}")
    return EXIT_OK


def count_lines(path: str) -> int | None:
    """The number of lines of a plain file, for the progress bar (None for stdin or gzip,
    which are read once)."""
    if path == "-" or path.endswith(".gz"):
        return None
    try:
        with open(path, "rb") as fh:
            return sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b""))
    except OSError:
        return None  # read_input_lines reports it
