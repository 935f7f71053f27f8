"""The POS emission model on the real training split (treebank sample + CoNLL-2000 train).

Why real data: normalisation and the suffix model's edge cases (classes, tags absent from
rare words, sentence-initial words) only show up on a real lexicon. A missing corpus is an
error, not a skip, as everywhere in this test suite.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import random
from collections import Counter, defaultdict

import numpy as np
import pytest

import maxarpa
from arsdecode.lattice import Lattice
from arsdecode.tasks.pos.emissions import TnTEmissions
from arsdecode.tasks.pos.evaluation import read_tagged, score_tags, write_tagged
from arsdecode.tasks.pos.suffix import SuffixTrie
from corpora import corpus_dir_or_skip
from data_prep.pos_data import (
    deleted_interpolation_arpa,
    ngram_counts,
    parse_mrg,
    read_conll2000,
    read_treebank,
)


@pytest.fixture(scope="module")
def split() -> tuple[list, list]:
    data_dir = corpus_dir_or_skip("treebank", "conll2000")
    train = read_treebank(data_dir) + read_conll2000(data_dir, "train")
    return train, read_conll2000(data_dir, "test")


@pytest.fixture(scope="module")
def model(split: tuple[list, list]) -> TnTEmissions:
    return TnTEmissions.train(split[0])


@pytest.fixture(scope="module")
def seen_tags(split: tuple[list, list]) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = defaultdict(set)
    for sent in split[0]:
        for w, t in sent:
            seen[w].add(t)
    return seen


def unknown_words(model: TnTEmissions, split: tuple[list, list]) -> list[str]:
    test_unknown = sorted({w for s in split[1] for w, _ in s if not model.is_known(w)})
    made_up = ["Qwxzblorp", "blargification", "zorbified", "12,345.67x", "Über-Frobs", "-", "Ω"]
    return test_unknown + [w for w in made_up if not model.is_known(w)]


def test_split_sizes(split: tuple[list, list], model: TnTEmissions) -> None:
    train, test = split
    assert sum(map(len, train)) == 305_811  # treebank 94,084 (no traces) + CoNLL 211,727
    assert sum(map(len, test)) == 47_377
    assert len(model.tags) == 45
    assert {"(", ")", "``", "''", "$", "#"} <= set(model.tags)
    assert not any(t.startswith("-") for t in model.tags)  # no -NONE-, -LRB-, -RRB-


def test_emissions_normalise_per_tag(model: TnTEmissions) -> None:
    """sum over known words of p(w | t) + u(t) = 1 for every tag."""
    parts: dict[str, list[float]] = defaultdict(list)
    for w in model.vocabulary:
        for t, lp in model.known_log_emissions(w).items():
            parts[t].append(math.exp(lp))
    unk = model.unknown_mass
    assert set(parts) == set(model.tags) == set(unk)
    for t in model.tags:
        assert 0.0 <= unk[t] < 1.0
        assert math.fsum([*parts[t], unk[t]]) == pytest.approx(1.0, abs=1e-9), t


def test_unknown_mass_splits_by_class(model: TnTEmissions) -> None:
    total = model.unknown_mass
    upper, lower = model.unknown_class_mass("Xyz"), model.unknown_class_mass("xyz")
    for t in model.tags:
        assert upper[t] + lower[t] == pytest.approx(total[t], abs=1e-12)
    assert upper["NNP"] > lower["NNP"] and lower["VBG"] > upper["VBG"]
    # Closed classes barely take new words (not exactly 0: CoNLL's Brill tags have slips).
    assert total["DT"] < 1e-3 and total["TO"] < 1e-3 and total["NNP"] > 0.05


def test_suffix_posterior_sums_to_one(model: TnTEmissions, split: tuple[list, list]) -> None:
    rng = random.Random(0)
    words = unknown_words(model, split)
    words += rng.sample(sorted(model.vocabulary), 500)
    words += [
        "".join(rng.choice("abcdeIngs-.") for _ in range(rng.randint(1, 14))) for _ in range(200)
    ]
    for w in words:
        p = model.suffix_posterior(w)
        assert min(p.values()) >= 0.0
        assert math.fsum(p.values()) == pytest.approx(1.0, abs=1e-9), w


def test_suffix_model_behaves_like_tnt(model: TnTEmissions) -> None:
    def best(word: str) -> str:
        post = model.suffix_posterior(word)
        return max(post, key=post.__getitem__)

    assert best("blicking") == "VBG"
    assert best("zorbified") in {"VBN", "VBD"}
    assert best("Glorbington") == "NNP"
    assert best("blorps") == "NNS"
    assert best("quuxly") == "RB"


def test_unknown_weights_are_a_bayes_inversion(
    model: TnTEmissions, split: tuple[list, list]
) -> None:
    """sum_t P(t | UNK_k) * weight(w, t) / u_k(t) = sum_t P(t | UNK_k, w) = 1."""
    tag_counts = Counter(t for s in split[0] for _, t in s)
    for w in unknown_words(model, split)[::7]:
        prior, mass = model.unknown_prior(w), model.unknown_class_mass(w)
        weights = model.unknown_log_emissions(w)
        assert set(weights) == {t for t, p in prior.items() if p > 0}
        total = math.fsum(prior[t] * math.exp(lw) / mass[t] for t, lw in weights.items())
        assert total == pytest.approx(1.0, abs=1e-9), w
        # Across tags the weight is TnT's P(t | suffix) / P(t), up to one constant.
        post = model.suffix_posterior(w)
        offsets = [lw - math.log(post[t]) + math.log(tag_counts[t]) for t, lw in weights.items()]
        assert max(offsets) - min(offsets) < 1e-9, w


def test_known_word_candidates_are_the_seen_tags(
    model: TnTEmissions, seen_tags: dict[str, set[str]]
) -> None:
    rng = random.Random(1)
    sample = rng.sample(sorted(seen_tags), 2000) + ["the", "that", "run", "back", "."]
    for w in sample:
        lat = model.lattice(["the", w])
        assert set(lat.tokens[1]) == seen_tags[w], w
        if w[:1].isupper() or w.lower() not in seen_tags:
            assert set(model.lattice([w]).tokens[0]) == seen_tags[w]


def test_unknown_word_lattices(model: TnTEmissions, split: tuple[list, list]) -> None:
    for w in unknown_words(model, split)[:300]:
        lat = model.lattice(["the", w])
        assert 0 < len(lat.tokens[1]) <= len(model.tags)
        assert set(lat.tokens[1]) <= set(model.tags)
        assert all(math.isfinite(x) for x in lat.log_emissions[1])
    pruned = model.lattice(["the", "zorbified"], beam=5.0)
    assert 0 < len(pruned.tokens[1]) < len(model.lattice(["the", "zorbified"]).tokens[1])


def test_sentence_initial_capital_falls_back_to_lower_case(
    model: TnTEmissions, split: tuple[list, list], seen_tags: dict[str, set[str]]
) -> None:
    word = next(
        w
        for w in sorted(seen_tags)
        if w.islower() and w.isalpha() and len(w) > 4 and not model.is_known(w.capitalize())
    )
    cap = word.capitalize()
    assert model.lattice([cap, "."]).tokens[0] == model.lattice([word, "."]).tokens[0]
    assert set(model.lattice(["the", cap]).tokens[1]) == set(model.unknown_log_emissions(cap))
    no_rule = TnTEmissions.train(split[0], sentence_initial=False)
    assert set(no_rule.lattice([cap]).tokens[0]) == set(no_rule.unknown_log_emissions(cap))


def test_bad_input_raises_clear_errors(model: TnTEmissions) -> None:
    with pytest.raises(ValueError, match="empty sentence"):
        model.lattice([])
    with pytest.raises(ValueError, match="not one string"):
        model.lattice("the cat")
    with pytest.raises(ValueError, match="empty word"):
        model.lattice(["the", ""])
    with pytest.raises(ValueError, match="beam"):
        model.lattice(["the"], beam=-1.0)
    with pytest.raises(ValueError, match="empty training set"):
        TnTEmissions.train([])


def test_save_load_roundtrip(model: TnTEmissions, tmp_path) -> None:
    path = model.save(tmp_path / "em.json.gz")
    again = TnTEmissions.load(path)
    assert again.tags == model.tags
    for words in (["The", "zorbified", "man", "runs", "."], ["Unlike", "GLORBCO", "'s", "x"]):
        a, b = model.lattice(words), again.lattice(words)
        assert a.tokens == b.tokens
        for x, y in zip(a.log_emissions, b.log_emissions, strict=True):
            assert x.tolist() == y.tolist()
    assert again.suffix_alpha == model.suffix_alpha == 50.0
    # Version-1 files predate suffix_alpha and meant TnT's theta weighting.
    with gzip.open(path, "rt", encoding="utf-8") as f:
        obj = json.load(f)
    obj["version"] = 1
    del obj["settings"]["suffix_alpha"]
    with gzip.open(tmp_path / "v1.json.gz", "wt", encoding="utf-8") as f:
        json.dump(obj, f)
    assert TnTEmissions.load(tmp_path / "v1.json.gz").suffix_alpha is None
    (tmp_path / "bad.json.gz").write_bytes(b"not gzip")
    with pytest.raises(ValueError, match="cannot read POS emission model"):
        TnTEmissions.load(tmp_path / "bad.json.gz")


def test_tagged_files_and_scoring(tmp_path) -> None:
    sents = [[("The", "DT"), ("cat", "NN")], [("Runs", "VBZ")]]
    assert write_tagged(sents, tmp_path / "x.tsv") == 3
    assert read_tagged(tmp_path / "x.tsv") == sents
    acc = score_tags(sents, [["DT", "VB"], ["VBZ"]], {"The", "cat"})
    assert (acc.tokens, acc.correct, acc.known_tokens, acc.known_correct) == (3, 2, 2, 1)
    assert acc.unknown == 1.0
    with pytest.raises(ValueError, match="predicted tags"):
        score_tags(sents, [["DT"], ["VBZ"]], set())


def test_parse_mrg_drops_traces_and_maps_brackets() -> None:
    text = "( (S (NP-SBJ (-NONE- *-1) ) (-LRB- -LRB-) (NN x) (-RRB- -RCB-) (. .) ))\n( (X (CD 1)))"
    assert parse_mrg(text) == [
        [("-LRB-", "("), ("x", "NN"), ("-RCB-", ")"), (".", ".")],
        [("1", "CD")],
    ]


def test_lattice_is_a_valid_arsdecode_lattice(model: TnTEmissions) -> None:
    lat = model.lattice(["Pierre", "Vinken", ",", "61", "years", "old", "."])
    assert isinstance(lat, Lattice) and len(lat) == 7
    assert lat.tokens[2] == (",",) and lat.log_emissions[2][0] < 0


def test_suffix_abstraction_weights_by_count() -> None:
    """Dirichlet successive abstraction: a suffix seen once barely moves the estimate."""
    tags = ("NN", "VBG")
    words = [("thing", {"NN": 40}), ("blicking", {"VBG": 1})] + [("sing", {"VBG": 10})]
    trie = SuffixTrie.build(tags, words, theta=0.05, alpha=50.0)
    tnt = SuffixTrie.build(tags, words, theta=0.05, alpha=None)
    root = trie.root
    assert root.tolist() == pytest.approx([40 / 51, 11 / 51])
    # "ng" has 51 tokens: (51 P^ + 50 root) / 101 = root; "ing" same; "king" has one VBG token.
    p_king = (np.array([0.0, 1.0]) + 50 * root) / 51
    assert trie.posterior("xking").tolist() == pytest.approx(p_king.tolist())
    assert tnt.posterior("xking")[1] > 0.9 > trie.posterior("xking")[1]
    with pytest.raises(ValueError, match="alpha"):
        SuffixTrie.build(tags, words, theta=0.05, alpha=0.0)


def test_deleted_interpolation_arpa_is_normalised(tmp_path) -> None:
    rng = random.Random(3)
    tags = ["A", "B", "C", "D"]
    sents = [
        [rng.choice(tags[: rng.randint(1, 4)]) for _ in range(rng.randint(1, 6))]
        for _ in range(80)
    ]
    path, lambdas = deleted_interpolation_arpa(sents, 3, tmp_path / "t.arpa")
    assert len(lambdas) == 4 and lambdas[0] == 0 and math.fsum(lambdas) == pytest.approx(1.0)
    lm = maxarpa.load(path)
    vocab = [*tags, "</s>"]
    histories = [["<s>"]] + [[a, b] for a, b in itertools.product(["<s>", *tags], tags)]
    histories += [[a] for a in tags]
    for h in histories:
        total = math.fsum(10 ** lm.log10p(w, h) for w in vocab)
        assert total == pytest.approx(1.0, abs=1e-6), h
    # A seen trigram is the interpolation of ML estimates with a_k = l_k / (l_1 + .. + l_k).
    counts = ngram_counts(sents, 3)
    big = sum(counts[1].values())
    (h1, h2, w), c3 = counts[3].most_common(1)[0]
    ctx3 = sum(c for g, c in counts[3].items() if g[:2] == (h1, h2))
    ctx2 = sum(c for g, c in counts[2].items() if g[:1] == (h2,))
    a2, a3 = lambdas[2] / (lambdas[1] + lambdas[2]), lambdas[3]
    p2 = a2 * counts[2][(h2, w)] / ctx2 + (1 - a2) * counts[1][(w,)] / big
    assert 10 ** lm.log10p(w, [h1, h2]) == pytest.approx(a3 * c3 / ctx3 + (1 - a3) * p2, rel=1e-7)
