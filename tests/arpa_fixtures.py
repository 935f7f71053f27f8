"""ARPA texts for the tests: a small valid file, malformed variants of it, random models.

The random generator and the reference model live in `arsdecode.testing` (public, shared with
bench/ and experiments/); here are only what the tests need on top: the hypothesis strategy
over random ARPA texts, and `VALID` with its numbered-line edits (format and CLI tests).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from hypothesis import strategies as st

from arsdecode.testing.random_arpa import random_arpa_text


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
