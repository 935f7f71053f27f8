"""The rescored lattice (`decode --write-lattice`, issue 32): the exact expansion with a=, l=
and p= on every link. Read back with its l= kept and decoded with no LM at all, it gives the
engine's best path and score; its p= are the exact posteriors of its own paths; its paths are
the original lattice's, each scored as the engine scores it. All checked by brute force.
"""

from __future__ import annotations

import json
import math
import random
from collections import defaultdict

import pytest
from cli_in_process import in_process_cli as _cli

from arsdecode.lattice.lattice_files import read_word_lattice, write_word_lattice
from arsdecode.lattice.slf import read_slf
from arsdecode.testing.brute_dag import brute_dag, brute_dag_model, random_word_lattice


def no_lm(words) -> float:
    return 0.0


@pytest.fixture(params=[(4, 31), (5, 32), (7, 33)])
def problem(request, random_lms, tmp_path):
    index, seed = request.param
    model = random_lms[index]
    wl = random_word_lattice(random.Random(seed), model.words, max_nodes=6)
    path = tmp_path / "in.slf"
    write_word_lattice(wl, path)
    return model, read_word_lattice(path), path


@pytest.mark.parametrize("lm_scale", ["1", "2.5"])
def test_the_rescored_lattice_read_back_decodes_to_the_same_best_path(problem, tmp_path,
                                                                      capsys, lm_scale):
    model, wl, path = problem
    out = tmp_path / "rescored.slf.gz"
    code, stdout, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                             "--lm-scale", lm_scale, "--json", "--write-lattice", str(out))
    assert code == 0, err
    best = json.loads(stdout)
    slf = read_slf(out, keep_lm_score=True)  # a + lmscale * l, as HTK and lattice-tool
    assert slf.scales.lmscale == float(lm_scale)
    back = brute_dag(slf.lattice, no_lm)
    lp = back.best_log_p
    assert abs(lp - best["log_p"]) <= 1e-9 * (1 + abs(lp))
    assert set(back.near_best(1e-9)) and tuple(best["tokens"]) in {
        tuple(back.words[back.paths.index(p)]) for p in back.near_best(1e-9)}


def test_its_paths_are_the_lattices_with_the_engines_scores(problem, tmp_path, capsys):
    """Every word sequence of the original lattice, best path score, is in the rescored
    lattice with the same score (the expansion loses and adds nothing)."""
    model, wl, path = problem
    out = tmp_path / "rescored.slf"
    code, _, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                        "--write-lattice", str(out))
    assert code == 0, err
    original = brute_dag_model(model.lm, wl).unique_scores()
    back = brute_dag(read_slf(out, keep_lm_score=True).lattice, no_lm).unique_scores()
    live = {w: s for w, s in original.items() if s > -math.inf}
    assert back.keys() == live.keys()
    for words, score in live.items():
        assert back[words] == pytest.approx(score, abs=1e-9)


def test_its_posteriors_are_exact(problem, tmp_path, capsys):
    model, wl, path = problem
    out = tmp_path / "rescored.slf"
    code, _, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                        "--write-lattice", str(out))
    assert code == 0, err
    written = defaultdict(float)
    for line in out.read_text().splitlines():
        if line.startswith("J="):
            f = dict(kv.split("=", 1) for kv in line.split())
            written[(int(f["S"]), int(f["E"]))] += float(f["p"])
    back = read_slf(out, keep_lm_score=True).lattice
    post = brute_dag(back, no_lm).arc_posteriors()
    want = defaultdict(float)
    for a in range(back.n_arcs):  # by node names: the file's own node numbers
        want[(int(back.node_names[back.src[a]]), int(back.node_names[back.dst[a]]))] += post[a]
    assert written.keys() == want.keys()
    for key, p in want.items():
        assert written[key] == pytest.approx(p, abs=1e-9)
