"""POS tagging as HMM decoding (Carter, Dymetman & Bouchard 2012, section 3.2): emissions.

The hidden layer is a tag n-gram LM (an ARPA file over tag strings); this module supplies the
other half of a TnT-style HMM, the emission model p(word | tag), and turns a sentence into an
`arsdecode.lattice.Lattice` whose tokens are tags and whose weights are ln p(word | tag).

The emission model, for every tag t (natural logs everywhere):

* Unknown-word mass. Training words split into classes "upper"/"lower" (first character
  upper-case or not, as TnT's two suffix tries). With N training tokens, c(t) the count of t,
  n1_k the number of hapax word types of class k, and root_k(t) the tag distribution of the
  class's rare tokens (see `pos_suffix`), the probability that t emits *some* unseen word of
  class k is ``u_k(t) = P(UNK_k) * root_k(t) / (c(t) / N)`` with the Good-Turing estimate
  ``P(UNK_k) = n1_k / (N + n1_upper + n1_lower)`` (n1 in the denominator keeps u(t) < 1 even
  in degenerate corpora; n1_k is floored at 1 when the class has rare tokens). This is Bayes'
  rule P(UNK_k | t) = P(t | UNK_k) P(UNK_k) / P(t). Write u(t) = u_upper(t) + u_lower(t).
* Known words: ``p(w | t) = (1 - u(t)) * c(w, t) / c(t)``. So for every t,
  ``sum over known w of p(w | t) + u(t) = 1`` exactly (tested).
* Unknown word w of class k: ``p(w | t) = u_k(t) * P(w | UNK_k, t)`` and, by Bayes,
  ``P(w | UNK_k, t) = P(t | UNK_k, w) / P(t | UNK_k) * P(w | UNK_k)``, where
  P(t | UNK_k, w) is the suffix model's posterior (TnT's successive abstraction with a
  Dirichlet weighting, see `pos_suffix`) and P(t | UNK_k) = root_k(t) its prior.
  We do not model spellings, so the lattice weight leaves out the last factor
  ``P(w | UNK_k)``: it is the same for every tag at that position, hence cancels in every
  posterior over tag sequences (decoding and sampling are exact for the full model); only the
  absolute log_p of a sentence with unknown words omits ln P(w | UNK_k) per unknown word.
  Consistency check (tested): ``sum_t root_k(t) * weight(w, t) / u_k(t) = 1`` for every
  unknown w. Note u_k(t) / root_k(t) = P(UNK_k) * N / c(t), so the weight is TnT's
  P(t | suffix) / P(t) up to a tag-independent constant.
* Sentence-initial words (not in TnT; standard practice): if the first word is unknown but its
  lower-cased form is known, it is treated as that known word. This is a deterministic
  normalisation of the observation, so the model above is unchanged.

Candidates at a position are exactly the tags with non-zero emission: the tags seen with a
known word, or the tags with root_k(t) > 0 for an unknown word.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from arsdecode.errors import ModelError, ObservationError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.tasks.pos_suffix import (
    RARE_MAX_COUNT,
    SUFFIX_ALPHA,
    SUFFIX_MAX_LEN,
    WORD_CLASSES,
    SuffixTrie,
    WordClass,
    tnt_theta,
    word_class,
)

FORMAT = "arsdecode.pos.TnTEmissions"
FORMAT_VERSION = 2  # 2 added suffix_alpha; version 1 files meant TnT theta (None)

TaggedSentence = Sequence[tuple[str, str]]


class PosModelError(ModelError):
    """The POS models are missing, incomplete or not POS models."""


class TnTEmissions:
    """p(word | tag) of a TnT-style tagger: relative frequencies plus a suffix model."""

    def __init__(
        self,
        lexicon: Mapping[str, Mapping[str, int]],
        *,
        rare_max_count: int = RARE_MAX_COUNT,
        suffix_max_len: int = SUFFIX_MAX_LEN,
        suffix_alpha: float | None = SUFFIX_ALPHA,
        sentence_initial: bool = True,
    ) -> None:
        """Build from word -> {tag: count}. Prefer `train` or `load`."""
        kept: dict[str, dict[str, int]] = {}
        for w, tc in lexicon.items():
            for t, n in tc.items():
                if not isinstance(n, int) or n < 0:
                    raise ModelError(f"bad lexicon entry {w!r}: {t!r} -> {n!r}")
            if not all(tc.values()):
                tc = {t: n for t, n in tc.items() if n}
            if tc:
                kept[w] = dict(tc)
        lexicon = kept
        for t in {t for tc in lexicon.values() for t in tc}:  # each distinct tag, once
            if not isinstance(t, str) or not t or t != "".join(t.split()):
                w = next(w for w, tc in lexicon.items() if t in tc)
                raise ModelError(f"bad lexicon entry {w!r}: {t!r} -> {lexicon[w][t]!r}")
        if not lexicon:
            raise ModelError("cannot build emissions from an empty training set")
        self._lexicon = lexicon
        self.rare_max_count = int(rare_max_count)
        self.suffix_max_len = int(suffix_max_len)
        self.suffix_alpha = None if suffix_alpha is None else float(suffix_alpha)
        self.sentence_initial = bool(sentence_initial)
        self._tags = tuple(sorted({t for tc in lexicon.values() for t in tc}))
        self._index = {t: i for i, t in enumerate(self._tags)}
        counts = np.zeros(len(self._tags))
        for tc in lexicon.values():
            for t, n in tc.items():
                counts[self._index[t]] += n
        self._tag_counts = counts
        total = float(counts.sum())
        theta = tnt_theta(counts.tolist())

        rare: dict[str, list[tuple[str, Mapping[str, int]]]] = {k: [] for k in WORD_CLASSES}
        hapax = Counter[str]()
        for w, tc in lexicon.items():
            n = sum(tc.values())
            if n <= self.rare_max_count:
                rare[word_class(w)].append((w, tc))
            if n == 1:
                hapax[word_class(w)] += 1
        self._tries = {
            k: SuffixTrie.build(self._tags, rare[k], theta, self.suffix_max_len, self.suffix_alpha)
            for k in WORD_CLASSES
        }
        # A class with no rare tokens cannot be estimated; its unknown words use the other trie.
        live = [k for k in WORD_CLASSES if self._tries[k].total > 0]
        self._class_map = {k: k if k in live else (live[0] if live else k) for k in WORD_CLASSES}
        n1 = {k: max(hapax[k], 1) if k in live else 0 for k in WORD_CLASSES}
        p_unk = {k: n1[k] / (total + sum(n1.values())) for k in WORD_CLASSES}
        with np.errstate(divide="ignore"):
            # ln u_k(t) - ln root_k(t) = ln(P(UNK_k) N / c(t)): the Bayes-inversion factor.
            self._log_unk_scale = {
                k: math.log(p_unk[k] * total) - np.log(counts) if k in live else None
                for k in WORD_CLASSES
            }
        self._unk_class_mass = {
            k: p_unk[k] * self._tries[k].root * total / counts for k in WORD_CLASSES
        }
        self._unk_mass: np.ndarray = np.sum(list(self._unk_class_mass.values()), axis=0)
        with np.errstate(divide="ignore"):
            self._log_known_scale = np.log1p(-self._unk_mass) - np.log(counts)
        # Python floats by tag, for the per-word lookups (numpy scalar indexing costs more).
        self._known_scale_of = {t: float(x) for t, x in zip(self._tags, self._log_known_scale)}
        self._cache: dict[str, tuple[tuple[str, float], ...]] = {}
        # Unknown words with the same class and longest matched suffix share their weights.
        self._unknown_cache: dict[tuple[str, str], dict[str, float]] = {}

    # ---- construction and persistence -------------------------------------------------

    @classmethod
    def train(
        cls, sentences: Iterable[TaggedSentence], **settings: Any
    ) -> TnTEmissions:
        """Estimate from tagged sentences `[[(word, tag), ...], ...]`; `settings` as __init__
        (rare_max_count, suffix_max_len, suffix_alpha, sentence_initial)."""
        lexicon: dict[str, Counter[str]] = defaultdict(Counter)
        for sent in sentences:
            for word, tag in sent:
                if not word or not tag:
                    raise ObservationError(f"empty word or tag in training pair {(word, tag)!r}")
                lexicon[word][tag] += 1
        return cls(lexicon, **settings)

    def save(self, path: str | Path) -> Path:
        """Write the counts (all else is derived on load) as gzipped JSON."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        obj = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "settings": {
                "rare_max_count": self.rare_max_count,
                "suffix_max_len": self.suffix_max_len,
                "suffix_alpha": self.suffix_alpha,
                "sentence_initial": self.sentence_initial,
            },
            "lexicon": self._lexicon,
        }
        tmp = path.with_name(path.name + ".tmp")
        with gzip.open(tmp, "wt", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> TnTEmissions:
        """Read a model written by `save`; a wrong file is a one-line PosModelError."""
        try:
            with gzip.open(path, "rt", encoding="utf-8") as f:
                obj = json.load(f)
        except (OSError, EOFError, json.JSONDecodeError) as err:
            raise PosModelError(f"{path}: cannot read POS emission model: {err}") from None
        if not isinstance(obj, dict) or obj.get("format") != FORMAT:
            raise PosModelError(f"{path}: not a POS emission model ({FORMAT})")
        if obj.get("version") not in (1, FORMAT_VERSION):
            raise PosModelError(f"{path}: unsupported model version {obj.get('version')!r}")
        settings = {"suffix_alpha": None, **obj["settings"]}  # version 1: TnT's theta
        return cls(obj["lexicon"], **settings)

    # ---- the model --------------------------------------------------------------------

    @property
    def tags(self) -> tuple[str, ...]:
        """All tags, sorted; exactly the strings of the training data (and the tag LM)."""
        return self._tags

    @property
    def unknown_mass(self) -> dict[str, float]:
        """u(t): the probability that tag t emits a word unseen in training."""
        return self._by_tag(self._unk_mass)

    def _by_tag(self, values: np.ndarray) -> dict[str, float]:
        return {t: float(x) for t, x in zip(self._tags, values, strict=True)}

    def is_known(self, word: str) -> bool:
        """Whether `word` (exact string) occurred in training."""
        return word in self._lexicon

    @property
    def vocabulary(self) -> frozenset[str]:
        return frozenset(self._lexicon)

    def known_log_emissions(self, word: str) -> dict[str, float]:
        """ln p(word | t) for the tags seen with a known word ({} if unknown)."""
        tc = self._lexicon.get(word)
        if tc is None:
            return {}
        scale = self._known_scale_of
        return {t: math.log(n) + scale[t] for t, n in sorted(tc.items())}

    def unknown_class(self, word: str) -> WordClass:
        """Which suffix trie an unknown `word` uses ("upper" or "lower")."""
        return self._class_map[word_class(word)]

    def suffix_posterior(self, word: str) -> dict[str, float]:
        """P(t | suffix) for `word` in its class's trie (see pos_suffix); sums to 1 over tags."""
        return self._by_tag(self._tries[self.unknown_class(word)].posterior(word))

    def unknown_prior(self, word: str) -> dict[str, float]:
        """P(t | UNK_k) for the class k of `word`: the suffix model's root distribution."""
        return self._by_tag(self._tries[self.unknown_class(word)].root)

    def unknown_class_mass(self, word: str) -> dict[str, float]:
        """u_k(t) = P(UNK_k | t) for the class k of `word`."""
        return self._by_tag(self._unk_class_mass[self.unknown_class(word)])

    def unknown_log_emissions(self, word: str) -> dict[str, float]:
        """Lattice weights for `word` treated as unseen: ln p(w | t) - ln P(w | UNK_k).

        Only tags with non-zero weight are returned.
        """
        k = self.unknown_class(word)
        if self._log_unk_scale[k] is None:
            return {}
        key = self._unknown_key(k, word)
        if key not in self._unknown_cache:
            self._fill_unknown(k, {key[1]: word})
        return dict(self._unknown_cache[key])

    def prepare(self, words: Iterable[str]) -> None:
        """Compute the unknown words among `words` in bulk (`SuffixTrie.posterior_many`), so
        that `candidates` then finds them cached: same numbers, fewer numpy calls."""
        todo: dict[WordClass, dict[str, str]] = {k: {} for k in WORD_CLASSES}  # suffix -> word
        for word in words:
            if not word or word in self._lexicon:
                continue
            k = self.unknown_class(word)
            if self._log_unk_scale[k] is None:
                continue
            key = self._unknown_key(k, word)
            if key not in self._unknown_cache:
                todo[k].setdefault(key[1], word)
        for k, by_suffix in todo.items():
            if by_suffix:
                self._fill_unknown(k, by_suffix)

    def _unknown_key(self, k: WordClass, word: str) -> tuple[str, str]:
        """What an unknown word's weights depend on: its class and longest matched suffix."""
        return k, word[len(word) - self._tries[k].longest_suffix(word):]

    def _fill_unknown(self, k: WordClass, by_suffix: dict[str, str]) -> None:
        """Cache the weights of one word per longest matched suffix, all in one bulk call."""
        scale = self._log_unk_scale[k]
        assert scale is not None
        if len(self._unknown_cache) + len(by_suffix) > 200_000:
            self._unknown_cache.clear()
        rows = self._tries[k].posterior_many(list(by_suffix.values()))
        for suffix, p in zip(by_suffix, rows.tolist(), strict=True):
            self._unknown_cache[(k, suffix)] = {
                t: math.log(x) + float(scale[i])
                for i, (t, x) in enumerate(zip(self._tags, p, strict=True)) if x > 0}

    def candidates(self, word: str, initial: bool = False) -> tuple[tuple[str, float], ...]:
        """`(tag, ln emission)` for every tag with non-zero emission of `word`.

        `initial` marks the sentence's first word (see the sentence-initial rule above).
        """
        key = ("\x00" if initial else "\x01") + word
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        if not word:
            raise ObservationError("empty word")
        lookup = word
        if initial and self.sentence_initial and word not in self._lexicon:
            if word.lower() in self._lexicon:
                lookup = word.lower()
        if lookup in self._lexicon:
            cands = self.known_log_emissions(lookup)
        else:
            cands = self.unknown_log_emissions(word)
        if not cands:
            raise ObservationError(f"no tag can emit the word {word!r} under this model")
        result = tuple(cands.items())
        if len(self._cache) > 200_000:
            self._cache.clear()
        self._cache[key] = result
        return result

    def lattice(self, words: Sequence[str], beam: float | None = None) -> Lattice:
        """One position per word, candidates = tags with non-zero emission, weights in ln.

        `beam=None` (default) keeps every such tag: the lattice is the exact model. A number
        drops candidates more than `beam` nats below the best emission at their position
        (TnT-style pruning, mostly of unknown words' ~29 candidates); that approximates.
        """
        if isinstance(words, str):
            raise ObservationError("lattice() expects a sequence of words, not one string")
        if len(words) == 0:
            raise ObservationError("cannot build a POS lattice for an empty sentence")
        if beam is not None and not beam >= 0:
            raise OptionError(f"beam must be a non-negative number of nats, got {beam!r}")
        positions = []
        for i, w in enumerate(words):
            cands = self.candidates(w, initial=(i == 0))
            if beam is not None:
                top = max(lp for _, lp in cands)
                cands = tuple(c for c in cands if c[1] >= top - beam)
            positions.append(list(cands))
        return Lattice.from_lists(positions, source="pos lattice")


# ---- data files and evaluation ---------------------------------------------------------


def read_tagged(path: str | Path) -> list[list[tuple[str, str]]]:
    """Read `word<TAB>tag` lines, sentences separated by blank lines (CoNLL layout)."""
    sentences: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                if current:
                    sentences.append(current)
                    current = []
                continue
            parts = line.split("\t")
            if len(parts) != 2 or not parts[0] or not parts[1]:
                raise ObservationError(f"{path}:{lineno}: expected 'word<TAB>tag', got {line!r}")
            current.append((parts[0], parts[1]))
    if current:
        sentences.append(current)
    return sentences


def write_tagged(sentences: Iterable[TaggedSentence], path: str | Path) -> int:
    """Write sentences in the layout `read_tagged` reads; returns the token count."""
    n = 0
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for sent in sentences:
            for word, tag in sent:
                if "\t" in word or "\n" in word or not word:
                    raise ObservationError(f"word {word!r} cannot be written in the tagged format")
                f.write(f"{word}\t{tag}\n")
                n += 1
            f.write("\n")
    return n


@dataclass(frozen=True)
class Accuracy:
    """Tagging accuracy, split by whether the (exact) word string occurred in training."""

    tokens: int
    correct: int
    known_tokens: int
    known_correct: int

    @property
    def all(self) -> float:
        return self.correct / self.tokens if self.tokens else float("nan")

    @property
    def known(self) -> float:
        return self.known_correct / self.known_tokens if self.known_tokens else float("nan")

    @property
    def unknown_tokens(self) -> int:
        return self.tokens - self.known_tokens

    @property
    def unknown(self) -> float:
        n = self.unknown_tokens
        return (self.correct - self.known_correct) / n if n else float("nan")

    def as_dict(self) -> dict[str, float | int]:
        return {
            "accuracy": self.all,
            "known_accuracy": self.known,
            "unknown_accuracy": self.unknown,
            "tokens": self.tokens,
            "known_tokens": self.known_tokens,
            "unknown_tokens": self.unknown_tokens,
        }


def score_tags(
    gold: Iterable[TaggedSentence],
    predicted: Iterable[Sequence[str]],
    vocabulary: frozenset[str] | set[str],
) -> Accuracy:
    """Compare predicted tag sequences with gold sentences; raise on a length mismatch."""
    tokens = correct = known_tokens = known_correct = 0
    for i, (g, p) in enumerate(zip(gold, predicted, strict=True)):
        if len(g) != len(p):
            raise ObservationError(f"sentence {i}: {len(p)} predicted tags for {len(g)} words")
        for (word, tag), guess in zip(g, p, strict=True):
            ok = tag == guess
            tokens += 1
            correct += ok
            if word in vocabulary:
                known_tokens += 1
                known_correct += ok
    return Accuracy(tokens, correct, known_tokens, known_correct)
