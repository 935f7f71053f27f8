"""One target builder (issue 30): `arsdecode.model.target_spec` builds every target the command
line and batch take, and every target runs on every lattice kind.

- Each combination the builder refuses is one OptionError naming its flags, on `TargetSpec`
  itself, so the command line, batch and the library share the message.
- From the command line, on a small word lattice, --mix-lm, --features and --vpylm (with
  --lmw) decode (auto and ars), give the K best, the arc posteriors and ln Z, and samples,
  each against brute force with an independent scorer (the scorers of the conformance suite,
  tests/conformance_targets.py). The command line refused all three on word lattices before.
- batch --features (new) gives, on confusion networks and word lattices, the lines the
  single-item command gives, and equals brute force.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from cli_in_process import in_process_cli
from conformance_targets import vpylm_reference_log
from test_interpolated_lm import reference_path
from test_loglinear_lm import random_features, reference_score
from test_vpylm import tiny_corpus

import maxarpa
from arsdecode.errors import OptionError
from arsdecode.lattice import Lattice
from arsdecode.lattice.lattice_files import read_word_lattice, write_word_lattice
from arsdecode.model import TargetSpec, build_target
from arsdecode.model.vpylm import VpylmLM, load_vpylm
from arsdecode.model.vpylm_train import train_vpylm
from arsdecode.testing.brute import _enumerate
from arsdecode.testing.brute_dag import brute_dag, random_word_lattice
from maxarpa.config import Config

TOL = 1e-9
LMW = 0.7


# ----- the refusals, written once ------------------------------------------------------------

@pytest.mark.parametrize("fields, fragment", [
    ({}, "give --lm (an n-gram model) or --vpylm"),
    ({"lm": "A", "vpylm": "V"}, "give --lm or --vpylm, not both"),
    ({"vpylm": "V", "mix": (("B", 0.5),)}, "--mix-lm interpolates n-gram models"),
    ({"vpylm": "V", "features": "F"}, "--features adds n-gram features"),
    ({"vpylm": "V", "order": 2}, "--order truncates an n-gram model"),
    ({"vpylm": "V", "config": Config(sentence_marker_missing="accept")}, "strictness flags"),
    ({"lm": "A", "features": "F", "mix": (("B", 0.5),)}, "--features and --mix-lm"),
    ({"lm": "A", "features": "F", "sentence_end": False}, "--no-bos and --no-eos"),
    ({"lm": "A", "lm_weight": 0.0}, "--lmw must be a finite number > 0"),
    ({"lm": "A", "lm_weight": math.nan}, "--lmw must be a finite number > 0"),
    ({"lm": "A", "mix_missing": "drop"}, "--mix-missing must be one of"),
    ({"lm": "A", "order": 0}, "--order must be >= 1"),
])
def test_each_refusal_is_one_option_error(fields, fragment):
    with pytest.raises(OptionError, match=None) as err:
        TargetSpec(**fields)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_the_builder_composes_as_the_api(random_lms, tmp_path):
    """lm alone is the model itself; --order truncates it; --lmw weights it."""
    m = random_lms[1]
    assert build_target(TargetSpec(lm=str(m.path))).model.order == m.lm.order
    built = build_target(TargetSpec(lm=str(m.path), order=2, lm_weight=LMW))
    assert built.hidden.order == 2 and built.model.scoring.lm_weight == LMW
    assert set(built.vocabulary()) == set(m.lm.word_to_id)


# ----- every target from the command line on a word lattice, against brute force -------------

@pytest.fixture(scope="module")
def models(random_lms, tmp_path_factory):
    """name -> (CLI flags, independent ln scorer of the words with <s> and </s>, lattice words):
    an interpolation, a log-linear target with features, a VPYLM, each with --lmw."""
    d = tmp_path_factory.mktemp("target_spec")
    a, b = random_lms[0], random_lms[2]
    feats = random_features(random.Random(3), list(a.words), 6)
    (d / "f.tsv").write_text("".join(f"{k}\t{v!r}\n" for k, v in feats.items()))
    counts = train_vpylm(tiny_corpus(10, 60), max_depth=3, sweeps=2, seed=0)
    with open(d / "m.vpylm.npz", "wb") as fh:
        counts.save(fh)
    vpylm = load_vpylm(d / "m.vpylm.npz")
    assert isinstance(vpylm, VpylmLM)
    mix_words = sorted({w for m in (a.lm, b.lm) for w in m.vocab} - {"<s>", "</s>"})
    return {
        "mix": (["--lm", str(a.path), "--mix-lm", str(b.path), "--lambda", "0.3"],
                lambda w: LMW * reference_path([a.lm, b.lm], [0.3, 0.7], "unk", w), mix_words),
        "features": (["--lm", str(a.path), "--features", str(d / "f.tsv")],
                     lambda w: reference_score([a.lm], [LMW], feats, tuple(w)), list(a.words)),
        "vpylm": (["--vpylm", str(d / "m.vpylm.npz")],
                  lambda w: LMW * vpylm_reference_log(vpylm, tuple(w)), ["a", "b", "c", "d"]),
    }


def word_lattice_file(tmp_path: Path, words: list[str], seed: int):
    """A small random word lattice written as a JSON DAG, read back (so the arcs are the
    file's), with at least three paths of p > 0."""
    rng = random.Random(seed)
    while True:
        wl = random_word_lattice(rng, words, max_nodes=5, max_paths=30, neg_inf=0.0)
        if wl.num_paths() >= 3:
            break
    path = tmp_path / f"wl{seed}.json"
    write_word_lattice(wl, path)
    return path, read_word_lattice(path)


def run_json(capsys, *argv: str) -> dict:
    code, out, err = in_process_cli(capsys, *argv, "--lmw", str(LMW), "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("name", ["mix", "features", "vpylm"])
def test_every_target_runs_on_a_word_lattice_from_the_cli(models, tmp_path, capsys, name):
    flags, score, words = models[name]
    for seed in range(3):
        path, wl = word_lattice_file(tmp_path, words, seed)
        ref = brute_dag(wl, score)
        at = ["--lattice", str(path), *flags]
        for method in ("auto", "ars"):
            r = run_json(capsys, "decode", *at, "--method", method)
            assert r["certified"] and abs(r["log_p"] - ref.best_log_p) <= TOL, (seed, method)
            assert abs(ref.score(tuple(r["arcs"])) - r["log_p"]) <= TOL
        k = min(4, len(ref.paths))
        kb = run_json(capsys, "decode", *at, "--nbest", str(k))
        assert [p["log_p"] for p in kb["nbest"]] == pytest.approx(
            [s for s, _ in ref.top_paths(k)], abs=TOL)
        for p in kb["nbest"]:
            assert abs(ref.score(tuple(p["arcs"])) - p["log_p"]) <= TOL
        post = run_json(capsys, "marginals", *at)
        assert abs(post["log_Z"] - ref.log_Z) <= TOL
        assert [a["posterior"] for a in post["arcs"]] == pytest.approx(
            list(ref.arc_posteriors()), abs=TOL)
        drawn = run_json(capsys, "sample", *at, "-n", "20", "--seed", str(seed))["samples"]
        assert len(drawn) == 20
        for p in drawn:
            assert abs(ref.score(tuple(p["arcs"])) - p["log_p"]) <= TOL


# ----- batch --features ------------------------------------------------------------------------

def test_batch_features_equals_the_single_item_command_and_brute_force(models, tmp_path,
                                                                       capsys):
    flags, score, words = models["features"]
    rng = random.Random(7)
    cns = [Lattice.from_lists([[(w, round(rng.uniform(-2, 0), 4))
                                for w in rng.sample(words, 2)] for _ in range(3)])
           for _ in range(3)]
    dags = [word_lattice_file(tmp_path, words, 10 + k) for k in range(2)]
    items = [cn.to_json_obj() for cn in cns] + [wl.to_json_obj() for _, wl in dags]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, **obj}) + "\n" for i, obj in enumerate(items)))
    out = tmp_path / "out.jsonl"
    code, _, err = in_process_cli(capsys, "batch", *flags, "--lmw", str(LMW), "--in", str(src),
                                  "--out", str(out), "--model-cache", str(tmp_path / "cache"))
    assert code == 0, err
    lines = {d["id"]: d for d in map(json.loads, out.read_text().splitlines())}
    assert sorted(lines) == list(range(len(items))) and not any("error" in d
                                                               for d in lines.values())
    for i, cn in enumerate(cns):
        ref = _enumerate(cn, score)
        assert abs(lines[i]["log_p"] - ref.best_log_p) <= TOL
        assert abs(ref.score(tuple(lines[i]["tokens"])) - lines[i]["log_p"]) <= TOL
        (tmp_path / "cn.json").write_text(json.dumps(cn.to_json_obj()))
        single = run_json(capsys, "decode", *flags, "--lattice", str(tmp_path / "cn.json"))
        assert (single["tokens"], single["log_p"]) == (lines[i]["tokens"], lines[i]["log_p"])
    for k, (path, wl) in enumerate(dags):
        line = lines[len(cns) + k]
        assert abs(line["log_p"] - brute_dag(wl, score).best_log_p) <= TOL
        single = run_json(capsys, "decode", *flags, "--lattice", str(path))
        assert (single["words"], single["log_p"]) == (line["words"], line["log_p"])


def test_batch_features_refusals_are_one_line(models, random_lms, tmp_path, capsys):
    flags, _, _ = models["features"]
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": 1, "positions": [[["a", 0.0]]]}\n')
    bad = tmp_path / "bad.tsv"
    bad.write_text("a b\t1.0\nc\tnot-a-number\n")
    out = tmp_path / "out.jsonl"
    for extra, fragment in [
        (["--lm", str(random_lms[0].path), "--features", str(bad)], f"{bad}:2"),
        ([*flags, "--mix-lm", str(random_lms[2].path)], "--features and --mix-lm"),
        ([*flags, "--task", "tag"], "--features is for --task decode or sample"),
    ]:
        code, stdout, err = in_process_cli(capsys, "batch", *extra, "--in", str(src), "--out",
                                           str(out))
        assert code == 2 and len(err.strip().splitlines()) == 1 and fragment in err, err
        assert "Traceback" not in err and not out.exists()


def test_maxarpa_is_what_the_default_loader_reads(random_lms):
    """build_target without loaders reads with maxarpa.load and the spec's strictness."""
    m = random_lms[0]
    built = build_target(TargetSpec(lm=str(m.path)))
    assert built.model.vocab == maxarpa.load(m.path).vocab and built.source == str(m.path)
