"""The segmentation lattice: text without spaces as a word lattice over its character offsets.

Why a lattice: exact segmentation under an n-gram LM is the exact best path of a DAG whose
nodes are the offsets 0..len(text) and whose arcs are the words the text may contain; the
word-lattice decoder (`arsdecode.methods.expansion_dp`) then gives the best segmentation with the
full n-gram context, k-best and samples, where `wordsegment` (bigram) and `wordninja` (unigram)
search with one word or none of context.

Input normalisation (`normalize_text`, `prepare_input`): NFKC, lower-case, and every character
that is not a letter or a digit removed -- the issue's test protocol (held-out text with spaces
and punctuation removed, lower-cased). Apostrophes are punctuation too, so the LM word "don't"
is reached through its surface form "dont" (`surface_form`); two LM words with one surface
("its", "it's") are parallel arcs, and the LM's context chooses. A raw input keeps what its
writer already told us: `prepare_input` records where spaces or punctuation stood as `breaks`,
offsets no arc may cross (an apostrophe inside a word is not one). So "#ThisIsATest" is
"thisisatest" with no break (the case is dropped here; `cues.SegmentInput` reads the same
input keeping its case, and turns camel case and digits into soft bonuses), and
"www.bestbuy.com/deals" is "wwwbestbuycomdeals" with breaks after "www", "bestbuy" and
"com": only "bestbuy" is segmented inside.

Arcs (ln weights; the decoder adds the LM's ln probabilities):

* a word arc i -> j of weight 0 for every LM word whose surface form is text[i:j];
* an unknown-word arc i -> j of weight -unknown_penalty_per_char * (j - i) for every substring
  of 1..unknown_max_length characters that is *not* the surface of an LM word. Its word is the
  substring itself, which the LM scores as `<unk>` (every unknown word does), so a decoded
  path is readable as it is and k-best with distinct word sequences stays distinct; `<unk>`
  as the arc's word would lose which characters it covered. No unknown arc duplicates a word
  arc: the substring would be scored as the word itself (its string is a vocabulary word), so
  the second arc would be the first one with a penalty, never better.

Every text has a path: each single character has a word arc or an unknown arc (so
`unknown_max_length` must be at least 1), and the lattice's node i is offset i (n_nodes is
len(text) + 1). The LM must have `<unk>` (KenLM's and SRILM's do; maxarpa's
`Config(unknown_missing="accept")` adds one to a model without).

The penalty (`DEFAULT_UNKNOWN_PENALTY_PER_CHAR`): an unknown word of length L costs the LM's
ln p(<unk> | context) (about -11.5 in the state_union models) plus -penalty * L. Without the
per-character term a long unknown span would be as cheap as a short one and swallow runs of
rare words; with too large a term an unknown name is shredded into short known words. The
default was measured on held-out text (experiments/segment_compare.py --tune: 200 held-out
state_union sentences the comparison does not use, the 5-gram lm.5 of the training split).
Boundary F1 by penalty: 0 -> 0.526 (unknown spans swallow words), 0.5 -> 0.885, 1 -> 0.976,
1.5 -> 0.986, 2 -> 0.9887, 2.5 -> 0.9893, 3 -> 0.9891, 4 -> 0.986: a broad optimum at 2-3,
a little under ln 26 = 3.3, the cost of spelling a word letter by letter. A fixed extra cost per
unknown word (4 or 8, on top of the LM's <unk>) did not help (F1 <= 0.9884), so there is one
parameter. Unknown arcs of at most 8 characters lose 0.001 F1, 16 gain nothing over 12. A
character trigram spelling model of the vocabulary in place of the flat penalty (scaled 0.6 to
1.5) did worse at order 3 (F1 0.9835-0.9884 against 0.9895), so the flat penalty stays the
default here. `segmenter.Segmenter` (issue 33: the shipped general-English model, where
unknown names are common) passes `spelling` instead: there the spelling model with a fixed
unknown-word bonus matched or beat the flat penalty on the development sets
(docs/results-segment.md).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from arsdecode.errors import ObservationError, OptionError
from arsdecode.lattice.word_lattice import WordLattice
from arsdecode.tasks.segment.compiled import Pricing, TrieIndex, build_batch
from arsdecode.tasks.segment.spelling import SpellingModel

DEFAULT_UNKNOWN_PENALTY_PER_CHAR = 2.5
"""ln weight per character of an unknown-word arc (module docstring: measured on held-out)."""

DEFAULT_UNKNOWN_MAX_LENGTH = 12
"""Longest unknown-word arc, in characters; a longer unknown word is covered by several."""

SPECIAL_TOKENS = frozenset({"<s>", "</s>", "<unk>", "<UNK>"})
"""LM tokens that are never words of a text."""


def surface_form(word: str) -> str:
    """How `word` appears in normalised text: NFKC, lower-case, letters and digits only
    ("Don't" -> "dont", "," -> "")."""
    return "".join(c for c in unicodedata.normalize("NFKC", word).lower() if c.isalnum())


def normalize_text(raw: str) -> str:
    """The issue's protocol on a whole text: lower-cased, spaces and punctuation removed."""
    return surface_form(raw)


def prepare_input(raw: str) -> tuple[str, frozenset[int]]:
    """(normalised text, breaks): a raw input such as a hashtag, a URL or a sentence, with the
    offsets (into the normalised text, strictly inside it) where a space or punctuation stood.
    The lattice lets no arc cross a break: what the writer separated stays separated."""
    pieces = [surface_form(chunk) for chunk in _split_on_separators(raw)]
    text, breaks, offset = "", set(), 0
    for piece in pieces:
        if not piece:
            continue
        if offset:
            breaks.add(offset)
        text += piece
        offset += len(piece)
    return text, frozenset(breaks)


_INNER_APOSTROPHE = re.compile(r"(?<=[^\W_])['\u2019](?=[^\W_])")


def _split_on_separators(raw: str) -> list[str]:
    """Runs of letters and digits (after NFKC), split at every other character except an
    apostrophe inside a word ("don't" is one word, as the LMs' tokenisation has it)."""
    out, cur = [], []
    for c in _INNER_APOSTROPHE.sub("", unicodedata.normalize("NFKC", raw)):
        if c.isalnum():
            cur.append(c)
        elif cur:
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


@dataclass(frozen=True)
class SurfaceIndex:
    """An LM vocabulary by surface form: build it once (`of`, `of_model`) and pass it to
    `segmentation_lattice` for every text, instead of the word list."""

    words: Mapping[str, tuple[str, ...]]  # surface form -> the LM words written so
    max_length: int  # longest surface form, in characters

    @cached_property
    def prefixes(self) -> frozenset[str]:
        """Every non-empty prefix of a surface form (itself included): the reference
        builder's walk (made on first use: 1.7 million strings for the shipped model)."""
        return frozenset(s[:k] for s in self.words for k in range(1, len(s) + 1))

    @cached_property
    def trie(self) -> TrieIndex:
        """The compiled builder's form of this index (made on first use)."""
        return TrieIndex.of(self.words)

    @classmethod
    def of(cls, vocabulary: Iterable[str]) -> SurfaceIndex:
        """Index words (special tokens and words without letters or digits are skipped)."""
        by_surface: dict[str, list[str]] = {}
        for word in vocabulary:
            if word in SPECIAL_TOKENS:
                continue
            # an ASCII word of lower-case letters and digits is its own surface form (the
            # common case, and NFKC is the slow part of indexing 250,000 words)
            plain = word.isascii() and word.isalnum() and (word.islower() or word.isdigit())
            surface = word if plain else surface_form(word)
            if surface:
                entry = by_surface.get(surface)
                if entry is None:
                    by_surface[surface] = [word]
                elif word not in entry:
                    entry.append(word)
        return cls({s: tuple(ws) for s, ws in by_surface.items()},
                   max(map(len, by_surface), default=0))

    @classmethod
    def of_model(cls, lm: object) -> SurfaceIndex:
        """Index the vocabulary of a maxarpa Model, or of a target with its `.ngram`."""
        vocab = getattr(lm, "vocab", None)
        if vocab is None:
            vocab = getattr(getattr(lm, "ngram", None), "vocab", None)
        if vocab is None:
            raise OptionError(f"{type(lm).__name__} has no vocabulary (.vocab or .ngram.vocab)")
        return cls.of(vocab)


def segmentation_lattice(
    text: str,
    vocabulary: SurfaceIndex | Iterable[str],
    *,
    max_word_length: int | None = None,
    unknown_penalty_per_char: float = DEFAULT_UNKNOWN_PENALTY_PER_CHAR,
    unknown_max_length: int = DEFAULT_UNKNOWN_MAX_LENGTH,
    breaks: Collection[int] = frozenset(),
    source: str = "segmentation",
    spelling: SpellingModel | None = None,
    spelling_scale: float = 1.0,
    unknown_word_cost: float = 0.0,
    boundary_bonus: np.ndarray | None = None,
) -> WordLattice:
    """The segmentation lattice of normalised `text` (module docstring): node i is offset i,
    a weight-0 arc per LM word found in the text, a penalised unknown arc per other substring
    of at most `unknown_max_length` characters; no arc crosses an offset in `breaks`.

    `max_word_length` caps the in-vocabulary words looked up (default: the longest in the
    vocabulary). With a `spelling` model an unknown arc weighs `spelling_scale` * ln
    p_spell(substring) - `unknown_word_cost` instead of the flat penalty (`spelling` module).
    `boundary_bonus[j]` (ln, one per offset 0..len(text)) is added to every arc ending at j, a
    bonus (or, negative, a cost) for cutting there (`cues` module). Raises ObservationError for
    text that is not normalised (use `prepare_input` or `normalize_text` first), OptionError
    for a bad option.

    Built by the compiled builder (`compiled.build_batch`, which `Segmenter` runs on many
    texts at once); `reference_lattice.reference_segmentation_lattice` is the same lattice
    built in Python, kept as the reference the tests compare it with."""
    index, longest_word = check_lattice_options(
        text, vocabulary, max_word_length, unknown_penalty_per_char, unknown_max_length,
        boundary_bonus, source)
    pricing = Pricing(unknown_penalty_per_char, spelling, spelling_scale, unknown_word_cost)
    batch = build_batch([text], [breaks], index.trie, pricing, longest_word=longest_word,
                        unknown_max_length=unknown_max_length,
                        bonuses=None if boundary_bonus is None else [boundary_bonus])
    return batch.word_lattice(0, index.trie.words, source)


def check_lattice_options(text: str, vocabulary: SurfaceIndex | Iterable[str],
                          max_word_length: int | None, unknown_penalty_per_char: float,
                          unknown_max_length: int, boundary_bonus: np.ndarray | None,
                          source: str) -> tuple[SurfaceIndex, int]:
    """`segmentation_lattice`'s checks (both builders'): the index and the longest word looked
    up, or ObservationError / OptionError."""
    if text != normalize_text(text):
        raise ObservationError(f"{source}: the text {text[:40]!r} is not normalised "
                               "(lower-case letters and digits only; see prepare_input)")
    if unknown_max_length < 1:
        raise OptionError(f"unknown_max_length must be at least 1 (every text needs a path), "
                          f"not {unknown_max_length}")
    if not (math.isfinite(unknown_penalty_per_char) and unknown_penalty_per_char >= 0):
        raise OptionError("unknown_penalty_per_char must be finite and >= 0, not "
                          f"{unknown_penalty_per_char}")
    index = vocabulary if isinstance(vocabulary, SurfaceIndex) else SurfaceIndex.of(vocabulary)
    longest_word = index.max_length if max_word_length is None else min(max_word_length,
                                                                        index.max_length)
    if longest_word < 0:
        raise OptionError(f"max_word_length must be >= 0, not {max_word_length}")
    if boundary_bonus is not None and (len(boundary_bonus) != len(text) + 1
                                       or not np.isfinite(boundary_bonus).all()):
        raise OptionError(f"boundary_bonus needs {len(text) + 1} finite values (one per "
                          "offset of the text)")
    return index, longest_word


def segmentation_words(words: Sequence[str | None], text: str) -> list[str]:
    """The substrings of `text` that a decoded path's words cover, in order ("don't" in
    "idontknow" -> "dont"; an unknown word is its substring already). Epsilon (None) words are
    skipped. Raises ObservationError if the words do not spell `text`, which means they were
    decoded from another text's lattice."""
    out: list[str] = []
    offset = 0
    for word in words:
        if word is None:
            continue
        surface = surface_form(word)
        if not surface:
            continue
        if not text.startswith(surface, offset):
            raise ObservationError(f"the word {word!r} does not continue the text at offset "
                                   f"{offset}: {text[offset:offset + 20]!r}")
        out.append(surface)
        offset += len(surface)
    if offset != len(text):
        raise ObservationError(f"the words cover {offset} of the text's {len(text)} characters")
    return out
