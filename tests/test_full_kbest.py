"""Exact k-best on the merged full DP (arsdecode.methods.full.full_kbest) against brute-force
enumeration (arsdecode.testing.brute) and against ARS k-best (arsdecode.methods.kbest).

Checked: the K ln p equal the K largest brute-force ln p (1e-9); each returned path's ln p is
its brute-force score; the paths are distinct, ordered by ln p then candidate indices; no path
left out beats the K-th (the same set up to ties at the K-th place); K larger than the number
of paths returns exactly the paths of probability > 0; merged and literal state spaces agree;
exact ties come out lexicographically (as ARS k-best documents); dispatch's method="full"
runs it; a hand-written TargetModel (tests/test_toy_target.py) works through the front door.
"""

from __future__ import annotations

import math
import random

import pytest

import ars_fixtures
import arsdecode
import maxarpa
from ars_fixtures import make_lattice
from arsdecode.errors import NoPathError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.methods.full import full_kbest
from arsdecode.methods.kbest import decode_kbest
from arsdecode.methods.results import KBestResult
from arsdecode.testing.brute import BruteResult, brute_model, brute_target

TIGHT = 1e-9


def check_against(ref: dict[tuple[str, ...], float], r: KBestResult, k: int, where,
                  lattice: Lattice) -> None:
    """`r` is the top K of the brute-force scores `ref` (path tokens -> ln p)."""
    assert r.certified and r.method == "full", where
    finite = sorted((lp for lp in ref.values() if lp > -math.inf), reverse=True)
    assert len(r.paths) == min(k, len(finite)), where
    assert len({p.indices for p in r.paths}) == len(r.paths), where  # distinct
    for p in r.paths:
        assert p.tokens == [lattice.tokens[i][j] for i, j in enumerate(p.indices)], where
        assert abs(ref[tuple(p.tokens)] - p.log_p) <= TIGHT, where
        assert p.log_q == p.log_p, where
    assert [(-p.log_p, p.indices) for p in r.paths] == sorted(
        (-p.log_p, p.indices) for p in r.paths), where
    got = [p.log_p for p in r.paths]
    for a, b in zip(got, finite):
        assert abs(a - b) <= TIGHT, (where, got, finite[:k])
    if got:  # the same set as brute force's top K, up to ties at the K-th place
        chosen = {tuple(p.tokens) for p in r.paths}
        for path, lp in ref.items():
            if path not in chosen and lp > -math.inf:
                assert len(r.paths) == k and lp <= got[-1] + TIGHT, (where, path, lp)


def as_dict(ref: BruteResult) -> dict[tuple[str, ...], float]:
    return dict(zip(ref.paths, ref.log_p, strict=True))


def check(model, lattice: Lattice, k: int) -> None:
    ref = as_dict(brute_model(model.lm, lattice))
    where = (model.name, k, lattice.to_json_obj())
    if max(ref.values()) == -math.inf:
        with pytest.raises(NoPathError):
            full_kbest(model.lm, lattice, k)
        return
    r = full_kbest(model.lm, lattice, k)
    check_against(ref, r, k, where, lattice)
    literal = full_kbest(model.lm, lattice, k, minimize=False)
    assert [p.indices for p in literal.paths] == [p.indices for p in r.paths] or all(
        abs(a.log_p - b.log_p) <= TIGHT for a, b in zip(literal.paths, r.paths, strict=True))


@pytest.mark.parametrize("k", [1, 3, 10])
def test_random_models(random_lms, k):
    rng = random.Random(140 + k)
    for model in random_lms:
        for _ in range(6):
            check(model, make_lattice(rng, model, max_len=5, max_width=3), k)


@pytest.mark.parametrize("order", [3, 5])
def test_real_models(real_lms, order):
    model = real_lms[order]
    rng = random.Random(100 + order)
    for _ in range(8):
        lattice = make_lattice(rng, model, max_len=5, max_width=4, neg_inf=0.1)
        check(model, lattice, rng.choice([2, 5, 20]))


def test_k_larger_than_paths_excludes_zero_probability(random_lms):
    rng = random.Random(8)
    seen_zero = False
    for model in random_lms:
        for _ in range(4):
            lattice = make_lattice(rng, model, max_len=3, max_width=3, neg_inf=0.6)
            ref = brute_model(model.lm, lattice)
            n = lattice.num_paths()
            live = sum(lp > -math.inf for lp in ref.log_p)
            seen_zero |= 0 < live < n
            check(model, lattice, n + 7)
            if live:
                assert len(full_kbest(model.lm, lattice, n + 7).paths) == live
    assert seen_zero  # the test had zero-probability paths to leave out


def test_equals_ars_kbest(random_lms, real_lms):
    rng = random.Random(21)
    for model in [random_lms[0], random_lms[4], real_lms[3]]:
        for _ in range(6):
            lattice = make_lattice(rng, model, max_len=5, max_width=4)
            k = rng.choice([1, 4, 12])
            try:
                ars = decode_kbest(model.lm, lattice, k)
            except NoPathError:
                with pytest.raises(NoPathError):
                    full_kbest(model.lm, lattice, k)
                continue
            full = full_kbest(model.lm, lattice, k)
            assert len(full.paths) == len(ars.paths)
            for a, b in zip(full.paths, ars.paths, strict=True):
                assert abs(a.log_p - b.log_p) <= TIGHT
            top = full.paths[-1].log_p
            assert ({p.indices for p in full.paths if p.log_p > top + TIGHT}
                    == {p.indices for p in ars.paths if p.log_p > top + TIGHT})


def test_ties_are_lexicographic_like_ars(tmp_path):
    from test_kbest import UNIGRAM_TIES

    path = tmp_path / "ties.arpa"
    path.write_text(UNIGRAM_TIES)
    lm = maxarpa.load(path)
    lattice = Lattice.from_lists([[("a", -1.0), ("b", -1.0)], [("b", -0.5), ("a", -0.5)],
                                  [("a", 0.0), ("b", 0.0)]])
    everything = full_kbest(lm, lattice, 8)
    assert [p.indices for p in everything.paths] == sorted(p.indices for p in everything.paths)
    for k in (1, 2, 3, 5):
        got = [p.indices for p in full_kbest(lm, lattice, k).paths]
        assert got == [p.indices for p in everything.paths][:k]
        assert got == [p.indices for p in decode_kbest(lm, lattice, k).paths]


def test_dispatch_method_full(random_lms):
    model = random_lms[2]
    rng = random.Random(77)
    ran = 0
    for _ in range(10):
        lat = make_lattice(rng, model, max_len=4, max_width=3)
        try:
            r = arsdecode.decode(model.lm, lat, method="full", k=4)
        except NoPathError:
            continue
        ran += 1
        assert r.method == "full"
        check_against(as_dict(brute_model(model.lm, lat)), r, 4, lat.to_json_obj(), lat)
        assert arsdecode.decode(model.lm, lat, method="ars", k=4).method == "ars"
        auto = arsdecode.decode(model.lm, lat, method="auto", k=4)
        assert auto.method == "full"  # the compiled DP's k-best, well within its budget
        check_against(as_dict(brute_model(model.lm, lat)), auto, 4, lat.to_json_obj(), lat)
    assert ran


def test_errors(random_lms, tmp_path):
    model = random_lms[3]
    lattice = make_lattice(random.Random(5), model, max_len=5)
    with pytest.raises(OptionError):
        full_kbest(model.lm, lattice, 0)
    path = tmp_path / "imp.arpa"
    path.write_text(ars_fixtures.IMPOSSIBLE_ARPA)
    with pytest.raises(NoPathError):
        full_kbest(maxarpa.load(path), Lattice.from_lists([[("a", 0.0)]]), 3)


def test_toy_target():
    """A TargetModel that is not a maxarpa model (test_toy_target.ToyTrigram, with a real
    `minimal_context` cut), against its own scalar scoring and against brute_target."""
    from test_toy_target import ToyTrigram, brute_force, random_lattice

    rng = random.Random(31)
    ran = 0
    for seed in range(3):
        toy = ToyTrigram(seed)
        for _ in range(8):
            lattice = random_lattice(rng)
            ref = brute_force(toy, lattice)
            k = rng.choice([1, 3, 30])
            if max(ref.values()) == -math.inf:
                with pytest.raises(NoPathError):
                    arsdecode.decode(toy, lattice, method="full", k=k)
                continue
            ran += 1
            r = arsdecode.decode(toy, lattice, method="full", k=k)
            check_against(ref, r, k, (seed, lattice.to_json_obj()), lattice)
            check_against(as_dict(brute_target(toy, lattice)), r, k, lattice.to_json_obj(),
                          lattice)
            literal = full_kbest(toy, lattice, k, minimize=False)
            for a, b in zip(literal.paths, r.paths, strict=True):
                assert abs(a.log_p - b.log_p) <= TIGHT
    assert ran >= 12


BIGRAM_TIES = """
\\data\\
ngram 1=5
ngram 2=8

\\1-grams:
-1.0\t<unk>
-99\t<s>\t-0.3
-0.5\t</s>
-0.6\ta\t-0.2
-0.6\tb\t-0.2

\\2-grams:
-0.4\t<s> a
-0.4\t<s> b
-0.4\ta a
-0.4\ta b
-0.4\tb a
-0.4\tb b
-0.3\ta </s>
-0.3\tb </s>

\\end\\
"""


def test_ties_across_states_are_lexicographic(tmp_path):
    """Every path ties exactly, and after position 1 the DP has two states (a and b): the
    K-lists still keep the lexicographically first paths, as ARS k-best does."""
    path = tmp_path / "ties2.arpa"
    path.write_text(BIGRAM_TIES)
    lm = maxarpa.load(path)
    lattice = Lattice.from_lists([[("b", -1.0), ("a", -1.0)]] * 2 + [[("a", 0.0), ("b", 0.0)]]
                                 + [[("b", -0.2), ("a", -0.2)]])
    everything = full_kbest(lm, lattice, 16)
    assert everything.states > 1 + 4  # merged states kept the last word apart
    assert len({p.log_p for p in everything.paths}) == 1
    assert [p.indices for p in everything.paths] == sorted(p.indices for p in everything.paths)
    for k in (1, 2, 3, 5, 9):
        got = [p.indices for p in full_kbest(lm, lattice, k).paths]
        assert got == [p.indices for p in everything.paths][:k]
        assert got == [p.indices for p in decode_kbest(lm, lattice, k).paths]
