"""`LogLinearLM` (arsdecode.model.loglinear): n-gram models and n-gram indicator features
(skip-grams included) combined log-linearly, through every method.

References, each independent of the target's code:
- `reference_score`: a sentence scored by scalar `maxarpa.Model.log10p` calls on the full
  history of each component, times its alpha, plus every feature counted by matching its
  pattern at every position of `<s> x </s>` (a plain loop, no table, no ids);
- brute force over every path of a small lattice with that score plus the emissions: every
  method in the conformance suite (tests/test_conformance.py, target "loglinear"); here,
  fixed-length sampling and the CLI's --features;
- the bound: a brute-force max over every left extension of a context (words of the
  vocabulary and one absent from every table, every length up to the longest pattern), on
  hypothesis-drawn feature tables; the feature part must equal it (the recurrence is the exact
  max), the whole target's bound must cover it.
Models are random ARPA models with positive backoffs (tests/ars_fixtures.py `random_lms`).
"""

from __future__ import annotations

import itertools
import json
import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ars_fixtures import make_lattice
from arsdecode import api
from arsdecode.cli.main import main
from arsdecode.errors import ModelError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.model import LogLinearLM, TargetModel, context_rows, ngram_tables
from arsdecode.model.loglinear import SKIP, read_features
from arsdecode.testing.brute import BruteResult, chi_square_pvalue, target_path_log
from maxarpa.constants import BOS, EOS, LN10
from maxarpa.model import Model

TIGHT = 1e-9
FRESH = "zzfresh"  # a word in no model and no feature


# ---------------------------------------------------------------- the independent reference


def pattern_hits(pattern: tuple[str, ...], sentence: list[str], end: int) -> bool:
    """Whether `pattern` (SKIP = any word) matches `sentence` ending at index `end`."""
    start = end - len(pattern) + 1
    if start < 0:
        return False
    return all(p == SKIP or p == sentence[start + j] for j, p in enumerate(pattern))


def feature_total(features: dict[str, float], sentence: list[str], first: int = 1) -> float:
    """The weight of every feature occurrence ending at positions >= `first` of `sentence`."""
    total = 0.0
    for text, weight in features.items():
        pattern = tuple(text.split())
        for end in range(first, len(sentence)):
            if pattern_hits(pattern, sentence, end):
                total += weight
    return total


def reference_score(models: list[Model], alphas: list[float], features: dict[str, float],
                    path: tuple[str, ...]) -> float:
    """ln score of `<s> path </s>`: sum of alpha * scalar log10p * ln 10, plus the features."""
    total = 0.0
    for lm, alpha in zip(models, alphas, strict=True):
        hist = [BOS]
        lp = 0.0
        for w in [*path, EOS]:
            lp += lm.log10p(w, hist)
            hist.append(w)
        total += alpha * LN10 * lp
    return total + feature_total(features, [BOS, *path, EOS])


def reference(models, alphas, features, lattice: Lattice) -> BruteResult:
    paths, scores = [], []
    for choice in itertools.product(*(range(w) for w in lattice.widths)):
        path = tuple(lattice.tokens[i][j] for i, j in enumerate(choice))
        emis = sum(float(lattice.log_emissions[i][j]) for i, j in enumerate(choice))
        s = reference_score(models, alphas, features, path)
        paths.append(path)
        scores.append(-math.inf if emis == -math.inf or s == -math.inf else s + emis)
    return BruteResult(paths, scores)


def random_features(rng: random.Random, words: list[str], count: int,
                    max_span: int = 4) -> dict[str, float]:
    """`count` distinct patterns over `words`: n-grams, skip-grams, `<s>` first, `</s>` last;
    weights of both signs."""
    out: dict[str, float] = {}
    while len(out) < count:
        span = rng.randint(1, max_span)
        pattern = [rng.choice(words) for _ in range(span)]
        for j in range(1, span - 1):
            if rng.random() < 0.3:
                pattern[j] = SKIP
        if span >= 2 and rng.random() < 0.2:
            pattern[0] = BOS
        if span >= 2 and rng.random() < 0.2:
            pattern[-1] = EOS
        out[" ".join(pattern)] = round(rng.uniform(-3.0, 3.0), 4)
    return out


# ---------------------------------------------------------------- scores and structure


def test_sentence_scores_equal_the_reference(random_lms):
    rng = random.Random(1)
    checked = 0
    for n, model in enumerate(random_lms):
        other = random_lms[(n + 3) % len(random_lms)]
        for models in ([model.lm], [model.lm, other.lm]):
            alphas = [round(rng.uniform(0.3, 2.0), 3) for _ in models]
            features = random_features(rng, model.words, 10)
            target = LogLinearLM(models, alphas, features=features)
            assert isinstance(target, TargetModel)
            assert ngram_tables(target) is None  # the compiled DP must not ignore features
            assert target.order >= max(m.order for m in models)
            for _ in range(15):
                sentence = tuple(rng.choice(model.words) for _ in range(rng.randint(1, 6)))
                want = reference_score(models, alphas, features, sentence)
                assert target_path_log(target, sentence) == pytest.approx(want, abs=1e-9)
                checked += 1
    assert checked >= 200


def test_features_with_unknown_words_are_dropped(random_lms):
    model = random_lms[0]
    w = model.words[0]
    target = LogLinearLM([model.lm], features={f"{w} {FRESH}": 2.0, w: 1.0})
    assert target.dropped_features == 1
    plain = LogLinearLM([model.lm])
    rows = context_rows([[target.bos]], target.order - 1)
    words = target.ids([w])
    assert target.log_prob(rows, words)[0] == pytest.approx(plain.log_prob(rows, words)[0] + 1)


def histories(target: LogLinearLM, rng: random.Random, words: list[str], count: int):
    """Random full histories `<s> x_1..x_i` as id lists."""
    for _ in range(count):
        ids = [int(i) for i in target.ids([rng.choice(words)
                                           for _ in range(rng.randint(0, 6))])]
        yield [target.bos, *ids]


def test_minimal_context_keeps_every_factor_and_composes(random_lms):
    rng = random.Random(2)
    checked = 0
    for model in random_lms:
        features = random_features(rng, model.words, 8)
        target = LogLinearLM([model.lm, random_lms[0].lm], [1.0, 0.5], features=features)
        width = target.order - 1
        all_words = np.array(sorted(set(target.ids(model.words).tolist()) | {target.eos}))
        for hist in histories(target, rng, model.words, 25):
            row = context_rows([hist], width)
            cut = target.minimal_context(row)
            rows = np.repeat(row, len(all_words), axis=0)
            cuts = np.repeat(cut, len(all_words), axis=0)
            np.testing.assert_allclose(target.log_prob(cuts, all_words),
                                       target.log_prob(rows, all_words), rtol=0, atol=TIGHT)
            for w in all_words[all_words != target.eos]:
                longer = context_rows([[*hist, int(w)]], width)
                shorter = context_rows([[*(t for t in cut[0] if t >= 0), int(w)]], width)
                np.testing.assert_array_equal(target.minimal_context(longer),
                                              target.minimal_context(shorter))
            checked += 1
    assert checked >= 100


def test_is_exact_is_right_and_needs_the_longest_feature(random_lms):
    rng = random.Random(3)
    model = random_lms[1]  # order 3
    w = model.words
    features = {f"{w[0]} * {w[1]} {w[2]}": 1.0, f"{w[1]} {w[0]}": -0.5}
    target = LogLinearLM([model.lm], features=features)
    assert target.span == 4 and target.order == 4
    all_words = np.array(sorted(set(target.ids(w).tolist()) | {target.eos}))
    exact_seen = inexact_seen = 0
    for hist in histories(target, rng, w, 200):
        position = len(hist) - 1
        for k in range(0, len(hist) + 1):
            context = hist[len(hist) - k:]
            exact = target.is_exact(position, context)
            # derived rule: 3 words (the longest feature minus one) or the whole history
            assert exact == (k >= 3 or k == len(hist))
            if exact:
                exact_seen += 1
                short = np.repeat(context_rows([context], 3), len(all_words), axis=0)
                whole = np.repeat(context_rows([hist], 3), len(all_words), axis=0)
                np.testing.assert_allclose(target.log_prob(short, all_words),
                                           target.log_prob(whole, all_words), atol=TIGHT)
            else:
                inexact_seen += 1
    assert exact_seen and inexact_seen


@pytest.mark.parametrize("alphas", [[0.0], [-1.0], [math.inf], [1.0, 2.0]])
def test_bad_alphas_are_option_errors(random_lms, alphas):
    with pytest.raises(OptionError):
        api.loglinear([random_lms[0].lm], alphas)


# ---------------------------------------------------------------- the bound


def left_extensions(vocab: list[str], longest: int):
    """Every sequence of 0..longest words over `vocab` (padding: the history stops there)."""
    for n in range(longest + 1):
        yield from itertools.product(vocab, repeat=n)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_feature_bound_is_the_max_over_left_extensions(random_lms, data):
    model = random_lms[data.draw(st.integers(0, 3))]
    seed = data.draw(st.integers(0, 10**6))
    rng = random.Random(seed)
    features = random_features(rng, model.words, data.draw(st.integers(1, 8)), max_span=4)
    target = LogLinearLM([model.lm], features=features)
    table = target.table
    vocab = [*model.words, BOS, FRESH]
    context = data.draw(st.lists(st.sampled_from([*model.words, BOS]), max_size=3))
    word = data.draw(st.sampled_from([*model.words, EOS]))
    best = -math.inf
    for z in left_extensions(vocab, target.span - 1):
        sentence = [*z, *context, word]
        best = max(best, feature_total(features, sentence, first=len(sentence) - 1))
    ids = [int(i) for i in target.ids(context)]
    row = context_rows([ids], target.order - 1)
    wid = target.ids([word])
    got = float(table.bound(row, wid)[0])
    assert got == pytest.approx(best, abs=TIGHT), (features, context, word)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_batched_bound_equals_the_recurrence_row_by_row(random_lms, data):
    """`bound` on many rows at once (contexts made canonical, one recurrence per distinct key,
    scattered back) equals value + the recurrence on each row's own words, computed in a
    fresh table: the canonical map and the scatter change nothing."""
    from arsdecode.model.loglinear import FeatureTable

    model = random_lms[data.draw(st.integers(0, 3))]
    rng = random.Random(data.draw(st.integers(0, 10**6)))
    features = random_features(rng, model.words, data.draw(st.integers(1, 10)), max_span=4)
    target = LogLinearLM([model.lm], features=features)
    width = target.order - 1
    pool = [int(i) for i in target.ids(model.words)]
    rows, words = [], []
    for _ in range(60):
        start = [target.bos] if rng.random() < 0.3 else []
        ctx = start + [rng.choice(pool) for _ in range(rng.randint(0, width))]
        rows.append(ctx[-width:] if width else [])
        words.append(rng.choice([*pool, target.eos]))
    batch = context_rows(rows, width)
    got = target.table.bound(batch, np.array(words))
    patterns = [(ids, w) for listed in target.table.by_last.values() for ids, w in listed]
    for r, (row, w) in enumerate(zip(batch, words, strict=True)):
        fresh = FeatureTable(patterns, target.table.vocab_size)
        want = float(fresh.value(row[None, :], np.array([w]))[0])
        tail = row[len(row) - (fresh.span - 1):] if fresh.span > 1 else row[:0]
        if fresh.span > 1 and (tail < 0).any():
            want += fresh.extension_max(tuple(int(t) for t in tail if t >= 0), w)
        assert got[r] == pytest.approx(want, abs=TIGHT), (features, row, w)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_log_bound_covers_every_left_extension(random_lms, data):
    n = data.draw(st.integers(0, len(random_lms) - 1))
    model, other = random_lms[n], random_lms[(n + 2) % len(random_lms)]
    rng = random.Random(data.draw(st.integers(0, 10**6)))
    features = random_features(rng, model.words, data.draw(st.integers(0, 6)), max_span=3)
    alphas = [data.draw(st.floats(0.2, 2.0)), data.draw(st.floats(0.2, 2.0))]
    target = LogLinearLM([model.lm, other.lm], alphas, features=features)
    width = target.order - 1
    context = data.draw(st.lists(st.sampled_from(model.words), max_size=width))
    words = np.array(sorted(set(target.ids(model.words).tolist()) | {target.eos}))
    bound = target.log_bound(np.repeat(context_rows([target.ids(context).tolist()], width),
                                       len(words), axis=0), words)
    for z in left_extensions([*model.words, FRESH], width - len(context)):
        for start in ([BOS], []):
            hist = [int(i) for i in target.ids([*start, *z, *context])]
            rows = np.repeat(context_rows([hist], width), len(words), axis=0)
            assert (bound >= target.log_prob(rows, words) - TIGHT).all(), (z, context)


# ---------------------------------------------------------------- every method vs brute force


def test_fixed_length_sampling_matches_the_normalised_distribution(random_lms):
    """All sentences of length L over the vocabulary: ARS samples follow exp(score) / Z_L,
    and the sampler's ln Z is ln Z_L (the random field's normaliser at that length)."""
    rng = random.Random(8)
    checked = 0
    for model in (random_lms[1], random_lms[3], random_lms[7]):
        features = random_features(rng, model.words, 8, max_span=3)
        alphas = [0.7]
        target = api.loglinear([model.lm], alphas, features=features)
        for length in (2, 3):
            lattice = api.fixed_length_lattice(target.vocabulary(), length)
            assert len(lattice) == length
            assert all(set(t) == set(target.vocabulary()) for t in lattice.tokens)
            ref = reference([model.lm], alphas, features, lattice)
            assert len(ref.paths) == len(target.vocabulary()) ** length
            draws = api.sample(target, lattice, n=3000, seed=length)
            assert chi_square_pvalue(draws.samples, ref.distribution()) > 1e-4
            lo, hi = draws.log_Z_ci
            assert lo - 0.05 <= ref.log_Z <= hi + 0.05
            exact = api.marginals(target, lattice, method="full")
            assert exact.log_Z == pytest.approx(ref.log_Z, abs=1e-9)
            checked += 1
    assert checked == 6
    with pytest.raises(OptionError):
        api.fixed_length_lattice(["a"], 0)


def test_length_prior_is_a_per_length_constant(random_lms):
    target = api.loglinear([random_lms[0].lm], length_prior={1: math.log(0.25),
                                                            2: math.log(0.75)})
    assert target.log_length_prior(2) == pytest.approx(math.log(0.75))
    assert target.log_length_prior(3) == -math.inf
    assert api.loglinear([random_lms[0].lm]).log_length_prior(7) == 0.0


# ---------------------------------------------------------------- feature files and the CLI


def test_feature_file_is_read_with_skips_and_comments(tmp_path):
    path = tmp_path / "f.tsv"
    path.write_text("# a comment\n\na * c\t1.5\n<s> b\t-2\nb </s>\t0.25\n")
    got = read_features(path)
    assert [(f.pattern, f.weight) for f in got] == [
        (("a", "*", "c"), 1.5), (("<s>", "b"), -2.0), (("b", "</s>"), 0.25)]


@pytest.mark.parametrize("line, fragment", [
    ("a b 1.0", "expected 'ngram<TAB>weight'"),
    ("a\tb\t1", "expected 'ngram<TAB>weight'"),
    ("a b\tx", "weight 'x' is not a number"),
    ("a b\tnan", "is not finite"),
    ("* b\t1", "starts or ends with '*'"),
    ("a *\t1", "starts or ends with '*'"),
    ("a <s>\t1", "after its first word"),
    ("</s> a\t1", "before its last word"),
    ("\t1", "empty n-gram"),
    ("a  *  c\t1\na * c\t2", "already listed on line 2"),
])
def test_malformed_feature_file_is_a_model_error_with_file_and_line(tmp_path, line, fragment):
    path = tmp_path / "bad.tsv"
    path.write_text("# ok\n" + line + "\n")
    with pytest.raises(ModelError) as info:
        read_features(path)
    text = str(info.value)
    assert text.startswith(f"{path}:2") or text.startswith(f"{path}:3"), text
    assert fragment in text


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_features_on_decode_sample_marginals_equal_brute_force(random_lms, tmp_path,
                                                                   capsys):
    rng = random.Random(9)
    checked = 0
    for model in random_lms[:4]:
        features = random_features(rng, model.words, 6, max_span=3)
        (tmp_path / "f.tsv").write_text("".join(f"{k}\t{v}\n" for k, v in features.items()))
        lattice = make_lattice(rng, model, neg_inf=0.0, max_len=4)
        ref = reference([model.lm], [1.0], features, lattice)
        lat = tmp_path / "lat.json"
        lat.write_text(json.dumps(lattice.to_json_obj()))
        common = ["--lm", str(model.path), "--lattice", str(lat), "--features",
                  str(tmp_path / "f.tsv")]
        code, out, err = _cli(capsys, "decode", *common, "--json")
        assert code == 0, err
        assert json.loads(out)["log_p"] == pytest.approx(ref.best_log_p, abs=TIGHT)
        code, out, err = _cli(capsys, "marginals", *common, "--method", "full", "--json")
        assert code == 0, err
        assert json.loads(out)["log_Z"] == pytest.approx(ref.log_Z, abs=TIGHT)
        code, out, err = _cli(capsys, "sample", *common, "-n", "30", "--json")
        assert code == 0, err
        got = json.loads(out)
        for tokens, log_p in zip(got["samples"], got["log_p"], strict=True):
            assert log_p == pytest.approx(ref.score(tokens), abs=TIGHT)
        checked += 1
    assert checked == 4


def test_cli_bad_feature_file_is_one_line(random_lms, tmp_path, capsys):
    model = random_lms[0]
    lat = tmp_path / "lat.json"
    lat.write_text(json.dumps(Lattice.from_lists([[(model.words[0], 0.0)]]).to_json_obj()))
    bad = tmp_path / "bad.tsv"
    bad.write_text("a b\t1\nc d\toops\n")
    for command in (["decode"], ["sample", "-n", "2"], ["marginals"]):
        code, out, err = _cli(capsys, *command, "--lm", str(model.path), "--lattice", str(lat),
                              "--features", str(bad))
        assert code == 2 and out == ""
        assert len(err.splitlines()) == 1 and f"{bad}:2" in err and "Traceback" not in err


def test_wide_shapes_use_the_dict_and_agree_with_the_coded_lookup(random_lms, monkeypatch):
    """A shape whose keys do not fit an int64 is looked up by dict, row by row, and a shape too
    big for a dense array by binary search: all three lookups give the same values."""
    import arsdecode.model.loglinear as loglinear_module
    from arsdecode.model.loglinear import FeatureTable

    rng = random.Random(12)
    model = random_lms[3]
    target = LogLinearLM([model.lm], features=random_features(rng, model.words, 12))
    patterns = [(ids, w) for ids_list in target.table.by_last.values() for ids, w in ids_list]
    wide = FeatureTable(patterns, vocab_size=2**62)
    assert not wide.coded and target.table.coded  # one of each path
    width = target.order - 1
    hists = list(histories(target, rng, model.words, 60))
    rows = context_rows(hists, width)
    words = np.array([rng.choice([*target.ids(model.words).tolist(), target.eos])
                      for _ in hists])
    np.testing.assert_array_equal(wide.value(rows, words), target.table.value(rows, words))
    np.testing.assert_array_equal(wide.bound(rows, words), target.table.bound(rows, words))
    monkeypatch.setattr(loglinear_module, "DENSE_TABLE_ENTRIES", 0)
    searched = FeatureTable(patterns, vocab_size=target.table.vocab_size)
    assert target.table.dense and not searched.dense and searched.coded
    assert np.count_nonzero(target.table.value(rows, words))  # the rows hit some feature
    np.testing.assert_array_equal(searched.value(rows, words), target.table.value(rows, words))
