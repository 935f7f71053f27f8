"""`arsdecode disambig`: SRILM `disambig`'s inputs, options and output, decoded exactly.

Why a command of its own: users of SRILM's `disambig` hold a map of p(observed | hidden) and a
text of observed tokens; this reads exactly those (arsdecode.lattice.disambig_map) and prints
what `disambig` prints: the hidden words, one sentence per line (`decode_many`, method auto),
or with --nbest K disambig's `NBEST_k <log10 score> <s> w1 ... </s>` lines (an `NBestList1.0`
list per sentence with --nbest-format NBestList1.0), or with --posteriors / --totals / --fb
the forward-backward results (exact posteriors and ln Z where the merged states fit a budget,
else sampled estimates, with a warning). The LM is scored as disambig scores it
(`arsdecode.api.weighted`: --lmw, --no-eos, --no-bos) and truncated to --order
(`maxarpa.truncate`). The differences from `disambig` are listed in docs/guide.md ("Coming
from SRILM disambig").
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from arsdecode.cli.options import (
    EXIT_OK,
    EXIT_STATUS_HELP,
    EXIT_UNCERTIFIED,
    UNITS_HELP,
    add_lm_strictness_options,
    add_lm_weight_option,
    add_map_reading_options,
    add_max_iterations,
    add_memory_budget_option,
    add_mix_options,
    epilog,
    positive_int,
    seed_int,
)
from arsdecode.cli.output import report_uncertified, warn, warn_oov
from arsdecode.errors import OptionError
from maxarpa.constants import BOS, EOS, LN10

if TYPE_CHECKING:
    from arsdecode.lattice import Lattice
    from arsdecode.model import ModelLike


BYTELOG_PER_LN = 10000.5 / 1024.0
"""NBestList1.0 scores are bytelogs: round(ln p * 10000.5 / 1024), as SRILM's LogPtoBytelog."""

NBEST_FORMATS = ("disambig", "NBestList1.0")

CHUNK = 1000
"""Sentences per `decode_many` call, at most: model queries are batched within a chunk, and
output streams chunk by chunk."""

CHUNK_CANDIDATES = 50_000
"""Candidates (summed over a chunk's positions) per `decode_many` call, at most (a single
larger sentence is a chunk of its own). Why: the batched call's arrays grow with its
candidates, about 19 bytes each on disambig's 100 top-100 keypad lattices (230k candidates:
7.3 MB above the first decode, against 5.3 MB in chunks of 50k), and above about 20k
candidates per call the batching saves no more CPU there (issue 34)."""

MAP_HELP = ("map file: one line per observed token, 'observed hidden1 p1 hidden2 p2 ...', "
            "p = p(observed | hidden), plain (log10 with --logmap); a hidden word without a "
            "probability has p = 1; identical candidate lists share one parsed row")

SRILM_HELP = ("SRILM's single-dash spellings are accepted too (-text, -map, -lm, -order, "
              "-logmap, -keep-unk, -mapw, -lmw, -nbest, -no-eos, -no-sos, -fb, -posteriors, "
              "-totals); docs/guide.md lists every difference from disambig.")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "disambig", help="SRILM disambig's inputs (--text, --map), decoded exactly",
        description="Decode the hidden words of each line of observed tokens, with an n-gram "
                    "LM over the hidden words and a map of p(observed | hidden), as SRILM's "
                    "disambig does, exactly in float64. Prints one decoded sentence per line "
                    "(the hidden words only; a blank input line gives a blank output line).",
        epilog=epilog(UNITS_HELP, SRILM_HELP, EXIT_STATUS_HELP),
    )
    p.add_argument("--text", "-text", required=True,
                   help="observed tokens, one sentence per line")
    p.add_argument("--map", "-map", required=True, help=MAP_HELP)
    p.add_argument("--lm", "-lm", default=None,
                   help="ARPA, MAX-ARPA or maxarpa binary model over the hidden words "
                        "(default: the embedded State of the Union 5-gram)")
    p.add_argument("--order", "-order", type=positive_int, default=None,
                   help="n-gram order (default: the model's; disambig's default is 2). A lower "
                        "order than the model's truncates it as SRILM does: the n-grams above "
                        "N are dropped, and the N-grams' backoffs")
    add_map_reading_options(p, srilm=True)
    add_lm_weight_option(p, "-lmw")
    add_mix_options(p, srilm=True)
    p.add_argument("--no-eos", "-no-eos", action="store_true",
                   help="no </s> factor at the end of a sentence (SRILM's -no-eos)")
    p.add_argument("--no-bos", "--no-sos", "-no-sos", dest="no_bos", action="store_true",
                   help="the first word is scored without <s> before it, from the empty "
                        "context (SRILM ngram's -no-sos)")
    p.add_argument("--nbest", "-nbest", type=positive_int, default=None, metavar="K",
                   help="print the K best hidden sentences of each line as disambig does: "
                        "'NBEST_k <log10 score> <s> w1 ... </s>' (no NBEST_k prefix when "
                        "K = 1)")
    p.add_argument("--nbest-format", choices=NBEST_FORMATS, default="disambig",
                   help="--nbest's layout: disambig's lines (default), or an NBestList1.0 "
                        "list per sentence, '(bytelog) w1 w2 ...', bytelog = "
                        "round(ln p * 10000.5 / 1024)")
    p.add_argument("--fb", "-fb", action="store_true",
                   help="forward-backward decoding: print, per position, the hidden word of "
                        "highest posterior probability (instead of the best sentence)")
    p.add_argument("--posteriors", "-posteriors", action="store_true",
                   help="print the posterior table instead of the sentences: per position a "
                        "line 'observed<TAB> hidden1 p1 hidden2 p2 ...' (the map's format; "
                        "log10 with --logmap), <s> and </s> lines included, as disambig "
                        "prints it; exact by forward-backward")
    p.add_argument("--totals", "-totals", action="store_true",
                   help="print the total probability of each sentence (log10, the sum over "
                        "every hidden sentence of the weighted scores), one per line, "
                        "after its --posteriors table if any; exact by forward-backward")
    p.add_argument("--samples", type=positive_int, default=1000, metavar="N",
                   help="--posteriors/--totals/--fb on a sentence too large for the exact "
                        "forward-backward: estimate from N exact samples (with a warning)")
    p.add_argument("--seed", type=seed_int, default=0, help="seed of those samples")
    add_max_iterations(p)
    add_memory_budget_option(p)
    add_lm_strictness_options(p)
    p.set_defaults(handler=run)


def bytelog(log_p: float) -> int | str:
    """SRILM's LogPtoBytelog of a natural-log score (rint: halves to even, as numpy)."""
    if log_p == -math.inf:
        return "-inf"
    import numpy as np

    return int(np.rint(log_p * BYTELOG_PER_LN))


def _number(x: float) -> str:
    """A probability or log10 value as printed: the shortest text that reads back to the same
    float64 (exact, where disambig prints 6 digits of a float32)."""
    return repr(float(x))


class SentencePosteriors(NamedTuple):
    """One sentence's forward-backward results, as `_print_forward_backward` prints them."""

    table: list[list[tuple[str, float]]]  # per position, (token, posterior) in map order
    best: list[str]  # per position, the token of highest posterior (the first such)
    log_z: float  # ln Z
    exact: bool  # False: estimated from exact samples


def _posteriors(lm: ModelLike, lattices: Sequence[Lattice], *, samples: int = 1000,
                seed: int = 0) -> Iterator[SentencePosteriors]:
    """Per lattice, lazily: its posteriors and ln Z, exact by the compiled forward-backward
    where the merged states fit the budget (`dispatch.exact_marginals`, method auto), else
    from `samples` exact samples (`arsdecode.api.marginals`, which then samples). Lazily, so
    one sentence's table is printed and dropped before the next is computed; and the exact
    case is read off the probability arrays, without a Marginal object per candidate
    (issue 34: the whole batch's marginals were held at once, and building and re-sorting
    them was a third of the posteriors' time). Same numbers and order as the Marginal path:
    the map reader refuses a hidden word listed twice on a line, so a position's tokens are
    distinct and each candidate is one row, in map order."""
    from arsdecode.api import marginals
    from arsdecode.methods.dispatch import exact_marginals

    for lat in lattices:
        exact = exact_marginals(lm, lat, "auto") if len(lat) else None
        if exact is None:
            r = marginals(lm, lat, samples, seed, method="auto")
            yield SentencePosteriors([[(m.token, m.p) for m in pos]
                                      for pos in _in_map_order(r.marginals, lat)],
                                     [pos[0].token for pos in r.marginals], r.log_Z, r.exact)
            continue
        probs, log_z = exact
        table, best = [], []
        for toks, ps in zip(lat.tokens, probs, strict=True):
            values = ps.tolist()
            table.append(list(zip(toks, values, strict=True)))
            best.append(toks[max(range(len(values)), key=values.__getitem__)])  # the first
        yield SentencePosteriors(table, best, log_z, True)


def _empty_sentence_log_p(target: Any) -> float:
    """ln of the weighted score of an empty sentence (a blank input line): the `</s>` factor
    after `<s>` (0 without it), as disambig scores a line of no words."""
    import numpy as np

    from arsdecode.model import as_target_model, context_rows

    target = as_target_model(target)
    rows = context_rows([[target.bos]], target.order - 1)
    return float(target.log_prob(rows, np.array([target.eos], dtype=np.int64))[0])


def run(args: argparse.Namespace) -> int:
    from arsdecode.api import DEFAULT_LM
    from arsdecode.cli.output import oov_report
    from arsdecode.cli.target import build, target_spec
    from arsdecode.lattice.disambig_map import DisambigMap, text_sentences

    forward_backward = args.posteriors or args.totals or args.fb
    if args.nbest is not None and forward_backward:
        raise OptionError("--nbest is Viterbi decoding; it does not combine with --fb, "
                          "--posteriors or --totals")
    spec = target_spec(args, lm=str(DEFAULT_LM) if args.lm is None else args.lm,
                       order=args.order, sentence_start=not args.no_bos,
                       sentence_end=not args.no_eos)  # refused before any file is read
    dmap = DisambigMap.read(args.map, logmap=args.logmap, tolower=args.tolower)
    sentences = text_sentences(dmap, args.text, mapw=args.mapw, keep_unk=args.keep_unk)
    lattices = [lat for _, lat in sentences]
    built = build(spec)  # --mix-lm: the interpolation, whose vocabulary is the union
    vocabulary = built.vocabulary()
    count, seen = 0, {}
    for lat in lattices:
        if lat is None:
            continue
        one = oov_report(lat, vocabulary)
        count += one["count"]
        seen.update(dict.fromkeys(one["tokens"]))
    warn_oov({"count": count, "tokens": list(seen)}, built.hidden, built.source)
    target = built.model
    if forward_backward:
        return _print_forward_backward(args, target, sentences, dmap.tolower)
    if args.nbest is not None:
        return _print_nbest(args, target, lattices)
    return _print_best(args, target, lattices)


def _print_best(args: argparse.Namespace, target: Any, lattices: list[Lattice | None]) -> int:
    """One decoded sentence per line. Every line was read and checked first (a bad token
    stops the run before any output); decoding goes by chunks, each printed when done."""
    from arsdecode.api import decode_many

    uncertified = 0
    for chunk in _chunks(lattices):
        results = iter(decode_many(target, [lat for lat in chunk if lat is not None],
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
    return _status(uncertified, args)


def _chunks(lattices: list[Lattice | None]) -> Iterator[list[Lattice | None]]:
    """Consecutive runs of `lattices` (blank lines included) of at most CHUNK sentences and
    CHUNK_CANDIDATES candidates, each run at least one sentence."""
    chunk: list[Lattice | None] = []
    sentences = candidates = 0
    for lat in lattices:
        size = 0 if lat is None else sum(lat.widths)
        if chunk and (sentences == CHUNK or candidates + size > CHUNK_CANDIDATES):
            yield chunk
            chunk, sentences, candidates = [], 0, 0
        chunk.append(lat)
        sentences += 1
        candidates += size
    if chunk:
        yield chunk


def _print_nbest(args: argparse.Namespace, target: Any, lattices: list[Lattice | None]) -> int:
    """The K best hidden sentences of each line, in disambig's layout (`NBEST_k` lines with
    log10 scores and the sentence markers the score counts) or as an NBestList1.0 list
    (bytelog scores); every score is the exact weighted ln p."""
    from arsdecode.api import decode_kbest

    uncertified = 0
    for maybe in lattices:
        if args.nbest_format == "NBestList1.0":
            print("NBestList1.0")
        if maybe is None:
            if args.nbest_format == "disambig":  # disambig scores the empty sentence
                _print_disambig_hyp(args, 0, _empty_sentence_log_p(target), [])
            continue
        kb = decode_kbest(target, maybe, min(args.nbest, maybe.num_paths()),
                          max_iterations=args.max_iterations)
        uncertified = max(uncertified, 0 if kb.certified else kb.iterations)
        for n, path in enumerate(kb.paths):
            if args.nbest_format == "disambig":
                _print_disambig_hyp(args, n, path.log_p, path.tokens)
            else:
                print(f"({bytelog(path.log_p)}) {' '.join(path.tokens)}")
        sys.stdout.flush()
    return _status(uncertified, args)


def _print_disambig_hyp(args: argparse.Namespace, n: int, log_p: float,
                        tokens: Sequence[str]) -> None:
    """One hypothesis as `disambig -nbest K` prints it: `NBEST_n <log10 score> ` (only when
    K > 1), then the hidden sentence with the `<s>` and `</s>` its score includes."""
    words = ([] if args.no_bos else [BOS]) + list(tokens) + ([] if args.no_eos else [EOS])
    prefix = f"NBEST_{n} {_number(log_p / LN10)} " if args.nbest > 1 else ""
    print(prefix + " ".join(words))


def _print_forward_backward(args: argparse.Namespace, target: Any,
                            sentences: list[tuple[list[str], Lattice | None]],
                            tolower: bool) -> int:
    """--posteriors, --totals and --fb, in disambig's formats: the posterior table (one line
    per position, <s> and </s> included), then the total (log10) of each sentence; with only
    --fb, the per-position argmax words as the sentence."""
    todo = [lat for _, lat in sentences if lat is not None]
    results = iter(_posteriors(target, todo, samples=args.samples, seed=args.seed))
    estimated = 0
    sentence_start = not args.no_bos
    sentence_end = not args.no_eos
    for observed, lat in sentences:
        if lat is None:
            r = SentencePosteriors([], [], _empty_sentence_log_p(target), True)
        else:
            r = next(results)
            estimated += not r.exact
        if args.posteriors:
            lines = []
            if sentence_start:
                lines.append(f"{BOS}\t {BOS} {_number(0.0 if args.logmap else 1.0)}")
            for tok, pos in zip(observed, r.table, strict=True):
                lines.append(f"{tok.lower() if tolower else tok}\t{_cells(pos, args.logmap)}")
            if sentence_end:
                lines.append(f"{EOS}\t {EOS} {_number(0.0 if args.logmap else 1.0)}")
            print("\n".join(lines))
        if args.totals:
            print(_number(r.log_z / LN10))
        elif args.fb and not args.posteriors:
            print(" ".join(r.best))
        sys.stdout.flush()
    if estimated:
        warn(f"{estimated} of {len(todo)} sentences are too large for the exact "
             f"forward-backward: their posteriors and totals are estimates from "
             f"{args.samples} exact samples (seed {args.seed}), not exact values")
    return EXIT_OK


def _in_map_order(marginals: list, lattice: Lattice | None) -> list:
    """Each position's marginals in the order of its map line (the lattice's candidates), as
    disambig prints them, not by decreasing posterior."""
    if lattice is None:
        return marginals
    out = []
    for pos, tokens in zip(marginals, lattice.tokens, strict=True):
        rank = {t: i for i, t in enumerate(tokens)}
        out.append(sorted(pos, key=lambda m: rank[m.token]))
    return out


def _cells(pos: list[tuple[str, float]], log10: bool) -> str:
    """One position's ' token p' cells as `_probability` prints each (the log10 case inlined:
    it runs once per candidate, 182k times on disambig's 100 lattices)."""
    if not log10:
        return "".join([f" {t} {_probability(p, False)}" for t, p in pos])
    out = []
    for t, p in pos:
        q = 1.0 if p > 1.0 else p  # clipped as _probability clips; <= 0 and NaN give -inf
        out.append(f" {t} {math.log10(q)!r}" if q > 0 else f" {t} -inf")
    return "".join(out)


def _probability(p: float, log10: bool) -> str:
    """A posterior as printed: plain, or log10 with --logmap (as disambig). Clipped to
    [0, 1]: the forward-backward sums may land an ulp or two past 1."""
    p = min(max(p, 0.0), 1.0)
    if log10:
        return _number(math.log10(p) if p > 0 else -math.inf)
    return _number(p)


def _status(uncertified: int, args: argparse.Namespace) -> int:
    """`uncertified`: the most iterations of a sentence left uncertified (0: none)."""
    if uncertified:
        report_uncertified(uncertified, args.max_iterations)
        return EXIT_UNCERTIFIED
    return EXIT_OK
