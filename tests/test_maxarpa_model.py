"""Example tests of maxarpa.model.Model: real lmplz models against KenLM, and hand-made files.

The real models (conftest.real_models) are 3- and 5-gram modified Kneser-Ney models trained
by lmplz on State of the Union sentences; queries come from held-out sentences.
"""

from __future__ import annotations

import math
import random
import re

import kenlm
import numpy as np
import pytest

import maxarpa
from arsdecode.testing.random_arpa import random_arpa_text
from arsdecode.testing.reference_arpa import (
    all_contexts,
    kenlm_log10p,
    parse_arpa,
    ref_log10p,
    ref_max_log10p,
)
from maxarpa.constants import BOS, EOS, UNK
from maxarpa.errors import MaxArpaError
from maxarpa.model import UnknownWordError

# ------------------------------------------------------------------------------------------
# Real models


@pytest.fixture(scope="module")
def loaded(real_models):
    """order -> (maxarpa Model, kenlm.Model, reference)."""
    out = {}
    for order, path in real_models.paths.items():
        out[order] = (
            maxarpa.load(path),
            kenlm.Model(str(path)),
            parse_arpa(path.read_text(encoding="utf-8")),
        )
    return out


def held_out_queries(sentences, order, rng, with_random_windows=True):
    """(context, word) pairs from sentences: sentence-initial <s> contexts and inner windows."""
    pairs = []
    for sent in sentences:
        toks = [BOS, *sent.split(), EOS]
        for i in range(1, len(toks)):
            pairs.append((tuple(toks[max(0, i - (order - 1)) : i]), toks[i]))
            if with_random_windows and i >= 2:
                j = rng.randint(1, i)  # never starts with <s>; may be empty or shorter
                pairs.append((tuple(toks[j:i]), toks[i]))
    return pairs


@pytest.mark.parametrize("order", [3, 5])
def test_real_model_facts(loaded, order):
    model, _km, ref = loaded[order]
    assert model.order == order
    assert list(model.counts) == ref.counts
    assert len(model.vocab) == ref.counts[0] == len(ref.vocab)
    assert {BOS, EOS, UNK} <= set(model.vocab)
    assert model.positive_backoffs == ref.positive_backoffs


@pytest.mark.parametrize("order", [3, 5])
def test_real_log10p_matches_kenlm(loaded, real_models, order):
    model, km, _ref = loaded[order]
    rng = random.Random(order)
    pairs = held_out_queries(real_models.held_out, order, rng)
    assert len(pairs) > 5000
    for c, w in pairs:
        want = kenlm_log10p(km, w, c)
        got = model.log10p(w, c)
        assert got == pytest.approx(want, abs=1e-4), (c, w)
    # The held-out text really exercises <unk>.
    vocab = set(model.vocab)
    assert sum(w not in vocab for _c, w in pairs) > 20


@pytest.mark.parametrize("order", [3, 5])
def test_real_sentence_scores_match_kenlm(loaded, real_models, order):
    model, km, _ref = loaded[order]
    for sent in real_models.held_out[:100]:
        toks = [BOS, *sent.split(), EOS]
        total = sum(model.log10p(toks[i], toks[:i]) for i in range(1, len(toks)))
        assert total == pytest.approx(km.score(sent, bos=True, eos=True), abs=1e-3), sent


@pytest.mark.parametrize("order", [3, 5])
def test_real_batch_matches_kenlm_and_max_bounds_logp(loaded, real_models, order):
    model, km, _ref = loaded[order]
    rng = random.Random(100 + order)
    pairs = held_out_queries(real_models.held_out[:150], order, rng)
    width = order - 1
    ctx = np.full((len(pairs), width), -1, dtype=np.int32)
    for i, (c, _w) in enumerate(pairs):
        ids = model.ids(list(c))[-width:]  # random windows may be longer than n-1
        if len(ids):
            ctx[i, width - len(ids) :] = ids
    words = model.ids([w for _c, w in pairs])
    lp = model.log10p_batch(ctx, words)
    mx = model.max_log10p_batch(ctx, words)
    want = np.array([kenlm_log10p(km, w, c) for c, w in pairs])
    np.testing.assert_allclose(lp, want, atol=1e-4, rtol=0)
    assert np.all(mx >= lp - 1e-12)
    # Full-length and <s>-initial contexts have no extension: the bound is log10p itself.
    fixed = np.array([len(c) >= width or (len(c) > 0 and c[0] == BOS) for c, _w in pairs])
    np.testing.assert_array_equal(mx[fixed], lp[fixed])
    # The bound is not trivially log10p: short free contexts gain from extensions.
    assert np.mean(mx[~fixed] > lp[~fixed] + 1e-6) > 0.25
    assert np.all(mx <= 0.0 + 1e-12)  # no positive backoffs in lmplz models: still a prob


@pytest.mark.parametrize("order", [3, 5])
def test_real_max_equals_brute_force_one_slot(loaded, real_models, order):
    """Contexts of length n-2 leave one free slot: brute force over the whole vocabulary."""
    model, _km, ref = loaded[order]
    rng = random.Random(7 * order)
    cands = [
        (c, w)
        for c, w in held_out_queries(real_models.held_out, order, rng)
        if len(c) == order - 2 and BOS not in c
    ]
    for c, w in rng.sample(cands, 12):
        want = ref_max_log10p(ref, w, c)  # ~5200 extensions each
        assert model.max_log10p(w, c) == pytest.approx(want, abs=1e-9), (c, w)


@pytest.mark.parametrize("order", [3, 5])
def test_real_max_bounds_random_extensions(loaded, real_models, order):
    model, _km, ref = loaded[order]
    rng = random.Random(11 * order)
    ext = ref.extension_words()
    pairs = held_out_queries(real_models.held_out[:60], order, rng)
    for c, w in pairs:
        if c and c[0] == BOS:
            assert model.max_log10p(w, c) == model.log10p(w, c), (c, w)
            continue
        bound = model.max_log10p(w, c)
        for _ in range(5):
            z = tuple(rng.choice(ext) for _ in range(rng.randint(1, order)))
            assert bound >= model.log10p(w, z + c) - 1e-12, (z, c, w)
        assert bound >= model.log10p(w, (BOS, *c)) - 1e-12


def _with_positive_backoffs(text: str, every: int, value: float) -> str:
    """Set every `every`-th present bow of a 2- or 1-gram to +value (keeps the ARPA valid)."""
    out, seen = [], 0
    section = 0
    for line in text.splitlines():
        m = re.match(r"^\\(\d+)-grams:$", line)
        if m:
            section = int(m.group(1))
        parts = line.split("\t")
        if section in (1, 2) and len(parts) == 3:
            seen += 1
            if seen % every == 0:
                parts[2] = repr(value)
                line = "\t".join(parts)
        out.append(line)
    return "\n".join(out) + "\n"


def test_real_model_with_injected_positive_backoffs(real_models, write_arpa):
    """A real 3-gram with some bows made positive: KenLM agreement and one-slot brute force."""
    text = _with_positive_backoffs(real_models.paths[3].read_text(encoding="utf-8"), 7, 0.7)
    path = write_arpa(text)
    model, km, ref = maxarpa.load(path), kenlm.Model(str(path)), parse_arpa(text)
    assert model.positive_backoffs == ref.positive_backoffs > 1000
    rng = random.Random(3)
    pairs = held_out_queries(real_models.held_out[:80], 3, rng)
    for c, w in pairs:
        assert model.log10p(w, c) == pytest.approx(kenlm_log10p(km, w, c), abs=1e-4), (c, w)
        assert model.log10p(w, c) == pytest.approx(ref_log10p(ref, w, c), abs=1e-9), (c, w)
    one_slot = [(c, w) for c, w in pairs if len(c) == 1 and c[0] != BOS]
    for c, w in rng.sample(one_slot, 12):
        want = ref_max_log10p(ref, w, c)
        assert model.max_log10p(w, c) == pytest.approx(want, abs=1e-9), (c, w)
    # Queries (v, w) where an unlisted 'u v w' through a positive bow(u v) beats every listed
    # n-gram ending in 'v w': exactly what a listed-only maximum would get wrong.
    listed_max: dict[tuple[str, str], float] = {}
    for g, p in ref.probs.items():
        if len(g) >= 2:
            key = g[-2:]
            listed_max[key] = max(listed_max.get(key, -math.inf), p)
    tricky = []
    for g, bow in sorted(ref.bows.items()):
        if len(g) != 2 or bow <= 0:
            continue
        u, v = g
        for w in ("the", "of", "and", "</s>", "to", "a"):
            if (v, w) in ref.probs and (u, v, w) not in ref.probs:
                if bow + ref.probs[(v, w)] > listed_max[(v, w)] + 0.01:
                    tricky.append(((v,), w))
        if len(tricky) >= 6:
            break
    assert len(tricky) >= 6
    for c, w in tricky:
        want = ref_max_log10p(ref, w, c)
        assert want > listed_max[(c[0], w)] + 0.01
        assert model.max_log10p(w, c) == pytest.approx(want, abs=1e-9), (c, w)


# ------------------------------------------------------------------------------------------
# Hand-written models

POSITIVE_BOW_ARPA = """\
\\data\\
ngram 1=7
ngram 2=4
ngram 3=1

\\1-grams:
-1.0\t<unk>\t0
-99\t<s>\t0
-1.0\t</s>
-1.0\ta\t-0.5
-1.0\tb\t-0.5
-1.2\tx\t-0.3
-1.3\ty\t-0.4

\\2-grams:
-2.0\ta b\t0
-0.5\tx a\t0
-0.5\ty a\t1.0
-0.7\t<s> a\t-0.2

\\3-grams:
-1.5\tx a b

\\end\\
"""


def test_positive_backoff_of_unlisted_extension_beats_every_listed_ngram(write_arpa):
    """max_log10p(b | a) is reached by 'y a b', which is NOT listed: bow(y a)=+1 + p(b|a)=-2.

    The listed n-grams ending in 'a b' are 'a b' (-2.0) and 'x a b' (-1.5); a bound computed
    from listed n-grams only would say -1.5, but p(b | y a) = 10^-1.0 is reachable.
    """
    model = maxarpa.load(write_arpa(POSITIVE_BOW_ARPA))
    ref = parse_arpa(POSITIVE_BOW_ARPA)
    assert model.positive_backoffs == 1
    assert model.log10p("b", ["a"]) == pytest.approx(-2.0, abs=1e-12)
    assert model.log10p("b", ["x", "a"]) == pytest.approx(-1.5, abs=1e-12)
    assert model.log10p("b", ["y", "a"]) == pytest.approx(-1.0, abs=1e-12)
    assert model.log10p("b", ["<s>", "a"]) == pytest.approx(-2.2, abs=1e-12)
    listed = max(ref.probs[g] for g in ref.probs if g[-2:] == ("a", "b"))
    assert listed == -1.5
    assert model.max_log10p("b", ["a"]) == pytest.approx(-1.0, abs=1e-12)
    assert model.max_log10p("b", ["a"]) == pytest.approx(ref_max_log10p(ref, "b", ["a"]))
    # A <s>-initial context has no extension.
    assert model.max_log10p("b", ["<s>", "a"]) == pytest.approx(-2.2, abs=1e-12)
    # Through 'y a' too: max over all contexts of p(b | .) is -1.0.
    assert model.max_log10p("b", []) == pytest.approx(-1.0, abs=1e-12)
    # </s> after 'a': p(</s> | y a) = 1.0 + bow(a) + p(</s>) = 1.0 - 0.5 - 1.0 = -0.5.
    assert model.max_log10p("</s>", ["a"]) == pytest.approx(-0.5, abs=1e-12)
    for c in all_contexts(ref):
        for w in ref.vocab:
            assert model.max_log10p(w, c) == pytest.approx(ref_max_log10p(ref, w, c), abs=1e-12)
            assert model.log10p(w, c) == pytest.approx(ref_log10p(ref, w, c), abs=1e-12)


def test_minus_99_is_a_number_and_bos_context_works(write_arpa):
    model = maxarpa.load(write_arpa(POSITIVE_BOW_ARPA))
    assert model.log10p("<s>", []) == -99.0  # kept as the number -99, not -inf
    assert model.log10p("a", ["<s>"]) == pytest.approx(-0.7, abs=1e-12)
    # <s> with no listed bigram: bow(<s>) = 0, p(</s>) = -1.0
    assert model.log10p("</s>", ["<s>"]) == pytest.approx(-1.0, abs=1e-12)


def test_unknown_word_maps_to_unk(write_arpa):
    model = maxarpa.load(write_arpa(POSITIVE_BOW_ARPA))
    unk = model.log10p(UNK, ["a"])
    assert unk == pytest.approx(-1.5, abs=1e-12)  # bow(a) + p(<unk>)
    assert model.log10p("zebra", ["a"]) == unk
    assert model.max_log10p("zebra", ["a"]) == model.max_log10p(UNK, ["a"])
    # Unknown words in the context also become <unk>: 'y zebra' is the unlisted 'y <unk>'.
    assert model.log10p("b", ["y", "zebra"]) == model.log10p("b", ["y", UNK])
    assert model.log10p("b", ["y", "zebra"]) == pytest.approx(-1.0, abs=1e-12)  # bow(<unk>)=0
    ids = model.ids(["a", "zebra", UNK])
    assert ids.dtype == np.int32
    assert ids[1] == ids[2] == model.vocab.index(UNK)
    assert model.vocab[ids[0]] == "a"


NO_UNK_ARPA = """\
\\data\\
ngram 1=4
ngram 2=2

\\1-grams:
-99\t<s>\t-0.3
-0.5\t</s>
-0.4\ta\t-0.2
-0.6\tb\t0.25

\\2-grams:
-0.1\t<s> a
-0.2\ta b

\\end\\
"""


def test_model_without_unk_raises_unknown_word_error(write_arpa):
    model = maxarpa.load(write_arpa(NO_UNK_ARPA))
    assert UNK not in model.vocab
    assert model.log10p("b", ["a"]) == pytest.approx(-0.2, abs=1e-12)
    assert model.log10p("a", ["b"]) == pytest.approx(0.25 - 0.4, abs=1e-12)
    assert issubclass(UnknownWordError, ValueError)
    assert issubclass(UnknownWordError, MaxArpaError)
    with pytest.raises(UnknownWordError):
        model.log10p("zebra", ["a"])
    with pytest.raises(UnknownWordError):
        model.max_log10p("a", ["zebra"])
    with pytest.raises(UnknownWordError):
        model.ids(["a", "zebra"])
    with pytest.raises(ValueError):
        model.log10p(UNK, [])


NEG_INF_ARPA = """\
\\data\\
ngram 1=4
ngram 2=3

\\1-grams:
-1.0\t<unk>
-inf\t<s>\t-0.5
-0.5\t</s>
-0.3\ta\t0.4

\\2-grams:
-inf\t<s> </s>
-0.2\t<s> a
-inf\ta a

\\end\\
"""


def test_minus_inf_probabilities(write_arpa):
    model = maxarpa.load(write_arpa(NEG_INF_ARPA))
    assert model.log10p("<s>", []) == -math.inf
    assert model.log10p("</s>", ["<s>"]) == -math.inf
    assert model.log10p("a", ["a"]) == -math.inf
    assert model.log10p("a", ["<s>"]) == pytest.approx(-0.2, abs=1e-12)
    # 'a' after an unlisted context: bow(a) is not charged (context <unk>), p(a) = -0.3.
    assert model.log10p("a", ["<unk>"]) == pytest.approx(-0.3, abs=1e-12)
    # max over extensions of p(</s> | z a): 'a' is listed with bow +0.4 -> -0.1.
    assert model.max_log10p("</s>", ["a"]) == pytest.approx(-0.1, abs=1e-12)
    # p(a | z a) = -inf for every z (the bigram 'a a' is listed with -inf): max is -inf.
    assert model.max_log10p("a", ["a"]) == -math.inf
    # max over all contexts of p(a | .): <s> a = -0.2, others -0.3 or -inf; bow(<unk>) = 0.
    assert model.max_log10p("a", []) == pytest.approx(-0.2, abs=1e-12)
    ref = parse_arpa(NEG_INF_ARPA)
    for c in all_contexts(ref):
        for w in ref.vocab:
            assert model.max_log10p(w, c) == pytest.approx(ref_max_log10p(ref, w, c), abs=1e-12)
            assert model.log10p(w, c) == pytest.approx(ref_log10p(ref, w, c), abs=1e-12)


def test_missing_prefix_context_irstlm_style(write_arpa):
    """'x a' is listed as a context of 'x a b' only via the trigram: the bigram 'x a' is absent.

    Semantics: bow('x a') = 0 since unlisted; p(b | x a) = -0.3 from the listed trigram; and
    p(c | x a) backs off to p(c | a) with no bow charged for 'x a'.
    """
    text = """\

\\data\\
ngram  1=6
ngram 2 = 2
ngram 3=1

\\1-grams:
-1.0\t<unk>
-99\t<s>
-1.0\t</s>
-1.0\ta\t0.5
-1.0\tb
-1.0\tx\t0.2

\\2-grams:
-0.8\ta b
-0.6\ta x

\\3-grams:
-0.3\tx a b

\\end\\
"""
    model = maxarpa.load(write_arpa(text))
    ref = parse_arpa(text)
    assert list(model.counts) == [6, 2, 1]
    assert model.log10p("b", ["x", "a"]) == pytest.approx(-0.3, abs=1e-12)
    assert model.log10p("x", ["x", "a"]) == pytest.approx(-0.6, abs=1e-12)
    assert model.log10p("</s>", ["x", "a"]) == pytest.approx(0.5 - 1.0, abs=1e-12)
    assert model.max_log10p("b", ["a"]) == pytest.approx(-0.3, abs=1e-12)
    assert model.max_log10p("b", []) == pytest.approx(-0.3, abs=1e-12)
    for c in all_contexts(ref):
        for w in ref.vocab:
            assert model.max_log10p(w, c) == pytest.approx(ref_max_log10p(ref, w, c), abs=1e-12)
            assert model.log10p(w, c) == pytest.approx(ref_log10p(ref, w, c), abs=1e-12)


def test_batch_layout_padding_and_truncation(write_arpa):
    model = maxarpa.load(write_arpa(POSITIVE_BOW_ARPA))
    a, b, y, s = (int(i) for i in model.ids(["a", "b", "y", "<s>"]))
    ctx = np.array(
        [[-1, -1, a], [-1, y, a], [b, y, a], [-1, -1, -1], [-1, s, a], [a, s, a]], dtype=np.int32
    )
    words = np.array([b, b, b, b, b, b], dtype=np.int32)
    lp = model.log10p_batch(ctx, words)
    mx = model.max_log10p_batch(ctx, words)
    assert lp.dtype == np.float64 and lp.shape == (6,)
    np.testing.assert_allclose(lp[:5], [-2.0, -1.0, -1.0, -1.0, -2.2], atol=1e-12)
    np.testing.assert_allclose(mx[:5], [-1.0, -1.0, -1.0, -1.0, -2.2], atol=1e-12)
    # A 3-wide context on a 3-gram truncates to its last 2 words: 'a s a' -> '<s> a'.
    assert lp[5] == pytest.approx(-2.2, abs=1e-12)
    # Zero-width contexts are unigram queries.
    empty = np.zeros((2, 0), dtype=np.int32)
    np.testing.assert_allclose(
        model.log10p_batch(empty, np.array([b, a], dtype=np.int32)), [-1.0, -1.0], atol=1e-12
    )


@pytest.mark.parametrize("seed", range(6))
def test_random_models_without_unk(write_arpa, seed):
    """No <unk>: known words score like the reference; unknown ones raise UnknownWordError."""
    text = random_arpa_text(seed, 3, 3, 0.5, seed % 2 == 1, with_unk=False)
    ref = parse_arpa(text)
    assert UNK not in ref.vocab
    model = maxarpa.load(write_arpa(text))
    for c in all_contexts(ref):
        for w in ref.vocab:
            assert model.log10p(w, c) == pytest.approx(ref_log10p(ref, w, c), abs=1e-12)
            assert model.max_log10p(w, c) == pytest.approx(ref_max_log10p(ref, w, c), abs=1e-12)
    for bad_call in (
        lambda: model.log10p("nope", []),
        lambda: model.max_log10p("w0", ["nope"]),
        lambda: model.ids(["w0", "nope"]),
    ):
        with pytest.raises(UnknownWordError):
            bad_call()
