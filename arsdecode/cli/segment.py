"""`arsdecode segment`: exact word segmentation of text written without spaces (issue 21).

Why a command: hashtags, URLs, OCR output and some scripts come without word boundaries. The
segmentation lattice (`arsdecode.tasks.segment`) has an arc for every vocabulary word found in
the text and a penalised unknown-word arc for every other short substring; its exact best path
under the n-gram LM (the compiled merged expansion) is the segmentation, with the model's
full context where the usual segmenters look at one word (wordsegment) or none (wordninja).
"""

from __future__ import annotations

import argparse

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
from arsdecode.cli.output import fixed, print_json
from arsdecode.errors import OptionError

UNKNOWN_PENALTY = 2.5
"""The default of --unknown-penalty, shown in --help: the task's
`DEFAULT_UNKNOWN_PENALTY_PER_CHAR` (a plain constant, so that --help loads no engine;
tests/test_segment_cli.py checks they agree)."""
UNKNOWN_MAX_LENGTH = 12
"""The default of --max-unknown-length: the task's `DEFAULT_UNKNOWN_MAX_LENGTH`."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "segment", help="exact word segmentation of text without spaces",
        description="Split text written without spaces (a hashtag, a URL, OCR output) into "
                    "words: the exact best path of its segmentation lattice under an n-gram "
                    "LM. The text is lower-cased and stripped to letters and digits; where it "
                    "had spaces or punctuation, no word crosses them.",
        epilog=epilog(EXIT_STATUS_HELP))
    p.add_argument("text", nargs="?", default=None, help="the text (or --file)")
    p.add_argument("--file", default=None,
                   help="segment every line of FILE ('-' for stdin); blank lines stay blank")
    p.add_argument("--lm", default=None,
                   help="ARPA, MAX-ARPA or maxarpa binary model (default: the embedded State "
                        "of the Union 5-gram); it needs <unk>")
    p.add_argument("--nbest", type=positive_int, default=None, metavar="K",
                   help="the K best distinct segmentations (word sequences), each exact")
    p.add_argument("--sample", type=positive_int, default=None, metavar="N",
                   help="N exact samples of the segmentation distribution instead")
    p.add_argument("--seed", type=seed_int, default=0, help="with --sample")
    p.add_argument("--unknown-penalty", type=non_negative_float, default=None, metavar="P",
                   help=f"ln penalty per character of an unknown word (default "
                        f"{UNKNOWN_PENALTY}), on top of the LM's ln p(<unk>)")
    p.add_argument("--max-unknown-length", type=positive_int, default=None, metavar="L",
                   help=f"longest unknown word, in characters (default {UNKNOWN_MAX_LENGTH})")
    p.add_argument("--json", action="store_true", help="one JSON object per text")
    add_lm_strictness_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from arsdecode.api import DEFAULT_LM, decode, load_lm, sample
    from arsdecode.lattice.input_files import read_input_text
    from arsdecode.tasks import segment as seg

    if (args.text is None) == (args.file is None):
        raise OptionError("give one text, or --file")
    if args.nbest is not None and args.sample is not None:
        raise OptionError("--nbest and --sample exclude each other")
    lm = load_lm(str(DEFAULT_LM) if args.lm is None else args.lm, config=lm_config(args))
    if lm.unk_id is None:
        raise OptionError(f"{args.lm}: the model has no <unk>, which scores unknown words "
                          "(load it with --unknown-missing accept, or use another model)")
    index = seg.SurfaceIndex.of_model(lm)
    options = {}
    if args.unknown_penalty is not None:
        options["unknown_penalty_per_char"] = args.unknown_penalty
    if args.max_unknown_length is not None:
        options["unknown_max_length"] = args.max_unknown_length
    texts = ([args.text] if args.file is None
             else read_input_text(args.file, "text").splitlines())
    for raw in texts:
        text, breaks = seg.prepare_input(raw)
        if not text:
            if args.json:
                print_json({"input": raw, "words": []})
            else:
                print()
            continue
        wl = seg.segmentation_lattice(text, index, breaks=breaks, **options)
        if args.sample is not None:
            draws = sample(lm, wl, args.sample, args.seed)
            rows = [(seg.segmentation_words(d.words, text), d.log_p) for d in draws]
        elif args.nbest is not None:
            rows = seg.best_segmentations(lm, wl, text, args.nbest)
        else:
            best = decode(lm, wl)
            rows = [(seg.segmentation_words(best.words, text), best.log_p)]
        if args.json:
            key = "segmentations" if len(rows) > 1 or args.nbest or args.sample else None
            if key:
                print_json({"input": raw, key: [{"words": w, "log_p": lp} for w, lp in rows]})
            else:
                print_json({"input": raw, "words": rows[0][0], "log_p": rows[0][1]})
        elif len(rows) == 1 and args.nbest is None and args.sample is None:
            print(" ".join(rows[0][0]))
        else:
            for words, log_p in rows:
                print(f"{fixed(log_p, 6)}\t{' '.join(words)}")
    return EXIT_OK

