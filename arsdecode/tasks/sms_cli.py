"""`arsdecode sms`: exact decoding and sampling of a noisy keypad message (the paper's 3.1).

Why a separate module from sms.py: sms.py is the channel (a pure model of the keypad); this
is the front end that loads a language model, builds the lattice and prints the paper's views
(the decoded sentence, Table 2's Viterbi trace, Table 4's ranked samples).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

from arsdecode.ars import decode, sample


def add_parser(sub: argparse._SubParsersAction) -> None:
    from arsdecode.cli import add_engine_options, add_sampling_options

    p = sub.add_parser("sms", help="decode (or sample) words from noisy keypad digits")
    p.add_argument("observation", help='digit strings separated by spaces, e.g. "3637 843 *"')
    p.add_argument("--lm", default=None, help="ARPA or MAX-ARPA model (default: embedded)")
    p.add_argument("--k", type=float, default=64.0, help="channel sharpness (paper: 64)")
    p.add_argument("--top-k", type=int, default=None,
                   help="keep the K most likely words per position (default: all when "
                        "decoding, 100 when sampling, as in the paper)")
    p.add_argument("--sample", type=int, default=None, metavar="N",
                   help="draw N exact samples and rank them (Table 4)")
    p.add_argument("--trace", type=int, nargs="?", const=1, default=None, metavar="EVERY",
                   help="print the Viterbi path every EVERY iterations (Table 2)")
    add_sampling_options(p, default_ar=0.2)
    add_engine_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from arsdecode.cli import DEFAULT_LM, decode_json, load_lm, sample_json
    from arsdecode.tasks.sms import KeypadChannel, parse_observation

    parse_observation(args.observation)  # reject bad input before loading anything
    start = time.perf_counter()
    lm = load_lm(args.lm or DEFAULT_LM)
    load_seconds = time.perf_counter() - start
    channel = KeypadChannel.from_vocab(lm.vocab, k=args.k)
    if args.sample is not None:
        if args.sample < 1:
            raise ValueError("--sample must be at least 1")
        top_k = args.top_k if args.top_k is not None else 100
        lattice = channel.build_lattice(args.observation, top_k=top_k)
        r = sample(lm, lattice, args.sample, args.seed, batch=args.batch,
                   target_ar=args.target_ar, ar_window=args.ar_window, variant=args.variant)
        ranked = rank_samples(r.samples, r.log_p)
        if args.json:
            out = sample_json(r)
            out["ranked"] = [{"tokens": t, "count": c, "log_p": lp} for t, c, lp in ranked]
            out["load_seconds"] = load_seconds
            print(json.dumps(out))
            return 0
        print(f"{'count':>6}  {'log_p':>10}  sentence")
        for toks, count, lp in ranked:
            print(f"{count:>6}  {lp:>10.3f}  {' '.join(toks)}")
        print(f"samples={len(r.samples)} trials={r.trials} acceptance_rate={r.acceptance_rate:.3f}"
              f" states={r.states} log_Z={r.log_Z:.3f} seconds={r.seconds:.3f}")
        return 0
    lattice = channel.build_lattice(args.observation, top_k=args.top_k)
    every = args.trace

    def show(iteration: int, tokens: list[str], log_q: float, log_p: float) -> None:
        if every and (iteration == 1 or iteration % every == 0):
            print(f"{iteration:>5}  log_q={log_q:>10.3f}  log_p={log_p:>10.3f}  {' '.join(tokens)}")

    r = decode(lm, lattice, variant=args.variant, on_iteration=show if every else None)
    if args.json:
        out = decode_json(r)
        out["load_seconds"] = load_seconds
        print(json.dumps(out))
        return 0
    print(" ".join(r.tokens))
    print(f"log_p={r.log_p:.4f} iterations={r.iterations} states={r.states} "
          f"seconds={r.seconds:.3f} (model load {load_seconds:.2f} s)")
    return 0


def rank_samples(
    samples: list[list[str]], log_p: list[float]
) -> list[tuple[list[str], int, float]]:
    """Distinct samples with their counts and log p, most frequent first (Table 4)."""
    counts = Counter(tuple(s) for s in samples)
    score = {tuple(s): lp for s, lp in zip(samples, log_p)}
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], -score[kv[0]]))
    return [(list(t), c, score[t]) for t, c in ranked]
