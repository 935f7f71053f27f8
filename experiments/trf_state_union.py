"""Random-field LM training on State of the Union with exact (ARS) against MCMC samples, the
same wall-time budget each (issue 22, target 3); writes docs/results-trf.md and its plot.

Data: `data_prep.corpus.load_sentences(["state_union"])`, sentences of 1 .. --max-length
words, shuffled with --seed and split into --train and --heldout sentences; the --vocab most
frequent training words are kept and every other word is `<oov>` (lmplz refuses `<unk>` in its
input, so the class has a name of its own; the ARPA's own `<unk>` stays a word of the model).
Base: KenLM's bigram (lmplz -o 2 --discount_fallback) on the training text. Features: n-grams
of order 1..3 and skip-bigrams seen >= --min-count times (`arsdecode.tasks.trf.features`).
Training: `arsdecode.tasks.trf.train` with sampler "ars" and then "mcmc", same settings and
--budget seconds each. Evaluation afterwards, at a few checkpoints of each run's log: held-out
ln p(l, x) per token with the EXACT ln Z_l (the numpy forward DP, `full_log_partition`, over
every sentence of each length) and with the sampler's own estimates (ARS's evidence, MCMC's
zeta). The page and the plot are drawn by experiments/report/trf.py from the results.

    KENLM_BIN=.tools/bin python -m experiments.trf_state_union [--budget 150]
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import maxarpa
from arsdecode.model import as_target_model
from arsdecode.tasks.trf.exact import draw_length, exact_log_partitions
from arsdecode.tasks.trf.features import FeatureSet, build_model, select_features
from arsdecode.tasks.trf.score import sentence_log_scores
from arsdecode.tasks.trf.train import (
    Checkpoint,
    Problem,
    Sampler,
    TrainConfig,
    heldout_log_likelihood,
    train,
)
from data_prep.corpus import load_sentences
from data_prep.lmplz import train_arpa
from experiments.progress_log import progress, say
from experiments.report.trf import IMG_NAME, plot, render

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "results-trf.md"
IMG = REPO / "docs" / "img" / IMG_NAME
OOV = "<oov>"


def split_corpus(args: argparse.Namespace) -> tuple[list[list[str]], list[list[str]]]:
    sents = [s for s in load_sentences(["state_union"], args.data_dir)
             if 1 <= len(s) <= args.max_length]
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(sents))
    train_s = [sents[i] for i in order[:args.train]]
    held = [sents[i] for i in order[args.train:args.train + args.heldout]]
    return train_s, held


def restrict(sentences: list[list[str]], keep: set[str]) -> list[list[str]]:
    return [[w if w in keep else OOV for w in s] for s in sentences]


def top_words(sentences: list[list[str]], v: int) -> set[str]:
    counts = collections.Counter(w for s in sentences for w in s)
    return {w for w, _ in counts.most_common(v)}


def bigram(sentences: list[list[str]], path: Path) -> maxarpa.Model:
    train_arpa([" ".join(s) for s in sentences], 2, path, ["--discount_fallback"])
    return maxarpa.load(path)


def measure(train_s: list[list[str]], tmp: Path, args: argparse.Namespace) -> list[dict]:
    """Seconds for 20 ARS samples on a fixed-length lattice over the whole vocabulary (the
    bigram plus 400 random-weight features), for the V and L the choice was made from."""
    rows = []
    grid = [(100, (5, 10, 15)), (300, (5, 10, 15)), (1000, (5,))]
    for v, lengths in grid:
        data = restrict(train_s, top_words(train_s, v))
        base = bigram(data, tmp / f"measure{v}.arpa")
        fs = select_features(data, min_count=1)
        fs = FeatureSet(fs.patterns[:400])
        rng = np.random.default_rng(args.seed)
        model = build_model(base, fs, rng.normal(0.0, 0.3, len(fs)))
        vocab = model.vocabulary()
        for length in lengths:
            d = draw_length(model, vocab, length, 20, np.random.default_rng(1))
            row = {"V": len(vocab), "L": length, "ars_seconds": d.seconds, "trials": d.trials}
            if v <= 100:
                t0 = time.perf_counter()
                draw_length(model, vocab, length, 20, np.random.default_rng(1), method="full")
                row["full_seconds"] = time.perf_counter() - t0
            rows.append(row)
            say(f"measure V={len(vocab)} L={length}: ARS {d.seconds:.2f}s ({d.trials} trials)")
    return rows


def pick(log: list[Checkpoint], count: int) -> list[Checkpoint]:
    """`count` checkpoints spread over the run's wall time, the last one included."""
    if not log:
        return []
    end = log[-1].seconds
    out: list[Checkpoint] = []
    for k in range(1, count + 1):
        target = end * k / count
        best = min(log, key=lambda c: abs(c.seconds - target))
        if best not in out:
            out.append(best)
    return out


def evaluate(problem: Problem, held: list[list[str]], point: Checkpoint) -> dict:
    model = problem.model(point.weights)
    lengths = problem.lengths
    t0 = time.perf_counter()
    exact = exact_log_partitions(model, problem.vocab, lengths)
    seconds = time.perf_counter() - t0
    row = {"iteration": point.iteration, "seconds": point.seconds, "samples": point.samples,
           "exact": heldout_log_likelihood(model, held, problem.log_pi, exact),
           "exact_log_z": exact, "eval_seconds": seconds}
    if point.log_z:
        row["own"] = heldout_log_likelihood(model, held, problem.log_pi, point.log_z)
        row["log_z_error"] = float(np.mean([abs(point.log_z[n] - exact[n]) for n in lengths]))
    return row


def run(args: argparse.Namespace) -> dict:
    train_s, held = split_corpus(args)
    keep = top_words(train_s, args.vocab)
    train_r = restrict(train_s, keep)
    held_r = [s for s in restrict(held, keep) if len(s) >= args.min_length]
    oov_rate = sum(w == OOV for s in train_r for w in s) / sum(map(len, train_r))
    say(f"{len(train_r)} training, {len(held_r)} held-out sentences; V={args.vocab}, "
        f"oov rate {oov_rate:.3f}")
    out: dict = {"oov_rate": oov_rate, "heldout_used": len(held_r),
                 "started": time.perf_counter()}
    out["settings"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        if args.measure:
            out["measure"] = measure(train_s, tmp, args)
        base = bigram(train_r, tmp / "base.arpa")
    features = select_features(train_r, min_count=args.min_count)
    problem = Problem(base, features, train_r, args.max_length, min_length=args.min_length)
    out["features"] = len(features)
    out["train_used"] = len(problem.sentences)
    out["vocab_sampled"] = len(problem.vocab)
    say(f"{len(features)} features, {len(problem.vocab)} words to sample from")
    # the base bigram on its own (normalised over every sentence of its vocabulary)
    ids = [[int(i) for i in base.ids(s)] for s in held_r]
    base_ll = float(sentence_log_scores(as_target_model(base), ids).sum())
    tokens = sum(len(s) + 1 for s in held_r)
    out["bigram_ppl"] = math.exp(-base_ll / tokens)
    out["start"] = evaluate(problem, held_r, Checkpoint(0.0, 0, 0, np.zeros(len(features)),
                                                        {}))
    say(f"bigram ppl {out['bigram_ppl']:.3f}; TRF at lambda=0 (exact Z) "
        f"{out['start']['exact']['perplexity']:.3f} "
        f"(exact Z of {len(problem.lengths)} lengths: {out['start']['eval_seconds']:.1f}s)")
    out["runs"] = []
    for k in args.samples:
        config = TrainConfig(iterations=args.iterations, budget=args.budget,
                             minibatch=args.minibatch, samples=k, gamma0=args.gamma0,
                             t0=args.t0, l2=args.l2, seed=args.seed, sweeps=args.sweeps)
        out["config"] = {key: v for key, v in vars(config).items()
                         if key not in ("ars_options", "samples")}
        ars = train_and_evaluate(problem, held_r, "ars", config, args.checkpoints)
        mcmc = train_and_evaluate(problem, held_r, "mcmc", config, args.checkpoints,
                                  also=ars["iterations"])
        out["runs"] += [ars, mcmc]
    out["command_seconds"] = time.perf_counter() - out.pop("started")
    return out


def train_and_evaluate(problem: Problem, held: list[list[str]], sampler: Sampler,
                       config: TrainConfig, checkpoints: int, also: int | None = None) -> dict:
    """Train, then evaluate `checkpoints` points of the log (and iteration `also`, to compare
    the samplers iteration for iteration)."""
    name = f"{sampler} K={config.samples}"
    bar = tqdm(desc=f"train {name}", disable=not sys.stderr.isatty(), leave=False)
    result = train(problem, sampler, config, on_iteration=lambda point: bar.update(1))
    bar.close()
    say(f"{name}: {result.iterations} iterations, {result.samples} samples, "
        f"{result.seconds:.1f}s")
    rows = []
    for point in progress(pick(result.log, checkpoints), f"evaluate {name}"):
        rows.append(evaluate(problem, held, point))
        r = rows[-1]
        say(f"  {name} it {r['iteration']} {r['seconds']:.1f}s: ppl exact "
            f"{r['exact']['perplexity']:.3f} own {r['own']['perplexity']:.3f} "
            f"|dlnZ| {r['log_z_error']:.3f}")
    out: dict = {"sampler": sampler, "K": config.samples, "iterations": result.iterations,
                 "samples": result.samples, "seconds": result.seconds, "checkpoints": rows}
    if also is not None and also <= len(result.log):
        out["at_iteration"] = evaluate(problem, held, result.log[also - 1])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--vocab", type=int, default=100)
    ap.add_argument("--max-length", type=int, default=12)
    ap.add_argument("--min-length", type=int, default=2)
    ap.add_argument("--train", type=int, default=2500)
    ap.add_argument("--heldout", type=int, default=500)
    ap.add_argument("--min-count", type=int, default=3)
    ap.add_argument("--budget", type=float, default=150.0, help="training seconds per run")
    ap.add_argument("--iterations", type=int, default=100000)
    ap.add_argument("--minibatch", type=int, default=100)
    ap.add_argument("--samples", type=lambda t: [int(k) for k in t.split(",")],
                    default=[100, 1000], help="K per iteration, one pair of runs each")
    ap.add_argument("--gamma0", type=float, default=1.0)
    ap.add_argument("--t0", type=float, default=10.0)
    ap.add_argument("--l2", type=float, default=1e-3)
    ap.add_argument("--sweeps", type=int, default=1)
    ap.add_argument("--checkpoints", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-measure", dest="measure", action="store_false")
    ap.add_argument("--json", type=Path, default=None, help="also write the raw results")
    ap.add_argument("--out", type=Path, default=DOC)
    ap.add_argument("--render-only", action="store_true", help="re-render --json's results")
    args = ap.parse_args()
    if args.render_only:
        out = json.loads(args.json.read_text())
    else:
        out = run(args)
        if args.json:
            args.json.write_text(json.dumps(out, indent=1, default=float))
    image = args.out.parent / "img" / IMG.name  # beside the page, as its link says
    plot(out, image)
    args.out.write_text(render(out), encoding="utf-8")
    say(f"wrote {args.out} and {image}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
