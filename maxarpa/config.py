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
Untrusted = Literal["recompute", "refuse"]
UNTRUSTED: tuple[str, ...] = ("recompute", "refuse")


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
        untrusted_bounds: what to do with a MAX-ARPA or binary file that carries no digest,
            or one that does not match its numbers (maxarpa.digest): a file this package did
            not write, wrote before digests (all files before issue 19), or a hand-edited one.
            Such a file is first given the cheap checks (mf >= log10p, the mbow recurrence,
            mf >= the mf of each longer n-gram; a failure is refused, naming the n-gram).
            Then "recompute" (default, the safe one that still loads every old file): its
            blank log10p, mf and mbow are recomputed from its own listed log10p and backoffs,
            as an ARPA file's are, so a wrong bound can never certify a wrong path; it costs
            about as much as computing the bounds from ARPA. "refuse": the same
            recomputation, and a FormatError naming the first n-gram whose stored value
            differs (what `maxarpa verify` reports); a file whose bounds are all exact loads.
            A file whose digest matches is trusted as written: it holds the numbers this
            package computed, and none of this runs.
        verify_bounds: also recompute the bounds of a file whose digest matches, and refuse
            it if one differs (an untrusted file is then refused as with "refuse"). Default
            False: the digest already proves the file is as written.
    """

    sentence_marker_missing: Action = "raise"
    positive_log_probability: Action = "raise"
    unknown_missing: Action = "raise"
    unknown_missing_log10p: float = -100.0
    untrusted_bounds: Untrusted = "recompute"
    verify_bounds: bool = False

    def __post_init__(self) -> None:
        if self.untrusted_bounds not in UNTRUSTED:
            raise ValueError(f"Config.untrusted_bounds must be one of {UNTRUSTED}, "
                             f"got {self.untrusted_bounds!r}")
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
