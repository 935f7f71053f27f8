"""Batched exact POS tagging: every sentence's lattice in flat arrays, one compiled DP call.

Why: tagging a file sentence by sentence pays Python and numpy overhead per sentence and per
position (`emissions.lattice` + `ars.decode`). Here the candidates of each distinct word are
looked up once (TnTEmissions.candidate_rows, mapped to model ids) and all lattices are
concatenated into the flat layout (`arsdecode.lattice.flat.FlatLattices`); decoding them is
`methods.dispatch.decode_flat`, which chooses the method as `decode_many` does and, on the
compiled core, runs the merged full-model Viterbi over all of them in one call. The result is
exact: the same maximum as arsdecode.methods.full.full_decode on every sentence (ties broken as
documented in fast_full). This module builds lattices; it chooses no method.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arsdecode.errors import ObservationError
from arsdecode.lattice.flat import FlatLattices
from arsdecode.methods.dispatch import Method, check_method, decode_flat
from arsdecode.tasks.pos.initial import initial_flags
from arsdecode.tasks.pos.table import CandidateRows
from maxarpa.model import Model


@dataclass(frozen=True)
class TagManyResult:
    """Tags per sentence, their ln p (the exact optimum), and which method ran."""

    tags: list[list[str]]
    log_p: np.ndarray  # (S,) ln p of each sentence's best tag sequence
    method: str
    dp_states: np.ndarray | None = None  # (S,) merged states built ("full" only)
    max_states: np.ndarray | None = None  # (S,) widest position ("full" only)
    pairs: np.ndarray | None = None  # (S,) (state, candidate) pairs visited ("full" only)
    methods: tuple[str, ...] = ()  # per sentence, "full" or "ars" (what `tag --json` says)


def flatten(lm: Model, emissions, sentences: Sequence[Sequence[str]]
            ) -> tuple[FlatLattices, np.ndarray]:
    """The flat lattices of every sentence and, per candidate, its tag (a str array aligned
    with `cand_ids`).

    Each distinct (word, sentence-initial) is looked up once: through the emission model's
    bulk `candidate_rows` when it has one (TnTEmissions: one dict lookup per known word,
    unknown words in bulk), else `candidates` per word. The tokens then gather their
    candidates with numpy, not one Python list operation per token.
    """
    key_of: dict[str | tuple[str], int] = {}  # a word, or (word,) where `initial_flags` says
    token_key: list[int] = []
    lengths: list[int] = []
    for s, words in enumerate(sentences):
        if isinstance(words, str) or len(words) == 0:
            raise ObservationError(f"sentence {s}: expected a non-empty sequence of words")
        lengths.append(len(words))
        token_key.extend([key_of.setdefault((w,) if first else w, len(key_of))
                          for w, first in zip(words, initial_flags(words), strict=True)])
    initial = [isinstance(k, tuple) for k in key_of]  # dicts keep insertion order
    words = [k[0] if isinstance(k, tuple) else k for k in key_of]
    bulk = getattr(emissions, "candidate_rows", None)
    if bulk is not None:
        table, key_row = bulk(words, initial)
        names = tuple(emissions.tags)
    else:
        table, key_row, names = _candidate_rows(emissions, words, initial)
    cands = table.take(key_row[np.asarray(token_key, dtype=np.int64)])
    model_id = np.array([lm.word_id(t) for t in names], dtype=np.int64)
    sent_off = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=sent_off[1:])
    flat = FlatLattices(sent_off, cands.offsets, model_id[cands.tag], cands.log_emission)
    return flat, np.array(names, dtype=object)[cands.tag]


def _candidate_rows(emissions, words: list[str], initial: list[bool]
                    ) -> tuple[CandidateRows, np.ndarray, tuple[str, ...]]:
    """`candidate_rows` for an emission model with only `candidates(word, initial)`:
    (table, row of each word, the tag strings the table's tag indices name)."""
    index: dict[str, int] = {}
    widths, tags, log_emissions = [], [], []
    for w, first in zip(words, initial):
        cands = emissions.candidates(w, initial=first)
        widths.append(len(cands))
        for t, e in cands:
            tags.append(index.setdefault(t, len(index)))
            log_emissions.append(e)
    offsets = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum(widths, out=offsets[1:])
    table = CandidateRows(offsets, np.array(tags, dtype=np.intp),
                          np.array(log_emissions, dtype=np.float64))
    return table, np.arange(len(words)), tuple(index)


def tag_many(lm: Model, emissions, sentences: Sequence[Sequence[str]], *,
             method: Method = "auto") -> TagManyResult:
    """Exact best tag sequence of every sentence (list of words) under lm x emissions.

    `method` is `methods.dispatch`'s: "full" runs the merged full DP on every sentence in one
    compiled call, "ars" runs ARS, "auto" (default) the full DP within a budget of pairs per
    sentence and ARS on a sentence that exceeds it (rare on tag models). `method` of the
    result is the one that ran ("mixed" if both did).

    Raises:
        OptionError: an unknown method.
        ObservationError: an empty sentence, or a word no tag can emit.
        NoPathError: a sentence (named by its index) whose tag sequences all have
            probability zero.
    """
    check_method(method)
    flat, cand_tags = flatten(lm, emissions, sentences)
    res = decode_flat(lm, flat, lambda ks: [emissions.lattice(list(sentences[s])) for s in ks],
                      method=method)
    tags = cand_tags[flat.pos_off[:-1] + res.choice].tolist()  # garbage in `res.decoded`'s
    off = flat.sent_off.tolist()
    per_sentence = [tags[off[s] : off[s + 1]] for s in range(len(off) - 1)]
    for s, r in res.decoded.items():
        per_sentence[s] = list(r.tokens)
    kinds = set(res.methods)
    ran = "mixed" if len(kinds) > 1 else kinds.pop() if kinds else method
    if res.compiled is None or res.decoded:  # the DP's counts only when it tagged them all
        return TagManyResult(per_sentence, res.log_p, ran, methods=res.methods)
    c = res.compiled
    return TagManyResult(per_sentence, res.log_p, ran, c.dp_states, c.max_states, c.pairs,
                         res.methods)
