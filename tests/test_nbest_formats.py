"""n-best lists of word lattices in SRILM's and Kaldi's layouts (issue 32), against brute force:
each line's words are the brute-force k-best's, and its acoustic and LM parts are the path's
arc weights and its LM score, computed here independently.
"""

from __future__ import annotations

import math
import random

import pytest
from cli_in_process import in_process_cli as _cli

from arsdecode.lattice.lattice_files import read_word_lattice, write_word_lattice
from arsdecode.lattice.nbest_formats import BYTELOG_PER_LN
from arsdecode.testing.brute import model_path_log10
from arsdecode.testing.brute_dag import brute_dag_model, random_word_lattice

LN10 = math.log(10)


@pytest.fixture
def problem(random_lms, tmp_path):
    model = random_lms[5]
    wl = random_word_lattice(random.Random(23), model.words, max_nodes=6)
    path = tmp_path / "utt7.slf"
    write_word_lattice(wl, path)
    return model, read_word_lattice(path), path


def brute_top(model, wl, k):
    brute = brute_dag_model(model.lm, wl)
    top = brute.top_paths(k)
    out = []
    for lp, arcs in top:
        words = wl.path_words(arcs)
        final = int(wl.dst[arcs[-1]]) if arcs else 0
        acoustic = sum(float(wl.log_weights[a]) for a in arcs) + wl.finals[final]
        out.append((lp, words, acoustic, LN10 * model_path_log10(model.lm, words)))
    return out


def test_srilm_format_splits_each_score_into_acoustic_and_lm(problem, capsys):
    model, wl, path = problem
    k = min(4, wl.num_paths())
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--nbest", str(k), "--nbest-format", "srilm", "--lm-scale", "2")
    assert code == 0, err
    want = brute_top(model, wl, 10**6)
    lines = out.splitlines()
    assert len(lines) == k
    for line in lines:
        ac, lm, n, *words = line.split()
        assert int(n) == len(words)
        matches = [w for w in want if w[1] == words
                   and abs(w[2] / LN10 - float(ac)) <= 1e-9]
        assert matches, line
        assert any(abs(m[3] / LN10 - float(lm)) <= 1e-9 for m in matches)
    # best first, by the weighted total acoustic + 2 * lm
    totals = [float(ln.split()[0]) + 2 * float(ln.split()[1]) for ln in lines]
    assert totals == sorted(totals, reverse=True)
    best = max(w[2] + 2 * w[3] for w in want)
    assert totals[0] * LN10 == pytest.approx(best, abs=1e-9)


def test_nbestlist_and_kaldi_layouts(problem, capsys):
    model, wl, path = problem
    k = min(3, wl.num_paths())
    want = brute_top(model, wl, k)
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--nbest", str(k), "--nbest-format", "NBestList1.0")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "NBestList1.0" and len(lines) == k + 1
    for line, (lp, words, _, _) in zip(lines[1:], want, strict=True):
        score, _, rest = line.partition(" ")
        assert int(score[1:-1]) == round(lp * BYTELOG_PER_LN) and rest.split() == words
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--nbest", str(k), "--nbest-format", "kaldi")
    assert code == 0, err
    names = [line.split()[0] for line in out.splitlines()]
    assert names == [f"utt7-{i}" for i in range(1, k + 1)]
    assert [line.split()[1:] for line in out.splitlines()] == [w[1] for w in want]


def test_a_list_writes_one_nbest_file_per_lattice(problem, tmp_path, capsys):
    model, wl, path = problem
    out_dir = tmp_path / "nbest"
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--in-lattice-dir",
                          str(path.parent), "--nbest", "2", "--nbest-format", "srilm",
                          "--out-dir", str(out_dir))
    assert code == 0, err
    assert [p.name for p in out_dir.iterdir()] == ["utt7.nbest"]
    lines = (out_dir / "utt7.nbest").read_text().splitlines()
    want = brute_top(model, wl, 2)
    assert [ln.split()[3:] for ln in lines] == [w[1] for w in want]
