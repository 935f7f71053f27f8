"""Random, structurally valid backoff ARPA files, with POSITIVE backoffs.

Why positive backoffs: with a backoff weight above 0, the max of p(w | z c) over left
extensions z is not the max over listed n-grams, so a bound (MAX-ARPA) or a state merge that
assumes otherwise goes wrong on these models and not on the usual Kneser-Ney ones. The files
also omit bow columns (bow 0), may give -inf probabilities, and may drop prefix contexts as
IRSTLM's pruning does. Pair them with `arsdecode.testing.reference_arpa` (to check a
converter or maxarpa) or `arsdecode.testing.brute` (to check a decoder). Seeded: the same
`rng` seed gives the same text.
"""

from __future__ import annotations

import math
import random

from arsdecode.errors import OptionError
from maxarpa.constants import BOS, EOS, UNK


def _fmt(x: float) -> str:
    if x == -math.inf:
        return "-inf"
    return repr(x)


def random_arpa_text(
    rng: random.Random | int,
    order: int,
    vocab_size: int,
    positive_backoff_fraction: float = 0.3,
    drop_prefix_contexts: bool = False,
    *,
    density: float = 0.6,
    neg_inf_fraction: float = 0.0,
    bos_prob: float | None = None,
    with_unk: bool = True,
) -> str:
    """A random, structurally valid backoff ARPA file as text.

    - vocabulary: <s>, </s>, (<unk>,) w0..w{vocab_size-1}; every word is a unigram;
    - an n-gram of order k>1 is h+(w,) where h is a listed (k-1)-gram (so every prefix is
      listed) and h[1:]+(w,) is listed (so every suffix is listed); <s> appears only first,
      </s> only last, so </s> is never in a context;
    - probabilities are <= 0 (-inf with probability `neg_inf_fraction`, never for unigrams);
      <s> gets -99 or 0 (or `bos_prob`);
    - a `positive_backoff_fraction` share of bows are positive, in (0, 1]; others in [-2, 0];
      the highest order has no bow column; on lower orders some lines omit the column (bow 0);
    - `drop_prefix_contexts` then deletes some n-grams of order >= 2 that are a context of a
      listed n-gram but not a suffix of any (IRSTLM-style pruning: suffix closure survives,
      prefix closure does not).
    """
    if isinstance(rng, int):
        rng = random.Random(rng)
    if order < 1 or vocab_size < 1:
        raise OptionError(f"order and vocab_size must be >= 1, not {order} and {vocab_size}")
    words = [f"w{i}" for i in range(vocab_size)]
    unigrams = [BOS, EOS] + ([UNK] if with_unk else []) + words
    # Shuffle unigram order a little so nothing depends on file order.
    rng.shuffle(unigrams)
    grams: list[list[tuple[str, ...]]] = [[(u,) for u in unigrams]]
    for k in range(2, order + 1):
        lower = set(grams[-1])
        new = []
        for h in grams[-1]:
            if EOS in h:
                continue
            for w in unigrams:
                if w == BOS:
                    continue
                if k > 2 and (h[1:] + (w,)) not in lower:
                    continue
                if k == 2 and (w,) not in lower:
                    continue
                if rng.random() < density:
                    new.append(h + (w,))
        # Suffix closure needs h[1:]+(w,) listed at order k-1, which the check above ensures.
        if not new:
            break
        grams.append(new)
    n = len(grams)  # may be below `order` if density starved the top; that is still valid ARPA

    if drop_prefix_contexts and n >= 3:
        listed = {g for level in grams for g in level}
        suffix_of_longer = {g[1:] for g in listed if len(g) >= 2}
        context_of_longer = {g[:-1] for g in listed if len(g) >= 2}
        droppable = [
            g
            for g in listed
            if 2 <= len(g) < n and g in context_of_longer and g not in suffix_of_longer
        ]
        if droppable:
            k = max(1, int(len(droppable) * rng.uniform(0.3, 1.0)))
            drop = set(rng.sample(sorted(droppable), k))
            grams = [[g for g in level if g not in drop] for level in grams]

    def prob(g: tuple[str, ...]) -> float:
        if g == (BOS,):
            if bos_prob is not None:
                return bos_prob
            return rng.choice([-99.0, 0.0])
        if len(g) > 1 and rng.random() < neg_inf_fraction:
            return -math.inf
        return round(-rng.uniform(0.01, 3.0), 4)

    def bow(g: tuple[str, ...]) -> float:
        if rng.random() < positive_backoff_fraction:
            return round(rng.uniform(0.0001, 1.0), 4)
        return round(-rng.uniform(0.0, 2.0), 4)

    out = ["", "\\data\\"]
    for k, level in enumerate(grams, start=1):
        out.append(f"ngram {k}={len(level)}")
    out.append("")
    for k, level in enumerate(grams, start=1):
        out.append(f"\\{k}-grams:")
        omit_all = rng.random() < 0.25  # sometimes a whole lower order has no bow column
        for g in level:
            line = f"{_fmt(prob(g))}\t{' '.join(g)}"
            if k < n and g[-1] != EOS:
                r = rng.random()
                if omit_all or r < 0.15:
                    pass  # missing column means bow 0
                elif r < 0.25:
                    line += "\t0"
                else:
                    line += f"\t{_fmt(bow(g))}"
            out.append(line)
        out.append("")
    out.append("\\end\\")
    return "\n".join(out) + "\n"
