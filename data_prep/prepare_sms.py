"""Prepare the SMS-retrieval experiment: language models and a noisy test set.

Why one script: the paper's setup (section 3.1) couples the pieces -- the held-out split decides
both what the n-gram models never see and which sentences are test material -- so they are made
together, from one seed, and recorded in one manifest.

    python -m data_prep.prepare_sms --out work/sms [--corpora state_union] [--orders 3 4 5]
                                    [--seed 0] [--data-dir DIR]
    python -m data_prep.prepare_sms --embedded    # regenerate arsdecode/data/ default model

Outputs in --out: train.txt / heldout.txt (one normalised sentence per line), lm.<n>.arpa
(modified Kneser-Ney, KenLM lmplz), lm.<n>.maxarpa (MAX-ARPA, unless --no-maxarpa),
test.jsonl (per line: id, words, observation, oov = number of words absent from the training
vocabulary) and manifest.json with every count. Reruns with the same arguments give identical
files.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from tqdm import tqdm

from arsdecode.tasks.sms.keypad import DEFAULT_K, KeypadChannel, sample_sentence
from data_prep.corpus import CorpusError, load_sentences
from data_prep.lmplz import REPO_ROOT, LmplzError, train_arpa
from maxarpa import MaxArpaError, convert, load

HELDOUT_FRACTION = 0.1
PER_LENGTH = 100
MAX_LENGTH = 10
EMBEDDED_PATH = REPO_ROOT / "arsdecode" / "data" / "state_union.5gram.arpa.gz"
EMBEDDED_PRUNE = ("0", "1", "1", "1", "1")


def _progress(items: Iterable, desc: str, total: int | None = None) -> Iterable:
    """tqdm on an interactive terminal, silent when piped or under pytest."""
    return tqdm(items, desc=desc, total=total, disable=not sys.stderr.isatty(), leave=False)


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def subset(records: Sequence[dict], per_length: int) -> list[dict]:
    """The first `per_length` records of each length (0: all; test.jsonl is a random draw).
    Bench and experiments both take their SMS test sentences this way."""
    taken: Counter = Counter()
    out = []
    for rec in records:
        n = len(rec["words"])
        if per_length == 0 or taken[n] < per_length:
            taken[n] += 1
            out.append(rec)
    return out


def split_heldout(
    sentences: Sequence[list[str]], seed: int, fraction: float = HELDOUT_FRACTION
) -> tuple[list[list[str]], list[list[str]]]:
    """(train, heldout): a seeded random `fraction` of sentences is held out.

    Both parts keep corpus order, so the files read naturally and diff cleanly across runs.
    """
    rng = np.random.default_rng([seed, 0])
    n_held = round(len(sentences) * fraction)
    held = np.zeros(len(sentences), dtype=bool)
    held[rng.permutation(len(sentences))[:n_held]] = True
    train = [s for s, h in zip(sentences, held, strict=True) if not h]
    heldout = [s for s, h in zip(sentences, held, strict=True) if h]
    return train, heldout


def draw_test_set(
    heldout: Sequence[list[str]],
    vocab: Iterable[str],
    seed: int,
    per_length: int = PER_LENGTH,
    max_length: int = MAX_LENGTH,
    k: float = DEFAULT_K,
) -> list[dict]:
    """Up to `per_length` held-out sentences of each length 1..`max_length` (tokens), each with
    a noisy keypad observation sampled from the channel.

    Each length has its own generator (seeded by `seed` and the length), so changing one
    length's pool never perturbs the others.
    """
    known = set(vocab)
    records: list[dict] = []
    for length in _progress(range(1, max_length + 1), "test set"):
        pool = [s for s in heldout if len(s) == length]
        rng = np.random.default_rng([seed, 1, length])
        chosen = rng.choice(len(pool), size=min(per_length, len(pool)), replace=False)
        for j, idx in enumerate(chosen):
            words = pool[int(idx)]
            records.append(
                {
                    "id": f"L{length:02d}-{j:03d}",
                    "words": list(words),
                    "observation": sample_sentence(words, rng, k),
                    "oov": sum(w not in known for w in words),
                }
            )
    return records


def ngram_counts(arpa_path: str | Path) -> dict[int, int]:
    """The `ngram N=count` lines of an ARPA header (plain or gzip)."""
    path = Path(arpa_path)
    opener = gzip.open if path.suffix == ".gz" else open
    counts: dict[int, int] = {}
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.startswith("ngram "):
                order, count = line[6:].strip().split("=")
                counts[int(order)] = int(count)
            elif line.startswith("\\1-grams:"):
                break
    return counts


def convert_maxarpa(arpa: Path, out: Path) -> str:
    """Write `arpa` as MAX-ARPA to `out` (`maxarpa.convert`, what `maxarpa convert ARPA OUT`
    runs); returns the manifest's status: "ok", or "failed (...)" when maxarpa refuses the
    model or `out` cannot be written. A failure does not stop the pipeline: the ARPA models
    are still usable, and the conversion can be rerun later."""
    try:
        convert(arpa, out)
    except (MaxArpaError, OSError) as err:
        return f"failed ({type(err).__name__}: {err})"
    return "ok"


def _write_lines(path: Path, sentences: Iterable[list[str]]) -> None:
    path.write_text("".join(" ".join(s) + "\n" for s in sentences), encoding="utf-8")


def channel_stats(vocab: Iterable[str], records: Sequence[dict], k: float = DEFAULT_K) -> dict:
    """Candidates per position and lattice-building time over the test set (for the report).

    The timing is machine-dependent, so `prepare` prints it instead of writing it to the
    manifest, which stays byte-identical across reruns."""
    channel = KeypadChannel.from_vocab(vocab, k)
    widths: list[int] = []
    times: list[float] = []
    for rec in records:
        t0 = time.perf_counter()
        lat = channel.build_lattice(rec["observation"])
        times.append(time.perf_counter() - t0)
        widths.extend(lat.widths)
    by_len = {n: len(ws) for n, ws in channel.words_by_length.items()}
    return {
        "channel_vocab": channel.vocab_size,
        "words_by_length": by_len,
        "candidates_per_position": {
            "median": statistics.median(widths) if widths else 0,
            "max": max(widths, default=0),
            "mean": round(statistics.fmean(widths), 1) if widths else 0,
        },
        "lattice_ms": {
            "mean": round(1000 * statistics.fmean(times), 3) if times else 0,
            "max": round(1000 * max(times, default=0), 3),
        },
    }


def prepare(
    out_dir: str | Path,
    corpora: Sequence[str] = ("state_union",),
    orders: Sequence[int] = (3, 4, 5),
    seed: int = 0,
    data_dir: str | Path | None = None,
    maxarpa: bool = True,
    lmplz_args: Sequence[str] = (),
) -> dict:
    """Run the whole pipeline into `out_dir` and return (and write) the manifest."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sentences = load_sentences(corpora, data_dir, lambda xs: _progress(xs, "corpora"))
    train, heldout = split_heldout(sentences, seed)
    _write_lines(out / "train.txt", train)
    _write_lines(out / "heldout.txt", heldout)
    _say(f"{len(sentences)} sentences: {len(train)} train, {len(heldout)} held out")

    models: dict[str, dict] = {}
    for order in _progress(orders, "n-gram models"):
        arpa = train_arpa(
            (" ".join(s) for s in train), order, out / f"lm.{order}.arpa", extra_args=lmplz_args
        )
        entry: dict = {"arpa": arpa.name, "ngrams": ngram_counts(arpa)}
        if maxarpa:
            entry["maxarpa_status"] = convert_maxarpa(arpa, out / f"lm.{order}.maxarpa")
            entry["maxarpa"] = f"lm.{order}.maxarpa"
        models[str(order)] = entry
        _say(f"order {order}: {entry['ngrams']} {entry.get('maxarpa_status', '')}")

    vocab = (
        list(load(out / f"lm.{orders[0]}.arpa").vocab)
        if orders
        else sorted({w for s in train for w in s})
    )
    records = draw_test_set(heldout, vocab, seed)
    with open(out / "test.jsonl", "w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec) + "\n")
    per_length: dict[int, int] = {}
    for rec in records:
        per_length[len(rec["words"])] = per_length.get(len(rec["words"]), 0) + 1
    channel = channel_stats(vocab, records)
    timing = channel.pop("lattice_ms")  # machine-dependent: printed, not in the manifest
    manifest = {
        "corpora": list(corpora),
        "seed": seed,
        "k": DEFAULT_K,
        "sentences": len(sentences),
        "train_sentences": len(train),
        "train_tokens": sum(len(s) for s in train),
        "heldout_sentences": len(heldout),
        "vocab_size": len(vocab),
        "models": models,
        "test_set": {
            "file": "test.jsonl",
            "per_length": per_length,
            "total": len(records),
            "with_oov": sum(1 for r in records if r["oov"]),
        },
        "channel": channel,
    }
    _say(f"lattice building over the test set: mean {timing['mean']} ms, max {timing['max']} ms")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def make_embedded(
    out_path: str | Path = EMBEDDED_PATH,
    data_dir: str | Path | None = None,
    prune: Sequence[str] = EMBEDDED_PRUNE,
) -> dict:
    """Train the small default 5-gram on all of state_union (public domain), pruned, and save it
    gzip-compressed with a fixed header (mtime 0) so regeneration is byte-identical."""
    out_path = Path(out_path)
    sentences = load_sentences(["state_union"], data_dir)
    tmp_arpa = out_path.with_name(out_path.name + ".build.arpa")
    try:
        train_arpa((" ".join(s) for s in sentences), 5, tmp_arpa, extra_args=["--prune", *prune])
        with open(tmp_arpa, "rb") as src, open(out_path, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
                gz.write(src.read())
    finally:
        tmp_arpa.unlink(missing_ok=True)
    counts = ngram_counts(out_path)
    return {
        "path": str(out_path),
        "sentences": len(sentences),
        "ngrams": counts,
        "total_ngrams": sum(counts.values()),
        "bytes": out_path.stat().st_size,
        "prune": list(prune),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m data_prep.prepare_sms", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "work" / "sms")
    ap.add_argument("--corpora", nargs="+", default=["state_union"])
    ap.add_argument("--orders", nargs="+", type=int, default=[3, 4, 5])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="directory with <corpus>.zip (default: ../shared/data/nltk, $NLTK_DATA)",
    )
    ap.add_argument("--no-maxarpa", action="store_true", help="skip the MAX-ARPA conversion")
    ap.add_argument(
        "--embedded",
        action="store_true",
        help=f"regenerate the embedded default model {EMBEDDED_PATH.name} and exit",
    )
    ap.add_argument("--embedded-out", type=Path, default=EMBEDDED_PATH)
    args = ap.parse_args(argv)
    try:
        if args.embedded:
            result = make_embedded(args.embedded_out, args.data_dir)
        else:
            if any(o < 1 for o in args.orders):
                ap.error("--orders must be positive")
            result = prepare(
                args.out,
                args.corpora,
                args.orders,
                args.seed,
                args.data_dir,
                maxarpa=not args.no_maxarpa,
            )
    except (CorpusError, LmplzError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
