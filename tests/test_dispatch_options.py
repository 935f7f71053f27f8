"""One way in (issue 30): `methods.dispatch` checks every option before any work.

For each operation (decode, decode_kbest, decode_many, sample, marginals) x lattice kind
(confusion network, word lattice) x method: an option that operation does not take there is
an OptionError naming it, raised before the lattice is looked at (the refusal tests decode a
word that their model, which has no <unk>, does not know, so any work would end in
maxarpa's UnknownWordError instead); an
option it does take, given a value other than its default, runs. Before this, options were
silently dropped (`unique` on a confusion network's k-best, `method` on a word lattice's
k-best, every ARS option on the compiled DP) or died as a TypeError outside the error tree.
"""

from __future__ import annotations

import numpy as np
import pytest

import maxarpa
from arsdecode import api
from arsdecode.errors import OptionError
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.methods import dispatch, dispatch_posteriors
from arsdecode.methods.options import REFUSED_METHODS, TABLE
from maxarpa.errors import UnknownWordError

ARPA = """\\data\\
ngram 1=5
ngram 2=4

\\1-grams:
-1.0 <s> -0.3
-0.7 </s>
-0.6 a -0.2
-0.5 b -0.2
-1.2 <unk>

\\2-grams:
-0.2 <s> a
-0.4 a b
-0.3 b </s>
-0.5 b a

\\end\\
"""

# A value other than the default for every option any engine takes.
NON_DEFAULT = {
    "variant": "paper", "max_iterations": 50, "tol": 1e-7, "on_iteration": lambda *a: None,
    "keep_automaton": True, "prune": True, "unique": True, "batch": 7, "target_ar": 0.5,
    "ar_window": 9, "max_trials": 400, "stop_when_adapted": True, "on_sample": lambda *a: None,
    "depth": 2, "first_words": False, "seed": 3, "keep": False,
}
# `rng` is given a generator (not a default) too; fresh per call.
OPERATIONS = {  # public operation -> (the table's name, its methods)
    "decode": ("decode", ("ars", "full", "auto")),
    "decode_kbest": ("kbest", ("ars", "full", "auto")),
    "decode_many": ("decode_many", ("ars", "full", "auto")),
    "sample": ("sample", ("ars", "full", "auto")),
    "marginals": ("marginals", ("full", "auto", "sample")),
}
KNOWN = sorted({name for takes in TABLE.values() for name in takes})


@pytest.fixture(scope="module")
def lm(write_arpa):
    return maxarpa.load(write_arpa(ARPA))


@pytest.fixture(scope="module")
def no_unk(write_arpa):
    """The model without <unk>: a word it does not know fails the first lookup."""
    return maxarpa.load(write_arpa(ARPA.replace("-1.2 <unk>\n", "").replace("1=5", "1=4")))


def lattice(kind: str, unknown: bool = False) -> Lattice | WordLattice:
    """Two positions of a and b; `unknown`: the second holds "zz" too."""
    second = [("a", -0.5), ("b", -0.5), *([("zz", -0.5)] if unknown else [])]
    cn = Lattice.from_lists([[("a", -0.1), ("b", -0.7)], second])
    return cn if kind == "cn" else WordLattice.from_confusion(cn)


def call(lm, operation: str, lat, method: str, **options):
    if operation == "decode":
        return api.decode(lm, lat, method=method, **options)
    if operation == "decode_kbest":
        return api.decode_kbest(lm, lat, 2, method=method, **options)
    if operation == "decode_many":
        return api.decode_many(lm, [lat, lat], method=method, **options)
    if operation == "sample":
        return api.sample(lm, lat, 20, 1, method=method, **options)
    return api.marginals(lm, lat, 20, 1, method=method, **options)


def cells():
    return [pytest.param(op, kind, m, id=f"{op}-{kind}-{m}")
            for op, (_, methods) in OPERATIONS.items() for kind in ("cn", "dag")
            for m in methods]


def value(name: str):
    return np.random.default_rng(0) if name == "rng" else NON_DEFAULT[name]


@pytest.mark.parametrize("operation, kind, method", cells())
def test_inapplicable_options_are_refused_by_name_before_any_work(no_unk, operation, kind,
                                                                  method):
    lm, table_op = no_unk, OPERATIONS[operation][0]
    dead = lattice(kind, unknown=True)
    if (table_op, kind, method) not in REFUSED_METHODS:
        with pytest.raises(UnknownWordError):  # what any work on it ends in
            call(lm, operation, dead, method)
    else:
        with pytest.raises(OptionError, match=f"method '{method}'"):
            call(lm, operation, dead, method)
        return
    takes = TABLE[(table_op, kind, method)]
    with pytest.raises(OptionError, match="'colour'"):
        call(lm, operation, dead, method, colour="red")
    for name in KNOWN:
        if name == "seed" and operation in ("sample", "marginals"):
            continue  # an argument of theirs, not an option
        if name not in takes:
            with pytest.raises(OptionError, match=f"'{name}'"):
                call(lm, operation, dead, method, **{name: value(name)})


@pytest.mark.parametrize("operation, kind, method", cells())
def test_applicable_options_run(lm, operation, kind, method):
    table_op = OPERATIONS[operation][0]
    if (table_op, kind, method) in REFUSED_METHODS:
        return
    for name in TABLE[(table_op, kind, method)]:
        call(lm, operation, lattice(kind), method, **{name: value(name)})  # no error at all


def test_confusion_network_kbest_refuses_unique(lm):
    """It silently ignored `unique` (a confusion network's paths are distinct already)."""
    with pytest.raises(OptionError, match="'unique'"):
        api.decode_kbest(lm, lattice("cn"), 2, unique=True)


@pytest.mark.parametrize("pairs", [0, 2**40])
def test_decode_refuses_unique_whatever_the_budget(lm, monkeypatch, pairs):
    """`decode(cn, unique=True)` passed when the compiled DP fit its budget and raised a
    TypeError once it fell through to ARS."""
    monkeypatch.setattr(dispatch, "memory_pairs_budget", lambda: pairs)
    with pytest.raises(OptionError, match="'unique'"):
        api.decode(lm, lattice("cn"), unique=True)


def test_word_lattice_kbest_refuses_method_ars(lm):
    """It ran the expansion's k-best whatever `method` said."""
    with pytest.raises(OptionError, match="method 'ars'"):
        api.decode_kbest(lm, lattice("dag"), 2, method="ars")


def test_sampling_method_is_dispatchs_choice_and_reported(lm):
    """dispatch.sample owns the choice: the word lattice's expansion says it ran, the
    confusion network's full DP gives the exact ln Z, and ARS stays the default there."""
    wl, cn = lattice("dag"), lattice("cn")
    draws = dispatch.sample(lm, wl, 5, 0)
    assert draws.method == "full" and draws.certified and len(draws) == 5
    full = dispatch.sample(lm, cn, 5, 0, method="full")
    post, log_z = dispatch_posteriors.lattice_posteriors(lm, cn)
    assert abs(full.log_Z - log_z) <= 1e-12 and full.acceptance_rate == 1.0
    assert np.isclose(post[:2].sum(), 1.0)  # position 0's candidates
    ars = dispatch.sample(lm, cn, 5, 0)
    assert ars.trials >= 5 and ars.log_Z_ci[0] < ars.log_Z_ci[1]


def test_decode_many_refuses_mixed_kinds(lm):
    with pytest.raises(OptionError, match="one kind per call"):
        api.decode_many(lm, [lattice("cn"), lattice("dag")])
