"""A Kneser-Ney model of running text whose unigrams are mixed with a large word list.

Why: the running text we may redistribute (State of the Union, the EWT) has about 30,000 word
types, far too few for hashtags and URLs ("vegas", "firefox", "eurovision"); wordfreq's English
list has 300,000, but no context. The model here keeps every higher-order n-gram of the KN
model as it is, replaces its unigram distribution over the union of both vocabularies by

    p(</s>) = p_kn(</s>),    p(w) = lam * p_kn(w) + (1 - lam) * (1 - p_kn(</s>)) * p_list(w),

and recomputes every backoff weight so that each context's distribution sums to one again (a
proper backoff model, what SRILM does after it changes a lower order). Why `</s>` apart: a word
list counts words, never the end of a sentence, so the list says which word, given that a word
comes; mixed like a word, `</s>` kept only lam of its probability, and every word the running
text never saw (its end backs off to the unigram: "barkeep", "schoolboy", "lunation")
paid ln(1 / lam) more to end an input than a running-text word ("bar keep", "school boy",
"alu nation": the URL dev set's errors that this fixed). The backoff weights are

    bow(h) = (1 - sum_{w in S(h)} p(w | h)) / (1 - sum_{w in S(h)} p_bo(w | h[1:]))

over the words S(h) seen after h, orders from low to high (a context's denominator uses the
new weights of the order below). Probabilities are log10, as ARPA has them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

Ngram = tuple[str, ...]


@dataclass
class Arpa:
    """An ARPA backoff model in memory: per order, n-gram -> (log10 p, log10 bow or None)."""

    orders: list[dict[Ngram, tuple[float, float | None]]] = field(default_factory=list)

    @property
    def order(self) -> int:
        return len(self.orders)


def read_arpa(path: Path) -> Arpa:
    """Read an ARPA file as lmplz writes it (plain text)."""
    model = Arpa()
    section = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("ngram ") or line == "\\data\\":
                continue
            if line.startswith("\\") and line.endswith("-grams:"):
                section = int(line[1:line.index("-")])
                model.orders.append({})
                continue
            if line == "\\end\\":
                break
            if section:
                cols = line.split("\t")
                bow = float(cols[2]) if len(cols) > 2 else None
                model.orders[section - 1][tuple(cols[1].split(" "))] = (float(cols[0]), bow)
    return model


def mix_unigrams(model: Arpa, word_list: Mapping[str, float], lam: float) -> Arpa:
    """The model with unigrams lam * p_kn + (1 - lam) * p_list over the words and the KN
    probability of `</s>` (word_list: word -> frequency, normalised here; module docstring),
    and every backoff weight recomputed. `<s>` keeps its -99; `<unk>` keeps lam times its KN
    probability plus nothing from the list."""
    uni = model.orders[0]
    total = sum(word_list.values())
    p_end = 10 ** uni[("</s>",)][0]
    new_uni: dict[Ngram, tuple[float, float | None]] = {}
    for words in set(uni) | {(w,) for w in word_list}:
        if words == ("<s>",):
            new_uni[words] = uni[words]
            continue
        if words == ("</s>",):
            new_uni[words] = (math.log10(p_end), uni[words][1])
            continue
        p = lam * 10 ** uni[words][0] if words in uni else 0.0
        p += (1 - lam) * (1 - p_end) * word_list.get(words[0], 0.0) / total
        bow = uni[words][1] if words in uni else None
        new_uni[words] = (math.log10(p), bow)
    out = Arpa([new_uni, *(dict(o) for o in model.orders[1:])])
    _recompute_backoffs(out)
    return out


def _p_backoff(model: Arpa, words: Ngram) -> float:
    """log10 p(w | h) of the backoff model (words = h + (w,))."""
    total = 0.0
    while True:
        entry = model.orders[len(words) - 1].get(words)
        if entry is not None:
            return total + entry[0]
        ctx = model.orders[len(words) - 2].get(words[:-1])
        if ctx is not None and ctx[1] is not None:
            total += ctx[1]
        words = words[1:]


def _recompute_backoffs(model: Arpa) -> None:
    for k in range(1, model.order):  # contexts of order k, their children of order k + 1
        seen_num: dict[Ngram, float] = {}
        seen_den: dict[Ngram, float] = {}
        for words, (lp, _) in model.orders[k].items():
            h = words[:-1]
            seen_num[h] = seen_num.get(h, 0.0) + 10 ** lp
            seen_den[h] = seen_den.get(h, 0.0) + 10 ** _p_backoff(model, words[1:])
        ctx_order = model.orders[k - 1]
        for h, (lp, _) in list(ctx_order.items()):
            if h in seen_num:
                num = max(1.0 - seen_num[h], 1e-12)
                den = max(1.0 - seen_den[h], 1e-12)
                ctx_order[h] = (lp, math.log10(num / den))
            elif k < model.order:
                ctx_order[h] = (lp, 0.0 if ctx_order[h][1] is not None else None)


def write_arpa(model: Arpa, path: Path) -> None:
    """Write the model as ARPA text (n-grams sorted, so a rebuild is byte-identical)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("\\data\\\n")
        for k, grams in enumerate(model.orders, 1):
            f.write(f"ngram {k}={len(grams)}\n")
        for k, grams in enumerate(model.orders, 1):
            f.write(f"\n\\{k}-grams:\n")
            for words in sorted(grams):
                lp, bow = grams[words]
                tail = f"\t{bow:.6f}" if bow is not None and k < model.order else ""
                f.write(f"{lp:.6f}\t{' '.join(words)}{tail}\n")
        f.write("\n\\end\\\n")
