"""Exact k-best decoding (arsdecode.methods.kbest) against brute-force enumeration
(arsdecode.testing.brute).

Checked: every returned path's ln p equals its brute-force score; the list is sorted by ln p;
its scores equal the K largest brute-force scores; no path left out beats the K-th; K larger
than the number of paths returns every path of probability > 0; ties come out in the
documented order; the same call gives the same output.
"""

from __future__ import annotations

import math
import random

import pytest

import ars_fixtures
import maxarpa
from ars_fixtures import make_lattice
from arsdecode.core.automaton import QAutomaton
from arsdecode.errors import NoPathError
from arsdecode.lattice import Lattice
from arsdecode.methods.kbest import decode_kbest, kbest_q
from arsdecode.model import as_target_model
from arsdecode.testing.brute import brute_model

TIGHT = 1e-9


def check_kbest(model, lattice: Lattice, k: int, variant: str = "all-edges") -> None:
    ref = brute_model(model.lm, lattice)
    where = (model.name, k, lattice.to_json_obj())
    r = decode_kbest(model.lm, lattice, k, variant=variant)
    assert r.certified, where
    finite = sorted((lp for lp in ref.log_p if lp > -math.inf), reverse=True)
    assert len(r.paths) == min(k, len(finite)), where
    assert len({tuple(p.tokens) for p in r.paths}) == len(r.paths), where  # distinct
    for p in r.paths:
        assert abs(ref.score(p.tokens) - p.log_p) <= TIGHT, where
        assert abs(p.log_q - p.log_p) <= 1e-6, where
    got = [p.log_p for p in r.paths]
    assert got == sorted(got, reverse=True), where
    for a, b in zip(got, finite):
        assert abs(a - b) <= TIGHT, (where, got, finite[:k])
    if len(r.paths) == k:  # nothing left out beats the K-th
        chosen = {tuple(p.tokens) for p in r.paths}
        for path, lp in zip(ref.paths, ref.log_p):
            if path not in chosen:
                assert lp <= got[-1] + TIGHT, (where, path, lp)


@pytest.mark.parametrize("k", [1, 3, 10])
def test_random_models(random_lms, k):
    rng = random.Random(40 + k)
    for model in random_lms:
        for _ in range(6):
            lattice = make_lattice(rng, model, max_len=5, max_width=3)
            check_kbest(model, lattice, k, variant=rng.choice(["all-edges", "paper"]))


@pytest.mark.parametrize("order", [3, 5])
def test_real_models(real_lms, order):
    model = real_lms[order]
    rng = random.Random(order)
    for _ in range(8):
        lattice = make_lattice(rng, model, max_len=5, max_width=4, neg_inf=0.1)
        check_kbest(model, lattice, rng.choice([2, 5, 20]))


def test_k_larger_than_paths(random_lms):
    model = random_lms[1]
    rng = random.Random(3)
    lattice = make_lattice(rng, model, max_len=3, max_width=2, neg_inf=0.5)
    n = lattice.num_paths()
    check_kbest(model, lattice, n + 7)
    r = decode_kbest(model.lm, lattice, n + 7)
    assert len(r.paths) == sum(lp > -math.inf for lp in brute_model(model.lm, lattice).log_p)



@pytest.mark.parametrize("method", ["auto", "full", "ars"])
def test_a_huge_k_is_cut_to_the_number_of_paths(random_lms, method):
    """decode_kbest(lm, lattice, 10**12) tried to allocate 7.28 TiB (K scores per state); the
    CLI's --nbest was already cut to the number of paths, now the API is too."""
    import arsdecode

    model = random_lms[1]
    lattice = make_lattice(random.Random(3), model, max_len=3, max_width=2, neg_inf=0.5)
    r = arsdecode.decode_kbest(model.lm, lattice, 10**12, method=method)
    want = sorted((lp for lp in brute_model(model.lm, lattice).log_p if lp > -math.inf),
                  reverse=True)
    assert r.certified and [p.log_p for p in r.paths] == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("method", ["auto", "full", "ars"])
def test_a_huge_k_on_a_huge_lattice_is_refused_in_one_line(random_lms, method):
    """Cutting k to the number of paths is no help when the lattice has 10**40 of them:
    decode_kbest(lm, lattice, 10**12) then died in numpy with an allocation traceback. It is
    refused before any work, naming k and the budget."""
    import arsdecode
    from arsdecode.errors import OptionError

    model = random_lms[1]
    words = sorted(set(model.words))[:10]
    lattice = Lattice.from_lists([[(w, -1.0) for w in words]] * 40)  # len(words)**40 paths
    with pytest.raises(OptionError, match=r"^k=1000000000000: .* memory budget") as info:
        arsdecode.decode_kbest(model.lm, lattice, 10**12, method=method)
    assert "\n" not in str(info.value)


UNIGRAM_TIES = """
\\data\\
ngram 1=5

\\1-grams:
-1.0\t<unk>
-99\t<s>
-0.5\t</s>
-0.6\ta
-0.6\tb

\\end\\
"""


def test_ties_are_lexicographic(tmp_path):
    """A unigram model where a and b score the same: all 4 paths of [a|b][b|a] tie in p, and
    the documented order is lexicographic by candidate index (lattice order)."""
    path = tmp_path / "ties.arpa"
    path.write_text(UNIGRAM_TIES)
    lm = maxarpa.load(path)
    lattice = Lattice.from_lists([[("a", -1.0), ("b", -1.0)], [("b", -0.5), ("a", -0.5)]])
    r = decode_kbest(lm, lattice, 4)
    assert [p.indices for p in r.paths] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert len({p.log_p for p in r.paths}) == 1
    r2 = decode_kbest(lm, lattice, 2)
    assert [p.tokens for p in r2.paths] == [["a", "b"], ["a", "a"]]


def test_kbest_q_matches_enumeration(random_lms):
    """k-best Viterbi on q itself (before any refinement) against enumerating q."""
    import itertools

    model = random_lms[5]
    lattice = make_lattice(random.Random(9), model, max_len=4, max_width=3)
    qa = QAutomaton(as_target_model(model.lm), lattice)
    everything = sorted(
        (qa.log_q_indices(list(c)) for c in itertools.product(*map(range, lattice.widths))),
        reverse=True)
    best = kbest_q(qa, 6)
    for (_, score), want in zip(best, everything):
        assert abs(score - want) <= TIGHT


def test_deterministic_and_errors(random_lms):
    model = random_lms[3]
    lattice = make_lattice(random.Random(5), model, max_len=5)
    a, b = decode_kbest(model.lm, lattice, 5), decode_kbest(model.lm, lattice, 5)
    assert [p.indices for p in a.paths] == [p.indices for p in b.paths]
    with pytest.raises(ValueError):
        decode_kbest(model.lm, lattice, 0)


def test_no_path(tmp_path):
    path = tmp_path / "imp.arpa"
    path.write_text(ars_fixtures.IMPOSSIBLE_ARPA)
    lattice = Lattice.from_lists([[("a", 0.0)]])
    with pytest.raises(NoPathError):
        decode_kbest(maxarpa.load(path), lattice, 3)


def test_cli_nbest_json_is_the_brute_force_top_k(tmp_path):
    """`decode --nbest K --json`: tokens/log_p stay the single best, "nbest" is the exact top K."""
    import json
    import subprocess
    import sys

    from arsdecode.api import DEFAULT_LM

    lm = maxarpa.load(DEFAULT_LM)
    lat = Lattice.from_lists([[("the", -0.1), ("a", -0.5), ("this", -1.0)],
                              [("united", -0.2), ("state", -0.3)],
                              [("states", 0.0), ("nation", -0.4)]])
    path = tmp_path / "lat.json"
    path.write_text(json.dumps(lat.to_json_obj()))
    proc = subprocess.run([sys.executable, "-m", "arsdecode", "decode", "--lm", str(DEFAULT_LM),
                           "--lattice", str(path), "--nbest", "5", "--json"],
                          capture_output=True, text=True, check=True)
    out = json.loads(proc.stdout)
    brute = brute_model(lm, lat)
    top = sorted(zip(brute.log_p, brute.paths), key=lambda x: -x[0])[:5]
    assert [tuple(p["tokens"]) for p in out["nbest"]] == [p for _, p in top]
    for got, (want, _) in zip(out["nbest"], top, strict=True):
        assert abs(got["log_p"] - want) <= 1e-9
    assert out["tokens"] == out["nbest"][0]["tokens"] and out["certified"]


def test_public_decode_with_k_is_decode_kbest(random_lms):
    """`arsdecode.decode(lm, lattice, k=K)` is the certified K-best, as brute force ranks it."""
    import arsdecode

    model = random_lms[2]
    rng = random.Random(77)
    for _ in range(10):
        lat = make_lattice(rng, model, max_len=4, max_width=3)
        try:
            r = arsdecode.decode(model.lm, lat, k=4)
        except NoPathError:
            continue
        brute = brute_model(model.lm, lat)
        want = sorted((lp for lp in brute.log_p if lp > -math.inf), reverse=True)[:4]
        assert r.certified and len(r.paths) == len(want)
        for got, lp in zip(r.paths, want, strict=True):
            assert abs(got.log_p - lp) <= 1e-9


@pytest.mark.parametrize("variant", ["all-edges", "paper"])
def test_k1_is_decode_without_pruning(random_lms, real_lms, variant):
    """K = 1 runs the very iteration of `ars.decode` (one ArsDecoder: same check, stopping
    rule, refinement): the same path, scores, iterations, automaton size and certificate."""
    from arsdecode.methods.ars import decode

    rng = random.Random(11)
    for model in [random_lms[2], random_lms[5], real_lms[3]]:
        for _ in range(8):
            lattice = make_lattice(rng, model, max_len=6, max_width=5)
            try:
                want = decode(model.lm, lattice, variant=variant, prune=False)
            except NoPathError:
                with pytest.raises(NoPathError):
                    decode_kbest(model.lm, lattice, 1, variant=variant)
                continue
            got = decode_kbest(model.lm, lattice, 1, variant=variant)
            [path] = got.paths
            assert (path.tokens, path.log_p, path.log_q) == (want.tokens, want.log_p, want.log_q)
            assert (got.iterations, got.states, got.certified) == (
                want.iterations, want.states, want.certified)
            capped = decode_kbest(model.lm, lattice, 1, variant=variant, max_iterations=1)
            first = decode(model.lm, lattice, variant=variant, prune=False, max_iterations=1)
            assert (capped.certified, capped.iterations, capped.states) == (
                first.certified, first.iterations, first.states)
