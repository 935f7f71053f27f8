"""`maxarpa.truncate`: the order-N model of a higher-order model, as SRILM's `-order N`.

References: the ARPA file truncated by hand in this test (orders above N dropped, the order-N
backoff column removed), loaded by KenLM (scores to 1e-6, log10) and by `maxarpa.load` (every
table array equal, bounds included); and the bounds themselves against a brute-force max over
every left extension, on hypothesis-drawn random ARPA models with positive backoffs.
"""

from __future__ import annotations

import gzip
import itertools
import math
import random
import re

import kenlm
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import maxarpa
from arpa_fixtures import arpa_texts
from arsdecode.api import DATA_DIR
from maxarpa.constants import BOS, EOS
from maxarpa.errors import MaxArpaError

_COUNT = re.compile(r"\s*ngram\s+(\d+)\s*=")
_SECTION = re.compile(r"\s*\\(\d+)-grams:")


def truncate_arpa_text(text: str, order: int) -> str:
    """The ARPA text of the order-`order` model, edited line by line: the counts and sections
    above `order` dropped, and the backoff field of every `order`-gram removed."""
    out: list[str] = []
    section = 0
    for line in text.splitlines():
        count = _COUNT.match(line)
        if count:
            if int(count.group(1)) <= order:
                out.append(line)
            continue
        head = _SECTION.match(line)
        if head:
            section = int(head.group(1))
        elif line.strip() == "\\end\\":
            section = 0
        if section > order:
            continue
        if section == order and line.strip() and not head:
            fields = line.split()
            line = "\t".join([fields[0], " ".join(fields[1 : order + 1])])
        out.append(line)
    return "\n".join(out) + "\n"


def assert_same_table(got: maxarpa.Model, want: maxarpa.Model) -> None:
    assert got.vocab == want.vocab and got.order == want.order
    for k, (a, b) in enumerate(zip(got.trie.nodes, want.trie.nodes, strict=True), start=1):
        for field in ("keys", "rows", "listed", "log10p", "log10bow", "mf", "mbow"):
            x, y = getattr(a, field), getattr(b, field)
            assert x.shape == y.shape, (k, field)
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), (k, field)


def kenlm_word_scores(km: kenlm.Model, sentence: list[str], bos: bool) -> list[float]:
    return [score for score, _, _ in km.full_scores(" ".join(sentence), bos=bos, eos=True)]


def our_word_scores(lm: maxarpa.Model, sentence: list[str], bos: bool) -> list[float]:
    hist = [BOS] if bos else []
    out = []
    for w in [*sentence, EOS]:
        out.append(lm.log10p(w, hist))
        hist.append(w)
    return out


def test_random_models_equal_kenlm_and_the_hand_truncated_file(random_lms, tmp_path):
    rng = random.Random(0)
    checked = 0
    for model in random_lms:
        text = model.path.read_text()
        for order in range(1, model.lm.order):
            hand = tmp_path / f"{model.name}.{order}.arpa"
            hand.write_text(truncate_arpa_text(text, order))
            ours = maxarpa.truncate(model.lm, order)
            assert ours.order == order
            assert_same_table(ours, maxarpa.load(hand))
            checked += 1
            if order == 1:  # KenLM assumes at least a bigram model
                continue
            km = kenlm.Model(str(hand))
            assert km.order == order
            for _ in range(20):
                sentence = [rng.choice(model.words) for _ in range(rng.randint(1, 7))]
                for bos in (True, False):
                    np.testing.assert_allclose(our_word_scores(ours, sentence, bos),
                                               kenlm_word_scores(km, sentence, bos),
                                               rtol=0, atol=1e-6)
    assert checked >= 10


def test_embedded_5gram_to_3_equals_kenlm(tmp_path):
    text = gzip.open(DATA_DIR / "state_union.5gram.arpa.gz", "rt", encoding="utf-8").read()
    full = maxarpa.load(DATA_DIR / "state_union.5gram.arpa.gz")
    hand = tmp_path / "su3.arpa"
    hand.write_text(truncate_arpa_text(text, 3), encoding="utf-8")
    ours = maxarpa.truncate(full, 3)
    assert ours.counts == full.counts[:3]
    km = kenlm.Model(str(hand))
    rng = random.Random(1)
    words = [w for w in full.vocab[:3000] if w not in (BOS, EOS)]
    for _ in range(200):
        sentence = [rng.choice(words) for _ in range(rng.randint(1, 8))]
        np.testing.assert_allclose(our_word_scores(ours, sentence, True),
                                   kenlm_word_scores(km, sentence, True), rtol=0, atol=1e-6)
    assert_same_table(ours, maxarpa.load(hand))


def test_order_at_or_above_is_the_model_and_below_one_is_an_error(random_lms):
    lm = random_lms[3].lm
    assert maxarpa.truncate(lm, lm.order) is lm
    assert maxarpa.truncate(lm, lm.order + 3) is lm
    with pytest.raises(MaxArpaError, match="order must be >= 1"):
        maxarpa.truncate(lm, 0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arpa=arpa_texts(min_order=2, max_order=4, max_vocab=3), data=st.data())
def test_truncated_bounds_cover_every_left_extension(tmp_path_factory, arpa, data):
    text, params = arpa
    d = tmp_path_factory.mktemp("trunc")
    (d / "m.arpa").write_text(text)
    lm = maxarpa.load(d / "m.arpa")
    assume(lm.order >= 2)  # a random text may list unigrams only, whatever its drawn order
    order = data.draw(st.integers(1, lm.order - 1))
    ours = maxarpa.truncate(lm, order)
    (d / "t.arpa").write_text(truncate_arpa_text(text, order))
    assert_same_table(ours, maxarpa.load(d / "t.arpa"))
    width = order - 1
    plain = [w for w in lm.vocab if w not in (BOS, EOS)]
    context = data.draw(st.lists(st.sampled_from(plain), max_size=width))
    if data.draw(st.booleans()) and len(context) < width:
        context = [BOS, *context]
    word = data.draw(st.sampled_from([*plain, EOS]))
    best = -math.inf
    extensions: list[list[str]] = [[]]
    if not context or context[0] != BOS:
        room = width - len(context)
        for n in range(1, room + 1):
            for z in itertools.product(plain, repeat=n):
                extensions.append(list(z))
                if n < room:
                    extensions.append([BOS, *z])
        if room:
            extensions.append([BOS])
    for z in extensions:
        best = max(best, ours.log10p(word, z + context))
    assert ours.max_log10p(word, context) >= best - 1e-12, (params, order, context, word)
    # the truncated model ignores everything past its last order - 1 words, as KenLM does
    longer = [plain[0]] * 3 + context
    assert ours.log10p(word, longer[-width:] if width else []) == ours.log10p(word, longer)


def test_truncated_text_helper_drops_what_it_should():
    text = "\n".join([
        "\\data\\", "ngram 1=2", "ngram 2=1", "", "\\1-grams:", "-1\t<s>\t-0.5",
        "-0.5\t</s>", "", "\\2-grams:", "-0.2\t<s> </s>", "", "\\end\\"])
    assert truncate_arpa_text(text, 1) == "\n".join([
        "\\data\\", "ngram 1=2", "", "\\1-grams:", "-1\t<s>", "-0.5\t</s>", "",
        "\\end\\"]) + "\n"
