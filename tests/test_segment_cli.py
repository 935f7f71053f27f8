"""`arsdecode segment` (issues 21, 33): the exact segmentation, its n-best and samples; on the
embedded 5-gram with the flat penalty and no cues (--lm, --unknown-penalty, --no-cues) the
answer equals brute force over every segmentation of a short text (each scored by the model's
own walk plus the lattice's unknown-word penalties); with the shipped general-English model
the words keep the input's case; one-line errors."""

from __future__ import annotations

import json
import math

import pytest
from cli_in_process import in_process_cli as _cli

import maxarpa
from arsdecode.api import DEFAULT_LM
from arsdecode.tasks.segment import SurfaceIndex, segmentation_lattice
from arsdecode.testing.brute_dag import brute_dag_model


@pytest.fixture(scope="module")
def lm():
    return maxarpa.load(DEFAULT_LM)


def test_segment_is_the_brute_force_best(lm, capsys):
    text = "godblesstheunion"
    code, out, err = _cli(capsys, "segment", text, "--json", "--max-unknown-length", "3",
                          "--lm", str(DEFAULT_LM), "--unknown-penalty", "2.5", "--no-cues")
    assert code == 0, err
    got = json.loads(out)
    # The same lattice, every path scored by the model's own walk on the whole history.
    wl = segmentation_lattice(text, SurfaceIndex.of_model(lm), unknown_max_length=3)
    brute = brute_dag_model(lm, wl)
    best = brute.log_p.index(brute.best_log_p)
    assert got["words"] == [w for w in brute.words[best] if w is not None]
    assert got["words"] == ["god", "bless", "the", "union"]
    assert abs(got["log_p"] - brute.best_log_p) <= 1e-9 * (1 + abs(brute.best_log_p))


def test_nbest_sample_file_and_blank_lines(lm, tmp_path, capsys):
    code, out, err = _cli(capsys, "segment", "thisisatest", "--nbest", "3", "--json")
    assert code == 0, err
    segs = json.loads(out)["segmentations"]
    assert segs[0]["words"] == ["this", "is", "a", "test"] and len(segs) == 3
    assert len({tuple(s["words"]) for s in segs}) == 3
    assert [s["log_p"] for s in segs] == sorted((s["log_p"] for s in segs), reverse=True)
    code, out, err = _cli(capsys, "segment", "thisisatest", "--sample", "5", "--seed", "1",
                          "--json")
    assert code == 0 and len(json.loads(out)["segmentations"]) == 5
    src = tmp_path / "in.txt"
    src.write_text("#StateOfTheUnion\n\nthisisatest\n")
    code, out, err = _cli(capsys, "segment", "--file", str(src))
    assert code == 0, err
    assert out.splitlines() == ["State Of The Union", "", "this is a test"]
    code, out, err = _cli(capsys, "segment", "--file", str(src), "--lower")
    assert out.splitlines() == ["state of the union", "", "this is a test"]
    assert all(math.isfinite(s["log_p"]) for s in segs)


@pytest.mark.parametrize("argv, fragment", [
    ([], "give one text, or --file"),
    (["abc", "--nbest", "2", "--sample", "2"], "exclude each other"),
    (["abc", "--file", "x"], "give one text, or --file"),
])
def test_errors_are_one_line(capsys, argv, fragment):
    code, out, err = _cli(capsys, "segment", *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and fragment in err
