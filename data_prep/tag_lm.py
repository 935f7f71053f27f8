"""TnT's tag transition model for the POS pipeline: deleted-interpolation weights and the
exact backoff ARPA they define (`deleted_interpolation_arpa`), from tagged sentences.

Why a module of its own: it is the estimator, pure arithmetic over k-gram counts with no file
layout, corpus or tool behind it, so it is tested on its own (tests/test_pos_emissions.py
checks the ARPA against the interpolation it writes) and shared by data_prep.pos_data and
data_prep.ewt, which re-import it from data_prep.pos_data (issue 30: that module was over
400 lines). Probabilities are log10 in the file, as ARPA is.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from maxarpa.constants import BOS, EOS

__all__ = ["deleted_interpolation_arpa", "deleted_interpolation_weights", "ngram_counts"]


def ngram_counts(sentences: Sequence[Sequence[str]], order: int) -> list[Counter]:
    """counts[k][k-gram] over every window of `<s> x_1 .. x_m </s>` (counts[0] is empty).

    <s> only ever starts a k-gram, as in KenLM: histories near the start are short.
    """
    counts: list[Counter] = [Counter() for _ in range(order + 1)]
    for sent in sentences:
        toks = (BOS, *sent, EOS)
        for i in range(1, len(toks)):
            for k in range(1, min(order, i + 1) + 1):
                counts[k][toks[i - k + 1 : i + 1]] += 1
    return counts


def deleted_interpolation_weights(counts: list[Counter]) -> list[float]:
    """Brants's (TnT) deleted interpolation, order n: lambdas[k] for k = 1..n (lambdas[0] = 0).

    Every top-order n-gram votes with its count for the order k whose leave-one-out estimate
    (c(suffix_k) - 1) / (c(history of suffix_k) - 1) is largest (0 when the history occurs
    once); ties split the vote evenly, as in NLTK's TnT.
    """
    order = len(counts) - 1
    total = sum(counts[1].values())
    history: list[Counter] = [Counter() for _ in range(order + 1)]
    for k in range(2, order + 1):
        for gram, c in counts[k].items():
            history[k][gram[:-1]] += c
    votes = [0.0] * (order + 1)
    for gram, c in counts[order].items():
        scores = []
        for k in range(1, order + 1):
            sub = gram[order - k :]
            den = (history[k][sub[:-1]] if k > 1 else total) - 1
            scores.append((counts[k][sub] - 1) / den if den > 0 else 0.0)
        top = max(scores)
        winners = [k for k, v in enumerate(scores, start=1) if v == top]
        for k in winners:
            votes[k] += c / len(winners)
    s = sum(votes)
    return [v / s for v in votes] if s > 0 else [0.0] + [1.0 / order] * order


def deleted_interpolation_arpa(
    sentences: Sequence[Sequence[str]], order: int, path: Path
) -> tuple[Path, list[float]]:
    """Write TnT's interpolated tag model of `order` as an exact backoff ARPA.

    With a_k = lambda_k / (lambda_1 + .. + lambda_k), the model is
    P_1(w) = c(w) / N and, for a history h seen in training,
    P_k(w | h) = a_k c(h w) / c(h) + (1 - a_k) P_{k-1}(w | h[1:]); for an unseen h,
    P_k(w | h) = P_{k-1}(w | h[1:]). (This equals TnT's mixture where every history is seen;
    TnT itself leaves the unseen-history case unnormalised.) In ARPA form: every seen k-gram is
    listed with P_k, and every seen history h of order k has backoff weight 1 - a_k, because
    an unseen continuation of h gets exactly (1 - a_k) P_{k-1}. Returns (path, lambdas).
    """
    counts = ngram_counts(sentences, order)
    lambdas = deleted_interpolation_weights(counts)
    total = sum(counts[1].values())
    prob: list[dict] = [{}, {g: c / total for g, c in counts[1].items()}]
    ctx_total: list[Counter] = [Counter() for _ in range(order + 1)]
    for k in range(2, order + 1):
        for gram, c in counts[k].items():
            ctx_total[k][gram[:-1]] += c
        mix = sum(lambdas[1 : k + 1])
        a = lambdas[k] / mix if mix > 0 else 0.0
        lower = prob[k - 1]
        prob.append({
            g: a * c / ctx_total[k][g[:-1]] + (1.0 - a) * lower[g[1:]]
            for g, c in counts[k].items()
        })
    backoff = [0.0] * (order + 1)  # log10 backoff of the histories of order k + 1
    for k in range(1, order):
        mix = sum(lambdas[1 : k + 2])
        backoff[k] = _log10(1.0 - lambdas[k + 1] / mix if mix > 0 else 1.0)

    def line(gram: tuple, p: float, k: int) -> str:
        bow = k < order and gram in ctx_total[k + 1]
        return f"{_log10(p):.9g}\t{' '.join(gram)}" + (f"\t{backoff[k]:.9g}" if bow else "")

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\\data\\\n")
        f.write(f"ngram 1={len(prob[1]) + 1}\n")
        for k in range(2, order + 1):
            f.write(f"ngram {k}={len(prob[k])}\n")
        f.write("\n\\1-grams:\n" + line((BOS,), 0.0, 1) + "\n")
        for k in range(1, order + 1):
            if k > 1:
                f.write(f"\n\\{k}-grams:\n")
            f.writelines(line(g, p, k) + "\n" for g, p in sorted(prob[k].items()))
        f.write("\n\\end\\\n")
    tmp.replace(path)
    return path, lambdas


def _log10(p: float) -> float:
    return math.log10(p) if p > 0 else -99.0
