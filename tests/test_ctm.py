"""CTM output (`decode --ctm`, issue 32): the best path's words with the SLF node times and each
word's confidence, its arc's exact posterior, checked against brute force."""

from __future__ import annotations

import pytest
from cli_in_process import in_process_cli as _cli

from arsdecode.lattice.lattice_files import read_word_lattice
from arsdecode.testing.brute_dag import brute_dag_model


def timed_slf(model) -> str:
    a, b, c = model.words[-3:]
    return ("VERSION=1.0\nUTTERANCE=u\nN=5 L=6\n"
            "I=0 t=0.00\nI=1 t=0.31\nI=2 t=0.55\nI=3 t=0.90\nI=4 t=1.25\n"
            f"J=0 S=0 E=1 W={a} a=-1.0\nJ=1 S=0 E=1 W={b} a=-1.2\n"
            f"J=2 S=1 E=2 W=!NULL a=-0.1\nJ=3 S=1 E=3 W={c} a=-2.0\n"
            f"J=4 S=2 E=3 W={a} a=-0.4\nJ=5 S=3 E=4 W={b} a=-0.3\n")


@pytest.fixture
def model(random_lms):
    return random_lms[4]


def test_ctm_lines_carry_the_node_times_and_exact_posteriors(model, tmp_path, capsys):
    path = tmp_path / "utt3.slf"
    path.write_text(timed_slf(model))
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--ctm")
    assert code == 0, err
    wl = read_word_lattice(path)
    brute = brute_dag_model(model.lm, wl)
    best = brute.paths[brute.log_p.index(brute.best_log_p)]
    post = brute.arc_posteriors()
    times = wl.node_times
    want = [(f"utt3 1 {times[wl.src[a]]:.2f} {times[wl.dst[a]] - times[wl.src[a]]:.2f} "
             f"{wl.words[a]}", post[a]) for a in best if wl.words[a] is not None]
    lines = out.splitlines()
    assert len(lines) == len(want)
    for line, (head, p) in zip(lines, want, strict=True):
        assert line.rsplit(" ", 1)[0] == head
        assert float(line.rsplit(" ", 1)[1]) == pytest.approx(p, abs=1e-6)


def test_ctm_without_times_is_one_line_error(model, tmp_path, capsys):
    path = tmp_path / "u.slf"
    path.write_text(timed_slf(model).replace(" t=0.31", ""))
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--ctm")
    assert code == 2 and "--ctm needs node times" in err and len(err.strip().splitlines()) == 1


def test_ctm_over_a_list(model, tmp_path, capsys):
    folder = tmp_path / "lats"
    folder.mkdir()
    for k in range(2):
        (folder / f"u{k}.slf").write_text(timed_slf(model))
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--in-lattice-dir",
                          str(folder), "--ctm")
    assert code == 0, err
    names = {line.split()[0] for line in out.splitlines()}
    assert names == {"u0", "u1"}
