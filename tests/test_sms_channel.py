"""The keypad channel: exact normalisation, candidate generation, observation errors.

Why brute force: the channel's whole claim is that its emissions form an exactly normalised
distribution; enumerating every observation string of small lengths checks that directly.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import maxarpa
from arsdecode.lattice import Lattice
from arsdecode.tasks.sms.keypad import (
    CHAR_TO_KEY,
    DEFAULT_K,
    KEYS,
    KeypadChannel,
    NoCandidatesError,
    ObservationError,
    build_lattice,
    default_model_path,
    key_distance,
    key_normalisers,
    log_channel_table,
    log_emission,
    parse_observation,
    sample_observation,
    sample_sentence,
    word_to_keys,
)


@pytest.fixture(scope="module")
def vocab() -> list[str]:
    return list(maxarpa.load(default_model_path()).vocab)


@pytest.fixture(scope="module")
def channel(vocab: list[str]) -> KeypadChannel:
    return KeypadChannel.from_vocab(vocab)


def test_key_geometry() -> None:
    assert key_distance("1", "2") == 1.0
    assert key_distance("5", "5") == 0.0
    assert math.isclose(key_distance("1", "5"), math.sqrt(2))
    assert math.isclose(key_distance("2", "0"), 3.0)
    assert math.isclose(key_distance("*", "#"), 2.0)
    assert math.isclose(key_distance("1", "#"), math.sqrt(4 + 9))


def test_key_map() -> None:
    assert word_to_keys("money") == "66639"
    assert word_to_keys("don't") == "36618"
    assert [word_to_keys(p) for p in ".?!,;:'-"] == list("***###11")
    assert set(CHAR_TO_KEY.values()) == set(KEYS) - {"0"}
    with pytest.raises(ValueError, match="cannot be typed"):
        word_to_keys("caf\u00e9")


@pytest.mark.parametrize("word", ["a", "j", ".", "'", "go", "by", ",x", "the", "z,!", "don"])
def test_emissions_sum_to_one_by_enumeration(word: str) -> None:
    n = len(word)
    total = math.fsum(
        math.exp(log_emission(word, "".join(obs))) for obs in itertools.product(KEYS, repeat=n)
    )
    assert abs(total - 1.0) < 1e-12
    # Observations of any other length have probability zero.
    assert log_emission(word, "2" * (n + 1)) == -math.inf


@pytest.mark.parametrize("k", [0.0, 1.0, 64.0, 1000.0])
def test_table_columns_normalised(k: float) -> None:
    table = log_channel_table(k)
    assert np.allclose(np.exp(table).sum(axis=0), 1.0, rtol=0, atol=1e-14)
    assert not table.flags.writeable


def test_per_key_normalisers_differ() -> None:
    k = DEFAULT_K
    z = dict(zip(KEYS, key_normalisers(k), strict=True))
    s2, s5 = math.sqrt(2), math.sqrt(5)
    # Centre key 5: four keys at 1, four at sqrt 2, key 0 at 2, * and # at sqrt 5.
    expect5 = 1 + 4 / (k + 1) + 4 / (s2 * k + 1) + 1 / (2 * k + 1) + 2 / (s5 * k + 1)
    assert math.isclose(z["5"], expect5, rel_tol=1e-15)
    # The 4x3 grid has four symmetry classes of keys; each has its own normaliser.
    classes = [("1", "3", "*", "#"), ("2", "0"), ("4", "6", "7", "9"), ("5", "8")]
    for cls in classes:
        assert all(math.isclose(z[c], z[cls[0]], rel_tol=1e-14) for c in cls)
    reps = [z[cls[0]] for cls in classes]
    assert min(abs(a - b) for a, b in itertools.combinations(reps, 2)) > 1e-3
    assert z["5"] == max(reps) and z["1"] == min(reps)  # centre most neighbours, corner fewest


def test_noiseless_is_most_likely() -> None:
    assert log_emission("money", "66639") > log_emission("money", "66636")
    assert log_emission("money", "66636") > log_emission("money", "66631")  # 6 is next to 3


def test_sampling_matches_channel() -> None:
    rng = np.random.default_rng(7)
    n = 40_000
    counts = {key: 0 for key in KEYS}
    for key in sample_observation("j" * n, rng):
        counts[key] += 1
    probs = np.exp(log_channel_table(DEFAULT_K)[:, KEYS.index("5")])
    freqs = np.array([counts[key] / n for key in KEYS])
    assert np.max(np.abs(freqs - probs)) < 0.006
    a = sample_sentence(["the", "money", "."], np.random.default_rng(3))
    b = sample_sentence(["the", "money", "."], np.random.default_rng(3))
    assert a == b and [len(t) for t in a.split(" ")] == [3, 5, 1]


def test_candidates_never_lose_true_word(vocab: list[str], channel: KeypadChannel) -> None:
    rng = np.random.default_rng(11)
    words = [w for w in vocab if w not in ("<s>", "</s>", "<unk>")]
    picks = [words[i] for i in rng.choice(len(words), size=400, replace=False)]
    for w in picks:
        obs = sample_observation(w, rng)
        toks, scores = channel.candidates(obs)
        assert w in toks and np.all(np.isfinite(scores))
        assert len(toks) == sum(len(v) == len(w) for v in words)
        i = toks.index(w)
        assert math.isclose(scores[i], log_emission(w, obs), rel_tol=1e-12)
        top, top_scores = channel.candidates(obs, top_k=100)
        assert len(top) == min(100, len(toks))
        assert np.all(np.diff(top_scores) <= 0)  # best first
        rest = np.setdiff1d(scores, top_scores) if len(toks) > 100 else np.array([])
        assert rest.size == 0 or rest.max() <= top_scores[-1]
        for t, s in zip(top, top_scores, strict=True):
            assert math.isclose(s, log_emission(t, obs), rel_tol=1e-12)
        if scores[i] > top_scores[-1]:
            assert w in top
        elif scores[i] < top_scores[-1]:
            assert w not in top


def test_lattice_shape_and_validity(channel: KeypadChannel) -> None:
    words = "we must keep our nation united in defense of those ideals .".split()
    obs = sample_sentence(words, np.random.default_rng(0))
    lat = channel.build_lattice(obs)
    assert len(lat) == len(words)
    assert lat.widths == [len(channel.words_by_length[len(w)]) for w in words]
    for w, toks in zip(words, lat.tokens, strict=True):
        assert w in toks
    # The directly built lattice passes the full validation of Lattice.from_lists.
    again = Lattice.from_json_obj(lat.to_json_obj())
    assert again.tokens == lat.tokens
    pruned = channel.build_lattice(obs, top_k=5)
    assert pruned.widths == [min(5, n) for n in lat.widths]


def test_build_lattice_function_matches_channel(vocab: list[str], channel: KeypadChannel) -> None:
    lat = build_lattice(vocab, "843 66639 *", top_k=3)
    ref = channel.build_lattice("843 66639 *", top_k=3)
    assert lat.tokens == ref.tokens
    assert lat.tokens[0][0] == "the" and lat.tokens[1][0] == "money"
    assert set(lat.tokens[2]) == {".", "?", "!"}  # all on key *, equally likely


def test_vocab_filtering() -> None:
    ch = KeypadChannel.from_vocab(["<s>", "</s>", "<unk>", "ab", "ab", "c\u00e9", "x", "."])
    assert ch.words_by_length == {1: (".", "x"), 2: ("ab",)}
    assert ch.vocab_size == 3


@pytest.mark.parametrize(
    ("observation", "pattern"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("3637 abc", r"token 1 'abc': 'a' is not a keypad key"),
        ("5a", r"token 0 '5a': 'a'"),
        ("12 3+4 5", r"token 1 '3\+4': '\+'"),
        ("843 \u0664", "not a keypad key"),
    ],
)
def test_observation_errors(observation: str, pattern: str, channel: KeypadChannel) -> None:
    with pytest.raises(ObservationError, match=pattern) as info:
        channel.build_lattice(observation)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_no_candidates_of_that_length(channel: KeypadChannel) -> None:
    with pytest.raises(NoCandidatesError, match=r"token 1 .*no vocabulary word has length 30"):
        channel.build_lattice("843 " + "2" * 30)
    assert parse_observation(" 843  * \n") == ("843", "*")
    with pytest.raises(ValueError, match="top_k"):
        channel.candidates("843", top_k=0)
