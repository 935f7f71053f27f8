"""Batched exact POS tagging: every sentence's lattice in flat arrays, one compiled DP call.

Why: tagging a file sentence by sentence pays Python and numpy overhead per sentence and per
position (`emissions.lattice` + `ars.decode`). Here the candidates of each distinct word are
looked up once (TnTEmissions.candidates, mapped to model ids), all lattices are concatenated
into the flat layout of arsdecode.fast_full, and the merged full-model Viterbi runs over all of
them in one call of the compiled core. The result is exact: the same maximum as
arsdecode.full.full_decode on every sentence (ties broken as documented in fast_full).

`method="ars"` runs the existing per-sentence ARS decoder instead (the baseline the benchmark
compares with); `"auto"` chooses per sentence by `corpus.predicted_pairs_flat`, the cost
estimate `decode_many` uses.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arsdecode.errors import NoPathError
from arsdecode.fast_full import FlatLattices, run_flat
from maxarpa.model import Model

METHODS = ("auto", "full", "ars")


@dataclass(frozen=True)
class TagManyResult:
    """Tags per sentence, their ln p (the exact optimum), and which method ran."""

    tags: list[list[str]]
    log_p: np.ndarray  # (S,) ln p of each sentence's best tag sequence
    method: str
    dp_states: np.ndarray | None = None  # (S,) merged states built ("full" only)
    max_states: np.ndarray | None = None  # (S,) widest position ("full" only)
    pairs: np.ndarray | None = None  # (S,) (state, candidate) pairs visited ("full" only)


class _CandidateTable:
    """word -> (model ids, ln emissions, tag strings), looked up once per distinct word."""

    def __init__(self, lm: Model, emissions) -> None:
        self.lm = lm
        self.emissions = emissions
        self.tag_id = {t: lm.word_id(t) for t in emissions.tags}
        self.cache: dict[tuple[str, bool], tuple[list[int], list[float], tuple[str, ...]]] = {}

    def get(self, word: str, initial: bool) -> tuple[list[int], list[float], tuple[str, ...]]:
        key = (word, initial)
        hit = self.cache.get(key)
        if hit is None:
            if len(self.cache) > 200_000:  # kept across calls: bound it, as emissions do
                self.cache.clear()
            tags, emis = zip(*self.emissions.candidates(word, initial=initial))
            tag_id = self.tag_id
            ids = [tag_id[t] if t in tag_id else self.lm.word_id(t) for t in tags]
            hit = self.cache[key] = (ids, list(emis), tags)
        return hit


_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # emissions -> {id(lm): table}


def _candidate_table(lm: Model, emissions) -> _CandidateTable:
    """The lookup table of (lm, emissions), kept across calls: a file tagged chunk by chunk
    looks each distinct word up once, not once per chunk."""
    try:
        tables = _TABLES.setdefault(emissions, {})
    except TypeError:  # emissions that cannot be weakly referenced: no reuse
        return _CandidateTable(lm, emissions)
    hit = tables.get(id(lm))
    if hit is None or hit.lm is not lm:
        hit = tables[id(lm)] = _CandidateTable(lm, emissions)
    return hit


def flatten(lm: Model, emissions, sentences: Sequence[Sequence[str]],
            table: _CandidateTable | None = None) -> tuple[FlatLattices, list[tuple[str, ...]]]:
    """The flat lattices of every sentence and, per position, its candidate tags.

    Each distinct (word, sentence-initial) is looked up once; the tokens then gather their
    candidates from those lookups with numpy, not one Python list operation per token.
    """
    table = table or _candidate_table(lm, emissions)
    key_of: dict[tuple[str, bool], int] = {}
    token_key: list[int] = []
    lengths: list[int] = []
    for s, words in enumerate(sentences):
        if isinstance(words, str) or len(words) == 0:
            raise ValueError(f"sentence {s}: expected a non-empty sequence of words")
        lengths.append(len(words))
        for i, w in enumerate(words):
            key = (w, i == 0)
            k = key_of.get(key)
            if k is None:
                k = key_of[key] = len(key_of)
            token_key.append(k)
    prepare = getattr(emissions, "prepare", None)
    if prepare is not None:  # unknown words' suffix posteriors in bulk
        prepare(w for w, _ in key_of)
    found = [table.get(w, initial) for w, initial in key_of]  # dicts keep insertion order
    key_width = np.fromiter((len(ids) for ids, _, _ in found), dtype=np.int64, count=len(found))
    key_off = np.zeros(len(found) + 1, dtype=np.int64)
    np.cumsum(key_width, out=key_off[1:])
    key_ids = np.fromiter((i for ids, _, _ in found for i in ids), dtype=np.int64,
                          count=int(key_off[-1]))
    key_emis = np.fromiter((e for _, emis, _ in found for e in emis), dtype=np.float64,
                           count=int(key_off[-1]))
    tokens = np.asarray(token_key, dtype=np.int64)
    widths = key_width[tokens]
    pos_off = np.zeros(len(widths) + 1, dtype=np.int64)
    np.cumsum(widths, out=pos_off[1:])
    within = np.arange(int(pos_off[-1]), dtype=np.int64) - np.repeat(pos_off[:-1], widths)
    gather = np.repeat(key_off[:-1][tokens], widths) + within
    sent_off = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=sent_off[1:])
    key_tags = [tags for _, _, tags in found]
    flat = FlatLattices(sent_off, pos_off, key_ids[gather], key_emis[gather])
    return flat, [key_tags[k] for k in token_key]


def tag_many(lm: Model, emissions, sentences: Sequence[Sequence[str]], *,
             method: str = "auto") -> TagManyResult:
    """Exact best tag sequence of every sentence (list of words) under lm x emissions.

    "full" runs the merged full DP on every sentence in one compiled call; "ars" runs ARS per
    sentence; "auto" (default) sends a sentence to ARS only when the full DP's predicted cost
    (`corpus.predicted_pairs_flat`, the estimator `decode_many` uses) exceeds
    `corpus.full_pairs_budget(lm)`, which on tag models is rare. `method` of the result is the
    one that ran ("mixed" if both did).

    Raises:
        ValueError: unknown method, an empty sentence, or a word no tag can emit.
        NoPathError: a sentence whose tag sequences all have probability zero.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "auto":
        from arsdecode.corpus import setup_outweighs

        if setup_outweighs(lm, len(sentences)):  # a few sentences on a model not yet set up
            method = "ars"
    if method == "ars":
        return _tag_ars(lm, emissions, sentences)
    flat, cand_tags = flatten(lm, emissions, sentences)
    if method == "auto":
        from arsdecode.corpus import full_pairs_budget, predicted_pairs_flat

        budget = full_pairs_budget(lm)
        over = np.flatnonzero(predicted_pairs_flat(lm, flat, tight=False) > budget).tolist()
        if over:  # the cheap bound clears most corpora; the tight one decides the rest
            over = np.flatnonzero(predicted_pairs_flat(lm, flat) > budget).tolist()
        if over:
            return _tag_mixed(lm, emissions, sentences, over)
    res = run_flat(lm, flat, viterbi=True)
    bad = np.flatnonzero(~np.isfinite(res.score))
    if len(bad):
        raise NoPathError(f"sentence {int(bad[0])}: every tag sequence has probability zero")
    choice = res.choice.tolist()
    tags = [cand_tags[p][c] for p, c in enumerate(choice)]
    off = flat.sent_off.tolist()
    per_sentence = [tags[off[s] : off[s + 1]] for s in range(len(off) - 1)]
    return TagManyResult(per_sentence, res.score, "full", res.dp_states, res.max_states,
                         res.pairs)


def _tag_ars(lm: Model, emissions, sentences: Sequence[Sequence[str]]) -> TagManyResult:
    from arsdecode.ars import decode

    out, lps = [], []
    for words in sentences:
        r = decode(lm, emissions.lattice(list(words)))
        out.append(list(r.tokens))
        lps.append(r.log_p)
    return TagManyResult(out, np.asarray(lps, dtype=np.float64), "ars")


def _tag_mixed(lm: Model, emissions, sentences: Sequence[Sequence[str]],
               over: list[int]) -> TagManyResult:
    """ARS on the sentences in `over`, the full DP on the rest (in one call)."""
    heavy = set(over)
    light = [s for s in range(len(sentences)) if s not in heavy]
    tags: list[list[str]] = [[] for _ in sentences]
    log_p = np.empty(len(sentences))
    parts = [(over, _tag_ars(lm, emissions, [sentences[s] for s in over]))]
    if light:
        parts.append((light, tag_many(lm, emissions, [sentences[s] for s in light],
                                      method="full")))
    for idx, res in parts:
        for k, s in enumerate(idx):
            tags[s] = res.tags[k]
            log_p[s] = res.log_p[k]
    return TagManyResult(tags, log_p, "mixed" if light else "ars")


