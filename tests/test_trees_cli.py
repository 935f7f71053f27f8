"""Tree automata from the command line and the public API (issue 31): `decode|sample|marginals
--trees FILE` (JSON and Alto) and `arsdecode.decode(lm, automaton)`, against brute force over
every derivation, scored by KenLM where the model has it; options the tree methods do not take
are refused by name."""

from __future__ import annotations

import json
import math
import random

import pytest
from cli_in_process import in_process_cli as _cli

import arsdecode
from arsdecode.testing.brute_tree import brute_tree, random_tree_automaton

LN10 = math.log(10)


@pytest.fixture(params=[2, 4, 6])
def problem(request, random_lms, tmp_path):
    model = random_lms[request.param]
    rng = random.Random(100 + request.param)
    for _ in range(50):
        automaton = random_tree_automaton(rng, model.words, states=4)
        brute = brute_tree(model.lm, automaton)
        if len(brute.derivations) >= 3 and brute.log_Z > -math.inf:
            break
    path = tmp_path / "t.json"
    path.write_text(json.dumps(automaton.to_json()))
    return model, automaton, brute, path


def test_decode_and_nbest_equal_brute_force(problem, capsys):
    model, automaton, brute, path = problem
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--trees", str(path),
                          "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["certified"] and got["tree"] in brute.near_best(1e-9)
    assert abs(got["log_p"] - brute.best_log_p) <= 1e-9 * (1 + abs(brute.best_log_p))
    if model.km is not None:  # the yield's LM score by KenLM, the rules' by the file
        yield_lm = LN10 * model.km.score(" ".join(got["tokens"]), bos=True, eos=True)
        rules = sum(automaton.rules[r].weight for r in got["rules"])
        assert abs(rules + yield_lm - got["log_p"]) <= 1e-4
    k = min(3, len(brute.derivations))
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--trees", str(path),
                          "--nbest", str(k), "--json")
    assert code == 0, err
    scores = [p["log_p"] for p in json.loads(out)["nbest"]]
    assert scores == pytest.approx(brute.ranked()[:k], abs=1e-9)


def test_marginals_equal_brute_force_rule_posteriors(problem, capsys):
    model, automaton, brute, path = problem
    code, out, err = _cli(capsys, "marginals", "--lm", str(model.path), "--trees", str(path),
                          "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["exact"] and got["log_Z"] == pytest.approx(brute.log_Z, abs=1e-9)
    want = brute.rule_posteriors()
    for m in got["marginals"]:
        assert m["p"] == pytest.approx(want[m["rule"]], abs=1e-9)


def test_samples_are_derivations_with_their_exact_scores(problem, capsys):
    model, automaton, brute, path = problem
    code, out, err = _cli(capsys, "sample", "--lm", str(model.path), "--trees", str(path),
                          "-n", "20", "--seed", "5", "--json")
    assert code == 0, err
    got = json.loads(out)
    score = {tuple(automaton.preorder(d)): lp
             for d, lp in zip(brute.derivations, brute.log_p, strict=True)}
    for rules, log_p in zip(got["rules"], got["log_p"], strict=True):
        assert log_p == pytest.approx(score[tuple(rules)], abs=1e-9)
    assert got["log_Z"] == pytest.approx(brute.log_Z, abs=1e-6) or got["method"] == "ars"


def test_alto_files_and_the_api_agree(problem, tmp_path, capsys):
    model, automaton, brute, _ = problem
    alto = tmp_path / "t.irtg"
    alto.write_text(automaton.to_alto())
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--trees", str(alto),
                          "--json")
    assert code == 0, err
    r = arsdecode.decode(model.lm, automaton)
    assert json.loads(out)["log_p"] == pytest.approx(r.log_p, abs=1e-9)
    assert r.tree in brute.near_best(1e-9)
    with pytest.raises(arsdecode.ArsDecodeError, match="variant: not an option of decode"):
        arsdecode.decode(model.lm, automaton, variant="paper")


@pytest.mark.parametrize("flags, fragment", [
    (["--unique", "--nbest", "2"], "--unique is for word lattices"),
    (["--lattice", "x.slf"], "give --trees or --lattice"),
])
def test_refusals_are_one_line(problem, capsys, flags, fragment):
    model, _, _, path = problem
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--trees", str(path),
                          *flags)
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1


def test_batch_lines_of_tree_automata(problem, tmp_path):
    from arsdecode.batch.client import run_batch
    from arsdecode.batch.worker import TaskSpec

    model, automaton, brute, _ = problem
    src = tmp_path / "in.jsonl"
    bad = {"id": "bad", "start": "S", "rules": [{"lhs": "S", "label": "f",
                                                 "children": ["X"], "weight": 0}]}
    src.write_text("\n".join([json.dumps({"id": "t0", **automaton.to_json()}), json.dumps(bad),
                              json.dumps({"id": "t1", **automaton.to_json()})]) + "\n")
    out = tmp_path / "out.jsonl"
    stats = run_batch(TaskSpec("decode", str(model.path)), src, out, chunk_size=2)
    assert (stats.written, stats.errors) == (3, 1)
    got = {line["id"]: line for line in map(json.loads, out.read_text().splitlines())}
    assert "has no rule" in got["bad"]["error"]
    for key in ("t0", "t1"):
        assert got[key]["certified"] and got[key]["tree"] in brute.near_best(1e-9)
        assert abs(got[key]["log_p"] - brute.best_log_p) <= 1e-9 * (1 + abs(brute.best_log_p))


def test_batch_sample_lines_of_tree_automata(problem, tmp_path):
    from arsdecode.batch.client import run_batch
    from arsdecode.batch.worker import TaskSpec, item_seed

    model, automaton, brute, _ = problem
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "t0", **automaton.to_json()}) + "\n")
    out = tmp_path / "out.jsonl"
    run_batch(TaskSpec("sample", str(model.path), n=6, seed=4), src, out, chunk_size=1)
    [line] = [json.loads(x) for x in out.read_text().splitlines()]
    assert line["seed"] == item_seed(4, "t0") and len(line["trees"]) == 6
    scores: dict[str, list[float]] = {}  # an ambiguous automaton: a tree, several derivations
    for d, lp in zip(brute.derivations, brute.log_p, strict=True):
        scores.setdefault(automaton.tree_string(d), []).append(lp)
    for tree, log_p in zip(line["trees"], line["log_p"], strict=True):
        assert any(abs(log_p - lp) <= 1e-9 for lp in scores[tree])
    assert line["log_Z"] == pytest.approx(brute.log_Z, abs=1e-6) or line["method"] == "ars"
