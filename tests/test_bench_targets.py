"""The per-target bench (bench/bench_targets.py, issue 22) runs, checks what it claims, and
builds its synthetic feature file as its docstring says.

A tiny real run: the embedded state_union 5-gram as lm.5 (and as the general model), a dozen
training sentences (the features and a one-sweep VPYLM come from them), three keypad
lattices. No timing is asserted: the run must finish with every target's methods agreeing and
every decode certified (the bench's own checks, whose exit status is asserted), plain's ratios
must be 1, and a rerun must reuse the cached VPYLM. The feature list is checked against a
plain count of every n-gram.
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from arsdecode.api import DEFAULT_LM
from arsdecode.model.loglinear import read_features
from arsdecode.tasks.sms.keypad import sample_sentence
from bench import bench_targets as bench

TRAIN = ["we must act now .", "the state of our union is strong .", "we will act .",
         "our union is strong and we are strong .", "the congress must act now .",
         "i thank the congress .", "we must not fear the future .", "the future is ours .",
         "the state of the union is good .", "we are one nation .", "i ask the congress to act .",
         "our nation must act ."]
TEST = [["we", "act", "."], ["the", "union", "is", "strong"],
        ["our", "nation", "must", "act", "now"], ["we", "are", "strong"]]  # the last: warm-up


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("sms")
    shutil.copy(DEFAULT_LM, d / "lm.5.maxarpa")  # maxarpa reads gzip by its magic bytes
    (d / "train.txt").write_text("".join(s + "\n" for s in TRAIN), encoding="utf-8")
    rng = np.random.default_rng(3)
    (d / "test.jsonl").write_text("".join(
        json.dumps({"id": f"L{len(w):02d}-000", "words": w,
                    "observation": sample_sentence(w, rng), "oov": 0}) + "\n" for w in TEST))
    return d


def test_frequent_ngrams_against_a_plain_count():
    sents = [s.split() for s in TRAIN]
    counts: list[Counter[str]] = [Counter(), Counter(), Counter()]
    for s in sents:
        x = ["<s>", *s, "</s>"]
        for a, b in itertools.pairwise(x):
            counts[0][f"{a} {b}"] += 1
        for a, b, c in zip(x, x[1:], x[2:], strict=False):
            counts[1][f"{a} {b} {c}"] += 1
            counts[2][f"{a} * {c}"] += 1
    got = bench.frequent_ngrams(sents, 5)
    assert len(got) == 15
    for kind, chosen in zip(counts, (got[:5], got[5:10], got[10:]), strict=True):
        assert set(chosen) <= set(kind)
        # every chosen n-gram is at least as frequent as every one left out
        assert min(kind[g] for g in chosen) >= max(v for k, v in kind.items()
                                                   if k not in chosen)


def test_feature_file_reads_back_with_seeded_weights(tmp_path):
    sents = [s.split() for s in TRAIN]
    n = bench.write_features(sents, tmp_path / "f.tsv", 4, 0.3, 11)
    feats = read_features(tmp_path / "f.tsv")
    assert n == len(feats) == 12
    assert [" ".join(f.pattern) for f in feats] == bench.frequent_ngrams(sents, 4)
    expected = np.random.default_rng(11).normal(0.0, 0.3, 12)
    assert np.allclose([f.weight for f in feats], expected, atol=1e-6)


def test_tiny_run_checks_pass_and_reuses_the_vpylm(data, tmp_path):
    args = ["--data", str(data), "--per-length", "1", "--sample-per-length", "1",
            "--samples", "20", "--full-lattices", "3", "--full-top-k", "5", "--features", "10",
            "--sweeps", "1", "--max-depth", "3"]
    assert bench.main([*args, "--json", str(tmp_path / "a.json")]) == 0
    res = json.loads((tmp_path / "a.json").read_text())
    assert set(res["targets"]) == set(bench.TARGETS)
    assert res["lattices"] == 3 and res["sample_lattices"] == 3  # one per length
    assert res["small_lengths"] == [3, 4, 5]
    for name, check in res["checks"].items():
        assert check["methods_agree"], name
        assert check["certified"] == check["decodes"] > 0, name
    for method, fig in res["summary"]["plain"]["decode"].items():
        assert fig["x_plain"]["seconds_mean"] == pytest.approx(1.0), method
    assert res["summary"]["plain"]["decode"]["full"]["ran"] == {"full": 3}
    assert res["summary"]["interpolated"]["decode"]["auto"]["ran"] == {"ars": 3}  # no DP set up
    for name in ("loglinear", "vpylm"):  # their DP, once its setup pays
        ran = res["summary"][name]["decode"]["auto"]["ran"]
        assert set(ran) <= {"ars", "full"} and sum(ran.values()) == 3
    meta = res["vpylm"]
    assert (data / "vpylm.d3.sweeps1.seed0.npz").exists()
    assert bench.main([*args, "--targets", "plain", "vpylm",
                       "--json", str(tmp_path / "b.json")]) == 0
    again = json.loads((tmp_path / "b.json").read_text())
    assert again["vpylm"] == meta  # read from the cache, not retrained
    assert set(again["targets"]) == {"plain", "vpylm"}
