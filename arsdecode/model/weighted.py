"""`WeightedLM`: a backoff n-gram scored as SRILM disambig scores it, with an LM weight and
optional sentence boundaries.

Why a target of its own: SRILM's `disambig -lmw W` multiplies every LM log probability by W,
`-no-eos` drops the final `</s>` factor, and `ngram -no-sos` (here `sentence_start=False`)
starts the first word from the empty context instead of `<s>`. For the argmax alone an LM
weight could fold into the emissions, but not for posteriors, totals (ln Z) or samples, whose
distribution is p(x) proportional to exp(W ln p_LM(x) + emissions(x)). Wrapping the model
gives every method (ARS, the numpy full DP, k-best, sampling, marginals) the same weighted p
through `TargetModel`, and the compiled full DP reads the same choice from `.scoring` (an
`NgramScoring`) while running on the wrapped model's tables (`.ngram`).

The factors, with W = `lm_weight` and h the history:

    ln p'(w | h) = W * ln p(w | strip(h))     strip(h) = h without its leading <s> when
                                              sentence_start is False, else h
    ln p'(</s> | h) = 0                       when sentence_end is False

Why every bound stays valid (`log_bound` must be >= ln p'(w | z + c) for every left
extension z of the context c):

- W > 0 keeps order: W * b >= W * ln p whenever b >= ln p, so W times the wrapped model's
  bound is a bound of the weighted probability.
- Without sentence_start, strip(z + c) is c's stripped form or a left extension of it (the
  part after the last <s>), so the wrapped bound of strip(c), which covers every left
  extension of strip(c), covers them all. A context that holds <s> is the whole history;
  its stripped form is a suffix of it, and the bound of that suffix covers it too.
- Without sentence_end, the `</s>` factor is exactly 0 (ln 1), its own bound.

`is_exact` and `minimal_context` follow the same reading: without sentence_start a context of
i words at position i (the history `<s> x_1..x_i` stripped) fixes p', and a context is cut
after stripping its <s>, which keeps cut(c + w) = cut(cut(c) + w) because the words appended
are never <s>.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from arsdecode.errors import OptionError
from arsdecode.model.interface import ModelLike, NgramScoring, TargetModel, ngram_tables
from arsdecode.model.maxarpa_lm import as_target_model
from maxarpa.model import Model


class WeightedLM:
    """`TargetModel` over a backoff n-gram with an LM weight and optional `<s>` / `</s>`.

    `lm`: a maxarpa Model, its `MaxArpaLM`, any other `TargetModel`, or a `WeightedLM` (whose
    settings combine with these: weights multiply, a boundary dropped by either is dropped).
    `lm_weight` must be a finite number > 0. The compiled full DP runs it when the wrapped
    target has n-gram tables (`.ngram`, None otherwise); every other method runs through the
    methods below. All values are natural log.
    """

    def __init__(self, lm: ModelLike, *, lm_weight: float = 1.0, sentence_start: bool = True,
                 sentence_end: bool = True) -> None:
        weight = float(lm_weight)
        if not (math.isfinite(weight) and weight > 0):
            raise OptionError(f"lm_weight must be a finite number > 0, not {lm_weight!r}")
        if isinstance(lm, WeightedLM):  # one wrapper, never a stack of them
            theirs: NgramScoring = lm.scoring
            weight *= theirs.lm_weight
            sentence_start = sentence_start and theirs.sentence_start
            sentence_end = sentence_end and theirs.sentence_end
            lm = lm.inner
        self.inner: TargetModel = as_target_model(lm)
        self.scoring: NgramScoring = NgramScoring(weight, bool(sentence_start), bool(sentence_end))
        self.order = self.inner.order
        self.bos = self.inner.bos
        self.eos = self.inner.eos

    def __repr__(self) -> str:
        s = self.scoring
        return (f"WeightedLM({self.inner!r}, lm_weight={s.lm_weight}, "
                f"sentence_start={s.sentence_start}, sentence_end={s.sentence_end})")

    @property
    def ngram(self) -> Model | None:
        """The wrapped model's n-gram tables (the compiled DP applies `.scoring` to them), or
        None when the wrapped target has none."""
        return ngram_tables(self.inner)

    # ----- TargetModel ------------------------------------------------------------------------
    def ids(self, tokens: Sequence[str]) -> np.ndarray:
        return self.inner.ids(tokens)

    def word(self, word_id: int) -> str:
        return self.inner.word(word_id)

    def _strip(self, contexts: np.ndarray) -> np.ndarray:
        """Contexts with <s> (and anything left of it) replaced by padding, without
        sentence_start; unchanged otherwise."""
        if self.scoring.sentence_start or contexts.size == 0:
            return contexts
        at_bos = contexts == self.bos
        if not at_bos.any():
            return contexts
        # every cell at or left of the last <s> of its row becomes padding
        left_of = np.flip(np.logical_or.accumulate(np.flip(at_bos, axis=1), axis=1), axis=1)
        return np.where(left_of, -1, contexts)

    def _weighted(self, values: np.ndarray, words: np.ndarray) -> np.ndarray:
        s = self.scoring
        out = values if s.lm_weight == 1.0 else s.lm_weight * values
        if not s.sentence_end:
            out = np.where(np.asarray(words) == self.eos, 0.0, out)
        return out

    def log_prob(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        return self._weighted(self.inner.log_prob(self._strip(contexts), words), words)

    def log_bound(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        return self._weighted(self.inner.log_bound(self._strip(contexts), words), words)

    def is_exact(self, position: int, context: Sequence[int]) -> bool:
        if self.inner.is_exact(position, context):
            return True
        # Without <s>, the history at `position` is x_1..x_position: a context of that many
        # words is all of it.
        return not self.scoring.sentence_start and len(context) >= position

    def minimal_context(self, contexts: np.ndarray) -> np.ndarray:
        return self.inner.minimal_context(self._strip(contexts))
