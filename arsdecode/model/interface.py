"""The target-model interface: what the q-automaton, the target p and the full DP ask of a model.

Why an interface: the engine only needs, for (context, word) pairs in batches, the exact
log-probability and an upper bound on it over every left extension of the context, plus two
structural facts (when a context is exact at a position, and the shortest context that gives
the same probabilities). Anything that answers these can be a target: a backoff n-gram
(`MaxArpaLM` over `maxarpa.Model`), a log-linear n-gram or a variable-order Markov model, with
no change to the core (automaton, target, inference, dp) or `methods.full`.

Optional capability `HasNgramTables`: a target that is a backoff n-gram exposes it as `.ngram`
(a `maxarpa.Model`); the compiled full DP and auto's cost model run on its tables. Code above
this layer asks `ngram_tables(model)`, which is None for any other target (those get the
numpy methods), rather than unwrapping an adapter.

Conventions: natural log everywhere; a context is a (B, k) int64 array of word ids, oldest word
first, left-padded with -1 (maxarpa's batch layout); k = order - 1 in the engine.

Exactness (the certificate's precondition): at layer i the history is `<s> x_1 .. x_i`. A state
context c (a suffix of that history) determines p(. | history) iff c has at least order - 1
words, or c IS the whole history (i + 1 words). A context that merely starts with `<s>` is not
enough: `<s>` may occur inside a history (a model listing `<s> <s>`), and then a short context
starting with it is a suffix of a longer history whose probabilities differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeAlias, runtime_checkable

import numpy as np

from maxarpa.model import Model


@runtime_checkable
class TargetModel(Protocol):
    """What the engine needs from a language model (all values natural log)."""

    order: int  # contexts have at most order - 1 words
    bos: int  # id of <s>: the history before the first token
    eos: int  # id of </s>: the final factor

    def ids(self, tokens: Sequence[str]) -> np.ndarray:
        """int64 id of each token (an unknown token gets the model's unknown-word id)."""
        ...

    def word(self, word_id: int) -> str:
        """The surface form of an id (for display and export)."""
        ...

    def log_prob(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        """ln p(word | context) per row; contexts (B, order - 1) left-padded with -1."""
        ...

    def log_bound(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        """Per row, an upper bound of ln p(word | z + context) over every left extension z."""
        ...

    def is_exact(self, position: int, context: Sequence[int]) -> bool:
        """Whether `context`, a suffix of the history `<s> x_1..x_position`, fixes p there.

        Also at every later position: the automaton never lengthens an exact state's context,
        so the words it drops must not matter to any later factor either (an n-gram context of
        order - 1 words meets this by construction; a variable-order model such as the VPYLM
        must check that no deeper context continues it)."""
        ...

    def minimal_context(self, contexts: np.ndarray) -> np.ndarray:
        """Each row cut to the shortest suffix c' with p(w | c) = p(w | c') for every w and
        cut(c + w) = cut(cut(c) + w) (the full DP merges states by it); -1 left padding."""
        ...



@runtime_checkable
class HasNgramTables(Protocol):
    """Optional capability: the target is a backoff n-gram whose tables are `ngram`.

    Why a capability and not part of `TargetModel`: only a backoff n-gram has the tables the
    compiled core (fast_full, the cost model) runs on; any other target still gets every
    method through `TargetModel`, on the numpy paths.
    """

    @property
    def ngram(self) -> Model: ...


@dataclass(frozen=True)
class NgramScoring:
    """How a target scores a path with its n-gram tables, for the compiled DP.

    Why: SRILM disambig's `-lmw`, `-no-sos` and `-no-eos` change the factors, not the tables.
    A target that wraps a backoff n-gram this way (`arsdecode.model.weighted`) exposes its
    `.ngram` and its `.scoring`; the compiled DP then multiplies every LM ln probability by
    `lm_weight`, starts from the empty context instead of `<s>` without `sentence_start`, and
    adds no `</s>` factor without `sentence_end`.
    """

    lm_weight: float = 1.0
    sentence_start: bool = True
    sentence_end: bool = True


PLAIN_SCORING = NgramScoring()


def ngram_scoring(model: object) -> NgramScoring:
    """The target's `NgramScoring` (`.scoring`), or the plain one (weight 1, `<s>` and `</s>`)."""
    scoring = getattr(model, "scoring", None)
    return scoring if isinstance(scoring, NgramScoring) else PLAIN_SCORING


ModelLike: TypeAlias = Model | TargetModel
"""What the methods' public functions take; they convert once, with `as_target_model`."""


def ngram_tables(model: Model | TargetModel) -> Model | None:
    """The backoff n-gram whose tables the compiled core runs on, or None if `model` has none.

    A `maxarpa.Model` is its own tables; a target with the `HasNgramTables` capability gives
    its `.ngram`; any other target gives None (callers then use the numpy methods).
    """
    if isinstance(model, Model):
        return model
    if isinstance(model, HasNgramTables):
        ngram = model.ngram
        return ngram if isinstance(ngram, Model) else None
    return None


def context_rows(contexts: Sequence[Sequence[int]], width: int) -> np.ndarray:
    """Contexts as a (B, width) int64 array, last `width` words kept, left-padded with -1."""
    rows = np.full((len(contexts), width), -1, dtype=np.int64)
    if width:
        for r, ctx in enumerate(contexts):
            tail = list(ctx)[-width:]
            if tail:
                rows[r, width - len(tail) :] = tail
    return rows
