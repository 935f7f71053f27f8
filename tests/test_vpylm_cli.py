"""The VPYLM from the command line (issue 22, target 4): `arsdecode train-vpylm` and --vpylm on
decode, sample, marginals and batch, against independent references.

- train-vpylm: the file it writes holds the counts `train_vpylm` gives for the same text and
  seed (so the command's own sweep loop is the API's), at exactly the path --out names.
- decode / sample / marginals --vpylm: `arsdecode.testing.brute.brute_target` over every path
  of small lattices (each path scored on its own by the VPYLM's `log_prob`), and the API
  (`arsdecode.decode(load_vpylm(p), lattice)`); samples by a chi-square test against the
  exact distribution, marginals and ln Z against its sums.
- Every refusal (options that need n-gram tables, word lattices, neither or both models) and
  every file that is not a VPYLM: one line on stderr, exit status 2, nothing on stdout.
"""

from __future__ import annotations

import gzip
import json
import math
import random

import pytest

import arsdecode
from arsdecode.batch.worker import item_seed
from arsdecode.lattice import Lattice
from arsdecode.model.vpylm import VpylmCounts, load_vpylm
from arsdecode.model.vpylm_train import train_vpylm
from arsdecode.testing.brute import BruteResult, brute_target, chi_square_pvalue
from arsdecode.testing.random_arpa import random_arpa_text
from tests.cli_in_process import in_process_cli

TIGHT = 1e-9
WORDS = ("a", "b", "c", "d", "e")
OOV = "zz"  # a lattice candidate the model never saw: scored as <unk>


def corpus(seed: int, n: int = 30) -> list[list[str]]:
    """Sentences from a skewed second-order source (so the tree grows past depth 1)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        s = [rng.choice(WORDS[:2])]
        while len(s) < 7 and rng.random() < 0.8:
            s.append(WORDS[(WORDS.index(s[-1]) * 2 + len(s) % 3) % 5]
                     if rng.random() < 0.7 else rng.choice(WORDS))
        out.append(s)
    return out


def write_text(path, sentences: list[list[str]]) -> None:
    path.write_text("".join(" ".join(s) + "\n" for s in sentences))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(model path, sentences): a model trained by the command (depth 3, 2 sweeps, seed 5),
    written to a name without .npz."""
    from arsdecode.cli import main as cli

    d = tmp_path_factory.mktemp("vpylm")
    sentences = corpus(5)
    write_text(d / "train.txt", sentences)
    out = d / "model"
    assert cli.main(["train-vpylm", "--text", str(d / "train.txt"), "--out", str(out),
                     "--depth", "3", "--sweeps", "2", "--seed", "5", "--json"]) == 0
    return out, sentences


def random_lattice(rng: random.Random, max_len: int = 4) -> Lattice:
    """2..max_len positions of 1..3 distinct candidates (the OOV word now and then), ln weights
    in [-2, 0]."""
    positions = []
    for _ in range(rng.randint(2, max_len)):
        toks = rng.sample([*WORDS, OOV] if rng.random() < 0.3 else list(WORDS),
                          rng.randint(1, 3))
        positions.append([(t, -2.0 * rng.random()) for t in toks])
    return Lattice.from_lists(positions)


def lattice_file(tmp_path, lattice: Lattice, name: str = "lat.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(lattice.to_json_obj()))
    return str(path)


def exact_marginals(ref: BruteResult, lattice: Lattice) -> list[dict[str, float]]:
    want = [dict.fromkeys(t, 0.0) for t in lattice.tokens]
    for path, prob in ref.distribution().items():
        for i, tok in enumerate(path):
            want[i][tok] += prob
    return want


# ---- train-vpylm ---------------------------------------------------------------------------

def test_train_vpylm_writes_the_counts_of_train_vpylm(tmp_path, capsys):
    sentences = corpus(7)
    text = tmp_path / "train.txt"
    text.write_text("\n".join(" ".join(s) for s in sentences[:10]) + "\n\n  \n"  # blank lines
                    + "\n".join(" ".join(s) for s in sentences[10:]) + "\n")
    out = tmp_path / "m.vpylm"  # no .npz: numpy's savez would add one
    code, stdout, err = in_process_cli(capsys, "train-vpylm", "--text", str(text), "--out",
                                       str(out), "--depth", "3", "--sweeps", "2", "--seed",
                                       "11", "--json")
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.vpylm", "train.txt"]  # no temp
    got = VpylmCounts.load(out)
    want = train_vpylm(sentences, max_depth=3, sweeps=2, seed=11)
    assert got.vocab == want.vocab and got.max_depth == 3
    assert got.discounts == want.discounts and got.strengths == want.strengths
    for name in ("parent", "word", "stop", "restaurants"):
        assert (getattr(got, name) == getattr(want, name)).all(), name
    info = json.loads(stdout)
    assert info["sentences"] == len(sentences)
    assert info["tokens"] == sum(len(s) for s in sentences)
    assert info["nodes"] == len(want.parent) and info["vocab"] == len(want.vocab) - 1
    # another seed gives another sample; gzip text gives the same model as plain text
    gz = tmp_path / "train.txt.gz"
    gz.write_bytes(gzip.compress(text.read_bytes()))
    code, stdout, err = in_process_cli(capsys, "train-vpylm", "--text", str(gz), "--out",
                                       str(tmp_path / "m2.npz"), "--depth", "3", "--sweeps",
                                       "2", "--seed", "11")
    assert code == 0, err
    assert "30 sentences" in stdout and str(tmp_path / "m2.npz") in stdout
    again = VpylmCounts.load(tmp_path / "m2.npz")
    assert (again.restaurants == want.restaurants).all()


# ---- decode, sample, marginals -------------------------------------------------------------

def test_decode_equals_the_api_and_brute_force(trained, tmp_path, capsys):
    path, _ = trained
    lm = load_vpylm(path)
    rng = random.Random(3)
    checked = oov_seen = 0
    for case in range(8):
        lattice = random_lattice(rng)
        ref = brute_target(lm, lattice)
        api = arsdecode.decode(lm, lattice)
        lat = lattice_file(tmp_path, lattice)
        for method in ("auto", "ars", "full"):
            code, out, err = in_process_cli(capsys, "decode", "--vpylm", str(path),
                                            "--lattice", lat, "--method", method, "--json")
            assert code == 0, err
            r = json.loads(out)
            assert r["certified"], (case, method)
            assert r["log_p"] == pytest.approx(ref.best_log_p, abs=TIGHT), (case, method)
            assert tuple(r["tokens"]) in ref.near_best(TIGHT), (case, method)
            assert r["log_p"] == pytest.approx(api.log_p, abs=TIGHT)
            if method == "auto":  # auto: ARS, or the compiled DP once its setup pays
                assert r["method"] in ("ars", "full")
            else:
                assert r["method"] == method
            oovs = sum(t == OOV for toks in lattice.tokens for t in toks)
            assert r["oov"] == {"count": oovs, "tokens": [OOV] if oovs else []}
            if oovs:
                assert f"scored as <unk>: '{OOV}'" in err
                oov_seen += 1
        checked += 1
    assert checked == 8 and oov_seen >= 1


def test_decode_nbest_and_lmw_equal_brute_force(trained, tmp_path, capsys):
    path, _ = trained
    lm = load_vpylm(path)
    lattice = random_lattice(random.Random(4), max_len=3)
    lat = lattice_file(tmp_path, lattice)
    ref = brute_target(lm, lattice)
    k = min(4, len(ref.paths))
    code, out, err = in_process_cli(capsys, "decode", "--vpylm", str(path), "--lattice", lat,
                                    "--nbest", str(k), "--json")
    assert code == 0, err
    got = [p["log_p"] for p in json.loads(out)["nbest"]]
    assert got == pytest.approx(sorted(ref.log_p, reverse=True)[:k], abs=TIGHT)
    # --lmw W: every LM ln probability times W (the generic WeightedLM over the VPYLM)
    weighted = brute_target(arsdecode.weighted(lm, lm_weight=0.5), lattice)
    code, out, err = in_process_cli(capsys, "decode", "--vpylm", str(path), "--lattice", lat,
                                    "--lmw", "0.5", "--json")
    assert code == 0, err
    assert json.loads(out)["log_p"] == pytest.approx(weighted.best_log_p, abs=TIGHT)


def test_sample_draws_paths_of_the_exact_distribution(trained, tmp_path, capsys):
    path, _ = trained
    lm = load_vpylm(path)
    lattice = Lattice.from_lists([[("a", -0.3), ("b", -0.9), (OOV, -1.5)],
                                  [("c", 0.0), ("d", -0.2)],
                                  [("a", -0.1), ("e", -0.6), ("b", -1.0)]])
    ref = brute_target(lm, lattice)
    code, out, err = in_process_cli(capsys, "sample", "--vpylm", str(path), "--lattice",
                                    lattice_file(tmp_path, lattice), "-n", "3000", "--seed",
                                    "2", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert len(got["samples"]) == 3000
    for tokens, log_p in zip(got["samples"][:200], got["log_p"][:200], strict=True):
        assert log_p == pytest.approx(ref.score(tokens), abs=TIGHT)  # a path, scored exactly
    assert chi_square_pvalue(got["samples"], ref.distribution()) > 1e-3
    assert got["log_Z"] == pytest.approx(ref.log_Z, abs=0.05)  # the sampler's estimate


@pytest.mark.parametrize("method", ["auto", "full", "sample"])
def test_marginals_sum_to_one_and_equal_brute_force(trained, tmp_path, capsys, method):
    path, _ = trained
    lm = load_vpylm(path)
    lattice = random_lattice(random.Random(6))
    ref = brute_target(lm, lattice)
    want = exact_marginals(ref, lattice)
    code, out, err = in_process_cli(capsys, "marginals", "--vpylm", str(path), "--lattice",
                                    lattice_file(tmp_path, lattice), "--method", method,
                                    "-n", "4000", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["exact"] == (method != "sample")
    tol = TIGHT if got["exact"] else 0.05
    assert got["log_Z"] == pytest.approx(ref.log_Z, abs=tol)
    for i, pos in enumerate(got["marginals"]):
        assert sum(p for _, p, _, _ in pos) == pytest.approx(1.0, abs=1e-9)
        for token, p, lo, hi in pos:
            assert p == pytest.approx(want[i][token], abs=tol), (i, token)
            if not got["exact"]:
                assert lo <= p <= hi


def test_map_and_text_give_the_lattice_of_the_map(trained, tmp_path, capsys):
    path, _ = trained
    lm = load_vpylm(path)
    (tmp_path / "map").write_text("x a 0.7 b 0.3\ny c 0.4 d 0.6\nz a 0.5 e 0.5\n")
    (tmp_path / "obs").write_text("x y z\n")
    lattice = Lattice.from_lists([[("a", math.log(0.7)), ("b", math.log(0.3))],
                                  [("c", math.log(0.4)), ("d", math.log(0.6))],
                                  [("a", math.log(0.5)), ("e", math.log(0.5))]])
    ref = brute_target(lm, lattice)
    code, out, err = in_process_cli(capsys, "decode", "--vpylm", str(path), "--map",
                                    str(tmp_path / "map"), "--text", str(tmp_path / "obs"),
                                    "--json")
    assert code == 0, err
    assert json.loads(out)["log_p"] == pytest.approx(ref.best_log_p, abs=TIGHT)


def test_batch_lines_equal_the_single_item_commands(trained, tmp_path, capsys):
    path, _ = trained
    rng = random.Random(8)
    lattices = [random_lattice(rng, max_len=3) for _ in range(4)]
    dag = {"start": 0, "finals": {"1": 0.0}, "arcs": [[0, 1, "a", 0.0]]}
    (tmp_path / "in.jsonl").write_text("".join(
        json.dumps({"id": i, **lat.to_json_obj()}) + "\n" for i, lat in enumerate(lattices))
        + json.dumps({"id": 4, **dag}) + "\n")
    for task in ("decode", "sample"):
        out = tmp_path / f"{task}.jsonl"
        code, _, err = in_process_cli(capsys, "batch", "--vpylm", str(path), "--task", task,
                                      "-n", "3", "--in", str(tmp_path / "in.jsonl"),
                                      "--out", str(out))
        assert code == 0, err
        lines = {d["id"]: d for d in map(json.loads, out.read_text().splitlines())}
        assert sorted(lines) == [0, 1, 2, 3, 4]
        # The word-lattice item runs too (issue 30: every target on every lattice kind),
        # as the single-item command runs it.
        dag_file = tmp_path / "dag.json"
        dag_file.write_text(json.dumps(dag))
        argv = (["decode"] if task == "decode" else ["sample", "-n", "3", "--seed",
                                                     str(item_seed(0, 4))])
        code, single, err = in_process_cli(capsys, *argv, "--vpylm", str(path), "--lattice",
                                           str(dag_file), "--json")
        assert code == 0 and "error" not in lines[4], (err, lines[4])
        if task == "decode":
            assert (lines[4]["words"], lines[4]["log_p"]) == (json.loads(single)["words"],
                                                              json.loads(single)["log_p"])
        else:
            assert lines[4]["samples"] == [d["words"] for d in json.loads(single)["samples"]]
        for i, lattice in enumerate(lattices):
            lat = lattice_file(tmp_path, lattice)
            if task == "decode":
                ref = brute_target(load_vpylm(path), lattice)
                assert lines[i]["log_p"] == pytest.approx(ref.best_log_p, abs=TIGHT)
                assert tuple(lines[i]["tokens"]) in ref.near_best(TIGHT)
                continue
            seed = item_seed(0, i)
            code, single, err = in_process_cli(capsys, "sample", "--vpylm", str(path),
                                               "--lattice", lat, "-n", "3", "--seed",
                                               str(seed), "--json")
            assert code == 0, err
            assert json.loads(single)["samples"] == lines[i]["samples"]


# ---- refusals and bad files: one line, exit 2 ----------------------------------------------

@pytest.fixture(scope="module")
def bad_files(tmp_path_factory, trained):
    """name -> path of files that are not a readable VPYLM."""
    import numpy as np

    import maxarpa

    d = tmp_path_factory.mktemp("bad")
    good = trained[0].read_bytes()
    (d / "model.arpa").write_text(random_arpa_text(1, 3, 5))
    maxarpa.convert(d / "model.arpa", d / "ngram.npz", binary=True)
    (d / "half.npz").write_bytes(good[: len(good) // 2])
    (d / "tail.npz").write_bytes(good[:-20])
    (d / "empty.npz").write_bytes(b"")
    np.savez(d / "other.npz", x=np.arange(3))
    np.savez(d / "listmeta.npz", meta=np.array("[1, 2]"))
    return {name: d / name for name in ("model.arpa", "ngram.npz", "half.npz", "tail.npz",
                                        "empty.npz", "other.npz", "listmeta.npz", "missing.npz")}


def one_line_error(code: int, out: str, err: str, *fragments: str) -> None:
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    for f in fragments:
        assert f in err, err


@pytest.mark.parametrize("name", ["model.arpa", "ngram.npz", "half.npz", "tail.npz",
                                  "empty.npz", "other.npz", "listmeta.npz", "missing.npz"])
def test_a_file_that_is_not_a_vpylm_is_one_line(bad_files, tmp_path, capsys, name):
    lat = lattice_file(tmp_path, Lattice.from_lists([[("a", 0.0)]]))
    path = str(bad_files[name])
    for command in (["decode"], ["sample", "-n", "2"], ["marginals"]):
        code, out, err = in_process_cli(capsys, *command, "--vpylm", path, "--lattice", lat)
        one_line_error(code, out, err, path)
    code, out, err = in_process_cli(capsys, "batch", "--vpylm", path, "--in", lat, "--out",
                                    str(tmp_path / "out.jsonl"))
    one_line_error(code, out, err, path)
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("extra, fragment", [
    ([], "give --lm (an n-gram model) or --vpylm"),
    (["--vpylm", "M", "--lm", "A"], "not both"),
    (["--vpylm", "M", "--mix-lm", "A"], "--mix-lm interpolates n-gram models"),
    (["--vpylm", "M", "--features", "F"], "--features adds n-gram features"),
    (["--vpylm", "M", "--sentence-marker-missing", "accept"], "strictness flags"),
])
def test_refusals_are_one_line(trained, bad_files, tmp_path, capsys, extra, fragment):
    (tmp_path / "f.tsv").write_text("a b\t1.0\n")
    lat = lattice_file(tmp_path, Lattice.from_lists([[("a", 0.0)]]))
    (tmp_path / "dag.json").write_text(json.dumps({"start": 0, "finals": {"1": 0.0},
                                                   "arcs": [[0, 1, "a", 0.0]]}))
    values = {"M": str(trained[0]), "A": str(bad_files["model.arpa"]),
              "F": str(tmp_path / "f.tsv")}
    argv = [values.get(a, a) for a in extra]
    for where in (lat, str(tmp_path / "dag.json")):  # the same refusal on both lattice kinds
        for command in (["decode"], ["sample", "-n", "2"], ["marginals"]):
            code, out, err = in_process_cli(capsys, *command, *argv, "--lattice", where)
            one_line_error(code, out, err, fragment)


def test_batch_refusals_are_one_line(trained, bad_files, tmp_path, capsys):
    lat = lattice_file(tmp_path, Lattice.from_lists([[("a", 0.0)]]))
    common = ["batch", "--vpylm", str(trained[0]), "--in", lat, "--out",
              str(tmp_path / "out.jsonl")]
    for extra, fragment in [(["--task", "tag"], "--vpylm is for --task decode or sample"),
                            (["--lm", str(bad_files["model.arpa"])], "not both"),
                            (["--mix-lm", str(bad_files["model.arpa"])], "--mix-lm"),
                            (["--sentence-marker-missing", "accept"], "strictness flags")]:
        code, out, err = in_process_cli(capsys, *common, *extra)
        one_line_error(code, out, err, fragment)


@pytest.mark.parametrize("text, options, fragment", [
    ("a b\n<s> a\n", [], "train.txt:2: <s> in the text"),
    ("a </s>\n", [], "train.txt:1: </s> in the text"),
    ("\n  \n", [], "no sentence to train on"),
    (b"a \xff b\n", [], "not UTF-8 text: byte 0xff"),
    ("a b\n", ["--depth", "11"], "--depth must be in 1..10"),
    ("a b\n", ["--depth", "0"], "--depth"),
    ("a b\n", ["--sweeps", "-1"], "--sweeps"),
    ("a b\n", ["--out-folder-missing"], "folder does not exist"),
])
def test_train_vpylm_bad_input_is_one_line(tmp_path, capsys, text, options, fragment):
    path = tmp_path / "train.txt"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    out = tmp_path / "m.npz"
    if options == ["--out-folder-missing"]:
        options, out = [], tmp_path / "nowhere" / "m.npz"
    code, stdout, err = in_process_cli(capsys, "train-vpylm", "--text", str(path), "--out",
                                       str(out), *options)
    one_line_error(code, stdout, err, fragment)
    assert not out.exists()
    code, stdout, err = in_process_cli(capsys, "train-vpylm", "--text",
                                       str(tmp_path / "missing.txt"), "--out",
                                       str(tmp_path / "m.npz"))
    one_line_error(code, stdout, err, "missing.txt")
