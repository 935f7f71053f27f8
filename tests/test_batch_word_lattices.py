"""`arsdecode batch` on word lattices (issue 21): a JSON-DAG line ({"id": ..., "start",
"finals", "arcs"}) is decoded (or sampled) exactly, each line equal to the single-lattice API's
answer and to brute force, whatever the chunking; a bad DAG becomes an error line naming it."""

from __future__ import annotations

import json
import random

import pytest

from arsdecode import api
from arsdecode.batch.client import run_batch
from arsdecode.batch.worker import TaskSpec, item_seed
from arsdecode.methods.expansion_dp import dag_sample
from arsdecode.testing.brute_dag import brute_dag_model, random_word_lattice


@pytest.fixture
def dags(random_lms):
    model = random_lms[4]
    rng = random.Random(44)
    out = []
    while len(out) < 12:
        wl = random_word_lattice(rng, model.words, neg_inf=0.0)
        if brute_dag_model(model.lm, wl).best_log_p > float("-inf"):
            out.append(wl)
    return model, out


def _write(path, dags, bad: bool = False):
    lines = [json.dumps({"id": f"d{k}", **wl.to_json_obj()}) for k, wl in enumerate(dags)]
    if bad:
        lines.insert(3, json.dumps({"id": "bad", "start": 0, "finals": {"1": 0.0},
                                    "arcs": [[0, 1, "</s>", 0.0]]}))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("chunk", [1, 5])
def test_batch_decode_of_word_lattices(dags, tmp_path, chunk):
    model, wls = dags
    src = _write(tmp_path / "in.jsonl", wls, bad=True)
    out = tmp_path / "out.jsonl"
    stats = run_batch(TaskSpec("decode", str(model.path)), src, out, chunk_size=chunk)
    assert (stats.written, stats.errors) == (len(wls) + 1, 1)
    got = {line["id"]: line for line in map(json.loads, out.read_text().splitlines())}
    assert "sentence marker" in got["bad"]["error"] and got["bad"]["line"] == 4
    for k, wl in enumerate(wls):
        line = got[f"d{k}"]
        want = api.decode(model.lm, wl)
        brute = brute_dag_model(model.lm, wl)
        assert line["words"] == want.words and line["method"] == "full" and line["certified"]
        assert abs(line["log_p"] - brute.best_log_p) <= 1e-9 * (1 + abs(brute.best_log_p))


def test_batch_sample_of_word_lattices(dags, tmp_path):
    model, wls = dags
    src = _write(tmp_path / "in.jsonl", wls[:4])
    out = tmp_path / "out.jsonl"
    run_batch(TaskSpec("sample", str(model.path), n=5, seed=3), src, out, chunk_size=2)
    got = {line["id"]: line for line in map(json.loads, out.read_text().splitlines())}
    for k, wl in enumerate(wls[:4]):
        seed = item_seed(3, f"d{k}")
        want = dag_sample(model.lm, wl, 5, seed)
        assert got[f"d{k}"]["samples"] == [d.words for d in want]
        assert got[f"d{k}"]["seed"] == seed


def test_batch_decode_of_word_lattices_by_ars(dags, tmp_path):
    """--method ars: each line is ARS's certified answer (log_q, iterations), equal to brute
    force; the fields are those of `decode --lattice X --method ars --json`."""
    model, wls = dags
    src = _write(tmp_path / "in.jsonl", wls[:5])
    out = tmp_path / "out.jsonl"
    stats = run_batch(TaskSpec("decode", str(model.path), method="ars"), src, out, chunk_size=2)
    assert (stats.written, stats.errors) == (5, 0)
    got = {line["id"]: line for line in map(json.loads, out.read_text().splitlines())}
    for k, wl in enumerate(wls[:5]):
        line = got[f"d{k}"]
        brute = brute_dag_model(model.lm, wl)
        assert line["method"] == "ars" and line["certified"] and line["iterations"] >= 1
        assert abs(line["log_p"] - brute.best_log_p) <= 1e-9 * (1 + abs(brute.best_log_p))
        assert abs(line["log_q"] - line["log_p"]) <= 1e-6 * (1 + abs(line["log_p"]))
