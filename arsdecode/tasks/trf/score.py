"""Whole-sentence scores of a target: the sum of its ln factors over `<s> x </s>`.

Why one function: random-field training needs the same number in three places (the data's
score, the MCMC sampler's acceptance ratios, the held-out log-likelihood), and each place
building its own context rows is how off-by-one errors at `<s>` and `</s>` creep in.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arsdecode.model import TargetModel, context_rows


def sentence_log_scores(model: TargetModel, sentences: Sequence[Sequence[int]]) -> np.ndarray:
    """ln score(x) (natural log, unnormalised for a `LogLinearLM`) of each sentence, given as
    word ids without `<s>` and `</s>`: the sum of `model.log_prob` over its words and `</s>`,
    each given its whole history (cut to the model's order). One batched query for all."""
    histories: list[list[int]] = []
    words: list[int] = []
    owner: list[int] = []
    for s, ids in enumerate(sentences):
        history = [model.bos, *(int(i) for i in ids)]
        for i, w in enumerate([*history[1:], model.eos]):
            histories.append(history[: i + 1])
            words.append(w)
            owner.append(s)
    out = np.zeros(len(sentences))
    if not words:
        return out
    rows = context_rows(histories, max(model.order - 1, 0))
    logs = model.log_prob(rows, np.asarray(words, dtype=np.int64))
    np.add.at(out, np.asarray(owner), logs)
    return out
