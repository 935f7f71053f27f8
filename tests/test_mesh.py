"""The word mesh and consensus decoding (`decode --consensus/--write-mesh`, issue 32).

On a confusion network the mesh must be exactly the per-position posterior marginals (brute
force), and the consensus their argmax; on any lattice the mesh's word mass adds up to the
expected number of words (brute force) unless a slot is clipped, every slot sums to 1, and the
posteriors with --posterior-scale S are those of the scores divided by S.
"""

from __future__ import annotations

import json
import math
import random
from collections import defaultdict

import pytest
from cli_in_process import in_process_cli as _cli

from arsdecode.lattice import Lattice, WordLattice
from arsdecode.lattice.lattice_files import read_word_lattice, write_word_lattice
from arsdecode.lattice.mesh import DELETE, build_mesh
from arsdecode.testing.brute import model_path_log10
from arsdecode.testing.brute_dag import brute_dag, brute_dag_model, random_word_lattice

LN10 = math.log(10)


def cn_lattice(model, rng) -> WordLattice:
    positions = [[(w, -rng.random() * 2) for w in rng.sample(model.words, 3)]
                 for _ in range(4)]
    return WordLattice.from_confusion(Lattice.from_lists(positions))


def test_on_a_confusion_network_the_mesh_is_the_exact_marginals(random_lms, tmp_path, capsys):
    model = random_lms[5]
    wl = cn_lattice(model, random.Random(3))
    path = tmp_path / "cn.slf"
    write_word_lattice(wl, path)
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--consensus", "--json")
    assert code == 0, err
    got = json.loads(out)
    wl = read_word_lattice(path)
    brute = brute_dag_model(model.lm, wl)
    post = brute.arc_posteriors()
    want = [defaultdict(float) for _ in range(4)]
    for a in range(wl.n_arcs):  # node i -> i + 1 is position i
        want[int(wl.node_names[wl.src[a]])][wl.words[a]] += post[a]
    assert len(got["mesh"]) == 4
    for slot, marg in zip(got["mesh"], want, strict=True):
        entries = dict(slot)
        assert DELETE not in entries or entries[DELETE] < 1e-9
        for word, p in marg.items():
            assert entries[word] == pytest.approx(p, abs=1e-9)
    assert got["tokens"] == [max(m, key=m.get) for m in want]


def test_on_any_lattice_the_word_mass_is_the_expected_number_of_words(random_lms):
    model = random_lms[4]
    checked = 0
    for seed in range(8):
        wl = random_word_lattice(random.Random(seed), model.words, max_nodes=6)
        brute = brute_dag_model(model.lm, wl)
        if brute.log_Z == -math.inf:
            continue
        post = brute.arc_posteriors()
        best = brute.paths[brute.log_p.index(brute.best_log_p)]
        mesh = build_mesh(wl, post, best)
        for slot in mesh.slots:
            assert sum(p for _, p in slot) == pytest.approx(1.0, abs=1e-9)
        if mesh.clipped == 0:
            words = sum(p for slot in mesh.slots for w, p in slot if w != DELETE)
            expected = sum(post[a] for a in range(wl.n_arcs) if wl.words[a] is not None)
            assert words == pytest.approx(expected, abs=1e-9)
        checked += 1
    assert checked >= 5


def test_posterior_scale_tempers_every_path_score(random_lms, tmp_path, capsys):
    model = random_lms[5]
    wl = cn_lattice(model, random.Random(9))
    path = tmp_path / "cn.slf"
    write_word_lattice(wl, path)
    wl = read_word_lattice(path)
    scale = 3.0
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--consensus", "--json", "--posterior-scale", str(scale))
    assert code == 0, err
    tempered = brute_dag(wl, lambda w: LN10 * model_path_log10(model.lm, list(w)))
    weights = [lp / scale for lp in tempered.log_p]
    top = max(weights)
    z = sum(math.exp(x - top) for x in weights)
    first = defaultdict(float)
    for arcs, x in zip(tempered.paths, weights, strict=True):
        first[wl.words[arcs[0]]] += math.exp(x - top) / z
    slot = dict(json.loads(out)["mesh"][0])
    for word, p in first.items():
        assert slot[word] == pytest.approx(p, abs=1e-9)


def test_write_mesh_is_srilm_format(random_lms, tmp_path, capsys):
    model = random_lms[5]
    wl = cn_lattice(model, random.Random(4))
    path = tmp_path / "u9.slf"
    write_word_lattice(wl, path)
    mesh = tmp_path / "u9.mesh"
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--write-mesh", str(mesh))
    assert code == 0, err
    lines = mesh.read_text().splitlines()
    assert lines[:3] == ["name u9", "numaligns 4", "posterior 1"]
    for k, line in enumerate(lines[3:]):
        fields = line.split()
        assert fields[:2] == ["align", str(k)]
        assert sum(float(p) for p in fields[3::2]) == pytest.approx(1.0, abs=1e-9)


def test_a_list_writes_every_mesh(random_lms, tmp_path, capsys):
    model = random_lms[5]
    folder = tmp_path / "lats"
    folder.mkdir()
    for k in range(2):
        write_word_lattice(cn_lattice(model, random.Random(20 + k)), folder / f"c{k}.slf")
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--in-lattice-dir",
                          str(folder), "--out-mesh-dir", str(tmp_path / "m"), "--consensus")
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["c0.mesh", "c1.mesh"]
    for line in out.splitlines():
        name, *words = line.split()
        mesh_words = [ln.split()[2] for ln in (tmp_path / "m" / f"{name}.mesh").read_text()
                      .splitlines()[3:]]
        assert words == [w for w in mesh_words if w != DELETE]
