"""Batched exact POS tagging: every sentence's lattice in flat arrays, one compiled DP call.

Why: tagging a file sentence by sentence pays Python and numpy overhead per sentence and per
position (`emissions.lattice` + `ars.decode`). Here the candidates of each distinct word are
looked up once (TnTEmissions.candidate_rows, mapped to model ids), all lattices are concatenated
into the flat layout of methods.fast_full, and the merged full-model Viterbi runs over all of
them in one call of the compiled core. The result is exact: the same maximum as
arsdecode.methods.full.full_decode on every sentence (ties broken as documented in fast_full).

`method="ars"` runs the existing per-sentence ARS decoder instead (the baseline the benchmark
compares with); `"auto"` chooses per sentence by the cost model `decode_many` uses
(`arsdecode.methods.cost_model`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arsdecode.errors import NoPathError
from arsdecode.methods.fast_full import BatchResult, FlatLattices, run_flat
from arsdecode.tasks.pos.table import CandidateRows
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
    key_of: dict[str | tuple[str], int] = {}  # a word, or (word,) at the start of a sentence
    token_key: list[int] = []
    lengths: list[int] = []
    for s, words in enumerate(sentences):
        if isinstance(words, str) or len(words) == 0:
            raise ValueError(f"sentence {s}: expected a non-empty sequence of words")
        lengths.append(len(words))
        token_key.append(key_of.setdefault((words[0],), len(key_of)))
        token_key.extend([key_of.setdefault(w, len(key_of)) for w in words[1:]])
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
             method: str = "auto") -> TagManyResult:
    """Exact best tag sequence of every sentence (list of words) under lm x emissions.

    "full" runs the merged full DP on every sentence in one compiled call; "ars" runs ARS per
    sentence; "auto" (default) runs the full DP within `method_choice.full_pairs_budgets`
    pairs per sentence, and ARS on a sentence that exceeds it (rare on tag models), as
    `decode_many` does. `method` of the result is the one that ran ("mixed" if both did).

    Raises:
        ValueError: unknown method, an empty sentence, or a word no tag can emit.
        NoPathError: a sentence whose tag sequences all have probability zero.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "auto":
        from arsdecode.methods.cost_model import ars_seconds, setup_outweighs

        lengths = np.array([len(ws) for ws in sentences], dtype=np.float64)
        # A few short sentences on a model not set up yet: ARS. (At least one candidate per
        # position: the candidates are counted only once the lattices are built.)
        if setup_outweighs(lm, float(ars_seconds(lm, lengths, lengths, lengths).sum())):
            method = "ars"
    if method == "ars":
        return _tag_ars(lm, emissions, sentences)
    flat, cand_tags = flatten(lm, emissions, sentences)
    if method == "auto":
        res = _run_budgeted(lm, flat)
    else:
        res = run_flat(lm, flat, viterbi=True)
    over = np.isnan(res.score)  # abandoned past the budget: ARS below
    bad = np.flatnonzero(~np.isfinite(res.score) & ~over)
    if len(bad):
        raise NoPathError(f"sentence {int(bad[0])}: every tag sequence has probability zero")
    tags = cand_tags[flat.pos_off[:-1] + res.choice].tolist()  # garbage where abandoned
    off = flat.sent_off.tolist()
    per_sentence = [tags[off[s] : off[s + 1]] for s in range(len(off) - 1)]
    if not over.any():
        return TagManyResult(per_sentence, res.score, "full", res.dp_states, res.max_states,
                             res.pairs, ("full",) * len(per_sentence))
    heavy = np.flatnonzero(over).tolist()
    by_ars = _tag_ars(lm, emissions, [sentences[s] for s in heavy])
    log_p = res.score.copy()
    for k, s in enumerate(heavy):
        per_sentence[s] = by_ars.tags[k]
        log_p[s] = by_ars.log_p[k]
    return TagManyResult(per_sentence, log_p, "ars" if over.all() else "mixed",
                         methods=tuple("ars" if o else "full" for o in over.tolist()))


def _run_budgeted(lm: Model, flat: FlatLattices) -> BatchResult:
    """The full DP on every sentence of `flat` within its own pair budget
    (`method_choice.full_pairs_budgets`, which grows with the sentence's positions x width),
    in one compiled call; an abandoned sentence has score NaN."""
    from arsdecode.methods.cost_model import full_pairs_budgets

    sent_off, pos_off = flat.sent_off, flat.pos_off
    widths = np.diff(pos_off).astype(np.float64)
    cubes = np.add.reduceat(widths**3, sent_off[:-1]) if len(widths) else widths
    budgets = full_pairs_budgets(lm, np.diff(sent_off),
                                 pos_off[sent_off[1:]] - pos_off[sent_off[:-1]], cubes)
    return run_flat(lm, flat, viterbi=True, max_pairs=budgets)


def _tag_ars(lm: Model, emissions, sentences: Sequence[Sequence[str]]) -> TagManyResult:
    from arsdecode.methods.ars import decode

    out, lps = [], []
    for words in sentences:
        r = decode(lm, emissions.lattice(list(words)))
        out.append(list(r.tokens))
        lps.append(r.log_p)
    return TagManyResult(out, np.asarray(lps, dtype=np.float64), "ars",
                         methods=("ars",) * len(out))
