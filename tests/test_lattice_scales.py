"""Scales as the file says (issue 32): an SLF header's lmscale=, acscale= and wdpenalty= are
the defaults, flags override them, lattice-tool's units are offered (--htk-lmscale,
--htk-wdpenalty in log10), and the JSON output says which were used and where they came from.

Each score is checked against brute force with the scales applied by the test itself.
"""

from __future__ import annotations

import json
import math

import pytest
from cli_in_process import in_process_cli as _cli

from arsdecode.testing.brute import model_path_log10

LN10 = math.log(10)


def slf(model, header: str) -> str:
    a, b, c = model.words[-3:]
    return (f"VERSION=1.0\n{header}\nN=3 L=4\nI=0\nI=1\nI=2\n"
            f"J=0 S=0 E=1 W={a} a=-1.5\nJ=1 S=0 E=1 W={b} a=-0.2\n"
            f"J=2 S=1 E=2 W={c} a=-0.7\nJ=3 S=1 E=2 W={a} a=-3.0\n")


def brute_best(model, text: str, *, lm_scale: float, acscale: float, penalty_ln: float
               ) -> float:
    """Every path of the two-position SLF above, scored by hand."""
    arcs = [line for line in text.splitlines() if line.startswith("J=")]
    by_pos: dict[str, list[tuple[str, float]]] = {}
    for line in arcs:
        f = dict(kv.split("=") for kv in line.split())
        by_pos.setdefault(f["S"], []).append((f["W"], float(f["a"])))
    best = -math.inf
    for w1, a1 in by_pos["0"]:
        for w2, a2 in by_pos["1"]:
            lm = LN10 * model_path_log10(model.lm, [w1, w2])
            best = max(best, acscale * (a1 + a2) + 2 * penalty_ln + lm_scale * lm)
    return best


@pytest.fixture
def model(random_lms):
    return random_lms[3]


def decode_json(capsys, model, path, *flags) -> dict:
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--json", *flags)
    assert code == 0, err
    return json.loads(out)


def test_the_file_scales_are_the_defaults_and_reported(model, tmp_path, capsys):
    text = slf(model, "lmscale=3.5 wdpenalty=-0.25 acscale=0.5")
    path = tmp_path / "lat.slf"
    path.write_text(text)
    got = decode_json(capsys, model, path)
    want = brute_best(model, text, lm_scale=3.5, acscale=0.5, penalty_ln=-0.25)
    assert abs(got["log_p"] - want) <= 1e-9 * (1 + abs(want))
    assert got["scales"] == {"lm_scale": 3.5, "acoustic_scale": 0.5, "word_penalty_ln": -0.25,
                             "from": {"lm_scale": "file", "acoustic_scale": "file",
                                      "word_penalty_ln": "file"}}


def test_flags_override_the_file(model, tmp_path, capsys):
    text = slf(model, "lmscale=3.5 wdpenalty=-0.25 acscale=0.5")
    path = tmp_path / "lat.slf"
    path.write_text(text)
    got = decode_json(capsys, model, path, "--lm-scale", "1.5", "--acoustic-scale", "2",
                      "--word-penalty", "0.75")
    want = brute_best(model, text, lm_scale=1.5, acscale=2.0, penalty_ln=0.75)
    assert abs(got["log_p"] - want) <= 1e-9 * (1 + abs(want))
    assert set(got["scales"]["from"].values()) == {"flag"}


def test_lattice_tool_units(model, tmp_path, capsys):
    """--htk-wdpenalty is log10 (lattice-tool's unit), --htk-lmscale the same weight."""
    text = slf(model, "lmscale=2.0")
    path = tmp_path / "lat.slf"
    path.write_text(text)
    got = decode_json(capsys, model, path, "--htk-wdpenalty", "-0.5", "--htk-lmscale", "1.25")
    want = brute_best(model, text, lm_scale=1.25, acscale=1.0, penalty_ln=-0.5 * LN10)
    assert abs(got["log_p"] - want) <= 1e-9 * (1 + abs(want))
    assert got["scales"]["word_penalty_ln"] == pytest.approx(-0.5 * LN10)


@pytest.mark.parametrize("flags, fragment", [
    (["--htk-wdpenalty", "1", "--word-penalty", "1"], "not both"),
    (["--htk-lmscale", "1", "--lm-scale", "2"], "not both"),
])
def test_two_spellings_of_one_scale_are_refused(model, tmp_path, capsys, flags, fragment):
    path = tmp_path / "lat.slf"
    path.write_text(slf(model, "lmscale=2.0"))
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          *flags)
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1


def test_without_a_header_scale_the_default_is_one(model, tmp_path, capsys):
    text = slf(model, "UTTERANCE=u1")
    path = tmp_path / "lat.slf"
    path.write_text(text)
    got = decode_json(capsys, model, path)
    want = brute_best(model, text, lm_scale=1.0, acscale=1.0, penalty_ln=0.0)
    assert abs(got["log_p"] - want) <= 1e-9 * (1 + abs(want))
    assert got["scales"]["from"]["lm_scale"] == "default"
