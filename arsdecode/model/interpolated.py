"""`InterpolatedLM`: a linear interpolation of k >= 2 backoff n-gram models as one target.

Why a target of its own: SRILM's `ngram -lm A -mix-lm B -lambda 0.6` (dynamic interpolation,
not the static merge `-write-lm` approximates) scores every word by

    p(w | h) = sum_i lambda_i p_i(w | h_i)

where h_i is the history as model i sees it (its last order_i - 1 words, in its own
vocabulary). That is not a backoff n-gram, so no single MAX-ARPA table holds it; but every
factor the engine asks for (`TargetModel`: the exact value, a bound over left extensions, when
a context is exact, the minimal context) follows from the components' own answers, so ARS,
the numpy full DP, k-best, sampling and marginals all run on it with no change to the core.
It has no `.ngram` (no single table holds it); the compiled full DP runs it on the union of
its components' useful contexts with every factor from their walks
(`arsdecode.methods.fast_mixture`, which proves that state space exact from the cut below).

Vocabulary. The target's ids are the union of the components' vocabularies (the first
model's words in its order, then each later model's new words). A word of the union that a
component lacks is, for that component, by `missing`:

- "unk" (the default): the component's `<unk>` (as KenLM scores each model on its own: an
  unknown word is `<unk>`, as a predicted word and in the history); probability zero if the
  component has no `<unk>`;
- "zero": probability zero, and as a history word it ends the component's context (no n-gram
  of the component contains it, so its backoff stops there). This is SRILM's behaviour: the
  models share one vocabulary, and `Ngram::wordProbBO` gives LogP_Zero to a word without a
  unigram.

A token in no component's vocabulary is the union's `<unk>` (each component's `<unk>`
probability, zero for one without `<unk>`); with no `<unk>` anywhere it is an error.

The component view. Row r of a context (union ids, width K = order - 1, order the largest
component order) is seen by component i as its last order_i - 1 words mapped to the
component's ids; a word the component cannot see (-1 after mapping: missing with
missing="zero", or missing without a component `<unk>`) ends the view, which keeps only the
words right of it. This view is exact: no n-gram of component i contains such a word, so
p_i(w | z + c) = p_i(w | view) for every left extension z.

log_prob: ln sum_i lambda_i p_i = logsumexp_i (ln lambda_i + ln p_i(w_i | view_i(c))).

log_bound and why it is valid. Let B_i(c, w) = component i's max-backoff bound on its view,
an upper bound of ln p_i(w | z' + view_i(c)) over every left extension z' in its vocabulary.
Any left extension z of c (union words) gives component i either the same view (c already
has order_i - 1 words, or the view ended at an unseen word) or the view of z + c, which is
a left extension of view_i(c) by mapped words (<s>, <unk> and the like included). So
p_i(w | z + c) <= exp(B_i(c, w)) for every z, and since lambda_i >= 0,

    p(w | z + c) = sum_i lambda_i p_i(w | z + c) <= sum_i lambda_i exp(B_i(c, w)),

the bound `log_bound` returns (a log-sum-exp), except that a component whose view ended at an
unseen word contributes its exact value ln p_i (the same for every extension, so its own
tightest bound; its max-backoff bound would cover extensions that cannot occur).

It is as tight as this derivation allows: it is exactly sum_i lambda_i exp(max_z' ln p_i)
when each B_i is the component's exact maximum (maxarpa's is), and it equals
max_z p(w | z + c) whenever one extension attains every component's maximum (e.g. when c is
exact for every component, or every component is the same model). It exceeds that maximum
only when the components' maxima are attained at different extensions: the max of a sum is
at most the sum of the maxima, and this bound is the latter. tests/test_interpolated_lm.py
checks both (equality with the mix of the components' brute-force maxima, and validity
against the brute-force max of the mixture).

is_exact (the exactness rule): c fixes p iff it fixes every p_i, because p is a fixed
positive combination of them, and a component with lambda_i = 0 does not count. c fixes p_i
when it is the whole history (`<s> x_1..x_position`), when it has order_i - 1 words, or when
its last order_i - 1 words hold a word component i cannot see (the view ends there). A
context with order - 1 words is thus exact for all of them.

minimal_context: cut(c) = the suffix of c whose length is the longest of the components'
cuts, l(c) = max_i l_i(c), where l_i is the length component i's own cut keeps of its view
(maxarpa's `UsefulContexts`: the longest suffix that is a useful context, so cutting any
suffix s of c with l_i(c) <= |s| gives the same cut: l_i(s) = l_i(c)).
- It keeps p: for each i, cut(c) still holds component i's cut, and component i's view of
  cut(c) has the same cut, so p_i(w | cut(c)) = p_i(w | c) for every w; hence p too.
- It commutes with appending a word: with d = cut(c), l_i(d) = l_i(c) (same cut), and by
  each component's own rule cut_i(d + w) = cut_i(cut_i(d) + w) = cut_i(cut_i(c) + w) =
  cut_i(c + w); so l_i(d + w) = l_i(c + w) for every i, their maxima are equal, and
  cut(cut(c) + w) = cut(c + w).

Natural log throughout (the components' log10 tables are converted by `MaxArpaLM`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from arsdecode.errors import ModelError, OptionError
from arsdecode.model.maxarpa_lm import MaxArpaLM, as_target_model, log10_core
from maxarpa.constants import BOS, EOS
from maxarpa.model import Model

Missing = Literal["unk", "zero"]
MISSING: tuple[str, ...] = ("unk", "zero")
WEIGHT_SUM_TOL = 1e-6
"""How far from 1 the weights may sum (their printed decimals, e.g. 0.3 + 0.3 + 0.4)."""


def _as_component(model: object, index: int) -> MaxArpaLM:
    """A component as its `MaxArpaLM` (a maxarpa Model is wrapped once, cached)."""
    if isinstance(model, Model | MaxArpaLM):
        target = as_target_model(model)
        if isinstance(target, MaxArpaLM):
            return target
    raise OptionError(f"interpolated model {index + 1}: expected an n-gram model (what "
                      f"load_lm returns), not {type(model).__name__}")


def check_weights(weights: Sequence[float], k: int) -> np.ndarray:
    """The weights as float64, or OptionError: one per model, each finite and >= 0, summing
    to 1 (not rescaled: SRILM derives the last weight as 1 minus the others, so a sum other
    than 1 is a mistake, e.g. a typo in a weight, not a choice)."""
    if len(weights) != k:
        raise OptionError(f"interpolation needs one weight per model: {k} models, "
                          f"{len(weights)} weights")
    try:
        values = np.array([float(w) for w in weights], dtype=np.float64)
    except (TypeError, ValueError):
        raise OptionError(f"interpolation weights must be numbers, not {list(weights)!r}") \
            from None
    if not all(math.isfinite(v) and v >= 0 for v in values):
        raise OptionError(f"interpolation weights must be finite numbers >= 0, not "
                          f"{list(weights)!r}")
    total = float(values.sum())
    if abs(total - 1.0) > WEIGHT_SUM_TOL:
        raise OptionError(f"interpolation weights must sum to 1, not {total:.6g} "
                          f"({', '.join(f'{v:g}' for v in values)})")
    return values


class InterpolatedLM:
    """`TargetModel` for sum_i lambda_i p_i(w | h) over k >= 2 maxarpa models (natural log).

    `models`: maxarpa Models (or their `MaxArpaLM`), of any orders; `weights`: one lambda per
    model, finite, >= 0, summing to 1; `missing`: "unk" or "zero", what a component gives a
    word of the union it lacks (see the module docstring; "zero" is SRILM's). Raises
    OptionError for bad weights, fewer than two models or an unknown `missing`.
    """

    def __init__(self, models: Sequence[Model | MaxArpaLM], weights: Sequence[float], *,
                 missing: Missing = "unk") -> None:
        if missing not in MISSING:
            raise OptionError(f"missing must be one of {', '.join(MISSING)}, not {missing!r}")
        if len(models) < 2:
            raise OptionError(f"interpolation needs at least 2 models, got {len(models)}")
        self.components: list[MaxArpaLM] = [_as_component(m, i) for i, m in enumerate(models)]
        self.weights = check_weights(weights, len(self.components))
        self.missing: Missing = missing
        # the components that count (a zero weight contributes nothing, in p or its bound)
        self._active = [i for i, w in enumerate(self.weights) if w > 0]
        self._log_weights = np.log(self.weights[self._active])
        self.vocab: list[str] = []
        self.word_to_id: dict[str, int] = {}
        for comp in self.components:
            for w in comp.ngram.vocab:
                if w not in self.word_to_id:
                    self.word_to_id[w] = len(self.vocab)
                    self.vocab.append(w)
        self.unk_id: int | None = None
        for comp in self.components:
            if comp.ngram.unk_id is not None:
                self.unk_id = self.word_to_id[comp.ngram.vocab[comp.ngram.unk_id]]
                break
        self._maps = [self._map_of(comp) for comp in self.components]
        self.order = max(comp.order for comp in self.components)
        self.bos = self.word_to_id[BOS]
        self.eos = self.word_to_id[EOS]

    def _map_of(self, comp: MaxArpaLM) -> np.ndarray:
        """Union id -> the component's id, or -1 for a word it cannot see."""
        lm = comp.ngram
        fallback = -1
        if self.missing == "unk" and lm.unk_id is not None:
            fallback = int(lm.unk_id)
        table = np.full(len(self.vocab), fallback, dtype=np.int64)
        for u, w in enumerate(self.vocab):
            own = lm.word_to_id.get(w)
            if own is not None:
                table[u] = own
        if self.unk_id is not None and lm.unk_id is not None:  # <unk> is <unk> (or <UNK>)
            table[self.unk_id] = lm.unk_id
        return table

    def __repr__(self) -> str:
        parts = ", ".join(f"{c.ngram.source or 'model'}:{w:g}"
                          for c, w in zip(self.components, self.weights, strict=True))
        return f"InterpolatedLM({parts}, missing={self.missing!r})"

    # ----- the component view -------------------------------------------------------------
    def _view(self, i: int, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Component i's contexts: its last order_i - 1 columns in its ids, each row ending
        (-1 at and left of it) at the last word it cannot see; and which rows so ended (their
        p_i is the same for every left extension)."""
        width = self.components[i].order - 1
        rows = np.asarray(contexts, dtype=np.int64)
        if rows.shape[1] < width:  # a narrower row: the words before it are unknown
            rows = np.hstack([np.full((len(rows), width - rows.shape[1]), -1, np.int64), rows])
        rows = rows[:, rows.shape[1] - width:] if width else rows[:, :0]
        mapped = np.where(rows >= 0, self._maps[i][np.maximum(rows, 0)], -1)
        ended = np.zeros(len(rows), dtype=bool)
        if mapped.size:
            unseen = (mapped < 0) & (rows >= 0)
            ended = np.asarray(unseen.any(axis=1), dtype=bool)
            left_of = np.flip(np.logical_or.accumulate(np.flip(unseen, axis=1), axis=1), axis=1)
            mapped = np.where(left_of, -1, mapped)
        return mapped, ended

    def _words(self, i: int, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Component i's ids of `words` (a stand-in for an unseen word) and which are unseen."""
        mapped = self._maps[i][np.asarray(words, dtype=np.int64)]
        unseen = mapped < 0
        return np.where(unseen, self.components[i].eos, mapped), unseen

    def _mix(self, contexts: np.ndarray, words: np.ndarray, bound: bool) -> np.ndarray:
        terms = []
        for lw, i in zip(self._log_weights, self._active, strict=True):
            comp = self.components[i]
            ids, unseen = self._words(i, words)
            view, ended = self._view(i, contexts)
            if comp.walk is None:  # the compiled walk on the tables in place (no ln copy)
                core = log10_core(comp.ngram)
                view, ids = np.ascontiguousarray(view), np.ascontiguousarray(ids)
                values = core.walk(view, ids, False)
                if bound:  # an ended view is exact: its value is its own (tightest) bound
                    values = np.where(ended, values, core.walk(view, ids, True))
            else:
                values = comp.log_prob(view, ids)
                if bound:
                    values = np.where(ended, values, comp.log_bound(view, ids))
            terms.append(lw + np.where(unseen, -np.inf, values))
        return np.logaddexp.reduce(np.stack(terms), axis=0)

    # ----- TargetModel --------------------------------------------------------------------
    def ids(self, tokens: Sequence[str]) -> np.ndarray:
        get = self.word_to_id.get
        out = np.empty(len(tokens), dtype=np.int64)
        for j, t in enumerate(tokens):
            u = get(t, self.unk_id)
            if u is None:
                raise ModelError(f"unknown word {t!r}: in none of the interpolated models, "
                                 "and none has <unk>")
            out[j] = u
        return out

    def word(self, word_id: int) -> str:
        return self.vocab[word_id]

    def log_prob(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        return self._mix(contexts, words, bound=False)

    def log_bound(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        return self._mix(contexts, words, bound=True)

    def is_exact(self, position: int, context: Sequence[int]) -> bool:
        n = len(context)
        if n > 0 and n == position + 1 and context[0] == self.bos:  # the whole history
            return True
        for i in self._active:
            width = self.components[i].order - 1
            if n >= width:
                continue
            tail = list(context)[max(0, n - width):]
            if not any(self._maps[i][u] < 0 for u in tail):
                return False
        return True

    def minimal_context(self, contexts: np.ndarray) -> np.ndarray:
        rows = np.asarray(contexts, dtype=np.int64)
        width = rows.shape[1]
        if width == 0:
            return rows.copy()
        keep = np.zeros(len(rows), dtype=np.int64)
        for i in self._active:
            cut = self.components[i].minimal_context(self._view(i, rows)[0])
            keep = np.maximum(keep, (cut >= 0).sum(axis=1))
        columns = np.arange(width)
        return np.where(columns[None, :] >= width - keep[:, None], rows, -1)
