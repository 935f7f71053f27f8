"""Every target of the conformance suite on tree automata (issue 31): interpolated, log-linear,
weighted, VPYLM and the toy trigram work unchanged through `TargetModel`.

Each subject's yields are scored by its independent scorer (tests/conformance_targets.py),
not by the target's vectorised code, and the full intersection and ARS must both find the
brute-force best derivation; the full intersection's ln Z must be the brute-force sum.
"""

from __future__ import annotations

import math
import random

import pytest
from conformance_targets import TARGETS

from arsdecode.testing.brute_tree import brute_tree, random_tree_automaton
from arsdecode.trees import api

TOL = 1e-8
PER_TARGET = 8


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_every_target_on_trees(name, random_lms, tmp_path):
    subjects = TARGETS[name](random_lms, tmp_path)
    rng = random.Random(len(name))
    done = 0
    for k in range(200):
        if done == PER_TARGET:
            break
        s = subjects[k % len(subjects)]
        a = random_tree_automaton(rng, s.words, states=rng.randint(2, 4))
        try:
            b = brute_tree(s.model, a, 400, path_log=s.path_log)
        except ValueError:
            continue
        if b.log_Z == -math.inf:
            continue
        done += 1
        for method in ("full", "ars"):
            r = api.decode(s.model, a, method=method)
            assert r.certified and abs(r.log_p - b.best_log_p) <= TOL, (s.name, method,
                                                                        a.to_alto())
        lz, _, exact = api.log_partition(s.model, a, method="full")
        assert exact and abs(lz - b.log_Z) <= TOL, (s.name, a.to_alto())
        top = api.kbest(s.model, a, 3, method="ars")
        want = [x for x in b.ranked() if x > -math.inf][:3]
        assert len(top) == len(want) and all(
            abs(p.log_p - x) <= TOL for p, x in zip(top, want, strict=True))
    assert done == PER_TARGET
