"""One result type per operation, whatever the lattice (issue 30).

A confusion network and the word lattice it is (`WordLattice.from_confusion`) are decoded,
k-best decoded, sampled and given marginals by each method; each pair of answers is one class
with one set of JSON keys, checked against brute force on its own lattice. The JSON fields
each kind wrote before issue 30 are still there with their old meaning (the kept aliases:
"words" beside "tokens", a word lattice's "samples" as path objects, a network's as token
lists), in the library's JSON, the command line's and `batch`'s.
"""

from __future__ import annotations

import json
import math
import random

import pytest
from cli_in_process import in_process_cli as _cli

from ars_fixtures import make_lattice
from arsdecode import api
from arsdecode.batch.client import run_batch
from arsdecode.batch.worker import TaskSpec
from arsdecode.errors import OptionError
from arsdecode.lattice import WordLattice
from arsdecode.methods import results
from arsdecode.testing.brute import brute_model
from arsdecode.testing.brute_dag import brute_dag_model

TIGHT = 1e-9

# The JSON keys each kind wrote before issue 30 (the library's `to_json`).
OLD_DECODE_CN = {"tokens", "log_p", "log_q", "certified", "method", "iterations", "states",
                 "ngrams_by_order", "trace", "timing"}
OLD_DECODE_DAG = {"full": {"words", "tokens", "arcs", "log_p", "certified", "method", "states",
                           "transitions", "timing"},
                  "ars": OLD_DECODE_CN | {"words", "arcs"}}
OLD_SAMPLE_CN = {"samples", "log_p", "trials", "acceptance_rate", "log_Z", "log_Z_ci",
                 "log_Z_unweighted", "log_Z_rejection", "log_Z_rejection_ci", "states",
                 "refinements", "timing"}
OLD_PATH_DAG = {"words", "tokens", "arcs", "log_p"}  # a word lattice's path (DagPath)
OLD_NBEST_CN = {"tokens", "log_p"}  # a confusion network's "nbest" entry


@pytest.fixture
def pairs(random_lms):
    """(model, network, its word lattice, brute force on each) for a few random networks
    whose candidates are all finite and distinct per position (so that a path's tokens name
    it, as the network's brute force keys it)."""
    out = []
    for m, model in enumerate(random_lms[:4]):
        rng = random.Random(3000 + m)
        while len([p for p in out if p[0] is model]) < 2:
            cn = make_lattice(rng, model, neg_inf=0.0, max_len=4, max_width=3)
            if any(len(set(t)) < len(t) for t in cn.tokens):
                continue
            ref = brute_model(model.lm, cn)
            if ref.best_log_p == -math.inf:
                continue
            wl = WordLattice.from_confusion(cn)
            out.append((model, cn, wl, ref, brute_dag_model(model.lm, wl)))
    return out


def as_arcs(cn, indices) -> tuple[int, ...]:
    """A network path's candidate indices as the arc numbers of its `from_confusion` lattice
    (arcs numbered position by position, every candidate finite)."""
    offsets = [sum(cn.widths[:i]) for i in range(len(cn))]
    return tuple(o + j for o, j in zip(offsets, indices, strict=True))


@pytest.mark.parametrize("method", ["full", "ars"])
def test_decode_is_one_type_with_the_old_fields(pairs, method):
    for model, cn, wl, ref, dref in pairs:
        a, b = api.decode(model.lm, cn, method=method), api.decode(model.lm, wl, method=method)
        assert type(a) is type(b) is results.DecodeResult
        assert results.DagDecodeResult is results.DagArsResult is results.DecodeResult
        ja, jb = a.to_json(), b.to_json()
        assert set(ja) == set(jb)
        assert OLD_DECODE_CN <= set(ja) and OLD_DECODE_DAG[method] <= set(jb)
        for r, j in ((a, ja), (b, jb)):
            assert j["method"] == r.method == method and j["certified"]
            assert abs(j["log_p"] - ref.best_log_p) <= TIGHT, (model.name, j)
            assert j["words"] == j["tokens"] == r.words == r.tokens
            assert tuple(j["tokens"]) in ref.near_best(TIGHT)
        # the path: a network's candidate indices, a word lattice's arc numbers, one path
        assert ja["tokens"] == [t[i] for t, i in zip(cn.tokens, ja["arcs"], strict=True)]
        assert as_arcs(cn, ja["arcs"]) in dref.near_best(TIGHT)
        assert tuple(jb["arcs"]) in dref.near_best(TIGHT)
        assert jb["tokens"] == wl.path_words(jb["arcs"])
        if method == "full":  # the expansion's size where it was built
            assert isinstance(jb["transitions"], int) and jb["transitions"] > 0
            assert ja["transitions"] is None and jb["log_q"] == jb["log_p"]
        else:
            assert ja["transitions"] is None is jb["transitions"]
            assert ja["log_q"] >= ja["log_p"] - TIGHT and jb["log_q"] >= jb["log_p"] - TIGHT


@pytest.mark.parametrize("method", ["full", "ars"])
def test_kbest_is_one_type_with_the_old_fields(pairs, method):
    """k = 3 on both kinds (a word lattice's k-best is its expansion's: "ars" is refused
    there, so its "auto" is compared), each against brute force's three best scores."""
    for model, cn, wl, ref, dref in pairs:
        a = api.decode(model.lm, cn, method=method, k=3)
        if method == "ars":
            with pytest.raises(OptionError, match="ars"):
                api.decode(model.lm, wl, method="ars", k=3)
        b = api.decode(model.lm, wl, method="full" if method == "full" else "auto", k=3)
        assert type(a) is type(b) is results.KBestResult
        ja, jb = a.to_json(), b.to_json()
        assert set(ja) == set(jb)
        assert {e for p in ja["nbest"] for e in p} == {e for p in jb["nbest"] for e in p}
        top = sorted((lp for lp in ref.log_p if lp > -math.inf), reverse=True)[:3]
        for r, j in ((a, ja), (b, jb)):
            assert len(r) == len(r.paths) == len(top) and r[0] is r.paths[0]  # list-like
            assert [p["log_p"] for p in j["nbest"]] == pytest.approx(top, abs=TIGHT)
            assert j["tokens"] == j["words"] == j["nbest"][0]["tokens"]
            assert j["log_p"] == j["nbest"][0]["log_p"] and j["certified"]
        assert all(OLD_NBEST_CN <= set(p) for p in ja["nbest"])
        assert all(OLD_PATH_DAG <= set(p) for p in jb["nbest"])
        for p in a:  # a network's entries: candidate indices (`indices`, their old name)
            assert p.indices == p.arcs and abs(ref.score(p.tokens) - p.log_p) <= TIGHT
        for p in jb["nbest"]:
            assert p["words"] == p["tokens"] == wl.path_words(p["arcs"])
            assert abs(dref.score(p["arcs"]) - p["log_p"]) <= TIGHT


@pytest.mark.parametrize("method", ["full", "ars"])
def test_samples_are_one_type_with_the_old_fields(pairs, method):
    for model, cn, wl, ref, dref in pairs:
        a = api.sample(model.lm, cn, 25, 7, method=method)
        b = api.sample(model.lm, wl, 25, 7, method=method)
        assert type(a) is type(b) is results.SampleResult is results.DagArsSampleResult
        ja, jb = a.to_json(), b.to_json()
        assert set(ja) == set(jb) and OLD_SAMPLE_CN <= set(ja)
        assert ja["method"] == jb["method"] == method
        for r, j in ((a, ja), (b, jb)):
            assert len(r.samples) == len(r.paths) == len(r) == 25
            assert r.samples == [p.tokens for p in r] == [p["tokens"] for p in j["paths"]]
            assert r.log_p == [p.log_p for p in r.paths] == [p["log_p"] for p in j["paths"]]
            assert all(set(p) == OLD_PATH_DAG for p in j["paths"])
            if method == "full":  # exact ln Z, as brute force sums it
                assert abs(j["log_Z"] - ref.log_Z) <= 1e-8 and j["acceptance_rate"] == 1.0
        assert ja["samples"] == a.samples  # a network's: token lists, as before
        assert jb["samples"] == jb["paths"]  # a word lattice's: path objects, as before
        for p in a.paths:
            assert p.tokens == [t[i] for t, i in zip(cn.tokens, p.arcs, strict=True)]
            assert abs(ref.score(p.tokens) - p.log_p) <= TIGHT
        for p in b.paths:
            assert p.tokens == wl.path_words(p.arcs)
            assert abs(dref.score(p.arcs) - p.log_p) <= TIGHT


def test_marginals_are_one_type(pairs):
    model, cn, wl, ref, dref = pairs[0]
    a = api.marginals(model.lm, cn, method="full")
    b = api.marginals(model.lm, wl, method="full")
    s = api.marginals(model.lm, cn, 200, 1, method="sample")
    assert type(a) is type(b) is type(s) is results.MarginalsResult
    assert set(a.to_json()) == set(b.to_json()) == set(s.to_json())
    for r in (a, b):
        assert r.exact and abs(r.log_Z - ref.log_Z) <= 1e-8
    assert len(b.marginals) == wl.n_arcs  # a word lattice's positions are its arcs
    with pytest.raises(OptionError):
        api.marginals(model.lm, wl, method="sample")


def _cli_json(capsys, *args) -> dict:
    code, out, err = _cli(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


CLI_EXTRAS = {"oov", "scales"}  # what the command adds beside the result's own fields


def test_the_command_line_writes_one_set_of_fields(pairs, tmp_path, capsys):
    model, cn, wl, ref, dref = pairs[1]
    cn_file, wl_file = tmp_path / "cn.json", tmp_path / "wl.json"
    cn_file.write_text(json.dumps(cn.to_json_obj()))
    wl_file.write_text(json.dumps(wl.to_json_obj()))
    lm = ["--lm", str(model.path)]
    for args in (["decode"], ["decode", "--method", "ars"], ["decode", "--nbest", "3"],
                 ["sample", "-n", "5", "--seed", "3"], ["marginals", "--method", "full"]):
        a = _cli_json(capsys, *args, *lm, "--lattice", str(cn_file))
        b = _cli_json(capsys, *args, *lm, "--lattice", str(wl_file))
        extras = CLI_EXTRAS | ({"arcs"} if args[0] == "marginals" else set())  # arc records
        assert set(a) - extras == set(b) - extras, args
        assert abs(a["log_Z" if args[0] in ("sample", "marginals") else "log_p"]
                   - b["log_Z" if args[0] in ("sample", "marginals") else "log_p"]) <= (
            1.0 if args[0] == "sample" else 1e-8), args  # ARS's estimate against exact
        if args[0] == "decode" and "--nbest" not in args:
            assert OLD_DECODE_CN <= set(a) and b["words"] == b["tokens"]
            assert tuple(b["arcs"]) in dref.near_best(TIGHT)
        if args[0] == "sample":
            assert a["samples"] == [p["tokens"] for p in a["paths"]]
            assert b["samples"] == b["paths"] and b["method"] == "full"
        if args[0] == "marginals":  # the word lattice's old fields, with their values
            assert b["exact"] and {"log_Z", "arcs", "scales"} <= set(b)
            assert [x["posterior"] for x in b["arcs"]] == [m[0][1] for m in b["marginals"]]


@pytest.mark.parametrize("task", ["decode", "sample"])
def test_batch_lines_have_one_set_of_fields(pairs, tmp_path, task):
    model, cn, wl, ref, dref = pairs[2]
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "cn", **cn.to_json_obj()}) + "\n"
                   + json.dumps({"id": "wl", **wl.to_json_obj()}) + "\n")
    for chunk in (1, 2):
        out = tmp_path / f"out{chunk}.jsonl"
        run_batch(TaskSpec(task, str(model.path), n=6), src, out, chunk_size=chunk)
        got = {line["id"]: line for line in map(json.loads, out.read_text().splitlines())}
        timing = {"seconds", "chunk_mean_seconds"}
        assert set(got["cn"]) - timing == set(got["wl"]) - timing, chunk
        if task == "decode":  # the fields each kind's line had before, and their values
            assert {"tokens", "log_p", "log_q", "certified", "iterations", "states",
                    "method"} <= set(got["cn"])
            assert OLD_DECODE_DAG["full"] - {"timing"} <= set(got["wl"])
            for line in got.values():
                assert abs(line["log_p"] - ref.best_log_p) <= TIGHT
                assert tuple(line["tokens"]) in ref.near_best(TIGHT)
        else:  # "samples" token lists on both kinds, as both wrote them
            for line in got.values():
                assert line["samples"] == [p["tokens"] for p in line["paths"]]
                assert {"log_p", "seed", "method"} <= set(line)
            assert {"trials", "acceptance_rate", "log_Z"} <= set(got["cn"])
