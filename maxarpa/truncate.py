"""The order-N model of a loaded higher-order model: what SRILM does with `-order N`.

Why: SRILM's tools (`ngram -order N`, `disambig -order N`) read a higher-order ARPA file as its
order-N model: the n-grams above order N are skipped, and the backoff weights of the order-N
n-grams go unused (no context is N words long any more). A user who decoded with
`disambig -order 3` on a 5-gram expects the same scores here.

How: the listed n-grams of orders <= N, with the order-N backoffs set to 0 (log10), are the
columns of an ARPA file; the table and its blank suffix nodes are built from them by the ARPA
path itself (`table.build_trie`) and the max-backoff bounds (mf, mbow) computed by
`bound.compute_bounds`, so a truncated model is the model `maxarpa.load` makes of the
hand-truncated ARPA file, number for number. Blank probabilities and the bounds depend on the
order (the bounds range over contexts of at most N - 1 words), so both are recomputed, never
copied.
"""

from __future__ import annotations

import numpy as np

from maxarpa.arpa import ArpaData, OrderArrays
from maxarpa.bound import compute_bounds
from maxarpa.errors import MaxArpaError
from maxarpa.model import Model
from maxarpa.table import build_trie


def truncate(model: Model, order: int) -> Model:
    """The order-`order` model of `model` (log10, like every maxarpa model).

    `model` itself when `order` is at least its order (SRILM then reads the file as it is).
    Raises MaxArpaError for an order below 1. The vocabulary (ids included) is unchanged, so
    word ids of the two models agree.
    """
    if order < 1:
        raise MaxArpaError(f"order must be >= 1, not {order}")
    if order >= model.order:
        return model
    orders: list[OrderArrays] = []
    for k in range(1, order + 1):
        node = model.trie.nodes[k - 1]
        listed = np.asarray(node.listed, dtype=bool)
        ids = np.array(node.rows[listed], dtype=np.int32)  # copies: the build permutes them
        log10p = np.array(node.log10p[listed], dtype=np.float64)
        if k == order:
            log10bow = np.zeros(len(log10p))  # an order-N n-gram is never a context
        else:
            log10bow = np.array(node.log10bow[listed], dtype=np.float64)
        orders.append(OrderArrays(ids, log10p, log10bow))
    source = model.source or "<model>"
    trie = build_trie(ArpaData(list(model.vocab), orders), source)
    out = Model(list(model.vocab), trie, model.source)
    compute_bounds(trie, out.eos_id)
    return out
