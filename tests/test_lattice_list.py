"""`decode --in-lattice-list / --in-lattice-dir [--out-dir]` (issue 32): many lattices in one
process, each answer the same as `decode --lattice` on it, bad lattices reported and skipped,
outputs complete or absent, reruns resuming; and --split-multiwords against brute force.
"""

from __future__ import annotations

import json
import math
import random

import pytest
from cli_in_process import in_process_cli as _cli

from arsdecode.lattice.lattice_files import read_word_lattice, write_word_lattice
from arsdecode.lattice.vocabulary import split_multiwords
from arsdecode.testing.brute import model_path_log10
from arsdecode.testing.brute_dag import brute_dag, random_word_lattice

LN10 = math.log(10)


@pytest.fixture
def lattices(random_lms, tmp_path):
    model = random_lms[4]
    folder = tmp_path / "lats"
    folder.mkdir()
    paths = []
    for k, suffix in enumerate(["slf", "fst.txt", "json", "pfsg", "slf.gz"]):
        wl = random_word_lattice(random.Random(100 + k), model.words, max_nodes=6)
        path = folder / f"utt{k}.{suffix}"
        write_word_lattice(wl, path)
        paths.append(path)
    return model, paths


def one_by_one(capsys, model, path) -> dict:
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--json")
    assert code == 0, err
    return json.loads(out)


def test_a_list_gives_each_lattice_its_own_answer_and_goes_past_a_bad_one(
        lattices, tmp_path, capsys):
    model, paths = lattices
    bad = tmp_path / "lats" / "broken.slf"
    bad.write_text("N=2 L=1\nI=0\nJ=0 S=0 E=7 W=x\n")
    listing = tmp_path / "list.txt"
    listing.write_text("\n".join(map(str, [paths[0], bad, *paths[1:]])) + "\n")
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--in-lattice-list",
                          str(listing), "--json")
    assert code == 2  # one lattice failed
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["lattice"] for r in records] == [str(p) for p in paths]
    for path, got in zip(paths, records, strict=True):
        want = one_by_one(capsys, model, path)
        assert got["tokens"] == want["tokens"] and got["log_p"] == want["log_p"]
    errors = [line for line in err.splitlines() if line.startswith("arsdecode:")]
    assert len(errors) == 1 and "broken.slf" in errors[0]
    assert "lattices=6 decoded=5 skipped=0 failed=1" in err and "Traceback" not in err


def test_out_dir_writes_one_file_per_lattice_and_a_rerun_resumes(lattices, tmp_path, capsys):
    model, paths = lattices
    out_dir = tmp_path / "out"
    argv = ["decode", "--lm", str(model.path), "--in-lattice-dir", str(paths[0].parent),
            "--out-dir", str(out_dir)]
    code, out, err = _cli(capsys, *argv)
    assert code == 0, err
    files = sorted(p.name for p in out_dir.iterdir())
    assert files == [f"utt{k}.json" for k in range(5)]
    first = json.loads((out_dir / "utt2.json").read_text())
    assert first["tokens"] == one_by_one(capsys, model, paths[2])["tokens"]
    stamp = (out_dir / "utt0.json").stat().st_mtime_ns
    (out_dir / "utt3.json").unlink()
    code, out, err = _cli(capsys, *argv)
    assert code == 0 and "decoded=1 skipped=4 failed=0" in err
    assert (out_dir / "utt0.json").stat().st_mtime_ns == stamp
    assert json.loads((out_dir / "utt3.json").read_text())["tokens"] == \
        one_by_one(capsys, model, paths[3])["tokens"]


def test_plain_output_is_one_line_per_lattice_named_by_it(lattices, tmp_path, capsys):
    model, paths = lattices
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--in-lattice-dir",
                          str(paths[0].parent))
    assert code == 0, err
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == [f"utt{k}" for k in range(5)]
    assert lines[1].split()[1:] == one_by_one(capsys, model, paths[1])["tokens"]


@pytest.mark.parametrize("extra, fragment", [
    (["--write-best", "x.slf"], "--write-best names one output"),
    (["--lattice", "x.slf"], "not both"),
])
def test_list_mode_refuses_single_lattice_options(lattices, tmp_path, capsys, extra, fragment):
    model, paths = lattices
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--in-lattice-dir",
                          str(paths[0].parent), *extra)
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1


def test_two_inputs_with_one_output_name_are_refused_before_any_work(lattices, tmp_path,
                                                                     capsys):
    model, paths = lattices
    other = tmp_path / "elsewhere"
    other.mkdir()
    twin = other / "utt0.json"
    write_word_lattice(read_word_lattice(paths[0]), twin)
    listing = tmp_path / "list.txt"
    listing.write_text(f"{paths[0]}\n{twin}\n")
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--in-lattice-list",
                          str(listing), "--out-dir", str(tmp_path / "o"))
    assert code == 2 and "would both write utt0.json" in err
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_out_dir_alone_is_refused(lattices, capsys):
    model, paths = lattices
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice",
                          str(paths[0]), "--out-dir", "o")
    assert code == 2 and "--out-dir needs --in-lattice-list" in err


def test_split_multiwords_scores_the_words_of_every_multiword(random_lms, tmp_path, capsys):
    model = random_lms[4]
    a, b, c = model.words[:3]
    path = tmp_path / "lat.slf"
    path.write_text(f"N=4 L=5\nI=0\nI=1\nI=2\nI=3\n"
                    f"J=0 S=0 E=1 W={a}_{b} a=-1.0\nJ=1 S=0 E=1 W={c} a=-0.5\n"
                    f"J=2 S=1 E=2 W={b}_{c}_{a} a=-0.25\nJ=3 S=1 E=2 W={a} a=-2.0\n"
                    f"J=4 S=2 E=3 W=_{a} a=-0.1\n")
    wl = read_word_lattice(path)
    split = split_multiwords(wl)

    def split_words(words: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(p for w in words for p in (w.split("_") if w.strip("_") == w else [w]))

    brute = brute_dag(wl, lambda w: LN10 * model_path_log10(model.lm, list(split_words(w))))
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--split-multiwords", "--json")
    if "<unk>" not in model.lm.vocab:  # "_a" is kept whole: an unknown word
        assert code != 0
        return
    assert code == 0, err
    got = json.loads(out)
    assert abs(got["log_p"] - brute.best_log_p) <= 1e-9 * (1 + abs(brute.best_log_p))
    assert split.num_paths() == wl.num_paths()


def test_a_kaldi_text_archive_is_one_lattice_per_utterance(lattices, tmp_path, capsys):
    model, paths = lattices
    bodies = []
    for k in range(3):
        one = tmp_path / f"k{k}.fst.txt"
        write_word_lattice(read_word_lattice(paths[k]), one)
        bodies.append((f"utt-{k}", one))
    ark = tmp_path / "lat.ark.txt"
    parts = [f"{key}\n{one.read_text().strip()}\n" for key, one in bodies]
    parts.insert(1, "broken\n0 1 a\n1 x\n")  # a bad state on the archive's line
    ark.write_text("\n".join(parts) + "\n")
    bad_line = 1 + parts[0].count("\n") + 1 + 2
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--in-kaldi-ark",
                          str(ark), "--json")
    assert code == 2
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["utterance"] for r in records] == ["utt-0", "utt-1", "utt-2"]
    for (key, one), got in zip(bodies, records, strict=True):
        assert got["utterance"] == key
        want = one_by_one(capsys, model, one)
        assert got["tokens"] == want["tokens"] and got["log_p"] == want["log_p"]
    errors = [line for line in err.splitlines() if line.startswith("arsdecode:")]
    assert len(errors) == 1 and f"lat.ark.txt:{bad_line}:" in errors[0]


def test_sample_and_marginals_over_a_list(lattices, tmp_path, capsys):
    model, paths = lattices
    folder = str(paths[0].parent)
    code, out, err = _cli(capsys, "marginals", "--lm", str(model.path), "--in-lattice-dir",
                          folder, "--json")
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    for path, got in zip(paths, records, strict=True):
        code, one, err = _cli(capsys, "marginals", "--lm", str(model.path), "--lattice",
                              str(path), "--json")
        assert code == 0, err
        want = json.loads(one)
        assert got["log_Z"] == want["log_Z"] and got["arcs"] == want["arcs"]
    code, out, err = _cli(capsys, "sample", "--lm", str(model.path), "--in-lattice-dir",
                          folder, "-n", "5", "--seed", "3", "--json", "--out-dir",
                          str(tmp_path / "s"))
    assert code == 0, err
    for path in paths:
        got = json.loads((tmp_path / "s" / f"{path.name.split('.')[0]}.json").read_text())
        code, one, err = _cli(capsys, "sample", "--lm", str(model.path), "--lattice",
                              str(path), "-n", "5", "--seed", "3", "--json")
        assert code == 0, err
        assert got["samples"] == json.loads(one)["samples"]


def test_workers_give_the_one_process_answers_in_order(lattices, tmp_path, capsys):
    pytest.importorskip("distributed")
    model, paths = lattices
    folder = str(paths[0].parent)
    code, one, err = _cli(capsys, "decode", "--lm", str(model.path), "--in-lattice-dir",
                          folder, "--json")
    assert code == 0, err
    code, two, err = _cli(capsys, "decode", "--lm", str(model.path), "--in-lattice-dir",
                          folder, "--json", "--workers", "2")
    assert code == 0, err
    assert [json.loads(x)["tokens"] for x in two.splitlines()] == \
        [json.loads(x)["tokens"] for x in one.splitlines()]
