"""A tiny, deliberately naive reference for ARPA backoff models, used to check `maxarpa`.

Everything here is written for obviousness, not speed: an ARPA model is two dicts keyed by
word tuples, `log10p` follows the SRILM/KenLM backoff definition literally, and `max_log10p`
enumerates every left extension by brute force. Nothing in this module imports `maxarpa`.

Also here: a generator of random, structurally valid backoff ARPA files (with positive
backoffs, optional missing bow columns and optional IRSTLM-style missing prefix contexts), and a
hypothesis strategy wrapping it.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from hypothesis import strategies as st

BOS = "<s>"
EOS = "</s>"
UNK = "<unk>"


class RefUnknownWordError(ValueError):
    """The reference was asked about a word it does not know and the model has no <unk>."""


@dataclass
class RefModel:
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
        assert len(words) == current, raw
        rest = parts[1 + current :]
        model.probs[words] = prob
        if rest:
            assert len(rest) == 1, raw
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
# Random ARPA generation


def _fmt(x: float) -> str:
    if x == -math.inf:
        return "-inf"
    return repr(x)


def random_arpa_text(
    rng: random.Random | int,
    order: int,
    vocab_size: int,
    positive_backoff_fraction: float = 0.3,
    drop_prefix_contexts: bool = False,
    *,
    density: float = 0.6,
    neg_inf_fraction: float = 0.0,
    bos_prob: float | None = None,
    with_unk: bool = True,
) -> str:
    """A random, structurally valid backoff ARPA file as text.

    - vocabulary: <s>, </s>, (<unk>,) w0..w{vocab_size-1}; every word is a unigram;
    - an n-gram of order k>1 is h+(w,) where h is a listed (k-1)-gram (so every prefix is
      listed) and h[1:]+(w,) is listed (so every suffix is listed); <s> appears only first,
      </s> only last, so </s> is never in a context;
    - probabilities are <= 0 (-inf with probability `neg_inf_fraction`, never for unigrams);
      <s> gets -99 or 0 (or `bos_prob`);
    - a `positive_backoff_fraction` share of bows are positive, in (0, 1]; others in [-2, 0];
      the highest order has no bow column; on lower orders some lines omit the column (bow 0);
    - `drop_prefix_contexts` then deletes some n-grams of order >= 2 that are a context of a
      listed n-gram but not a suffix of any (IRSTLM-style pruning: suffix closure survives,
      prefix closure does not).
    """
    if isinstance(rng, int):
        rng = random.Random(rng)
    assert order >= 1 and vocab_size >= 1
    words = [f"w{i}" for i in range(vocab_size)]
    unigrams = [BOS, EOS] + ([UNK] if with_unk else []) + words
    # Shuffle unigram order a little so nothing depends on file order.
    rng.shuffle(unigrams)
    grams: list[list[tuple[str, ...]]] = [[(u,) for u in unigrams]]
    for k in range(2, order + 1):
        lower = set(grams[-1])
        new = []
        for h in grams[-1]:
            if EOS in h:
                continue
            for w in unigrams:
                if w == BOS:
                    continue
                if k > 2 and (h[1:] + (w,)) not in lower:
                    continue
                if k == 2 and (w,) not in lower:
                    continue
                if rng.random() < density:
                    new.append(h + (w,))
        # Suffix closure needs h[1:]+(w,) listed at order k-1, which the check above ensures.
        if not new:
            break
        grams.append(new)
    n = len(grams)  # may be below `order` if density starved the top; that is still valid ARPA

    if drop_prefix_contexts and n >= 3:
        listed = {g for level in grams for g in level}
        suffix_of_longer = {g[1:] for g in listed if len(g) >= 2}
        context_of_longer = {g[:-1] for g in listed if len(g) >= 2}
        droppable = [
            g
            for g in listed
            if 2 <= len(g) < n and g in context_of_longer and g not in suffix_of_longer
        ]
        if droppable:
            k = max(1, int(len(droppable) * rng.uniform(0.3, 1.0)))
            drop = set(rng.sample(sorted(droppable), k))
            grams = [[g for g in level if g not in drop] for level in grams]

    def prob(g: tuple[str, ...]) -> float:
        if g == (BOS,):
            if bos_prob is not None:
                return bos_prob
            return rng.choice([-99.0, 0.0])
        if len(g) > 1 and rng.random() < neg_inf_fraction:
            return -math.inf
        return round(-rng.uniform(0.01, 3.0), 4)

    def bow(g: tuple[str, ...]) -> float:
        if rng.random() < positive_backoff_fraction:
            return round(rng.uniform(0.0001, 1.0), 4)
        return round(-rng.uniform(0.0, 2.0), 4)

    out = ["", "\\data\\"]
    for k, level in enumerate(grams, start=1):
        out.append(f"ngram {k}={len(level)}")
    out.append("")
    for k, level in enumerate(grams, start=1):
        out.append(f"\\{k}-grams:")
        omit_all = rng.random() < 0.25  # sometimes a whole lower order has no bow column
        for g in level:
            line = f"{_fmt(prob(g))}\t{' '.join(g)}"
            if k < n and g[-1] != EOS:
                r = rng.random()
                if omit_all or r < 0.15:
                    pass  # missing column means bow 0
                elif r < 0.25:
                    line += "\t0"
                else:
                    line += f"\t{_fmt(bow(g))}"
            out.append(line)
        out.append("")
    out.append("\\end\\")
    return "\n".join(out) + "\n"


@st.composite
def arpa_texts(
    draw,
    min_order: int = 1,
    max_order: int = 4,
    min_vocab: int = 1,
    max_vocab: int = 4,
    drop_prefix_contexts: bool | None = False,
    neg_inf: bool = False,
    densities: Sequence[float] = (0.3, 0.6, 0.9, 1.0),
):
    """Hypothesis strategy: (text, params) for a random ARPA model.

    `drop_prefix_contexts=None` lets hypothesis choose.
    """
    order = draw(st.integers(min_order, max_order))
    vocab_size = draw(st.integers(min_vocab, max_vocab))
    frac = draw(st.sampled_from([0.0, 0.2, 0.5, 1.0]))
    drop = draw(st.booleans()) if drop_prefix_contexts is None else drop_prefix_contexts
    density = draw(st.sampled_from(list(densities)))
    seed = draw(st.integers(0, 2**32 - 1))
    neg = draw(st.sampled_from([0.0, 0.1])) if neg_inf else 0.0
    text = random_arpa_text(
        random.Random(seed),
        order,
        vocab_size,
        frac,
        drop,
        density=density,
        neg_inf_fraction=neg,
    )
    params = dict(
        order=order,
        vocab_size=vocab_size,
        positive_backoff_fraction=frac,
        drop_prefix_contexts=drop,
        density=density,
        seed=seed,
        neg_inf_fraction=neg,
    )
    return text, params


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


# --------------------------------------------------------------------------------------------
# A small valid ARPA file and malformed variants of it (shared by format and CLI tests)

# A small valid ARPA file; the malformed variants below edit numbered lines of it.
VALID_LINES = [
    "\\data\\",  # 1
    "ngram 1=4",  # 2
    "ngram 2=2",  # 3
    "",  # 4
    "\\1-grams:",  # 5
    "-1.0\t<unk>",  # 6
    "-99\t<s>\t-0.3",  # 7
    "-0.5\t</s>",  # 8
    "-0.4\ta\t0.2",  # 9
    "",  # 10
    "\\2-grams:",  # 11
    "-0.1\t<s> a",  # 12
    "-0.2\ta </s>",  # 13
    "",  # 14
    "\\end\\",  # 15
]
VALID = "\n".join(VALID_LINES) + "\n"


def edited(**lines: str | None) -> str:
    """VALID with line `l<N>` replaced (None deletes it)."""
    out = []
    for i, line in enumerate(VALID_LINES, start=1):
        new = lines.get(f"l{i}", line)
        if new is not None:
            out.append(new)
    return "\n".join(out) + "\n"


MALFORMED = {
    # name: (text, expected line, or (lo, hi) when any line in a range is a fair report)
    "bad_count": (edited(l2="ngram 1=four"), 2),
    "bad_count_number": (edited(l3="ngram 2=2x"), 3),
    "non_numeric_prob": (edited(l9="abc\ta\t0.2"), 9),
    "non_numeric_bow": (edited(l12="-0.1\t<s> a\tnope"), 12),
    "nan_prob": (edited(l8="nan\t</s>"), 8),
    "too_few_fields": (edited(l13="-0.2\ta"), 13),
    "too_many_fields": (edited(l13="-0.2\ta </s> 0.1 0.2"), 13),
    "fewer_ngrams_than_counted": (edited(l3="ngram 2=3"), (13, 15)),
    "more_ngrams_than_counted": (edited(l2="ngram 1=3"), (9, 11)),
    "truncated_after_line_12": ("\n".join(VALID_LINES[:12]) + "\n", (12, 13)),
    "truncated_mid_line": ("\n".join(VALID_LINES[:12]) + "\n-0.2\ta", 13),
    "missing_end": (edited(l15=None), (13, 15)),
    "no_data_header": (edited(l1=None), 1),
    "garbage_section": (edited(l11="\\two-grams:"), 11),
}
