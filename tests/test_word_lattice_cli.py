"""`arsdecode decode / sample / marginals --lattice WORD_LATTICE` (issue 21), end to end.

Each format (SLF, OpenFst text, JSON DAG) read by the command gives the same answer as the API
on the same lattice, which test_dag_full.py checks against brute force; k-best of paths and of
distinct word sequences; the best path and the posteriors written back as lattices and read
again; one-line errors; a confusion network's JSON still takes the confusion-network path.
"""

from __future__ import annotations

import json
import math
import random

import pytest
from cli_in_process import in_process_cli as _cli

from arsdecode import api
from arsdecode.lattice.lattice_files import read_word_lattice, write_word_lattice
from arsdecode.testing.brute_dag import brute_dag_model, random_word_lattice


@pytest.fixture
def problem(random_lms, tmp_path):
    model = random_lms[4]
    wl = random_word_lattice(random.Random(17), model.words, max_nodes=6)
    return model, wl


@pytest.mark.parametrize("suffix", ["lat.slf", "lat.fst.txt", "lat.json", "lat.slf.gz"])
def test_decode_every_format_equals_the_api(problem, tmp_path, capsys, suffix):
    model, wl = problem
    path = tmp_path / suffix
    write_word_lattice(wl, path)
    again = read_word_lattice(path)
    want = api.decode(model.lm, again)
    brute = brute_dag_model(model.lm, again)
    assert abs(want.log_p - brute.best_log_p) <= 1e-9 * (1 + abs(brute.best_log_p))
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["words"] == want.words and abs(got["log_p"] - want.log_p) <= 1e-9
    assert got["method"] == "full" and got["certified"]


def test_nbest_unique_and_written_lattices(problem, tmp_path, capsys):
    model, wl = problem
    path = tmp_path / "in.json"
    path.write_text(json.dumps(wl.to_json_obj()))
    best, post = tmp_path / "best.slf", tmp_path / "post.slf"
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--nbest", "4", "--unique", "--json", "--write-best", str(best),
                          "--write-lattice", str(post))
    assert code == 0, err
    nbest = json.loads(out)["nbest"]
    want = api.decode(model.lm, wl, k=4, unique=True)
    assert [p["words"] for p in nbest] == [p.words for p in want]
    assert len({tuple(p["words"]) for p in nbest}) == len(nbest)
    chains = read_word_lattice(best)  # the n-best as a lattice: its paths are the n-best
    again = api.decode(model.lm, chains, k=len(nbest))
    assert sorted(p.log_p for p in again) == pytest.approx(sorted(p["log_p"] for p in nbest),
                                                           abs=1e-6)
    assert "p=" in post.read_text()


def test_marginals_and_sample_on_a_word_lattice(problem, tmp_path, capsys):
    model, wl = problem
    path = tmp_path / "in.fst.txt"
    write_word_lattice(wl, path)
    again = read_word_lattice(path)
    code, out, err = _cli(capsys, "marginals", "--lm", str(model.path), "--lattice", str(path),
                          "--json")
    assert code == 0, err
    got = json.loads(out)
    brute = brute_dag_model(model.lm, again)
    assert got["exact"] and abs(got["log_Z"] - brute.log_Z) <= 1e-9 * (1 + abs(brute.log_Z))
    assert [a["posterior"] for a in got["arcs"]] == pytest.approx(
        brute.arc_posteriors().tolist(), abs=1e-9)
    code, out, err = _cli(capsys, "sample", "--lm", str(model.path), "--lattice", str(path),
                          "-n", "20", "--seed", "3", "--json")
    assert code == 0, err
    samples = json.loads(out)["samples"]
    assert len(samples) == 20 and all(math.isfinite(s["log_p"]) for s in samples)


@pytest.mark.parametrize("argv, fragment", [
    (["--keep-lattice-lm"], "SLF and PFSG lattices only"),
    (["--unique"], "--unique needs --nbest"),
])
def test_option_errors_are_one_line(problem, tmp_path, capsys, argv, fragment):
    model, wl = problem
    path = tmp_path / "in.fst.txt"
    write_word_lattice(wl, path)
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and fragment in err


def test_method_ars_on_a_word_lattice_agrees(problem, tmp_path, capsys):
    model, wl = problem
    path = tmp_path / "in.slf"
    write_word_lattice(wl, path)
    runs = {}
    for method in ("ars", "full"):
        code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                              "--method", method, "--json")
        assert code == 0, err
        runs[method] = json.loads(out)
    assert runs["ars"]["method"] == "ars" and runs["ars"]["certified"]
    assert abs(runs["ars"]["log_p"] - runs["full"]["log_p"]) <= 1e-9 * (
        1 + abs(runs["full"]["log_p"]))


def test_a_malformed_slf_names_file_and_line(problem, tmp_path, capsys):
    model, _ = problem
    path = tmp_path / "bad.slf"
    path.write_text("VERSION=1.0\nN=2 L=1\nI=0\nI=1\nJ=0 S=0 E=7 W=a\n")
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "bad.slf:5" in err and "Traceback" not in err


def test_a_confusion_network_json_keeps_its_path(problem, tmp_path, capsys):
    model, _ = problem
    path = tmp_path / "cn.json"
    path.write_text(json.dumps({"positions": [[[model.words[0], 0.0], [model.words[1], -1.0]]]}))
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--json")
    assert code == 0, err
    got = json.loads(out)
    assert "tokens" in got and "iterations" in got  # the confusion network's result
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--format", "json", "--json")  # the same file as a word lattice
    assert code == 0, err
    dag = json.loads(out)
    assert dag["words"] == got["tokens"] and abs(dag["log_p"] - got["log_p"]) <= 1e-9
