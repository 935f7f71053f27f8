"""An in-domain model interpolated with a general one, as the hidden layer of the SMS task
(issue 22, target 1); writes docs/results-interpolation.md.

The in-domain model is the SMS split's KN 3-gram (`lm.3`, state_union training text,
`data_prep.prepare_sms`); the general one is a KN 3-gram that KenLM's lmplz trains here on the
brown, abc and webtext corpora (no state_union text; cached as DATA/general.3.arpa). The
target is their dynamic interpolation p = lambda p_in + (1 - lambda) p_gen
(`arsdecode.interpolate`, SRILM's `ngram -lm IN -mix-lm GEN -lambda L`), never merged into one
table.

Measured:
  - held-out perplexity on the split's state_union held-out text for every lambda of a grid
    (per token, words and </s>; words absent from the in-domain training text excluded, for
    every lambda, so the token set is the same); the best lambda is picked on the first half
    of the held-out text and reported on the second half as well;
  - each ln p checked against KenLM: the same sentences scored by `kenlm.Model` on both ARPA
    files and mixed by hand (max |difference| in ln, per token);
  - SMS word accuracy on keypad lattices of `test.jsonl` (candidates from the in-domain
    vocabulary, the same lattices for every model), in-domain alone, general alone and the
    mixture at the chosen lambda: every decode exact and certified (`method="auto"`: the
    compiled DP for one table, ARS for the mixture), with its time.

    python -m experiments.interpolation_sms --data work/sms \
        [--nltk-data ../shared/data/nltk] [--per-length 50]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

import numpy as np

import arsdecode
import maxarpa
from arsdecode.model import TargetModel, as_target_model
from arsdecode.tasks.sms.keypad import KeypadChannel
from arsdecode.tasks.trf.score import sentence_log_scores
from data_prep.prepare_sms import subset  # the first N records of each length
from experiments.report.render import write_page
from experiments.vpylm_sms import decode_all, perplexity, read_sentences, sentence_logs

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "results-interpolation.md"
GENERAL_CORPORA = ("brown", "abc", "webtext")
LAMBDAS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def general_model(data: Path, nltk_data: Path | None) -> Path:
    """The general-domain KN 3-gram (trained once by lmplz, then read from the cache)."""
    path = data / "general.3.arpa"
    if not path.exists():
        from data_prep.corpus import load_sentences
        from data_prep.lmplz import train_arpa

        sentences = load_sentences(GENERAL_CORPORA, nltk_data)
        train_arpa((" ".join(s) for s in sentences), 3, path)
    return path


def kenlm_check(arpa_in: Path, arpa_gen: Path, weight: float, mixture: TargetModel,
                sentences: list[list[str]]) -> dict:
    """max |ln p_mixture - ln(weight 10^kenlm_in + (1 - weight) 10^kenlm_gen)| over the
    tokens of `sentences` (KenLM scores each model on its own, an unknown word as <unk>: the
    mixture's missing="unk")."""
    import kenlm

    ken_in, ken_gen = kenlm.Model(str(arpa_in)), kenlm.Model(str(arpa_gen))
    worst = 0.0
    tokens = 0
    for words in sentences:
        text = " ".join(words)
        a = [x[0] for x in ken_in.full_scores(text, bos=True, eos=True)]
        b = [x[0] for x in ken_gen.full_scores(text, bos=True, eos=True)]
        mixed = [math.log(weight * 10.0 ** x + (1 - weight) * 10.0 ** y) for x, y in zip(a, b)]
        ours = sentence_logs(mixture, words, set(words))
        worst = max(worst, max(abs(x - y) for x, y in zip(ours, mixed, strict=True)))
        tokens += len(mixed)
        total = float(sentence_log_scores(mixture, [mixture.ids(words)])[0])
        worst = max(worst, abs(total - sum(mixed)))
    return {"tokens": tokens, "max_abs_ln_diff": worst, "lambda": weight}


def run(args: argparse.Namespace) -> dict:
    train = read_sentences(args.data / "train.txt")
    heldout = read_sentences(args.data / "heldout.txt")
    known = {w for s in train for w in s}
    tune, report = heldout[: len(heldout) // 2], heldout[len(heldout) // 2:]
    arpa_in = args.data / "lm.3.arpa"
    t0 = time.perf_counter()
    arpa_gen = general_model(args.data, args.nltk_data)
    out: dict = {"train_sentences": len(train), "heldout_sentences": len(heldout),
                 "general_corpora": list(GENERAL_CORPORA),
                 "general_train_seconds": time.perf_counter() - t0}
    t0 = time.perf_counter()
    m_in = maxarpa.load(args.data / "lm.3.maxarpa" if (args.data / "lm.3.maxarpa").exists()
                        else arpa_in)
    m_gen = maxarpa.load(arpa_gen)
    out["load_seconds"] = time.perf_counter() - t0
    out["vocab"] = {"in_domain": len(m_in.vocab), "general": len(m_gen.vocab)}
    grid = []
    for weight in LAMBDAS:
        target: TargetModel = (as_target_model(m_in) if weight == 1.0 else
                               as_target_model(m_gen) if weight == 0.0 else
                               arsdecode.interpolate([m_in, m_gen], [weight, 1 - weight]))
        grid.append({"lambda": weight, "ppl_tune": perplexity(target, tune, known)["ppl"],
                     "ppl_report": perplexity(target, report, known)["ppl"]})
        print(json.dumps(grid[-1]), flush=True)
    out["grid"] = grid
    best = min(grid, key=lambda g: g["ppl_tune"])["lambda"]
    out["best_lambda"] = best
    mixture = arsdecode.interpolate([m_in, m_gen], [best, 1 - best])
    out["vocab"]["union"] = len(mixture.vocab)
    out["kenlm_check"] = kenlm_check(arpa_in, arpa_gen, best, mixture, report[:200])
    print(json.dumps(out["kenlm_check"]), flush=True)

    records = subset([json.loads(x) for x in (args.data / "test.jsonl").read_text().splitlines()],
                     args.per_length)
    channel = KeypadChannel.from_vocab(m_in.vocab)
    lattices = [channel.build_lattice(r["observation"]) for r in records]
    out["lattices"] = len(lattices)
    out["sms"] = {
        "in-domain (state_union 3-gram)": decode_all(as_target_model(m_in), "auto", lattices,
                                                     records),
        "general (brown+abc+webtext 3-gram)": decode_all(as_target_model(m_gen), "auto",
                                                         lattices, records),
        f"interpolated, lambda = {best:g}": decode_all(mixture, "auto", lattices, records),
    }
    print(json.dumps(out["sms"]), flush=True)
    return out


def render(res: dict) -> str:
    grid = res["grid"]
    best = res["best_lambda"]
    check = res["kenlm_check"]
    lines = [
        "# An in-domain model interpolated with a general one (SMS)",
        "",
        "Generated by `experiments/interpolation_sms.py`; do not edit by hand (issue 22, "
        "target 1). Reproduce (about a minute; the general model is trained once, in about "
        "10 s):",
        "",
        "    .venv/bin/python -m data_prep.prepare_sms --out work/sms",
        "    .venv/bin/python -m experiments.interpolation_sms --data work/sms",
        "",
        "The hidden layer is the dynamic interpolation p(w | h) = lambda p_in(w | h) + "
        "(1 - lambda) p_gen(w | h) of two KN 3-grams (`arsdecode.interpolate`; SRILM's "
        "`ngram -lm IN -mix-lm GEN -lambda L`), queried word by word, never merged into one "
        "table. Its bound is lambda times the in-domain max-backoff plus (1 - lambda) times "
        "the general one (`arsdecode/model/interpolated.py` derives it and the exactness rule). "
        "No change to ARS, the automaton or the DPs.",
        "",
        f"- In-domain: `lm.3` of the SMS split, {res['train_sentences']:,} state_union "
        f"training sentences, {res['vocab']['in_domain']:,} words.",
        f"- General: KenLM's lmplz on {', '.join(res['general_corpora'])} (no state_union "
        f"text), {res['vocab']['general']:,} words; the union vocabulary has "
        f"{res['vocab']['union']:,}. A word one model lacks is its `<unk>` (missing=\"unk\", "
        "how KenLM scores each model on its own).",
        f"- Held-out: the split's {res['heldout_sentences']:,} state_union sentences; lambda "
        "is chosen on the first half and reported on both halves. Perplexity is per token "
        "(words and `</s>`), words absent from the in-domain training text excluded for "
        "every lambda.",
        f"- KenLM check: on {check['tokens']:,} tokens of the second half, the mixture's ln p "
        "per token and per sentence against both ARPA files scored by `kenlm.Model` and mixed "
        f"by hand: max |difference| = {check['max_abs_ln_diff']:.2e} (ln; KenLM stores "
        "float32).",
        "",
        "## Held-out perplexity by lambda (the in-domain weight)",
        "",
        "| lambda | perplexity, tuning half | perplexity, report half |",
        "|---|---|---|",
    ]
    for g in grid:
        mark = " (chosen)" if g["lambda"] == best else ""
        lines.append(f"| {g['lambda']:g}{mark} | {g['ppl_tune']:.1f} | {g['ppl_report']:.1f} |")
    lines += [
        "",
        "## SMS word accuracy (exact decoding)",
        "",
        f"{res['lattices']} keypad lattices of `test.jsonl` (k = 64), candidates from the "
        "in-domain vocabulary, the same lattices for every model, `method=\"auto\"` (the "
        "compiled full DP for one table; ARS for the mixture, which has no single table). "
        "Times are per lattice, in one process, model loaded.",
        "",
        "| hidden layer | word accuracy | sentence accuracy | certified | median s | max s |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in res["sms"].items():
        lines.append(f"| {name} | {r['word_acc']:.4f} | {r['sent_acc']:.3f} | "
                     f"{r['certified']}/{res['lattices']} | {r['seconds_median']:.4f} | "
                     f"{r['seconds_max']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO / "work" / "sms")
    ap.add_argument("--nltk-data", type=Path,
                    default=Path(os.environ["NLTK_DATA"]) if os.environ.get("NLTK_DATA")
                    else REPO.parent / "shared" / "data" / "nltk")
    ap.add_argument("--per-length", type=int, default=50, help="lattices per length (0: all)")
    ap.add_argument("--json", type=Path, default=None, help="also write the raw results here")
    ap.add_argument("--out", type=Path, default=DOC)
    ap.add_argument("--render-only", action="store_true", help="re-render --json's results")
    args = ap.parse_args()
    write_page(args, run, render)
    return 0
    res = run(args)
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))
    args.out.write_text(render(res), encoding="utf-8")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
