"""The target p(x): model factors with <s> and </s>, times emissions, in natural log (float64).

Why it lives apart from the automaton: the acceptance test p(x)/q(x) and the optimality
certificate compare two independently computed numbers. Both are sums, in position order, of
terms `model.log_prob(context, x) + emission`; where q's context is exact, its edge term is the
same `log_prob` call on the same padded context row, so q(x) = p(x) holds bit for bit.

Factors are memoised per Target (one Target per decode): ARS re-scores a path every
iteration, and successive Viterbi paths share most of their (context, word) factors. A
memoised value is the float64 the batched query returned, so the memo cannot change a sum.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arsdecode.core.semiring import quiet
from arsdecode.errors import LatticeError, TargetError
from arsdecode.lattice import Lattice
from arsdecode.model import TargetModel


class Target:
    """log p(x) for whole paths of a lattice under a `TargetModel`."""

    def __init__(
        self, lm: TargetModel, lattice: Lattice, token_ids: Sequence[np.ndarray] | None = None
    ) -> None:
        """`token_ids`: the model ids of the lattice's tokens, if already known (the
        q-automaton's `cand_ids`), to avoid a second lookup of every candidate. A
        maxarpa.Model is converted by the caller (`arsdecode.model.as_target_model`)."""
        self.lm = lm
        self.lattice = lattice
        self.bos = self.lm.bos
        self.eos = self.lm.eos
        self.width = max(self.lm.order - 1, 0)
        self.token_ids = (
            list(token_ids) if token_ids is not None
            else [self.lm.ids(list(toks)) for toks in lattice.tokens]
        )
        self._memo: dict[tuple[int, ...], dict[int, float]] = {}  # context row -> word -> ln p

    def indices(self, tokens: Sequence[str]) -> list[int]:
        """Candidate index of each token; raises TargetError if the lattice does not allow it."""
        try:
            return self.lattice.indices(tokens)
        except LatticeError as err:
            raise TargetError(str(err)) from None

    def _factor_keys(self, word_ids: Sequence[int]) -> list[tuple[tuple[int, ...], int]]:
        """Per factor (</s> included): the padded context row and the word."""
        w = self.width
        hist = [-1] * w + [self.bos, *word_ids]
        words = [*word_ids, self.eos]
        # factor i predicts words[i] from the last w entries of <s> x_1..x_i
        return [(tuple(hist[i + 1 : i + 1 + w]), words[i]) for i in range(len(words))]

    def _missing(self, keys) -> list[tuple[tuple[int, ...], int]]:
        memo = self._memo
        return list({(c, x) for c, x in keys if x not in memo.get(c, ())})

    def _query(self, missing) -> np.ndarray:
        rows = np.array([(*c, x) for c, x in missing], dtype=np.int64)
        return rows.reshape(len(missing), self.width + 1)

    def factors(self, word_ids: Sequence[int]) -> list[float]:
        """ln p(x_i | history) for every factor of a path, </s> included (memoised)."""
        keys = self._factor_keys(word_ids)
        missing = self._missing(keys)
        if missing:
            rows = self._query(missing)
            self.remember(rows, self.lm.log_prob(rows[:, : self.width], rows[:, self.width]))
        return [self._memo[c][x] for c, x in keys]

    def missing_factors(self, idx: Sequence[int]) -> np.ndarray:
        """The factors of a path not yet memoised, as rows (context..., word): a caller may
        answer them in a batch shared with other Targets and pass them to `remember`."""
        words = [int(self.token_ids[i][j]) for i, j in enumerate(idx)]
        return self._query(self._missing(self._factor_keys(words)))

    def remember(self, rows: np.ndarray, values: np.ndarray) -> None:
        """Memoise `values` = log_prob(rows[:, :-1], rows[:, -1])."""
        for row, v in zip(rows.tolist(), values.tolist(), strict=True):
            self._memo.setdefault(tuple(row[:-1]), {})[row[-1]] = v

    def remember_context(self, context: tuple[int, ...], words: np.ndarray,
                         values: np.ndarray) -> None:
        """Memoise log_prob(context, w) = values for many words of one padded context row
        (the q-automaton's exact rows: the same call on the same inputs, see apply_fill)."""
        self._memo.setdefault(context, {}).update(zip(words.tolist(), values.tolist(), strict=True))

    def log_p_indices(self, idx: Sequence[int]) -> float:
        """log p of the path given as candidate indices (natural log)."""
        words = [int(self.token_ids[i][j]) for i, j in enumerate(idx)]
        lp = self.factors(words)
        total = 0.0
        with quiet():
            for i, j in enumerate(idx):
                total += lp[i] + float(self.lattice.log_emissions[i][j])
            return float(total + lp[-1])

    def log_p_batch(self, idx: np.ndarray) -> np.ndarray:
        """log p of many paths (rows of candidate indices) with one batched model query.

        The arithmetic is the same, term by term and in the same order, as
        `log_p_indices`, so both give bit-identical values.
        """
        idx = np.asarray(idx, dtype=np.int64)
        k, L = idx.shape
        if k == 0:
            return np.empty(0)
        words = np.stack([self.token_ids[i][idx[:, i]] for i in range(L)], axis=1)
        n1 = self.width
        hist = np.concatenate([np.full((k, 1), self.bos), words], axis=1)  # (k, L + 1)
        padded = np.concatenate([np.full((k, n1), -1), hist], axis=1)
        ctx = np.stack([padded[:, i + 1 : i + 1 + n1] for i in range(L + 1)], axis=1)
        targets = np.concatenate([words, np.full((k, 1), self.eos)], axis=1)
        lp = self.lm.log_prob(ctx.reshape(k * (L + 1), n1), targets.reshape(-1))
        lp = lp.reshape(k, L + 1)
        total = np.zeros(k)
        with quiet():
            for i in range(L):
                total = total + (lp[:, i] + self.lattice.log_emissions[i][idx[:, i]])
            return total + lp[:, L]

    def log_p(self, tokens: Sequence[str]) -> float:
        """log p(tokens) in natural log, including the </s> factor and the emissions."""
        return self.log_p_indices(self.indices(tokens))
