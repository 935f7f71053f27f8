"""The textbook backoff model: the independent oracle of maxarpa (and of any converter).

Written for obviousness, not speed: an ARPA model is two dicts keyed by word tuples,
`ref_log10p` follows the SRILM/KenLM backoff definition literally, and `ref_max_log10p`
enumerates every left extension by brute force (exponential: for the small models of
`arsdecode.testing.random_arpa`). No maxarpa code computes anything here (only the spellings of
the sentence markers come from maxarpa.constants), so it checks maxarpa's `log10p` and its
MAX-ARPA bounds, or those of another converter, independently:

    ref = parse_arpa(text)
    for ctx in all_contexts(ref):
        assert abs(my_bound(w, ctx) - ref_max_log10p(ref, w, ctx)) < 1e-9

`kenlm_log10p` gives KenLM's answer to the same query (the kenlm module, imported when called;
KenLM stores float32).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from maxarpa.constants import BOS, EOS, UNK


class RefArpaError(ValueError):
    """Text the reference cannot read: it reads well-formed ARPA only (no error reporting)."""


class RefUnknownWordError(ValueError):
    """The reference was asked about a word it does not know and the model has no <unk>."""


@dataclass
class RefModel:
    """An ARPA file as read: log10 probabilities and backoffs keyed by word tuples."""

    order: int
    probs: dict[tuple[str, ...], float] = field(default_factory=dict)
    bows: dict[tuple[str, ...], float] = field(default_factory=dict)
    vocab: list[str] = field(default_factory=list)  # unigrams in file order
    counts: list[int] = field(default_factory=list)  # header counts, order 1..n

    @property
    def vocab_set(self) -> set[str]:
        return {w for (w,) in (k for k in self.probs if len(k) == 1)}

    def extension_words(self) -> list[str]:
        """Words a left extension may use: every vocabulary word except <s> and </s>."""
        return [w for w in self.vocab if w not in (BOS, EOS)]

    @property
    def positive_backoffs(self) -> int:
        return sum(1 for b in self.bows.values() if b > 0)


# --------------------------------------------------------------------------------------------
# Parsing


def parse_arpa(text: str) -> RefModel:
    """Parse ARPA text. Assumes well-formed input; tolerant of blank lines and header spacing."""
    lines = text.splitlines()
    i = 0
    while lines[i].strip() != "\\data\\":
        i += 1
    i += 1
    counts: dict[int, int] = {}
    while not lines[i].strip().startswith("\\"):
        s = lines[i].strip()
        if s:
            left, right = s[len("ngram") :].split("=")
            counts[int(left)] = int(right)
        i += 1
    order = max(counts)
    model = RefModel(order=order, counts=[counts[k] for k in range(1, order + 1)])
    current = 0
    for raw in lines[i:]:
        s = raw.strip()
        if not s:
            continue
        if s == "\\end\\":
            break
        if s.startswith("\\") and s.endswith("-grams:"):
            current = int(s[1 : -len("-grams:")])
            continue
        parts = s.split()
        prob = float(parts[0])  # Python's float() reads "-inf" as -infinity and -99 as -99.
        words = tuple(parts[1 : 1 + current])
        if len(words) != current:
            raise RefArpaError(f"fewer than {current} words: {raw!r}")
        rest = parts[1 + current :]
        model.probs[words] = prob
        if rest:
            if len(rest) != 1:
                raise RefArpaError(f"more than one backoff column: {raw!r}")
            model.bows[words] = float(rest[0])
        if current == 1:
            model.vocab.append(words[0])
    return model


# --------------------------------------------------------------------------------------------
# Scoring


def map_word(model: RefModel, w: str) -> str:
    if (w,) in model.probs:
        return w
    if (UNK,) in model.probs:
        return UNK
    raise RefUnknownWordError(w)


def ref_log10p(model: RefModel, word: str, context: Sequence[str]) -> float:
    """log10 p(word | context), SRILM/KenLM backoff semantics, by the textbook definition.

    Truncate the context to its last n-1 words; find the longest suffix s of context+word that
    is listed; add the bows of every suffix of the context strictly longer than s's context
    (unlisted context, or a listed one without a bow column, has bow 0).
    """
    w = map_word(model, word)
    c = tuple(map_word(model, x) for x in context)
    c = c[len(c) - (model.order - 1) :] if len(c) > model.order - 1 else c
    for k in range(len(c), -1, -1):  # k = length of the context part of the suffix
        s = c[len(c) - k :] + (w,)
        if s in model.probs:
            total = model.probs[s]
            for j in range(k + 1, len(c) + 1):
                total += model.bows.get(c[len(c) - j :], 0.0)
            return total
    raise AssertionError(f"unigram {w!r} missing")  # map_word guarantees this can't happen


def left_extensions(model: RefModel, context: Sequence[str]) -> Iterator[tuple[str, ...]]:
    """Every left extension z worth trying for `context` (longer ones truncate to these).

    z ranges over all sequences of extension words of length 0..n-1-len(context), plus <s>
    followed by such a sequence (total length at most n-1-len(context)). A context that starts
    with <s> has only the empty extension.
    """
    c = tuple(context)
    if c and c[0] == BOS:
        yield ()
        return
    words = model.extension_words()
    room = max(0, model.order - 1 - len(c))
    for length in range(room + 1):
        yield from itertools.product(words, repeat=length)
    for length in range(room):  # <s> takes one slot
        for z in itertools.product(words, repeat=length):
            yield (BOS, *z)


def ref_max_log10p(model: RefModel, word: str, context: Sequence[str]) -> float:
    """max over every left extension z of log10 p(word | z + context), by brute force."""
    c = tuple(context)
    return max(ref_log10p(model, word, z + c) for z in left_extensions(model, c))


def all_contexts(model: RefModel, max_len: int | None = None) -> Iterator[tuple[str, ...]]:
    """Every context up to length n-1 over the extension words, plus <s>-initial ones."""
    words = model.extension_words()
    top = model.order - 1 if max_len is None else max_len
    for length in range(top + 1):
        yield from itertools.product(words, repeat=length)
    for length in range(top):
        for z in itertools.product(words, repeat=length):
            yield (BOS, *z)


# --------------------------------------------------------------------------------------------
# KenLM, for arbitrary contexts


def kenlm_log10p(kmodel, word: str, context: Sequence[str]) -> float:
    """log10 p(word | context) from a `kenlm.Model`, through its State API.

    A context starting with <s> starts from BeginSentenceWrite; any other starts from the null
    context. Context words are fed one by one, then the word is scored.
    """
    import kenlm

    state, scratch = kenlm.State(), kenlm.State()
    c = list(context)
    if c and c[0] == BOS:
        kmodel.BeginSentenceWrite(state)
        c = c[1:]
    else:
        kmodel.NullContextWrite(state)
    for x in c:
        kmodel.BaseScore(state, x, scratch)
        state, scratch = scratch, state
    return kmodel.BaseScore(state, word, scratch)
