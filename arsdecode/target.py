"""The target p(x): LM factors with <s> and </s>, times emissions, in natural log (float64).

Why it lives apart from the automaton: the acceptance test p(x)/q(x) and the optimality
certificate compare two independently computed numbers. Both are sums, in position order, of
terms `LN10 * log10p + emission`; where q's context is exact, its edge term is computed by the
same batch query on the same context, so q(x) = p(x) holds bit for bit when it should.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arsdecode.errors import LatticeError, TargetError
from arsdecode.lattice import Lattice
from maxarpa.constants import BOS, EOS, LN10
from maxarpa.model import Model


class Target:
    """log p(x) for whole paths of a lattice under an n-gram LM."""

    def __init__(self, lm: Model, lattice: Lattice) -> None:
        self.lm = lm
        self.lattice = lattice
        self.bos = lm.word_id(BOS)
        self.eos = lm.word_id(EOS)
        self.token_ids = [lm.ids(list(toks)) for toks in lattice.tokens]

    def indices(self, tokens: Sequence[str]) -> list[int]:
        """Candidate index of each token; raises TargetError if the lattice does not allow it."""
        try:
            return self.lattice.indices(tokens)
        except LatticeError as err:
            raise TargetError(str(err)) from None

    def history_contexts(self, word_ids: Sequence[int]) -> np.ndarray:
        """Context rows (left-padded with -1) for every factor of a path, </s> included."""
        n1 = self.lm.order - 1
        hist = [self.bos, *word_ids]
        rows = np.full((len(word_ids) + 1, max(n1, 0)), -1, dtype=np.int64)
        for i in range(len(word_ids) + 1):
            ctx = hist[max(0, i + 1 - n1) : i + 1] if n1 > 0 else []
            if ctx:
                rows[i, n1 - len(ctx) :] = ctx
        return rows

    def log_p_indices(self, idx: Sequence[int]) -> float:
        """log p of the path given as candidate indices (natural log)."""
        words = [int(self.token_ids[i][j]) for i, j in enumerate(idx)]
        lp = self.lm.log10p_batch(self.history_contexts(words), np.array([*words, self.eos]))
        total = 0.0
        for i, j in enumerate(idx):
            total += LN10 * lp[i] + self.lattice.log_emissions[i][j]
        return float(total + LN10 * lp[-1])

    def log_p_batch(self, idx: np.ndarray) -> np.ndarray:
        """log p of many paths (rows of candidate indices) with one batched LM query.

        The arithmetic is the same, term by term and in the same order, as
        `log_p_indices`, so both give bit-identical values.
        """
        idx = np.asarray(idx, dtype=np.int64)
        k, L = idx.shape
        words = np.stack([self.token_ids[i][idx[:, i]] for i in range(L)], axis=1)
        n1 = max(self.lm.order - 1, 0)
        hist = np.concatenate([np.full((k, 1), self.bos), words], axis=1)  # (k, L + 1)
        padded = np.concatenate([np.full((k, n1), -1), hist], axis=1)
        ctx = np.stack([padded[:, i + 1 : i + 1 + n1] for i in range(L + 1)], axis=1)
        targets = np.concatenate([words, np.full((k, 1), self.eos)], axis=1)
        lp = self.lm.log10p_batch(ctx.reshape(k * (L + 1), n1), targets.reshape(-1))
        lp = lp.reshape(k, L + 1)
        total = np.zeros(k)
        for i in range(L):
            total = total + (LN10 * lp[:, i] + self.lattice.log_emissions[i][idx[:, i]])
        return total + LN10 * lp[:, L]

    def log_p(self, tokens: Sequence[str]) -> float:
        """log p(tokens) in natural log, including the </s> factor and the emissions."""
        return self.log_p_indices(self.indices(tokens))
