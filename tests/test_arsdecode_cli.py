"""The `arsdecode` command line, run as a subprocess: JSON output, determinism, input errors.

Why subprocesses: the contract is about what a script sees (one JSON object on stdout, exit
status 2 and a single stderr line with no traceback on bad input), so the tests look at exactly
that, for an ARPA model and for the same model converted to MAX-ARPA.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from ars_fixtures import make_lattice
from brute import brute_model

TIGHT = 1e-9
DECODE_KEYS = {"tokens", "log_p", "log_q", "iterations", "states", "ngrams_by_order", "seconds"}
SAMPLE_KEYS = {"samples", "log_p", "trials", "acceptance_rate", "log_Z", "log_Z_ci"}


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "arsdecode", *args], capture_output=True, text=True,
        timeout=timeout,
    )


def run_json(*args: str) -> dict:
    proc = run(*args, "--json")
    assert proc.returncode == 0, (args, proc.stderr)
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout
    obj = json.loads(lines[0])
    assert isinstance(obj, dict)
    return obj


@pytest.fixture(scope="module")
def cli_models(real_lms, tmp_path_factory) -> dict[str, Path]:
    """The 3-gram ARPA and its MAX-ARPA conversion (by the maxarpa command)."""
    arpa = real_lms[3].path
    out = tmp_path_factory.mktemp("cli") / "su3.maxarpa"
    proc = subprocess.run(
        [sys.executable, "-m", "maxarpa", "convert", "--quiet", str(arpa), str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return {"arpa": arpa, "maxarpa": out}


@pytest.fixture(scope="module")
def cli_lattices(real_lms, tmp_path_factory) -> list[tuple[Path, object]]:
    d = tmp_path_factory.mktemp("cli_lattices")
    rng = random.Random(17)
    out = []
    while len(out) < 3:
        lattice = make_lattice(rng, real_lms[3], max_len=4, neg_inf=0.3)
        if lattice.num_paths() < 4:
            continue
        path = d / f"lat{len(out)}.json"
        path.write_text(json.dumps(lattice.to_json_obj()))  # -inf is written as -Infinity
        out.append((path, lattice))
    return out


@pytest.mark.parametrize("kind", ["arpa", "maxarpa"])
def test_decode_json_matches_brute_force(real_lms, cli_models, cli_lattices, kind):
    for path, lattice in cli_lattices:
        ref = brute_model(real_lms[3].lm, lattice)
        obj = run_json("decode", "--lm", str(cli_models[kind]), "--lattice", str(path))
        assert DECODE_KEYS <= set(obj), sorted(obj)
        assert abs(obj["log_p"] - ref.best_log_p) <= TIGHT, (path.read_text(), obj, ref.best)
        assert tuple(obj["tokens"]) in ref.near_best(TIGHT), (obj["tokens"], ref.best)
        assert obj["log_q"] >= obj["log_p"] - TIGHT
        assert isinstance(obj["iterations"], int) and obj["iterations"] >= 1
        assert isinstance(obj["states"], int) and obj["states"] >= 1
        assert isinstance(obj["ngrams_by_order"], dict)
        assert all(int(k) >= 1 and v >= 0 for k, v in obj["ngrams_by_order"].items())
        assert obj["seconds"] >= 0


@pytest.mark.parametrize("kind", ["arpa", "maxarpa"])
def test_sample_json_is_reproducible(real_lms, cli_models, cli_lattices, kind):
    path, lattice = cli_lattices[0]
    ref = brute_model(real_lms[3].lm, lattice)
    args = ("sample", "--lm", str(cli_models[kind]), "--lattice", str(path), "-n", "50",
            "--seed", "7")
    a, b = run_json(*args), run_json(*args)
    assert SAMPLE_KEYS <= set(a), sorted(a)
    assert {k: a[k] for k in SAMPLE_KEYS} == {k: b[k] for k in SAMPLE_KEYS}
    assert len(a["samples"]) == len(a["log_p"]) == 50
    for toks, lp in zip(a["samples"], a["log_p"], strict=True):
        assert abs(ref.score(toks) - lp) <= TIGHT, (toks, lp)
    assert a["trials"] >= 50 and 0 < a["acceptance_rate"] <= 1
    lo, hi = a["log_Z_ci"]
    assert lo <= a["log_Z"] <= hi


def test_sample_same_across_model_formats(cli_models, cli_lattices):
    path, _ = cli_lattices[1]
    common = ("--lattice", str(path), "-n", "30", "--seed", "3")
    a = run_json("sample", "--lm", str(cli_models["arpa"]), *common)
    b = run_json("sample", "--lm", str(cli_models["maxarpa"]), *common)
    assert a["samples"] == b["samples"] and a["log_p"] == b["log_p"]


BAD_LATTICES = {
    "empty_positions": '{"positions": []}',
    "empty_position": '{"positions": [[["the", -1.0]], []]}',
    "nan_weight": '{"positions": [[["the", NaN]]]}',
    "nan_string": '{"positions": [[["the", "NaN"]]]}',
    "unknown_shape_list": '[[["the", -1.0]]]',
    "unknown_shape_key": '{"lattice": [[["the", -1.0]]]}',
    "bad_candidate": '{"positions": [["the"]]}',
    "all_neg_inf": '{"positions": [[["the", -Infinity]]]}',
    "not_json": '{"positions": [[["the", -1.0]]',
}


@pytest.mark.parametrize("command", ["decode", "sample"])
@pytest.mark.parametrize("name", sorted(BAD_LATTICES))
def test_bad_lattice_exits_2_with_one_line(cli_models, tmp_path, name, command):
    path = tmp_path / f"{name}.json"
    path.write_text(BAD_LATTICES[name])
    extra = ["-n", "5"] if command == "sample" else []
    proc = run(command, "--lm", str(cli_models["arpa"]), "--lattice", str(path), *extra, "--json")
    check_error(proc, name)


def test_missing_lattice_file(cli_models, tmp_path):
    proc = run("decode", "--lm", str(cli_models["arpa"]), "--lattice", str(tmp_path / "no.json"))
    check_error(proc, "missing lattice")


def test_missing_model_file(cli_lattices, tmp_path):
    path, _ = cli_lattices[0]
    proc = run("decode", "--lm", str(tmp_path / "no.arpa"), "--lattice", str(path))
    check_error(proc, "missing model")


def check_error(proc: subprocess.CompletedProcess, what: str) -> None:
    assert proc.returncode == 2, (what, proc.returncode, proc.stderr)
    assert proc.stdout == "", (what, proc.stdout)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, (what, proc.stderr)
    assert "Traceback" not in proc.stderr, (what, proc.stderr)
