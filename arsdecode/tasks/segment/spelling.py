"""A spelling model of unknown words: character trigrams trained on the LM's vocabulary.

Why: a flat ln cost per character makes every unknown string of one length equally likely, so
"heartballoon" is cheaper shredded into short known words than kept, and "xqzt" costs what
"alonis" does. A character model of the vocabulary's types (not tokens: an unknown word is a
rare type) gives a word-like string a higher probability than a random one. An unknown arc
costs `scale` * -ln p_spell(string) + `per_word` on top of the LM's ln p(<unk> | context)
(`scale` and `per_word` measured on the development sets, docs/results-segment.md).

The model: symbols a-z, 0-9, one class for every other letter, and the word boundary; p(c | a b)
by Witten-Bell interpolation of trigram, bigram and unigram counts (add-one at the unigram), in
numpy: training on 250,000 words and scoring every unknown arc of a text are array operations.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BOUNDARY = 0
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
OTHER = len(_ALPHABET) + 1
N_SYMBOLS = OTHER + 1
_TABLE = {"\0": BOUNDARY, **{c: k + 1 for k, c in enumerate(_ALPHABET)}}

DEFAULT_SCALE = 0.8
"""Multiplier of -ln p_spell (measured on the development sets)."""
DEFAULT_PER_WORD = -6.0
"""Fixed ln cost of an unknown word, on top of its spelling: negative, a bonus, because the
LM's own p(<unk>) is the Kneser-Ney discount mass of a training text with no unknown words
(about 10^-5.8 in the shipped model), far below the share of running text outside a 250,000
word list (a few per cent); -6 measured on the development sets."""


def encode(text: str) -> np.ndarray:
    """Symbol codes of a normalised text (1..36 for a-z0-9, OTHER for any other letter)."""
    get = _TABLE.get
    return np.fromiter((get(c, OTHER) for c in text), dtype=np.int64, count=len(text))


@dataclass(frozen=True)
class SpellingModel:
    """ln p(c | a, b) for every symbol triple, shape (N_SYMBOLS,) * 3."""

    log_p: np.ndarray

    @classmethod
    def train(cls, words: Iterable[str]) -> SpellingModel:
        """Witten-Bell trigram model of the word types (each word counted once), padded with
        two boundary symbols before and one after."""
        types = sorted({w for w in words if w})
        if not types:
            raise ValueError("no words to train a spelling model on")
        # One sequence "B B w B" per word; a trigram counts where its last symbol is a
        # character of a word or its closing boundary (never the next word's padding).
        lengths = np.fromiter(map(len, types), dtype=np.int64, count=len(types))
        seq = encode("\0\0" + "\0\0\0".join(types) + "\0")
        block = lengths + 3
        offset_in_block = np.arange(len(seq)) - np.repeat(np.cumsum(block) - block, block)
        target = offset_in_block >= 2
        s = N_SYMBOLS
        codes = (seq[:-2] * s + seq[1:-1]) * s + seq[2:]
        tri = np.bincount(codes[target[2:]], minlength=s ** 3).astype(np.float64)
        c3 = tri.reshape(s, s, s)
        c2 = c3.sum(axis=0)  # (b, c): counts of c after b
        c1 = c2.sum(axis=0)
        p1 = (c1 + 1) / (c1.sum() + s)
        p2 = _witten_bell(c2, p1[None, :])
        p3 = _witten_bell(c3, p2[None, :, :])
        return cls(np.log(p3))

    def save(self, path: str | Path) -> None:
        """Write the table (compressed npz): the shipped model's, so loading skips training."""
        with open(path, "wb") as f:
            np.savez_compressed(f, log_p=self.log_p)

    @classmethod
    def load(cls, path: str | Path) -> SpellingModel:
        with np.load(path) as data:
            table = np.asarray(data["log_p"], dtype=np.float64)
        if table.shape != (N_SYMBOLS,) * 3:
            raise ValueError(f"{path}: not a spelling model (shape {table.shape})")
        return cls(table)

    def unknown_log_p(self, codes: np.ndarray, starts: np.ndarray,
                      lengths: np.ndarray) -> np.ndarray:
        """ln p_spell of each substring codes[start:start + length] as a whole word."""
        if len(starts) == 0:
            return np.zeros(0)
        longest = int(lengths.max())
        steps = np.arange(longest + 1)
        pos = starts[:, None] + steps[None, :]
        inside = steps[None, :] < lengths[:, None]
        padded = np.concatenate([codes, [BOUNDARY]])
        cur = np.where(inside, padded[np.minimum(pos, len(codes))], BOUNDARY)
        prev1 = np.where(steps[None, :] >= 1, padded[np.clip(pos - 1, 0, len(codes))], BOUNDARY)
        prev2 = np.where(steps[None, :] >= 2, padded[np.clip(pos - 2, 0, len(codes))], BOUNDARY)
        used = steps[None, :] <= lengths[:, None]  # the characters and the end symbol
        terms = self.log_p[prev2, prev1, cur]
        return np.where(used, terms, 0.0).sum(axis=1)


def _witten_bell(counts: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """p(c | h) = (count(h c) + T(h) * lower(c)) / (count(h) + T(h)); T(h) the number of
    distinct c seen after h (a context never seen gets the lower order)."""
    total = counts.sum(axis=-1, keepdims=True)
    types = (counts > 0).sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = (counts + types * lower) / (total + types)
    return np.where(total > 0, p, np.broadcast_to(lower, counts.shape))
