"""decode_many: the same results as per-sentence decode, and the method dispatch."""

from __future__ import annotations

import math
import random

import pytest

import ars_fixtures
import arsdecode.methods.cost_model as cost_model
import arsdecode.methods.dispatch as dispatch
import arsdecode.methods.lockstep as lockstep
import maxarpa
from ars_fixtures import make_lattice
from arsdecode.errors import NoPathError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.lattice.flat import FlatLattices
from arsdecode.methods.ars import decode
from arsdecode.methods.dispatch import decode_many
from arsdecode.methods.fast_full import run_flat
from arsdecode.methods.full import full_log_partition
from arsdecode.model import as_target_model
from maxarpa.model import Model

FIELDS = ("tokens", "log_p", "log_q", "iterations", "states", "ngrams_by_order", "trace",
          "certified", "method")


@pytest.mark.parametrize("variant", ["all-edges", "paper"])
@pytest.mark.parametrize("group", [None, 30], ids=["one-group", "groups-of-30-candidates"])
def test_decode_many_equals_decode(real_lms, random_lms, variant, group, monkeypatch):
    """Field for field, whether the lattices run in one lockstep group or in several."""
    if group is not None:
        monkeypatch.setattr(lockstep, "LOCKSTEP_CANDIDATES", group)
        assert len(lockstep.lockstep_groups(list(range(4)), [20, 20, 5, 40])) == 3
    rng = random.Random(31)
    for model in [real_lms[3], real_lms[5], random_lms[3], random_lms[6]]:
        lattices = [make_lattice(rng, model, max_len=7, max_width=6) for _ in range(12)]
        lattices = [lat for lat in lattices if math.isfinite(full_log_partition(model.lm, lat))]
        many = decode_many(model.lm, lattices, method="ars", variant=variant)
        assert len(many) == len(lattices)
        for lat, got in zip(lattices, many, strict=True):
            want = decode(model.lm, lat, variant=variant)
            for f in FIELDS:
                assert getattr(got, f) == getattr(want, f), (model.name, f, lat.to_json_obj())
        capped = decode_many(model.lm, lattices, method="ars", max_iterations=1)
        for lat, got in zip(lattices, capped, strict=True):
            want = decode(model.lm, lat, max_iterations=1)
            assert (got.tokens, got.certified, got.iterations) == (
                want.tokens, want.certified, want.iterations)


def test_methods_agree_and_auto_records_its_choice(real_lms, monkeypatch):
    model = real_lms[4]
    rng = random.Random(7)
    lattices = [make_lattice(rng, model, max_len=6, max_width=5) for _ in range(10)]
    lattices = [lat for lat in lattices if math.isfinite(full_log_partition(model.lm, lat))]
    ars = decode_many(model.lm, lattices, method="ars")
    full = decode_many(model.lm, lattices, method="full")
    auto = decode_many(model.lm, lattices)
    for a, f, x, lat in zip(ars, full, auto, lattices, strict=True):
        assert a.method == "ars" and f.method == "full"
        assert abs(a.log_p - f.log_p) <= 1e-9 and f.certified
        assert x.method == "full"  # a few hundred pairs: far below dispatch.full_pairs_budgets
        assert x.tokens == f.tokens and x.log_p == f.log_p
        one = dispatch.decode(model.lm, lat)  # the single-lattice entry point agrees
        assert (one.tokens, one.log_p, one.method) == (x.tokens, x.log_p, "full")
    # The budget is then the floor alone: no per-lattice ARS estimate on top.
    for name in ("ARS_SECONDS_PER_POSITION", "ARS_SECONDS_PER_POSITION_SMALL_VOCAB",
                 "ARS_SECONDS_PER_CANDIDATE", "ARS_SECONDS_PER_CUBED_WIDTH",
                 "ARS_SECONDS_PER_POSITION_CANDIDATE"):
        monkeypatch.setattr(cost_model, name, 0.0)
    monkeypatch.setattr(dispatch, "AUTO_FULL_PAIRS", 0)  # every lattice over budget: ARS runs
    monkeypatch.setattr(dispatch, "AUTO_FULL_PAIRS_SMALL_VOCAB", 0)
    # ... and no memory for pairs (a one-candidate lattice can cost one pair, which a budget
    # of one, the floor's rounding, would let through)
    monkeypatch.setattr(dispatch, "memory_pairs_budget", lambda: 0)
    for a, x in zip(ars, decode_many(model.lm, lattices), strict=True):
        assert x.method == "ars"
        assert (x.tokens, x.log_p, x.iterations) == (a.tokens, a.log_p, a.iterations)
    # A budget between the lattices' costs: the full DP abandons the dearer ones, ARS takes them.
    pairs = run_flat(model.lm, FlatLattices.from_lattices(model.lm, lattices)).pairs
    budget = float(sorted(pairs)[len(pairs) // 2])
    assert pairs.min() <= budget < pairs.max()
    monkeypatch.setattr(dispatch, "AUTO_FULL_PAIRS", budget)
    monkeypatch.setattr(dispatch, "memory_pairs_budget", lambda: 2**40)
    mixed = decode_many(model.lm, lattices)
    for a, f, x, cost in zip(ars, full, mixed, pairs, strict=True):
        assert x.method == ("full" if cost <= budget else "ars")
        assert (x.tokens, x.log_p) == ((f.tokens, f.log_p) if cost <= budget
                                       else (a.tokens, a.log_p))


class NoTables:
    """A TargetModel without compiled n-gram tables: the adapter's answers, its n-gram hidden."""

    def __init__(self, lm: Model) -> None:
        self._target = as_target_model(lm)
        self.order, self.bos, self.eos = self._target.order, self._target.bos, self._target.eos

    def ids(self, tokens):
        return self._target.ids(tokens)

    def word(self, word_id):
        return self._target.word(word_id)

    def log_prob(self, contexts, words):
        return self._target.log_prob(contexts, words)

    def log_bound(self, contexts, words):
        return self._target.log_bound(contexts, words)

    def is_exact(self, position, context):
        return self._target.is_exact(position, context)

    def minimal_context(self, contexts):
        return self._target.minimal_context(contexts)


def test_a_target_without_compiled_tables_gets_full_and_auto(real_lms):
    """"full" falls back to the numpy reference DP, "auto" to ARS, through decode and
    decode_many alike."""
    model = real_lms[3]
    target = NoTables(model.lm)
    assert dispatch.auto_budgets(target, cost_model.LatticeSizes.of_flat(
        FlatLattices.from_lattices(target, []))) is None
    rng = random.Random(5)
    lattices = [make_lattice(rng, model, max_len=6, max_width=5) for _ in range(8)]
    lattices = [lat for lat in lattices if math.isfinite(full_log_partition(model.lm, lat))]
    ars = decode_many(model.lm, lattices, method="ars")
    full = decode_many(target, lattices, method="full")
    auto = decode_many(target, lattices)
    for a, f, x, lat in zip(ars, full, auto, lattices, strict=True):
        assert f.method == "full" and abs(f.log_p - a.log_p) <= 1e-9
        assert x.method == "ars" and (x.tokens, x.log_p) == (a.tokens, a.log_p)
        one = dispatch.decode(target, lat, method="full")
        assert (one.tokens, one.log_p, one.method) == (f.tokens, f.log_p, "full")
        one = dispatch.decode(target, lat)
        assert (one.tokens, one.log_p, one.method) == (a.tokens, a.log_p, "ars")


def test_bad_method_and_impossible_lattice(tmp_path, random_lms):
    lat = make_lattice(random.Random(0), random_lms[0])
    with pytest.raises(OptionError):
        decode_many(random_lms[0].lm, [lat], method="beam")
    path = tmp_path / "impossible.arpa"
    path.write_text(ars_fixtures.IMPOSSIBLE_ARPA)
    lm = maxarpa.load(path)
    bad = Lattice.from_lists([[("a", 0.0)], [("a", -1.0)]])
    for method in ("ars", "full"):
        with pytest.raises(NoPathError, match="lattice 1"):
            decode_many(lm, [Lattice.from_lists([[("zz", 0.0)]]), bad], method=method)
    assert decode_many(lm, []) == []


def test_pruning_changes_nothing_but_work(real_lms, random_lms):
    rng = random.Random(8)
    for model in [real_lms[4], random_lms[5]]:
        for _ in range(15):
            lat = make_lattice(rng, model, max_len=8, max_width=8)
            try:
                a = decode(model.lm, lat, prune=True)
            except NoPathError:
                continue
            b = decode(model.lm, lat, prune=False)
            for f in FIELDS:
                assert getattr(a, f) == getattr(b, f), (model.name, f, lat.to_json_obj())
