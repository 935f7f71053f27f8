"""Random-field training (arsdecode/tasks/trf: features, exact, train; cli/trf) against brute
force on a tiny model: 4 words (w0, w1, w2, <unk>), lengths 1..3, every sentence enumerated.

References, independent of the code under test:
- p(x | l) and ln Z_l: every sentence of length l scored by `testing.brute.target_path_log`
  (one `log_prob` row per word of `<s> x </s>` with its whole history);
- feature counts: a hand count, and the target's own scores (the `LogLinearLM` score minus the
  base model's must be lambda . f(x) for every sentence);
- E_p[f] = sum_l pi_l sum_x p(x | l) f(x) by enumeration, for the gradient and the
  moment-matching condition at the fitted point.
"""

from __future__ import annotations

import itertools
import json
import math
import random

import numpy as np
import pytest

import maxarpa
from arsdecode import api
from arsdecode.lattice import Lattice
from arsdecode.tasks.trf.exact import draw_length, exact_log_partitions
from arsdecode.tasks.trf.features import (
    FeatureSet,
    build_model,
    read_log_z,
    select_features,
    write_feature_file,
)
from arsdecode.tasks.trf.train import (
    Problem,
    TrainConfig,
    gradient,
    heldout_log_likelihood,
    length_log_prior,
    train,
)
from arsdecode.testing.brute import chi_square_pvalue, target_path_log
from arsdecode.testing.random_arpa import random_arpa_text
from tests.cli_in_process import in_process_cli

LMAX = 3
TRUE = {"w0 w1": 1.2, "w2 * w0": -1.0, "<s> w2": 0.8, "w1 </s>": -0.7, "w0 w0 w0": 1.0,
        "<unk>": -1.5}


@pytest.fixture(scope="module")
def base_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("trf") / "base.arpa"
    path.write_text(random_arpa_text(random.Random(5), 2, 3, 0.3, False, density=0.9))
    return path


@pytest.fixture(scope="module")
def base(base_path):
    return maxarpa.load(base_path)


def sentences_of(vocab, length):
    return [list(p) for p in itertools.product(vocab, repeat=length)]


def enumerate_length(model, length):
    """(sentences, normalised probabilities, ln Z) at one length, by brute force."""
    vocab = model.vocabulary()
    sents = sentences_of(vocab, length)
    logs = np.array([target_path_log(model, s) for s in sents])
    log_z = float(np.logaddexp.reduce(logs))
    return sents, np.exp(logs - log_z), log_z


def exact_expectation(features: FeatureSet, model, log_pi) -> np.ndarray:
    pi = np.exp(log_pi[1:])
    out = np.zeros(len(features))
    for length in range(1, len(log_pi)):
        sents, probs, _ = enumerate_length(model, length)
        out += pi[length - 1] * (probs @ features.counts(sents).toarray())
    return out


@pytest.fixture(scope="module")
def corpus(base):
    """Training and held-out sentences drawn from the true field p(l, x) (weights TRUE)."""
    true = api.loglinear([base], features=TRUE)
    rng = np.random.default_rng(3)
    pi = np.array([0.2, 0.45, 0.35])
    out = []
    for n in (300, 300):
        lengths = rng.choice([1, 2, 3], size=n, p=pi)
        draws = []
        for length in (1, 2, 3):
            sents, probs, _ = enumerate_length(true, length)
            picks = rng.choice(len(sents), size=int((lengths == length).sum()), p=probs)
            draws += [sents[i] for i in picks]
        out.append(draws)
    return out


def test_feature_counts_match_a_hand_count():
    fs = FeatureSet([("a",), ("a", "b"), ("<s>", "a"), ("a", "*", "a"), ("b", "a", "</s>"),
                     ("</s>",), ("a", "</s>"), ("b", "b")])
    got = fs.counts([["a", "b", "a"], ["b"]]).toarray()
    assert got.tolist() == [[2, 1, 1, 1, 1, 1, 1, 0], [0, 0, 0, 0, 0, 1, 0, 0]]
    counts = fs.counts([["a", "b", "a"], ["b"]])
    np.testing.assert_allclose(counts.mean(), got.mean(axis=0))
    np.testing.assert_allclose(counts.mean([1, 0, 1]), (got[0] + 2 * got[1]) / 3)
    w = np.arange(8.0)
    np.testing.assert_allclose(counts @ w, got @ w)
    chosen = select_features([["a", "b", "a"], ["a", "b"]], min_count=2)
    # twice or more: a (3), b (2), </s> (2), <s> a (2), a b (2), <s> a b (2), <s> * b (2);
    # never <s> alone (it is never predicted)
    assert set(chosen.patterns) == {("a",), ("b",), ("</s>",), ("<s>", "a"), ("a", "b"),
                                    ("<s>", "a", "b"), ("<s>", "*", "b")}
    assert chosen.patterns[0] == ("a",)


def test_counts_agree_with_the_targets_own_scores(base):
    """score(x) - ln p_base(x) = lambda . f(x) for every sentence of lengths 1..3."""
    vocab = build_model(base, FeatureSet([]), np.zeros(0)).vocabulary()
    sents = [s for n in range(1, LMAX + 1) for s in sentences_of(vocab, n)]
    fs = select_features(sents, min_count=1)
    weights = np.random.default_rng(0).normal(0, 1, len(fs))
    model = build_model(base, fs, weights)
    plain = api.loglinear([base])
    got = np.array([target_path_log(model, s) - target_path_log(plain, s) for s in sents])
    np.testing.assert_allclose(got, fs.counts(sents) @ weights, atol=1e-9)


def test_ars_samples_per_length_follow_brute_force(base):
    model = api.loglinear([base], features=TRUE)
    vocab = model.vocabulary()
    for length in (1, 2, 3):
        sents, probs, log_z = enumerate_length(model, length)
        dist = {tuple(s): float(p) for s, p in zip(sents, probs, strict=True)}
        d = draw_length(model, vocab, length, 3000, np.random.default_rng(length))
        assert chi_square_pvalue(d.samples, dist) > 1e-3
        assert d.log_Z_ci[0] - 0.02 <= log_z <= d.log_Z_ci[1] + 0.02
        assert abs(d.log_Z - log_z) < 0.05
        if length > 1:  # the check can fail: the base model alone is another distribution
            _, wrong, _ = enumerate_length(api.loglinear([base]), length)
            other = {tuple(s): float(p) for s, p in zip(sents, wrong, strict=True)}
            assert chi_square_pvalue(d.samples, other) < 1e-6
        full = draw_length(model, vocab, length, 5, np.random.default_rng(0), method="full")
        assert full.log_Z == pytest.approx(log_z, abs=1e-9)
        assert all(len(s) == length for s in full.samples)
    exact = exact_log_partitions(model, vocab, [1, 2, 3])
    assert exact[3] == pytest.approx(enumerate_length(model, 3)[2], abs=1e-9)


def test_model_mean_of_exact_samples_is_the_enumerated_expectation(base, corpus):
    fs = select_features(corpus[0], min_count=3)
    problem = Problem(base, fs, corpus[0], LMAX)
    weights = np.random.default_rng(1).normal(0, 0.5, len(fs))
    model = problem.model(weights)
    want = exact_expectation(fs, model, problem.log_pi)
    draws = [s for n in (1, 2, 3)
             for s in draw_length(model, problem.vocab, n, 4000,
                                  np.random.default_rng(n)).samples]
    got = problem.model_mean(draws)
    assert np.abs(got - want).max() < 0.06  # counts <= 4, 4000 samples a length
    assert np.abs(got - want).max() < 0.2 * np.abs(want).max()


def heldout(problem, weights, held):
    model = problem.model(weights)
    log_z = {n: enumerate_length(model, n)[2] for n in (1, 2, 3)}
    return heldout_log_likelihood(model, held, problem.log_pi, log_z)["ln_per_token"]


def test_exact_gradient_ascent_matches_moments_and_improves_heldout(base, corpus):
    train_s, held = corpus
    fs = select_features(train_s, min_count=3)
    problem = Problem(base, fs, train_s, LMAX)
    data_mean = problem.data_counts.mean()
    lam = np.zeros(len(fs))
    start_grad = gradient(data_mean, exact_expectation(fs, problem.model(lam), problem.log_pi),
                          lam, 1e-3)
    for _ in range(150):
        lam = lam + 0.5 * gradient(data_mean, exact_expectation(fs, problem.model(lam),
                                                                problem.log_pi), lam, 1e-3)
    end_grad = gradient(data_mean, exact_expectation(fs, problem.model(lam), problem.log_pi),
                        lam, 1e-3)
    assert np.abs(end_grad).max() < 0.02 * np.abs(start_grad).max()  # moment matching
    assert heldout(problem, lam, held) > heldout(problem, np.zeros(len(fs)), held) + 0.02


@pytest.mark.parametrize("sampler", ["ars", "mcmc"])
def test_sa_training_moves_heldout_up(base, corpus, sampler):
    train_s, held = corpus
    fs = select_features(train_s, min_count=3)
    problem = Problem(base, fs, train_s, LMAX)
    config = TrainConfig(iterations=60, minibatch=100, samples=200, gamma0=0.5, l2=1e-3,
                         seed=2)
    result = train(problem, sampler, config)
    assert result.iterations == 60 and len(result.log) == 60
    assert result.samples >= 60 * 200
    zero = np.zeros(len(fs))
    assert heldout(problem, result.weights, held) > heldout(problem, zero, held) + 0.01
    data_mean = problem.data_counts.mean()
    grad = [gradient(data_mean, exact_expectation(fs, problem.model(w), problem.log_pi), w,
                     0.0) for w in (zero, result.weights)]
    assert np.linalg.norm(grad[1]) < 0.5 * np.linalg.norm(grad[0])
    exact = {n: enumerate_length(problem.model(result.weights), n)[2] for n in (1, 2, 3)}
    tol = 0.1 if sampler == "ars" else 0.5  # ARS: one run's estimate; MCMC: zeta by SA
    assert all(abs(result.log_z[n] - exact[n]) < tol for n in (1, 2, 3)), (result.log_z, exact)


def test_length_prior_is_smoothed_and_normalised():
    log_pi = length_log_prior([["a"], ["a", "b"], ["a", "b"]], 3, smoothing=0.5)
    assert log_pi[0] == -math.inf
    np.testing.assert_allclose(np.exp(log_pi[1:]), [1.5 / 4.5, 2.5 / 4.5, 0.5 / 4.5])


def test_feature_file_round_trip_into_loglinear(base, tmp_path, corpus):
    fs = select_features(corpus[0], min_count=3)
    weights = np.random.default_rng(4).normal(0, 1, len(fs))
    weights[0] = 0.0  # left out of the file, so it must not matter
    path = tmp_path / "f.tsv"
    log_z = {1: -1.25, 3: 0.5}
    write_feature_file(path, fs, weights, log_z, header=["a header"])
    assert read_log_z(path) == log_z
    read = api.loglinear([base], features=path)
    built = build_model(base, fs, weights)
    assert len(read.features) == len(fs) - 1
    for s in corpus[1][:50]:
        assert target_path_log(read, s) == pytest.approx(target_path_log(built, s), abs=1e-12)


def test_cli_train_then_sample_with_the_features(base_path, corpus, tmp_path, capsys):
    text = tmp_path / "train.txt"
    text.write_text("".join(" ".join(s) + "\n" for s in corpus[0]))
    out = tmp_path / "f.tsv"
    for sampler in ("ars", "mcmc"):
        code, stdout, err = in_process_cli(capsys, "train-trf", "--lm", str(base_path),
                                           "--text", str(text), "--out", str(out),
                                           "--sampler", sampler, "--iterations", "5",
                                           "--samples", "50", "--json")
        assert code == 0, err
        summary = json.loads(stdout)
        assert summary["iterations"] == 5 and summary["sentences"] == len(corpus[0])
        assert set(read_log_z(out)) == {1, 2, 3}
    model = api.loglinear([maxarpa.load(base_path)], features=out)
    assert model.dropped_features == 0 and len(model.features) > 0
    lat = tmp_path / "lat.json"
    lattice = Lattice.fixed_length(model.vocabulary(), 2)
    lat.write_text(json.dumps(lattice.to_json_obj()))
    code, stdout, err = in_process_cli(capsys, "sample", "--lm", str(base_path), "--lattice",
                                       str(lat), "--features", str(out), "-n", "20", "--json")
    assert code == 0, err
    got = json.loads(stdout)
    for tokens, log_p in zip(got["samples"], got["log_p"], strict=True):
        assert log_p == pytest.approx(target_path_log(model, tokens), abs=1e-9)


def test_cli_bad_text_is_one_line(base_path, tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"w0 w1\nw2 \xff w0\n")
    code, out, err = in_process_cli(capsys, "train-trf", "--lm", str(base_path), "--text",
                                    str(bad), "--out", str(tmp_path / "f.tsv"))
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and f"{bad}:2" in err and "Traceback" not in err
    assert not (tmp_path / "f.tsv").exists()
    marker = tmp_path / "marker.txt"
    marker.write_text("w0\nw1 </s> w2\n")
    code, out, err = in_process_cli(capsys, "train-trf", "--lm", str(base_path), "--text",
                                    str(marker), "--out", str(tmp_path / "f.tsv"))
    assert code == 2 and f"{marker}:2" in err and len(err.splitlines()) == 1
