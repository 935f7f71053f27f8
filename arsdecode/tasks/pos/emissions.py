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
  lower-cased form is known, it is treated as that known word; so is every word of a headline
  or all-caps sentence (`pos.initial`). A deterministic normalisation of the observation.
* Case variants (setting `skip_case_variants`, on in the shipped tagger): a rare capitalised
  word whose lower-cased form is a frequent word ("Which", "Each": sentence-initial forms of
  function words) is left out of the suffix statistics (`pos_suffix.case_variants`). It is
  not like an unseen word, and kept in, its suffix made "ich" look WDT (Munich, Zurich).
* Closed classes (setting `closed_tags`; the shipped tagger uses `PENN_CLOSED_TAGS`): tokens
  with these tags are left out of the suffix statistics (and rare words with no other tag
  altogether), so root_k(t) = 0 and no unknown word can get them. Why: a closed class is a
  finite list of function words that training sees in full; its rare tokens are typos and
  archaisms ("wich", "thru", "ur"), and through the Bayes inversion (weight ~ P(t | suffix) /
  P(t | UNK), the prior tiny) a single one made every "-ich" word a WDT candidate 1000x
  above its prior ("The company Achlorgrich Insurance rose ." came out WDT). The cost on EWT
  dev was <= 0.01 points at every order (the 23 unknown closed-class tokens of its 25,147).
* Capitalised states (setting `capitalisation`, on in the shipped tagger): the saved flag says
  that the tag LM beside this model is over (tag, class) states; the model then decodes
  through `pos_cap.CapEmissions` (`pos_models.load_emissions` does the wrapping).

Candidates at a position are exactly the tags with non-zero emission: the tags seen with a
known word, or the tags with root_k(t) > 0 for an unknown word.

The model's file (format, versions, PosModelError) is `pos.model_file`; the lattice rules it
shares with `CapEmissions` are `pos.sentence_lattice` (both names importable from here).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arsdecode.errors import ObservationError
from arsdecode.lattice import Lattice
from arsdecode.tasks.pos.evaluation import TaggedSentence
from arsdecode.tasks.pos.model_file import PosModelError as PosModelError  # re-exported: they
from arsdecode.tasks.pos.model_file import read_model_file, write_model_file
from arsdecode.tasks.pos.sentence_lattice import emission_lattice as emission_lattice  # lived
from arsdecode.tasks.pos.suffix import (
    RARE_MAX_COUNT,
    SUFFIX_ALPHA,
    SUFFIX_MAX_LEN,
    WORD_CLASSES,
    SuffixTrie,
    WordClass,
    by_reversal,
    case_variants,
    tnt_theta,
    upper_mask,
    word_class,
)
from arsdecode.tasks.pos.table import CandidateRows, Lexicon, unknown_rows

PENN_CLOSED_TAGS: tuple[str, ...] = (
    "CC", "DT", "EX", "IN", "MD", "PDT", "POS", "PRP", "PRP$", "RP", "TO", "WDT", "WP", "WP$",
    "WRB")
"""The Penn Treebank tags of function words, whose members are a fixed list: coordinators,
determiners (DT, PDT, WDT), existential there, prepositions and subordinators, modals, the
possessive ending, pronouns (PRP, PRP$, WP, WP$), particles, "to", wh-adverbs. Not closed here:
punctuation tags (an unknown word may be a new symbol), CD, and the tags EWT uses for open or
odd material (UH, FW, GW, ADD, NFP, AFX, XX, SYM, LS)."""


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
        skip_case_variants: bool = False,
        capitalisation: bool = False,
        closed_tags: Iterable[str] = (),
    ) -> None:
        """Build from word -> {tag: count}. Prefer `train` or `load`.

        The lexicon is kept as arrays (`pos_table.Lexicon`) and every statistic is computed
        from them with numpy: a per-entry Python loop here was most of a tagger's start-up.
        """
        lex = Lexicon.from_mapping(lexicon)
        self._lex = lex
        self._row_of = dict(zip(lex.words, range(len(lex.words))))  # word -> row of the tables
        self.rare_max_count = int(rare_max_count)
        self.suffix_max_len = int(suffix_max_len)
        self.suffix_alpha = None if suffix_alpha is None else float(suffix_alpha)
        self.sentence_initial = bool(sentence_initial)
        self.skip_case_variants = bool(skip_case_variants)
        self.capitalisation = bool(capitalisation)
        self.closed_tags: tuple[str, ...] = tuple(sorted(set(closed_tags)))
        self._tags = lex.tags
        self._index = {t: i for i, t in enumerate(self._tags)}
        counts = lex.tag_counts()
        self._tag_counts = counts
        total = float(counts.sum())
        theta = tnt_theta(counts.tolist())

        word_counts = lex.word_counts()
        upper = np.array(upper_mask(lex.words), dtype=bool)
        in_class = {"upper": upper, "lower": ~upper}
        rare = word_counts <= self.rare_max_count
        if self.skip_case_variants:
            rare &= ~case_variants(lex.words, word_counts, self.rare_max_count)
        hapax = {k: int(np.count_nonzero(in_class[k] & (word_counts == 1)))
                 for k in WORD_CLASSES}
        closed = np.array([t in self.closed_tags for t in self._tags], dtype=bool)
        if closed.any():  # words with closed-class tags only are left out altogether
            open_counts = np.bincount(np.repeat(np.arange(len(lex.words)), np.diff(lex.offsets)),
                                      weights=lex.count * ~closed[lex.tag],
                                      minlength=len(lex.words))
            rare &= open_counts > 0
        self._tries = {}
        for k in WORD_CLASSES:
            rows = np.flatnonzero(rare & in_class[k])
            order, reversed_words = by_reversal([lex.words[r] for r in rows.tolist()])
            vectors = lex.vectors(rows[order])
            vectors[closed] = 0.0  # closed-class tokens of the other words
            self._tries[k] = SuffixTrie.from_sorted(
                self._tags, reversed_words, vectors, theta,
                self.suffix_max_len, self.suffix_alpha)
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
        # Python floats by tag index, for the per-word lookups (numpy scalars cost more).
        self._known_scale_of = self._log_known_scale.tolist()
        self._cache: dict[str, tuple[tuple[str, float], ...]] = {}
        # Unknown words with the same class and longest matched suffix share their weights.
        self._unknown_cache: dict[tuple[str, str], dict[str, float]] = {}
        # The bulk path (`candidate_rows`): row w of the table is known word w; unknown words'
        # rows are appended after them as corpora ask, one per (class, longest suffix).
        self._known = lex.known_rows(self._log_known_scale)
        self._table = self._known
        self._unknown_row: dict[tuple[str, str], int] = {}

    # ---- construction and persistence -------------------------------------------------

    @classmethod
    def train(
        cls, sentences: Iterable[TaggedSentence], **settings: Any
    ) -> TnTEmissions:
        """Estimate from tagged sentences `[[(word, tag), ...], ...]`; `settings` as __init__
        (rare_max_count, suffix_max_len, suffix_alpha, sentence_initial, skip_case_variants,
        capitalisation, closed_tags)."""
        lexicon: dict[str, Counter[str]] = defaultdict(Counter)
        for sent in sentences:
            for word, tag in sent:
                if not word or not tag:
                    raise ObservationError(f"empty word or tag in training pair {(word, tag)!r}")
                lexicon[word][tag] += 1
        return cls(lexicon, **settings)

    def save(self, path: str | Path) -> Path:
        """Write the counts (all else is derived on load) as gzipped JSON."""
        settings = {
            "rare_max_count": self.rare_max_count,
            "suffix_max_len": self.suffix_max_len,
            "suffix_alpha": self.suffix_alpha,
            "sentence_initial": self.sentence_initial,
            "skip_case_variants": self.skip_case_variants,
            "capitalisation": self.capitalisation,
            "closed_tags": list(self.closed_tags),
        }
        return write_model_file(path, settings, self._lex.to_mapping())

    @classmethod
    def load(cls, path: str | Path) -> TnTEmissions:
        """Read a model written by `save`; a wrong file is a one-line PosModelError."""
        lexicon, settings = read_model_file(path)
        return cls(lexicon, **settings)

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

    def penn_tags(self, states: Sequence[str]) -> list[str]:
        """The tags of decoded states: here the states are the tags (see pos_cap)."""
        return list(states)

    def is_known(self, word: str) -> bool:
        """Whether `word` (exact string) occurred in training."""
        return word in self._row_of

    @property
    def vocabulary(self) -> frozenset[str]:
        return frozenset(self._row_of)

    def known_log_emissions(self, word: str) -> dict[str, float]:
        """ln p(word | t) for the tags seen with a known word ({} if unknown), in tag order."""
        r = self._row_of.get(word)
        if r is None:
            return {}
        lo, hi = self._lex.offsets[r : r + 2].tolist()
        tags, scale = self._tags, self._known_scale_of
        return {tags[t]: math.log(n) + scale[t]
                for t, n in zip(self._lex.tag[lo:hi].tolist(), self._lex.count[lo:hi].tolist())}

    def unknown_class(self, word: str) -> WordClass:
        """Which suffix trie an unknown `word` uses ("upper" or "lower")."""
        return self._class_map[word_class(word)]

    def suffix_posterior(self, word: str) -> dict[str, float]:
        """P(t | suffix) for `word` in its class's trie (see pos_suffix); sums to 1 over tags."""
        return self._by_tag(self._tries[self.unknown_class(word)].posterior(word))

    def suffix_counts(self, word: str) -> dict[str, float]:
        """Rare training tokens per tag at `word`'s longest matched suffix in its class's trie
        (the root if none matches): the evidence the suffix model has for its tags. A tag with
        count 0 here gets its posterior mass only from shorter suffixes' smoothing."""
        trie = self._tries[self.unknown_class(word)]
        depth = trie.longest_suffix(word)
        return self._by_tag(trie.counts[word[len(word) - depth:]])

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
            self._fill_unknown(k, key[1], word)
        return dict(self._unknown_cache[key])

    def _unknown_key(self, k: WordClass, word: str) -> tuple[str, str]:
        """What an unknown word's weights depend on: its class and longest matched suffix."""
        return k, word[len(word) - self._tries[k].longest_suffix(word):]

    def _fill_unknown(self, k: WordClass, suffix: str, word: str) -> None:
        """Cache the weights of `word`, whose longest matched suffix is `suffix`."""
        scale = self._log_unk_scale[k]
        assert scale is not None
        if len(self._unknown_cache) >= 200_000:
            self._unknown_cache.clear()
        p = self._tries[k].posterior(word).tolist()
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
        if initial and self.sentence_initial and word not in self._row_of:
            if word.lower() in self._row_of:
                lookup = word.lower()
        if lookup in self._row_of:
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

    def candidate_rows(self, words: Sequence[str], initial: Sequence[bool]
                       ) -> tuple[CandidateRows, np.ndarray]:
        """The candidates of many words at once: `(table, rows)`, where row `rows[j]` of the
        table is exactly `candidates(words[j], initial[j])` (tags as indices into `tags`, the
        same floats in the same order).

        Why: `candidates` builds Python tuples word by word; a tagger of whole files
        (`tasks.pos.tag_many`) instead looks each distinct word up here once (one dict lookup
        if known) and gathers its tokens' candidates with numpy. Unknown words' rows are
        computed in bulk and kept, one per (class, longest matched suffix), across calls.

        Raises:
            ObservationError: an empty word, or a word no tag can emit.
        """
        if "" in words:
            raise ObservationError("empty word")
        row_of = self._row_of
        rows = [row_of.get(w, -1) for w in words]
        if self.sentence_initial:  # the sentence-initial rule, as in `candidates`
            for j in [j for j, r in enumerate(rows) if r < 0 and initial[j]]:
                rows[j] = row_of.get(words[j].lower(), -1)
        unknown = [j for j, r in enumerate(rows) if r < 0]
        if unknown:
            for j, r in zip(unknown, self._unknown_rows([words[j] for j in unknown])):
                rows[j] = r
        found = np.array(rows, dtype=np.int64)
        empty = np.flatnonzero(self._table.widths[found] == 0)
        if len(empty):
            word = words[int(empty[0])]
            raise ObservationError(f"no tag can emit the word {word!r} under this model")
        return self._table, found

    def _unknown_rows(self, words: list[str]) -> list[int]:
        """Rows of `self._table` for unknown words, adding the missing ones in one
        `posterior_many` call per class (the same rows as one word at a time)."""
        if len(self._unknown_row) + len(words) > 200_000:  # bound what is kept across calls
            self._table, self._unknown_row = self._known, {}
        keys = []
        todo: dict[WordClass, dict[str, tuple[str, int]]] = {k: {} for k in WORD_CLASSES}
        for w in words:
            k = self.unknown_class(w)
            if self._log_unk_scale[k] is None:
                raise ObservationError(f"no tag can emit the word {w!r} under this model")
            depth = self._tries[k].longest_suffix(w)
            key = (k, w[len(w) - depth:])
            if key not in self._unknown_row:
                todo[k].setdefault(key[1], (w, depth))  # suffix -> one word with it
            keys.append(key)
        for k, by_suffix in todo.items():
            scale = self._log_unk_scale[k]
            if not by_suffix or scale is None:
                continue
            first, depths = zip(*by_suffix.values())
            new = unknown_rows(self._tries[k].posterior_many(first, depths), scale)
            start = len(self._table)
            self._table = self._table.concat(new)
            for r, suffix in enumerate(by_suffix, start=start):
                self._unknown_row[(k, suffix)] = r
        return [self._unknown_row[key] for key in keys]

    def lattice(self, words: Sequence[str], beam: float | None = None) -> Lattice:
        """One position per word, candidates = tags with non-zero emission, weights in ln.

        `beam=None` (default) keeps every such tag: the lattice is the exact model. A number
        drops candidates more than `beam` nats below the best emission at their position
        (TnT-style pruning, mostly of unknown words' ~29 candidates); that approximates.
        """
        return emission_lattice(self.candidates, words, beam)
