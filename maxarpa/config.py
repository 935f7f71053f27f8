"""Strictness settings for loading a model, after KenLM's `lm::ngram::Config`.

Why one object: real ARPA files break the rules in a few recurring ways (no `<s>`, no `<unk>`,
a log10 probability above 0). Each toolkit picks a default for each case; a user who needs
another choice should change one documented field, not patch a reader. Every choice here keeps
the max-backoff bound exact: nothing is ever silently mapped onto another word's id.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

Action = Literal["raise", "warn", "accept"]
ACTIONS: tuple[str, ...] = ("raise", "warn", "accept")


class MaxArpaWarning(UserWarning):
    """A model was loaded although it breaks a rule the `Config` was told only to warn about."""


@dataclass(frozen=True)
class Config:
    """What to do with each kind of irregular model (the defaults mirror KenLM's).

    Attributes:
        sentence_marker_missing: the model has no `<s>` or no `</s>` unigram. Default
            "raise" (KenLM: THROW_UP). With "warn" or "accept", the missing marker is added
            as a unigram with log10 p = that of `<unk>` (or `unknown_missing_log10p` when
            there is no `<unk>`, the value KenLM gives it by scoring it as `<unk>`), backoff
            0 and no extensions. So `<s>` keeps its own id: a context starting with it is
            exactly the sentence start, p(x | <s>) is the backed-off unigram p(x), and
            p(</s> | c) is c's backoffs plus that unigram value. Never `<unk>`'s id.
        positive_log_probability: a listed log10 probability above 0 (p > 1). Default
            "raise" (KenLM: THROW_UP). "warn"/"accept" keep the value as written; the bounds
            stay exact for the numbers in the file.
        unknown_missing: the model has no `<unk>` (nor `<UNK>`). Default "raise": the model
            loads, and a query naming an out-of-vocabulary word raises UnknownWordError
            (`Model.word_id`). With "warn" (KenLM's default, COMPLAIN) or "accept", a `<unk>`
            unigram is added with log10 p = `unknown_missing_log10p`, backoff 0, no extensions.
        unknown_missing_log10p: log10 p of that added `<unk>`; KenLM's default is -100.
        verify_bounds: recompute every bound stored in a MAX-ARPA or binary file on load and
            refuse the file if one differs (what `maxarpa verify` does). Default False: every
            load already refuses bounds that break a necessary condition of the recurrences
            (mf >= log10p, the mbow recurrence, mf >= the mf of each longer n-gram); the one
            term those checks cannot see cheaply (a positive backoff reached through an
            absent extension) is checked only by this full recomputation, which costs about
            as much as computing the bounds from ARPA. Turn it on for files you did not make.
    """

    sentence_marker_missing: Action = "raise"
    positive_log_probability: Action = "raise"
    unknown_missing: Action = "raise"
    unknown_missing_log10p: float = -100.0
    verify_bounds: bool = False

    def __post_init__(self) -> None:
        for name in ("sentence_marker_missing", "positive_log_probability", "unknown_missing"):
            if getattr(self, name) not in ACTIONS:
                raise ValueError(f"Config.{name} must be one of {ACTIONS}, "
                                 f"got {getattr(self, name)!r}")
        if not self.unknown_missing_log10p <= 0.0:
            raise ValueError("Config.unknown_missing_log10p must be <= 0 (a log10 probability)")


DEFAULT_CONFIG = Config()
PERMISSIVE = Config(sentence_marker_missing="accept", positive_log_probability="accept",
                    unknown_missing="accept")
"""Accept every irregular model (exactly, as documented on each field) without warnings."""


def complain(action: str, message: str, error: Exception) -> None:
    """Apply one `Config` action: raise `error`, warn with `message`, or do nothing."""
    if action == "raise":
        raise error
    if action == "warn":
        warnings.warn(message, MaxArpaWarning, stacklevel=3)
