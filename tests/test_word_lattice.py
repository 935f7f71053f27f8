"""`WordLattice` (issue 21): canonical form, checks with one-line errors, the JSON DAG, the
confusion-network special case, and word lattices through the front door (`arsdecode.api`).

The methods themselves are tested against brute force in test_dag_full.py; here: that the type
keeps its invariants (topological numbering from 0, only start-to-final parts, -inf arcs
dropped), that malformed input names what is wrong, and that `api.decode` / `decode_kbest` /
`sample` / `lattice_posteriors` reach the exact expansion on a word lattice and refuse ARS.
"""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from arsdecode import api
from arsdecode.errors import LatticeError, OptionError
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.methods.expansion_kbest import dag_kbest
from arsdecode.testing.brute_dag import brute_dag_model, random_word_lattice

DAG = {"start": "s", "finals": {"e": 0.0, "m": -1.5},
       "arcs": [["s", "m", "the", -0.1], ["m", "e", "dog", -0.2], ["m", "x", None, 0.0],
                ["x", "e", "cat", -0.3], ["s", "e", None, -5.0], ["s", "m", "a", -0.7],
                ["u", "e", "unreachable", 0.0], ["m", "dead", "end", 0.0],
                ["s", "m", "zero", -math.inf]]}


def test_canonical_form():
    wl = WordLattice.from_json_obj(DAG)
    assert wl.start == 0 and wl.node_names[0] == "s"
    assert all(s < d for s, d in zip(wl.src.tolist(), wl.dst.tolist(), strict=True))
    assert set(wl.node_names) == {"s", "m", "x", "e"}  # "u" and "dead" are trimmed
    assert "unreachable" not in wl.words and "end" not in wl.words and "zero" not in wl.words
    assert list(wl.src) == sorted(wl.src)
    assert wl.num_paths() == len(list(wl.paths())) == 7  # s-e; (the|a) then stop at m, dog, cat
    again = WordLattice.from_json_obj(json.loads(json.dumps(wl.to_json_obj())))
    assert again.to_json_obj() == wl.to_json_obj()


@pytest.mark.parametrize("obj, fragment", [
    ({"start": 0, "finals": {"2": 0.0}, "arcs": [[0, 1, "a", 0.0], [1, 2, "b", 0.0],
                                                 [2, 1, "c", 0.0]]}, "closes a cycle"),
    ({"start": 0, "finals": {"2": 0.0}, "arcs": [[0, 1, "a", 0.0]]}, "no path from the start"),
    ({"start": 0, "finals": {}, "arcs": [[0, 1, "a", 0.0]]}, "no final node"),
    ({"start": 0, "finals": {"1": 0.0}, "arcs": [[0, 1, "a", float("nan")]]}, "weight nan"),
    ({"start": 0, "finals": {"1": 0.0}, "arcs": [[0, 1, " a", 0.0]]}, "non-blank string"),
    ({"start": 0, "finals": {"1": 0.0}, "arcs": [[0, 1, "a"]]}, "expected [src, dst"),
    ({"start": 0, "finals": {"1": "x"}, "arcs": [[0, 1, "a", 0.0]]}, "expected a number"),
    ({"start": 0, "arcs": []}, "JSON DAG is an object"),
])
def test_malformed_lattices_are_one_line_errors(obj, fragment):
    with pytest.raises(LatticeError) as err:
        WordLattice.from_json_obj(obj, source="lat.json")
    text = str(err.value)
    assert fragment in text and text.startswith("lat.json") and "\n" not in text


def test_an_arc_to_a_missing_node_names_its_line():
    with pytest.raises(LatticeError, match=r"^f\.slf:7: the arc 0 -> 5 names the node 5"):
        WordLattice.build(2, 0, {1: 0.0}, [(0, 1, "a", 0.0), (0, 5, "b", 0.0)],
                          source="f.slf", arc_lines=[6, 7])


def test_confusion_network_is_a_special_case(random_lms):
    model = random_lms[3]
    lat = Lattice.from_lists([[(model.words[0], -0.5), (model.words[1], -1.0)],
                              [(model.words[2], 0.0), (model.words[0], -0.2)]])
    wl = WordLattice.from_confusion(lat)
    assert wl.n_nodes == 3 and wl.n_arcs == 4 and wl.finals == {2: 0.0}
    cn = api.decode(model.lm, lat, method="full")
    dag = api.decode(model.lm, wl)
    assert dag.words == cn.tokens and abs(dag.log_p - cn.log_p) <= 1e-9 * (1 + abs(cn.log_p))


def test_word_lattices_through_the_front_door(random_lms):
    model = random_lms[4]
    rng = random.Random(5)
    wl = random_word_lattice(rng, model.words, max_nodes=6)
    brute = brute_dag_model(model.lm, wl)
    best = api.decode(model.lm, wl)
    assert best.method == "full" and best.certified
    assert abs(best.log_p - brute.best_log_p) <= 1e-9 * (1 + abs(brute.best_log_p))
    assert api.decode(model.lm, wl, method="full").words == best.words
    top = api.decode_kbest(model.lm, wl, 3)
    assert [p.log_p for p in top] == [p.log_p for p in dag_kbest(model.lm, wl, 3)]
    uniq = api.decode(model.lm, wl, k=3, unique=True)
    assert len({tuple(p.words) for p in uniq}) == len(uniq)
    post, log_z = api.lattice_posteriors(model.lm, wl)
    assert abs(log_z - brute.log_Z) <= 1e-9 * (1 + abs(brute.log_Z)) and post.shape == (wl.n_arcs,)
    draws = api.sample(model.lm, wl, 50, seed=1)
    assert len(draws) == 50 and draws.paths == api.sample(model.lm, wl, 50, seed=1).paths
    ars = api.decode(model.lm, wl, method="ars")
    assert ars.method == "ars" and ars.certified
    assert abs(ars.log_p - brute.best_log_p) <= 1e-9 * (1 + abs(brute.best_log_p))
    ars_draws = api.sample(model.lm, wl, 30, seed=2, method="ars")
    assert len(ars_draws.samples) == 30
    with pytest.raises(OptionError):
        api.decode(model.lm, wl, method="nope")
    assert np.all(post >= 0)


def test_sentence_markers_are_not_words():
    for marker in ("<s>", "</s>"):
        with pytest.raises(LatticeError, match="sentence marker"):
            WordLattice.from_json_obj({"start": 0, "finals": {"1": 0.0},
                                       "arcs": [[0, 1, marker, 0.0]]}, source="m.json")
