"""`arsdecode tag`: exact POS tagging with a TnT-style HMM over a tag n-gram LM (paper 3.2).

Why the models are not bundled: they derive from the Penn Treebank sample and CoNLL-2000,
which may not be redistributed; `python -m data_prep.pos_data --out work/pos` builds them from
the NLTK corpora, and this command finds them in --models, $ARSDECODE_POS_MODELS or work/pos.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

from arsdecode.ars import decode, sample
from arsdecode.errors import ModelError

REPO_ROOT = Path(__file__).resolve().parents[2]


class PosModelError(ModelError):
    """The POS models are missing or incomplete."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    from arsdecode.cli import add_engine_options, add_sampling_options

    p = sub.add_parser("tag", help="exact POS tagging (word/TAG)")
    p.add_argument("sentence", nargs="?", default=None, help="a tokenised sentence")
    p.add_argument("--file", default=None,
                   help="tag one sentence per line of FILE ('-' for stdin)")
    p.add_argument("--conll", default=None, metavar="OUT",
                   help="with --file: write word<TAB>tag lines, blank line between sentences")
    p.add_argument("--order", type=int, default=5, help="tag LM order, 2..9 (default 5)")
    p.add_argument("--models", default=None, help="directory made by data_prep.pos_data")
    p.add_argument("--sample", type=int, default=None, metavar="N",
                   help="draw N exact samples; print them and posterior tag marginals")
    add_sampling_options(p, default_ar=0.6)
    add_engine_options(p)
    p.set_defaults(handler=run)


def models_dir(arg: str | None) -> Path:
    for cand in (arg, os.environ.get("ARSDECODE_POS_MODELS"), str(REPO_ROOT / "work" / "pos")):
        if cand and Path(cand).is_dir():
            return Path(cand)
    raise PosModelError(
        "POS models not found; build them with `python -m data_prep.pos_data --out work/pos` "
        "or pass --models DIR"
    )


def load_models(arg: str | None, order: int):
    """The tag LM of `order` (MAX-ARPA preferred) and the emission model."""
    from arsdecode.cli import load_lm
    from arsdecode.tasks.pos import TnTEmissions

    d = models_dir(arg)
    lm_path = next((p for p in (d / f"tags.{order}.maxarpa", d / f"tags.{order}.arpa")
                    if p.is_file()), None)
    if lm_path is None:
        raise PosModelError(f"{d}: no tag LM of order {order} (tags.{order}.maxarpa)")
    if not (d / "emissions.json.gz").is_file():
        raise PosModelError(f"{d}: no emissions.json.gz")
    return load_lm(lm_path), TnTEmissions.load(d / "emissions.json.gz")


def run(args: argparse.Namespace) -> int:
    if (args.sentence is None) == (args.file is None):
        raise ValueError("give either a sentence or --file")
    if args.sentence is not None and not args.sentence.split():
        raise ValueError("empty input sentence")
    if not 2 <= args.order <= 9:
        raise ValueError(f"--order must be between 2 and 9, got {args.order}")
    lm, emissions = load_models(args.models, args.order)
    if args.file is None:
        return tag_one(args, lm, emissions, args.sentence.split())
    return tag_file(args, lm, emissions)


def tag_one(args: argparse.Namespace, lm, emissions, words: list[str]) -> int:
    start = time.perf_counter()
    lattice = emissions.lattice(words)
    if args.sample is None:
        r = decode(lm, lattice, variant=args.variant)
        seconds = time.perf_counter() - start
        if args.json:
            print(json.dumps({"tokens": words, "tags": r.tokens, "log_p": r.log_p,
                              "iterations": r.iterations, "states": r.states,
                              "seconds": seconds}))
        else:
            print(" ".join(f"{w}/{t}" for w, t in zip(words, r.tokens)))
        return 0
    if args.sample < 1:
        raise ValueError("--sample must be at least 1")
    r = sample(lm, lattice, args.sample, args.seed, batch=args.batch,
               target_ar=args.target_ar, ar_window=args.ar_window, variant=args.variant)
    marginals = tag_marginals(r.samples)
    seconds = time.perf_counter() - start
    if args.json:
        print(json.dumps({"tokens": words, "samples": r.samples, "log_p": r.log_p,
                          "marginals": marginals, "trials": r.trials,
                          "acceptance_rate": r.acceptance_rate, "log_Z": r.log_Z,
                          "log_Z_ci": list(r.log_Z_ci), "seconds": seconds}))
        return 0
    counts = Counter(tuple(s) for s in r.samples)
    print("count  tags")
    for tags, c in counts.most_common(10):
        print(f"{c:>5}  {' '.join(tags)}")
    print("\nposterior tag marginals (from exact samples):")
    for w, dist in zip(words, marginals):
        top = sorted(dist.items(), key=lambda kv: -kv[1])[:3]
        print(f"{w:<15} " + "  ".join(f"{t} {p:.3f}" for t, p in top))
    print(f"\nsamples={len(r.samples)} trials={r.trials} "
          f"acceptance_rate={r.acceptance_rate:.3f} seconds={seconds:.2f}")
    return 0


def tag_marginals(samples: list[list[str]]) -> list[dict[str, float]]:
    """Per position, the fraction of samples with each tag (a Monte Carlo posterior)."""
    if not samples:
        return []
    out = []
    for i in range(len(samples[0])):
        c = Counter(s[i] for s in samples)
        out.append({t: k / len(samples) for t, k in c.most_common()})
    return out


def tag_file(args: argparse.Namespace, lm, emissions) -> int:
    from tqdm import tqdm

    from maxarpa.arpa import atomic_writer

    src = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")
    with src:
        lines = src.read().splitlines()
    for lineno, line in enumerate(lines, start=1):
        if not line.split():
            raise ValueError(f"{args.file}:{lineno}: empty input line")
    out, tmp = (atomic_writer(args.conll) if args.conll else (None, None))
    try:
        for line in tqdm(lines, unit="sent", disable=not sys.stderr.isatty(), file=sys.stderr):
            words = line.split()
            start = time.perf_counter()
            r = decode(lm, emissions.lattice(words), variant=args.variant)
            if out is not None:
                out.write("".join(f"{w}\t{t}\n" for w, t in zip(words, r.tokens)) + "\n")
            elif args.json:
                print(json.dumps({"tokens": words, "tags": r.tokens, "log_p": r.log_p,
                                  "seconds": time.perf_counter() - start}))
            else:
                print(" ".join(f"{w}/{t}" for w, t in zip(words, r.tokens)))
        if out is not None:
            out.close()
            os.replace(tmp, args.conll)
    except BaseException:
        if out is not None:
            out.close()
            Path(tmp).unlink(missing_ok=True)
        raise
    return 0
