"""`arsdecode disambig`: SRILM `disambig`'s inputs and output, decoded exactly.

Why a command of its own: users of SRILM's `disambig` hold a map of p(observed | hidden) and a
text of observed tokens; this reads exactly those (arsdecode.lattice.disambig_map), decodes every
sentence with `api.decode_many` (method auto), and prints what `disambig` prints: the hidden
words, one sentence per line, or with --nbest an `NBestList1.0` list per sentence. The
differences from `disambig` are listed in docs/guide.md ("Coming from SRILM disambig").
"""

from __future__ import annotations

import argparse
import math
import sys

from arsdecode.cli.options import (
    EXIT_OK,
    EXIT_STATUS_HELP,
    EXIT_UNCERTIFIED,
    UNITS_HELP,
    add_lm_strictness_options,
    add_map_reading_options,
    add_max_iterations,
    epilog,
    lm_config,
    non_negative_float,
    positive_int,
)
from arsdecode.cli.output import report_uncertified, warn_oov
from arsdecode.errors import OptionError

BYTELOG_PER_LN = 10000.5 / 1024.0
"""NBestList1.0 scores are bytelogs: round(ln p * 10000.5 / 1024), as SRILM's LogPtoBytelog."""

CHUNK = 1000
"""Sentences per `decode_many` call: model queries are batched within a chunk, and output
streams chunk by chunk."""

MAP_HELP = ("map file: one line per observed token, 'observed hidden1 p1 hidden2 p2 ...', "
            "p = p(observed | hidden), plain (log10 with --logmap); a hidden word without a "
            "probability has p = 1; identical candidate lists share one parsed row")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "disambig", help="SRILM disambig's inputs (--text, --map), decoded exactly",
        description="Decode the hidden words of each line of observed tokens, with an n-gram "
                    "LM over the hidden words and a map of p(observed | hidden), as SRILM's "
                    "disambig does, exactly in float64. Prints one decoded sentence per line "
                    "(the hidden words only; a blank input line gives a blank output line).",
        epilog=epilog(UNITS_HELP, EXIT_STATUS_HELP),
    )
    p.add_argument("--text", required=True, help="observed tokens, one sentence per line")
    p.add_argument("--map", required=True, help=MAP_HELP)
    p.add_argument("--lm", default=None,
                   help="ARPA, MAX-ARPA or maxarpa binary model over the hidden words "
                        "(default: the embedded State of the Union 5-gram)")
    p.add_argument("--order", type=positive_int, default=None,
                   help="n-gram order (default: the model's; disambig's default is 2). A lower "
                        "order than the model's is refused for now")
    add_map_reading_options(p)
    p.add_argument("--nbest", type=positive_int, default=None, metavar="K",
                   help="print the K best hidden sentences per line as an NBestList1.0 list: "
                        "'(bytelog) w1 w2 ...', bytelog = round(ln p * 10000.5 / 1024)")
    p.add_argument("--lmw", type=positive_float, default=1.0, metavar="W",
                   help="weight of the LM's log probabilities, > 0 (default 1): the score is "
                        "lmw * ln p_LM + mapw * ln p_map, decoded exactly as ln p_LM + "
                        "(mapw / lmw) * ln p_map, the same argmax and ranking")
    add_max_iterations(p)
    add_lm_strictness_options(p)
    p.set_defaults(handler=run)


def positive_float(text: str) -> float:
    value = non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be > 0, got 0")
    return value


def bytelog(log_p: float) -> int | str:
    """SRILM's LogPtoBytelog of a natural-log score (rint: halves to even, as numpy)."""
    if log_p == -math.inf:
        return "-inf"
    import numpy as np

    return int(np.rint(log_p * BYTELOG_PER_LN))


def run(args: argparse.Namespace) -> int:
    from arsdecode.api import DEFAULT_LM, decode_kbest, decode_many, load_lm
    from arsdecode.cli.output import oov_report
    from arsdecode.lattice.disambig_map import DisambigMap, text_lattices

    lm_path = str(DEFAULT_LM) if args.lm is None else args.lm
    dmap = DisambigMap.read(args.map, logmap=args.logmap, tolower=args.tolower)
    # lmw * LM + mapw * map = lmw * (LM + (mapw / lmw) * map): the engine decodes the bracket
    # (same argmax, same ranking) and the printed scores are multiplied back by lmw.
    lattices = text_lattices(dmap, args.text, mapw=args.mapw / args.lmw,
                             keep_unk=args.keep_unk)
    lm = load_lm(lm_path, config=lm_config(args))
    if args.order is not None and args.order < lm.order:
        raise OptionError(f"--order {args.order}: lower than the model's order {lm.order}; "
                          "truncating the model is not supported yet (omit --order to use "
                          "the model's)")
    todo = [lat for lat in lattices if lat is not None]
    count, seen = 0, {}
    for lat in todo:
        one = oov_report(lat, lm.word_to_id)
        count += one["count"]
        seen.update(dict.fromkeys(one["tokens"]))
    warn_oov({"count": count, "tokens": list(seen)}, lm, lm_path)
    uncertified = 0
    if args.nbest is not None:
        for maybe in lattices:
            print("NBestList1.0")
            if maybe is None:
                continue
            kb = decode_kbest(lm, maybe, min(args.nbest, maybe.num_paths()),
                              max_iterations=args.max_iterations)
            uncertified = max(uncertified, 0 if kb.certified else kb.iterations)
            for path in kb.paths:
                print(f"({bytelog(args.lmw * path.log_p)}) {' '.join(path.tokens)}")
    else:
        # Every line is read and checked first (a bad token stops the run before any output);
        # decoding then goes by chunks, each printed as soon as it is done.
        for start in range(0, len(lattices), CHUNK):
            chunk = lattices[start : start + CHUNK]
            results = iter(decode_many(lm, [lat for lat in chunk if lat is not None],
                                       method="auto", max_iterations=args.max_iterations))
            for maybe in chunk:
                if maybe is None:
                    print()
                    continue
                r = next(results)
                if not r.certified:
                    uncertified = max(uncertified, r.iterations)
                print(" ".join(r.tokens))
            sys.stdout.flush()
    if uncertified:
        report_uncertified(uncertified)
        return EXIT_UNCERTIFIED
    return EXIT_OK
