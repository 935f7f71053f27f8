"""Build the shipped general-English segmentation model (issue 33).

Usage:
    python -m data_prep.prepare_segment_model --out work/segment [--ship arsdecode/data/segment]
        [--order 3] [--words 250000] [--lam 0.2] [--ewt DIR] [--data-dir DIR]

What it is: a modified Kneser-Ney model (KenLM's lmplz) of running text -- the training split
of State of the Union (public domain; the split of `data_prep.prepare_sms` with seed 0, so its
held-out sentences stay unseen) and the training part of the UD English Web Treebank (CC BY-SA
4.0) -- whose unigrams are mixed with wordfreq's English word list (CC BY-SA 4.0; Wikipedia,
subtitles, news, books, web text, Twitter and Reddit), `</s>` keeping its running-text
probability, and whose backoff weights are recomputed (`data_prep.segment_arpa`). Every token
is its surface form (`arsdecode.tasks.segment.surface_form`: lower-case letters and digits,
"don't" -> "dont"), the form segmentation sees.
The order, the list size and the mixing weight were chosen on the development sets
(`experiments/segment_compare.py --tune`, docs/results-segment.md; lam 0.2 over 0.1, 0.3
and 0.4, and 250,000 words over the whole list of 320,000, by mean accuracy on dev sets of
3,000 hashtags, 3,000 URLs and 500 sentences).

Why wordfreq only in data_prep: it is a build-time input (dev extra); the shipped package reads
the built model and does not import it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import maxarpa
from arsdecode.tasks.segment.lattice import SurfaceIndex, surface_form
from arsdecode.tasks.segment.spelling import SpellingModel
from data_prep.corpus import load_sentences
from data_prep.ewt import _gzip_deterministic, default_ewt_dir, ewt_file, read_conllu
from data_prep.lmplz import train_arpa
from data_prep.prepare_sms import split_heldout
from data_prep.segment_arpa import mix_unigrams, read_arpa, write_arpa

SHIPPED_NAME = "english.maxarpa.gz"
SPELLING_NAME = "spelling.npz"
MAX_NUMBER = 2100
_DIGIT_RUN = re.compile(r"[0-9]{2}")
_CLITIC = re.compile(r"^(['\u2019][a-z]{1,2}|n['\u2019]t)$", re.IGNORECASE)
WORD_LETTERS = frozenset("ai")
"""The letters that are English words; wordfreq's counts of the others are mostly its
tokenizer's pieces of abbreviations and contractions ("U.S.", "e-mail", "they'd"), so those
come from running text only (`word_list`)."""
DEFAULTS = {"order": 3, "words": 250_000, "lam": 0.2}
"""The shipped settings (chosen on the development sets; see the module docstring)."""


def surface_sentence(tokens: Sequence[str]) -> list[str]:
    """A sentence's tokens as segmentation sees them (tokens without letters or digits go).
    A clitic the treebank split off ("do" "n't", "it" "'s", "we" "'ve") is joined back to its
    word: written text runs them together ("dont", "its"), and as words of their own "nt" and
    "s" would be cheap pieces to shred any word with."""
    out: list[str] = []
    for token in tokens:
        surface = surface_form(token)
        if not surface:
            continue
        if out and _CLITIC.match(token):
            out[-1] += surface
        else:
            out.append(surface)
    return out


def running_text(ewt_dir: Path, data_dir: Path | None) -> Iterator[list[str]]:
    """The training sentences: State of the Union's training split, then EWT train."""
    sotu, _ = split_heldout(load_sentences(["state_union"], data_dir), seed=0)
    for s in sotu:
        out = surface_sentence(s)
        if out:
            yield out
    for sent in read_conllu(ewt_file(ewt_dir, "train")):
        out = surface_sentence([form for form, _ in sent])
        if out:
            yield out


def word_list(n_words: int) -> dict[str, float]:
    """wordfreq's `n_words` most frequent English words ("large" list), as surface forms
    (frequencies of words with one surface summed; pure punctuation dropped), and the numbers
    0..MAX_NUMBER, without one-letter words other than WORD_LETTERS (their probability is
    the running text's: "s" and "g" are frequent in the list and cheap pieces to split
    "ginghams" or "org" with). Why the numbers apart: wordfreq stores a multi-digit number as
    its digits replaced by zeros ("1985" is listed as "0000"), so a listed word with two digits
    in a row is such a pattern and is dropped, and each number's own estimate is asked for
    instead."""
    import wordfreq

    out: dict[str, float] = {}
    words = [w for w in wordfreq.top_n_list("en", n_words, wordlist="large")
             if not _DIGIT_RUN.search(w)]
    for word in [*words, *map(str, range(MAX_NUMBER + 1))]:
        surface = surface_form(word)
        if len(surface) == 1 and surface.isalpha() and surface not in WORD_LETTERS:
            continue
        if surface and len(surface) <= 30:
            out[surface] = out.get(surface, 0.0) + wordfreq.word_frequency(word, "en",
                                                                           wordlist="large")
    return out


def build(out_dir: Path, *, order: int, n_words: int, lam: float, ewt_dir: Path,
          data_dir: Path | None = None) -> Path:
    """Train, mix and convert; returns the MAX-ARPA path (out_dir/english.<settings>.maxarpa)."""
    from maxarpa import convert

    out_dir.mkdir(parents=True, exist_ok=True)
    kn = out_dir / f"running.{order}.arpa"
    if not kn.is_file():
        train_arpa((" ".join(s) for s in running_text(ewt_dir, data_dir)), order, kn)
    name = f"english.o{order}.w{n_words}.l{lam:g}"
    mixed = out_dir / f"{name}.arpa"
    write_arpa(mix_unigrams(read_arpa(kn), word_list(n_words), lam), mixed)
    out = out_dir / f"{name}.maxarpa"
    convert(mixed, out)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m data_prep.prepare_segment_model",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--ship", type=Path, default=None,
                    help=f"also gzip the model into DIR/{SHIPPED_NAME} (mtime 0) and write "
                         f"its spelling model, DIR/{SPELLING_NAME}")
    ap.add_argument("--order", type=int, default=DEFAULTS["order"])
    ap.add_argument("--words", type=int, default=DEFAULTS["words"])
    ap.add_argument("--lam", type=float, default=DEFAULTS["lam"])
    ap.add_argument("--ewt", type=Path, default=None)
    ap.add_argument("--data-dir", type=Path, default=None)
    args = ap.parse_args(argv)
    model = build(args.out, order=int(args.order), n_words=int(args.words),
                  lam=float(args.lam), ewt_dir=args.ewt or default_ewt_dir(),
                  data_dir=args.data_dir)
    summary = {"model": str(model), "order": args.order, "words": args.words, "lam": args.lam}
    if args.ship is not None:
        args.ship.mkdir(parents=True, exist_ok=True)
        _gzip_deterministic(model, args.ship / SHIPPED_NAME)
        vocab = SurfaceIndex.of_model(maxarpa.load(model)).words
        SpellingModel.train(vocab).save(args.ship / SPELLING_NAME)
        summary["shipped"] = str(args.ship / SHIPPED_NAME)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
