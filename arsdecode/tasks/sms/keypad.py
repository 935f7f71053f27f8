"""SMS retrieval (Carter, Dymetman & Bouchard 2012, section 3.1): words from noisy keypad digits.

Why this module: the decoder only sees a lattice. This module is the channel that turns a noisy
digit string into candidate words with exact log emission probabilities, fast enough for a
10-20k word vocabulary.

Keypad (physical 4x3 grid; the distance between keys is the Euclidean distance between key
centres, in units of one key pitch)::

    1 2 3        letters: abc=2 def=3 ghi=4 jkl=5 mno=6 pqrs=7 tuv=8 wxyz=9
    4 5 6        sentence-final punctuation . ? !      -> *
    7 8 9        other pauses , ; :                    -> #
    * 0 #        apostrophe ' (also inside "don't"), - -> 1

Key 0 is the space key of a phone: no token character maps to it, because words are separated
by spaces in the observation. It is still a valid observed key, since noise can produce it.
The paper's example "3637 843 66639 39478 *" ends with "*", a full stop.

Noise model (paper eq. 9): each character x_t is typed independently as key o_t with

    p(o_t | x_t) = (1 / (k * d(o_t, key(x_t)) + 1)) / Z(key(x_t)),
    Z(key) = sum over the 12 observable keys o of 1 / (k * d(o, key) + 1),

with k = 64. Because the model factorises over characters, these per-key normalisers make
p(o | x) = prod_t p(o_t | x_t) an exactly normalised distribution over all observation strings
of the word's length (and 0 for other lengths). Corner keys have fewer near neighbours than the
centre key 5, so Z differs per key; using one global constant would not normalise.

Candidates for an observed token are all vocabulary words of the same length (excluding <s>,
</s>, <unk> and words with a character not on the keypad), with their exact log emission; an
optional `top_k` keeps the K most likely (the paper used K=100 for sampling, no cut for
decoding). Pruned lattices keep the unrenormalised channel probabilities.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

import numpy as np

from arsdecode.errors import ObservationError, OptionError
from arsdecode.lattice import Lattice
from maxarpa.constants import BOS, EOS, UNK

KEYS = "123456789*0#"
"""The 12 observable keys, in grid order (row by row)."""

DEFAULT_K = 64.0
"""The paper's noise sharpness: an adjacent key is 65 times less likely than the right one."""

_KEY_INDEX = {key: i for i, key in enumerate(KEYS)}
_KEY_XY = np.array([(i % 3, i // 3) for i in range(len(KEYS))], dtype=np.float64)

_LETTERS = ("abc", "def", "ghi", "jkl", "mno", "pqrs", "tuv", "wxyz")
CHAR_TO_KEY: Mapping[str, str] = {
    **{c: key for key, letters in zip("23456789", _LETTERS, strict=True) for c in letters},
    **dict.fromkeys(".?!", "*"),
    **dict.fromkeys(",;:", "#"),
    **dict.fromkeys("'-", "1"),
}
_CHAR_INDEX = {c: _KEY_INDEX[key] for c, key in CHAR_TO_KEY.items()}
_SPECIAL = frozenset((BOS, EOS, UNK))

DEFAULT_MODEL = "state_union.5gram.arpa.gz"


class NoCandidatesError(ObservationError):
    """An observed token whose length no vocabulary word has."""


def key_distance(a: str, b: str) -> float:
    """Euclidean distance between the centres of keys `a` and `b` (one key pitch = 1)."""
    return float(np.linalg.norm(_KEY_XY[_KEY_INDEX[a]] - _KEY_XY[_KEY_INDEX[b]]))


def is_typable(word: str) -> bool:
    """Whether every character of `word` is on the keypad (and the word is not empty)."""
    return bool(word) and all(c in _CHAR_INDEX for c in word)


def word_to_keys(word: str) -> str:
    """The noiseless key string of `word`, e.g. "money" -> "66639"."""
    if not is_typable(word):
        raise ObservationError(f"word {word!r} cannot be typed on the keypad")
    return "".join(CHAR_TO_KEY[c] for c in word)


def _check_k(k: float) -> float:
    if not (isinstance(k, (int, float)) and math.isfinite(k) and k >= 0):
        raise OptionError(f"noise parameter k must be a finite number >= 0, got {k!r}")
    return float(k)


def key_weights(k: float = DEFAULT_K) -> np.ndarray:
    """Unnormalised weights W[o, x] = 1 / (k d(o, x) + 1) over key indices (eq. 9)."""
    k = _check_k(k)
    d = np.linalg.norm(_KEY_XY[:, None, :] - _KEY_XY[None, :, :], axis=-1)
    return 1.0 / (k * d + 1.0)


def key_normalisers(k: float = DEFAULT_K) -> np.ndarray:
    """Z[x] = sum_o W[o, x]: the per-true-key normaliser (differs for corner and centre keys)."""
    return key_weights(k).sum(axis=0)


@lru_cache(maxsize=16)
def log_channel_table(k: float = DEFAULT_K) -> np.ndarray:
    """Read-only table T[o, x] = ln p(observed key o | true key x), columns exactly normalised."""
    w = key_weights(k)
    table = np.log(w) - np.log(w.sum(axis=0, keepdims=True))
    table.setflags(write=False)
    return table


@lru_cache(maxsize=16)
def _cdf_table(k: float) -> np.ndarray:
    w = key_weights(k)
    cdf = np.cumsum(w / w.sum(axis=0, keepdims=True), axis=0)
    cdf[-1, :] = 1.0
    return cdf


def _obs_indices(token: str, position: int) -> np.ndarray:
    if not token:
        raise ObservationError(f"observation token {position} is empty")
    try:
        return np.fromiter((_KEY_INDEX[c] for c in token), dtype=np.intp, count=len(token))
    except KeyError:
        bad = next(c for c in token if c not in _KEY_INDEX)
        raise ObservationError(
            f"observation token {position} {token!r}: {bad!r} is not a keypad key "
            f"(valid keys: {KEYS})"
        ) from None


def parse_observation(observation: str) -> tuple[str, ...]:
    """Split an observation like "3637 843 *" into tokens, validating every key.

    Raises:
        ObservationError: not a string, empty, or a token with a character outside 0-9 * #.
    """
    if not isinstance(observation, str):
        raise ObservationError(f"observation must be a string, got {type(observation).__name__}")
    tokens = tuple(observation.split())
    if not tokens:
        raise ObservationError("observation is empty (expected keys like '3637 843 *')")
    for i, tok in enumerate(tokens):
        _obs_indices(tok, i)
    return tokens


def log_emission(word: str, observation: str, k: float = DEFAULT_K) -> float:
    """ln p(observation | word) for one observed token; -inf when the lengths differ."""
    obs = _obs_indices(observation, 0)
    keys = word_to_keys(word)
    if len(keys) != len(obs):
        return -math.inf
    x = np.fromiter((_KEY_INDEX[c] for c in keys), dtype=np.intp, count=len(keys))
    return float(log_channel_table(_check_k(k))[obs, x].sum())


def sample_observation(word: str, rng: np.random.Generator, k: float = DEFAULT_K) -> str:
    """Draw one noisy key string for `word` from the channel, character by character."""
    x = [_KEY_INDEX[c] for c in word_to_keys(word)]
    cdf = _cdf_table(_check_k(k))
    u = rng.random(len(x))
    return "".join(
        KEYS[int(np.searchsorted(cdf[:, xi], ui, side="right"))]
        for xi, ui in zip(x, u, strict=True)
    )


def sample_sentence(words: Iterable[str], rng: np.random.Generator, k: float = DEFAULT_K) -> str:
    """Noisy observation of a whole sentence: one key string per word, space-separated."""
    return " ".join(sample_observation(w, rng, k) for w in words)


@dataclass(frozen=True, eq=False)
class KeypadChannel:
    """Vocabulary grouped by word length, pre-encoded as key indices for vectorised scoring.

    Build once with `from_vocab` and reuse: scoring one observed token is a table gather over
    the (words x length) key matrix of that length.
    """

    k: float
    words_by_length: Mapping[int, tuple[str, ...]]
    keys_by_length: Mapping[int, np.ndarray]
    table: np.ndarray

    @classmethod
    def from_vocab(cls, vocab: Iterable[str], k: float = DEFAULT_K) -> KeypadChannel:
        """Group the typable words of `vocab` (minus <s>, </s>, <unk>; duplicates merged)."""
        k = _check_k(k)
        groups: dict[int, set[str]] = {}
        for w in vocab:
            if w not in _SPECIAL and is_typable(w):
                groups.setdefault(len(w), set()).add(w)
        words: dict[int, tuple[str, ...]] = {}
        keys: dict[int, np.ndarray] = {}
        for length in sorted(groups):
            ws = tuple(sorted(groups[length]))
            mat = np.array([[_CHAR_INDEX[c] for c in w] for w in ws], dtype=np.intp)
            mat.setflags(write=False)
            words[length], keys[length] = ws, mat
        return cls(k, words, keys, log_channel_table(k))

    @property
    def vocab_size(self) -> int:
        return sum(len(ws) for ws in self.words_by_length.values())

    def candidates(
        self, token: str, top_k: int | None = None, position: int = 0
    ) -> tuple[tuple[str, ...], np.ndarray]:
        """Words of the observed token's length and their ln emissions.

        Without `top_k`: every such word, in a fixed (sorted) order. With `top_k`: the K most
        likely, best first, ties broken by that fixed order.
        """
        obs = _obs_indices(token, position)
        length = len(obs)
        if length not in self.words_by_length:
            raise NoCandidatesError(
                f"observation token {position} {token!r}: no vocabulary word has length {length}"
            )
        words = self.words_by_length[length]
        scores = self.table[obs[None, :], self.keys_by_length[length]].sum(axis=1)
        if top_k is None:
            return words, scores
        if top_k < 1:
            raise OptionError(f"top_k must be >= 1, got {top_k}")
        order = np.argsort(-scores, kind="stable")[:top_k]
        return tuple(words[i] for i in order), scores[order]

    def build_lattice(self, observation: str, top_k: int | None = None) -> Lattice:
        """One lattice position per observed token (see `candidates`)."""
        tokens = parse_observation(observation)
        cands = [self.candidates(tok, top_k, i) for i, tok in enumerate(tokens)]
        # Direct construction: the invariants Lattice.from_lists checks (non-empty, unique,
        # finite weights) hold by construction here, and skipping the per-candidate Python
        # loop is what keeps a 10-word lattice over a 20k vocabulary to a few milliseconds.
        return Lattice(tuple(c[0] for c in cands), tuple(c[1] for c in cands))


def build_lattice(
    vocab: Iterable[str], observation: str, k: float = DEFAULT_K, top_k: int | None = None
) -> Lattice:
    """One-shot lattice; build a `KeypadChannel` instead when decoding many observations."""
    return KeypadChannel.from_vocab(vocab, k).build_lattice(observation, top_k)


def default_model_path() -> Path:
    """The embedded 5-gram trained on all of state_union (see data_prep/prepare_sms.py)."""
    return Path(str(files("arsdecode") / "data" / DEFAULT_MODEL))
