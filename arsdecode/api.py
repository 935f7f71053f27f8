"""The short public entry points behind `import arsdecode`: load a model, tag, decode an SMS.

Why a module of its own: `arsdecode/__init__.py` re-exports these with the engine's `decode`
and `sample`, so a user needs one import; the command line uses the same functions, so what
the docs show is what the CLI runs. Results are natural log (ln); model files are log10.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path

import maxarpa
from arsdecode.methods.dispatch import decode
from arsdecode.methods.results import DecodeResult
from maxarpa.config import Config
from maxarpa.model import Model

DATA_DIR = Path(__file__).resolve().parent / "data"
DEFAULT_LM = DATA_DIR / "state_union.5gram.maxarpa.gz"
"""The embedded 5-gram trained on State of the Union (public domain); used by `sms_decode`."""


def load_lm(path: str | Path, *, config: Config | None = None) -> Model:
    """Load an n-gram model: ARPA, MAX-ARPA (plain or .gz/.bz2/.xz) or maxarpa binary.

    The kind is detected from the content; `-` or a pipe is read once. `config`
    (`maxarpa.Config`, None: the defaults, KenLM's) says what to do with an irregular model
    (no <s>, no <unk>, a log10 p above 0), the same choice the CLI's strictness flags make.
    Returns a `maxarpa.model.Model`, whose queries (`log10p`, `max_log10p`) are log10, as in
    the file. Raises `maxarpa.errors.MaxArpaError` on a malformed file (or one `config` says to
    refuse) and OSError when it cannot be read.
    """
    return maxarpa.load(path, config=config)


def sms_decode(
    observation: str,
    *,
    lm: Model | None = None,
    k: float = 64.0,
    top_k: int | None = None,
    **decode_options,
) -> DecodeResult:
    """Decode a noisy keypad message such as "3637 843 *" into words (the paper's 3.1).

    `lm` defaults to the embedded State of the Union 5-gram (loaded once and cached). Returns
    a `DecodeResult` whose `tokens` are the words and whose `log_p` is the natural log of
    p(words, observation); `decode_options` go to `arsdecode.decode`. Raises
    `ObservationError` on a bad observation.
    """
    from arsdecode.tasks.sms.keypad import KeypadChannel, parse_observation

    parse_observation(observation)
    if lm is None:
        lm, channel = _default_channel(float(k))
    else:  # a user model: build its channel (a pass over the vocabulary) each call
        channel = KeypadChannel.from_vocab(lm.vocab, k=k)
    return decode(lm, channel.build_lattice(observation, top_k=top_k), **decode_options)


@lru_cache(maxsize=4)
def _default_channel(k: float):
    from arsdecode.tasks.sms.keypad import KeypadChannel

    lm = load_lm(DEFAULT_LM)
    return lm, KeypadChannel.from_vocab(lm.vocab, k=k)


@dataclass(frozen=True)
class TagResult(DecodeResult):
    """A tagged sentence: `words` and their `tags` (one per word), with every field of the
    DecodeResult that found them (`tokens` is the tags too, for older callers).

    Why its own type: a decode result's `tokens` are the hidden layer's symbols, which for a
    tagger are tags; `result.words` and `result.tags` say which is which, as `arsdecode tag
    --json` does ("tokens" there are the words).
    """

    words: list[str] = field(default_factory=list)

    @property
    def tags(self) -> list[str]:
        return self.tokens

    def to_json(self) -> dict:
        """JSON-ready dict (natural logs), with "words" and "tags"."""
        return {"words": self.words, "tags": self.tags, **super().to_json()}


def tag(
    words: Sequence[str] | str,
    *,
    order: int | None = None,
    models: str | Path | None = None,
    **decode_options,
) -> TagResult:
    """Exact POS tags of one tokenised sentence (a list of words, or one string split on
    spaces) under the TnT-style HMM of the paper's 3.2.

    Models are looked up in `models`, then `$ARSDECODE_POS_MODELS`, then the tagger shipped in
    `arsdecode/data/pos/` (see `arsdecode.tasks.pos.models`). Returns a `TagResult`: `words`,
    `tags` (one per word; also in `tokens`), and `log_p`, the natural log of the tag
    sequence's joint probability with the words (up to a tag-independent constant per unknown
    word, see `arsdecode.tasks.pos.emissions`). Raises `ModelError` when no model is found and
    `ObservationError` on an empty sentence.
    """
    from arsdecode.errors import ObservationError
    from arsdecode.tasks.pos.models import load_models

    if isinstance(words, str):
        words = words.split()
    if not words:
        raise ObservationError("empty sentence: nothing to tag")
    lm, emissions = load_models(models, order)
    words = list(words)
    r = decode(lm, emissions.lattice(words), **decode_options)
    values = {f.name: getattr(r, f.name) for f in fields(r)}
    values["tokens"] = emissions.penn_tags(r.tokens)  # decoded states -> tags (tasks.pos_cap)
    return TagResult(**values, words=words)
