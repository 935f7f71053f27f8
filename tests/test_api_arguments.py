"""Every public function of `arsdecode.api` checks its arguments first (issue 29, item D).

A wrong type or an out-of-range value given to a public function is refused before any work
with an `ArsDecodeError` (an `ArgumentError`) whose message names the function and the
argument, as scikit-learn's `validate_params` does. Two tests: a table of bad calls, each
refused with the argument named; and a property test throwing random Python values (None,
str, floats with nan/inf, negative and huge ints, bools, lists, dicts) at each argument of
each public function, the others valid, which asserts that nothing but an ArsDecodeError (or
a result) ever comes out. The calls run on a real (small, random) ARPA model and the real
shipped tagger and keypad channel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maxarpa
from arsdecode import api
from arsdecode.errors import ArgumentError, ArsDecodeError, OptionError
from arsdecode.lattice import Lattice, WordLattice
from maxarpa.errors import MaxArpaError

PROPS = settings(derandomize=True, database=None, deadline=None, max_examples=100,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@dataclass(frozen=True)
class Valid:
    """Valid arguments for every public function: a real model, lattices over its words."""

    path: Path
    lm: maxarpa.model.Model
    lattice: Lattice
    dag: WordLattice
    words: list[str]
    keypad_lm: maxarpa.model.Model  # a model of letter words, which the keypad can type

    def calls(self) -> dict[str, dict[str, Any]]:
        """Per public function, a call that works (every argument it declares, by name)."""
        lm, lat = self.lm, self.lattice
        return {
            "load_lm": {"path": self.path, "config": None},
            "decode": {"lm": lm, "lattice": lat, "method": "auto", "k": None},
            "decode_many": {"lm": lm, "lattices": [lat, lat], "method": "auto"},
            "decode_kbest": {"lm": lm, "lattice": lat, "k": 2, "method": "auto"},
            "sample": {"lm": lm, "lattice": lat, "n": 3, "seed": 0},
            "adapt": {"lm": lm, "lattice": lat},
            "marginals": {"lm": lm, "lattice": lat, "n": 5, "seed": 0, "all_candidates": True,
                          "method": "auto"},
            "lattice_posteriors": {"lm": lm, "lattice": self.dag},
            "weighted": {"lm": lm, "lm_weight": 0.5, "sentence_start": True,
                         "sentence_end": False},
            "interpolate": {"models": [lm, lm], "weights": [0.5, 0.5], "missing": "unk"},
            "loglinear": {"models": [lm], "alphas": [1.0], "features": {self.words[0]: 0.5},
                          "length_prior": {1: -0.5, 2: -math.inf}},
            "fixed_length_lattice": {"vocab": self.words, "length": 2},
            "sms_decode": {"observation": "2 46", "lm": self.keypad_lm, "k": 64.0,
                           "top_k": None},
            "tag": {"words": ["the", "dog", "barked"], "order": None, "models": None},
        }


KEYPAD_ARPA = """
\\data\\
ngram 1=6
ngram 2=2

\\1-grams:
-1.0\t<unk>\t0
-99\t<s>\t-0.3
-0.5\t</s>
-0.6\ta\t-0.2
-0.7\tan\t-0.2
-0.8\tin\t-0.2

\\2-grams:
-0.3\t<s> a
-0.2\ta </s>

\\end\\
"""


@pytest.fixture(scope="module")
def valid(random_lms, write_arpa) -> Valid:
    model = random_lms[2]
    lattice = Lattice.from_lists([[(w, -0.5) for w in model.words[:3]]] * 2)
    return Valid(model.path, model.lm, lattice, WordLattice.from_confusion(lattice),
                 model.words[:3], maxarpa.load(write_arpa(KEYPAD_ARPA)))


def test_every_public_function_is_covered(valid):
    """The table below and the property test cover every public function of the api (a new
    one must be added here, with its checks)."""
    public = {name for name in api.__all__ if name[0].islower()}
    assert public == set(valid.calls()), public ^ set(valid.calls())


def test_the_valid_calls_succeed(valid):
    """The base calls of the property test run (so a refusal there is the one argument)."""
    for name, kwargs in valid.calls().items():
        getattr(api, name)(**kwargs)


BAD_CALLS = [  # (function, {argument: bad value}, what the message names)
    ("load_lm", {"path": None}, "path"),
    ("load_lm", {"path": "model\0.arpa"}, "path"),
    ("load_lm", {"path": ""}, "path"),
    ("load_lm", {"config": "strict"}, "config"),
    ("decode", {"lm": None}, "lm"),
    ("decode", {"lm": "model.arpa"}, "lm"),
    ("decode", {"lattice": [[("a", 0.0)]]}, "lattice"),
    ("decode", {"method": "fastest"}, "method"),
    ("decode", {"k": 0}, "k"),
    ("decode", {"k": 2.0}, "k"),
    ("decode", {"k": True}, "k"),
    ("decode_many", {"lattices": "lattice.json"}, "lattices"),
    ("decode_many", {"lattices": {"a": 1}}, "lattices"),
    ("decode_many", {"lattices": "LAT_NONE"}, "lattices[1]"),
    ("decode_many", {"method": None}, "method"),
    ("decode_kbest", {"k": None}, "k"),
    ("decode_kbest", {"k": -1}, "k"),
    ("decode_kbest", {"k": False}, "k"),
    ("decode_kbest", {"k": 2**63}, "k"),
    ("decode_kbest", {"k": "3"}, "k"),
    ("sample", {"n": 2.5}, "n"),
    ("sample", {"n": -1}, "n"),
    ("sample", {"n": True}, "n"),
    ("sample", {"n": 10**30}, "n"),
    ("sample", {"seed": -1}, "seed"),
    ("sample", {"seed": 1.5}, "seed"),
    ("sample", {"seed": "0"}, "seed"),
    ("sample", {"lattice": None}, "lattice"),
    ("adapt", {"lattice": "DAG"}, "lattice"),
    ("adapt", {"lm": 3}, "lm"),
    ("marginals", {"n": 0}, "n"),
    ("marginals", {"seed": [1, 2]}, "seed"),
    ("marginals", {"all_candidates": None}, "all_candidates"),
    ("marginals", {"all_candidates": "no"}, "all_candidates"),
    ("marginals", {"method": "exact"}, "method"),
    ("marginals", {"lattice": [1, 2]}, "lattice"),  # both lattice kinds are served (issue 30)
    ("lattice_posteriors", {"lattice": "a.slf"}, "lattice"),
    ("weighted", {"lm_weight": "2"}, "lm_weight"),
    ("weighted", {"lm_weight": float("nan")}, "lm_weight"),
    ("weighted", {"lm_weight": 0}, "lm_weight"),
    ("weighted", {"sentence_start": None}, "sentence_start"),
    ("weighted", {"sentence_end": 0}, "sentence_end"),
    ("weighted", {"lm": None}, "lm"),
    ("interpolate", {"models": None}, "models"),
    ("interpolate", {"models": "LM_AND_STRING"}, "models[1]"),
    ("interpolate", {"weights": None}, "weights"),
    ("interpolate", {"weights": [0.5, "0.5"]}, "weights[1]"),
    ("interpolate", {"weights": [1.5, -0.5]}, "weights[1]"),
    ("interpolate", {"missing": None}, "missing"),
    ("loglinear", {"models": None}, "models"),
    ("loglinear", {"models": [None]}, "models[0]"),
    ("loglinear", {"alphas": "1"}, "alphas"),
    ("loglinear", {"alphas": [float("inf")]}, "alphas[0]"),
    ("loglinear", {"features": 3}, "features"),
    ("loglinear", {"features": {"a b": "x"}}, "features['a b']"),
    ("loglinear", {"features": {3: 1.0}}, "features key"),
    ("loglinear", {"features": "/nonexistent/features.tsv"}, "/nonexistent/features.tsv"),
    ("loglinear", {"length_prior": {0: 0.0}}, "length_prior key"),
    ("loglinear", {"length_prior": {1: float("nan")}}, "length_prior[1]"),
    ("loglinear", {"length_prior": [0.5]}, "length_prior"),
    ("fixed_length_lattice", {"vocab": "abc"}, "vocab"),
    ("fixed_length_lattice", {"vocab": ["a", None]}, "vocab[1]"),
    ("fixed_length_lattice", {"length": 1.5}, "length"),
    ("fixed_length_lattice", {"length": True}, "length"),
    ("sms_decode", {"observation": 843}, "observation"),
    ("sms_decode", {"lm": "model.arpa"}, "lm"),
    ("sms_decode", {"k": "64"}, "k"),
    ("sms_decode", {"k": float("inf")}, "k"),
    ("sms_decode", {"top_k": 0}, "top_k"),
    ("sms_decode", {"top_k": 2.0}, "top_k"),
    ("tag", {"words": None}, "words"),
    ("tag", {"words": 3}, "words"),
    ("tag", {"words": ["the", 3]}, "words[1]"),
    ("tag", {"order": "3"}, "order"),
    ("tag", {"order": 0}, "order"),
    ("tag", {"models": 3}, "models"),
    ("tag", {"models": ""}, "models"),
]

PLACEHOLDERS = {  # values that need the fixture: built in the test
    "LAT_NONE": lambda v: [v.lattice, None],
    "DAG": lambda v: v.dag,
    "LAT": lambda v: v.lattice,
    "LM_AND_STRING": lambda v: [v.lm, str(v.path)],
}


@pytest.mark.parametrize(("name", "bad", "named"), BAD_CALLS,
                         ids=[f"{n}-{named}-{i}" for i, (n, _, named) in enumerate(BAD_CALLS)])
def test_a_bad_argument_is_refused_naming_it(valid, name, bad, named):
    """Each bad call raises an ArsDecodeError whose message names the function and the
    argument (an item as `models[1]`, a mapping's key as `features key`); a feature file that
    cannot be read is named by its path."""
    kwargs = valid.calls()[name]
    for arg, value in bad.items():
        fill = isinstance(value, str) and value in PLACEHOLDERS
        kwargs[arg] = PLACEHOLDERS[value](valid) if fill else value
    with pytest.raises(ArsDecodeError) as info:
        getattr(api, name)(**kwargs)
    message = str(info.value)
    assert "\n" not in message
    if named.startswith("/"):
        assert named in message
    else:
        assert f"{name}(): {named} must be" in message, message


def test_argument_error_is_an_option_error_and_a_type_error(valid):
    """Callers written for the earlier errors keep working: `except OptionError` (a range, as
    n < 0 was), `except TypeError` (a wrong type, as k=2.5 was), `except ValueError`."""
    with pytest.raises(ArgumentError) as info:
        api.decode_kbest(valid.lm, valid.lattice, 2.5)
    assert isinstance(info.value, OptionError | TypeError | ValueError)
    for kind in (OptionError, TypeError, ValueError):
        with pytest.raises(kind):
            api.sample(valid.lm, valid.lattice, -1)


def test_numpy_integers_count_as_ints(valid):
    """A numpy integer is an int (Integral); the result is the one the Python int gives."""
    a = api.decode_kbest(valid.lm, valid.lattice, np.int64(3))
    b = api.decode_kbest(valid.lm, valid.lattice, 3)
    assert [p.tokens for p in a.paths] == [p.tokens for p in b.paths]
    assert api.sample(valid.lm, valid.lattice, np.int32(4), seed=np.uint8(1)).samples == \
        api.sample(valid.lm, valid.lattice, 4, seed=1).samples


ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=6),
    st.binary(max_size=4),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-4, 4),
    st.integers(min_value=2**63, max_value=2**200),
    st.integers(min_value=-(2**200), max_value=-(2**63)),
    st.lists(st.none() | st.booleans() | st.integers(-3, 3) | st.floats() | st.text(max_size=3),
             max_size=3),
    st.dictionaries(st.text(max_size=3) | st.integers(-2, 3),
                    st.integers(-3, 3) | st.floats() | st.text(max_size=2), max_size=3),
    st.tuples(st.integers(-2, 2), st.text(max_size=2)),
    st.builds(object),
)
"""Random Python values. Ints are small or beyond int64: a valid mid-sized count (n = 2**40
samples, k = 2**40 paths) is a request for that much work, not a bad argument."""

PUBLIC_ARGUMENTS = [
    ("load_lm", "path"), ("load_lm", "config"),
    *[("decode", a) for a in ("lm", "lattice", "method", "k")],
    *[("decode_many", a) for a in ("lm", "lattices", "method")],
    *[("decode_kbest", a) for a in ("lm", "lattice", "k", "method")],
    *[("sample", a) for a in ("lm", "lattice", "n", "seed")],
    *[("adapt", a) for a in ("lm", "lattice")],
    *[("marginals", a) for a in ("lm", "lattice", "n", "seed", "all_candidates", "method")],
    *[("lattice_posteriors", a) for a in ("lm", "lattice")],
    *[("weighted", a) for a in ("lm", "lm_weight", "sentence_start", "sentence_end")],
    *[("interpolate", a) for a in ("models", "weights", "missing")],
    *[("loglinear", a) for a in ("models", "alphas", "features", "length_prior")],
    *[("fixed_length_lattice", a) for a in ("vocab", "length")],
    *[("sms_decode", a) for a in ("observation", "lm", "k", "top_k")],
    *[("tag", a) for a in ("words", "order", "models")],
]


def test_the_property_covers_every_argument(valid):
    assert {(n, a) for n, kw in valid.calls().items() for a in kw} == set(PUBLIC_ARGUMENTS)


@pytest.mark.parametrize(("name", "arg"), PUBLIC_ARGUMENTS,
                         ids=[f"{n}-{a}" for n, a in PUBLIC_ARGUMENTS])
def test_random_values_give_a_result_or_an_ars_decode_error(valid, name, arg):
    """Any value of any argument, the others valid: a result, or an ArsDecodeError (an
    ArgumentError naming the argument, in one line, when the value itself is refused), never
    another exception."""

    @PROPS
    @given(value=ODD_VALUES)
    def check(value):
        if name == "load_lm" and arg == "path" and value == "-":
            return  # `-` is standard input, which pytest does not give
        kwargs = valid.calls()[name]
        kwargs[arg] = value
        try:
            getattr(api, name)(**kwargs)
        except ArgumentError as err:
            assert f"{name}(): {arg}" in str(err) and "\n" not in str(err), str(err)
        except ArsDecodeError:
            pass
        except MaxArpaError:  # load_lm's documented error for a path it cannot read
            assert name == "load_lm" and isinstance(value, str), value

    check()


def test_argument_error_is_public():
    import arsdecode

    assert arsdecode.ArgumentError is ArgumentError
    assert "ArgumentError" in arsdecode.__all__
