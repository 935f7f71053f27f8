"""Issue 34's start-up work: what a one-lattice process loads and allocates, and that the
cuts changed no answer.

- The compiled DP's transition cache starts at 4096 slots and grows fourfold when a run
  stores more transitions than it has (it used to fill 32 MiB on the first query); the
  answers before and after it grows are the Python reference's (`methods.full.full_decode`).
- A decode of a confusion network or a word lattice imports neither the tree package nor the
  VPYLM trainer (`arsdecode.model` and the TreeAutomaton checks are lazy), nor ARS, k-best,
  posteriors, marginals, the other targets and lattice formats, while their public names
  still resolve.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

import maxarpa
from ars_fixtures import LM, make_lattice
from arsdecode.lattice.flat import FlatLattices
from arsdecode.methods.fast_full import useful_context_tables
from arsdecode.methods.full import full_decode
from arsdecode.native import _core, native_ngram
from arsdecode.testing.random_arpa import random_arpa_text

FIRST_SLOTS = 1 << 12
SLOT_BYTES = 24


def _model(tmp_path: Path) -> LM:
    path = tmp_path / "r.arpa"
    path.write_text(random_arpa_text(random.Random(3), 5, 40, 0.3))
    lm = maxarpa.load(path)
    return LM("r", path, lm, None, [w for w in lm.vocab if w not in ("<s>", "</s>")], [])


def _sparse_dp(lm: maxarpa.Model) -> _core.FullDP:
    rows, lens, keys = useful_context_tables(lm)
    slots, bits = _core.build_hash(keys)
    return _core.FullDP(native_ngram(lm).core, rows, lens, keys, slots, bits, False)


def test_the_transition_cache_starts_small_grows_and_keeps_every_answer(tmp_path):
    model = _model(tmp_path)
    lm = model.lm
    rng = random.Random(5)
    lattices = [make_lattice(rng, model, max_len=12, max_width=7) for _ in range(400)]
    dp = _sparse_dp(lm)
    sizes = []
    for i in range(0, len(lattices), 20):
        chunk = lattices[i:i + 20]
        flat = FlatLattices.from_lattices(lm, chunk)
        res = dp.run(flat.sent_off, flat.pos_off, flat.cand_ids, flat.cand_emis, lm.bos_id,
                     lm.eos_id, True)
        for s, lat in enumerate(chunk):
            assert res[1][s] == pytest.approx(full_decode(lm, lat).log_p, abs=1e-9)
        sizes.append(dp.cache_bytes())
    assert sizes[0] <= 4 * FIRST_SLOTS * SLOT_BYTES  # not the 32 MiB of a full table
    assert sizes[-1] >= 16 * FIRST_SLOTS * SLOT_BYTES  # it grew, at least twice
    assert sizes == sorted(sizes)
    assert sizes[-1] <= _core.SPARSE_CACHE_BYTES


def _run_and_list_modules(args: list[str]) -> set[str]:
    code = ("import sys, io, contextlib\n"
            "from arsdecode.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    status = main({args!r})\n"
            "assert status == 0, status\n"
            "print('\\n'.join(sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    return set(out.split())


@pytest.mark.parametrize("kind", ["json", "slf"])
def test_a_lattice_decode_imports_neither_trees_nor_the_trainer(tmp_path, kind):
    from arsdecode.api import DEFAULT_LM

    model = tmp_path / "lm.npz"
    maxarpa.convert(DEFAULT_LM, model, binary=True)
    if kind == "json":
        lattice = tmp_path / "cn.json"
        lattice.write_text(json.dumps({"positions": [[["the", -0.1], ["a", -2.0]],
                                                     [["united", 0.0]], [["states", 0.0]]]}))
    else:
        lattice = tmp_path / "one.slf"
        lattice.write_text("VERSION=1.1\nbase=10\nstart=0 end=2\nN=3 L=3\n"
                           "J=0 S=0 E=1 W=the a=-1\nJ=1 S=0 E=1 W=a a=-2\n"
                           "J=2 S=1 E=2 W=union a=-1\n")
    loaded = _run_and_list_modules(["decode", "--lm", str(model), "--lattice", str(lattice)])
    assert "arsdecode.methods.dispatch" in loaded  # it did decode
    assert not any(m == "arsdecode.trees" or m.startswith("arsdecode.trees.") for m in loaded)
    assert "arsdecode.model.vpylm_train" not in loaded
    # What the full DP's decode does not run is imported where it runs (issue 34): ARS and its
    # q-automaton, k-best, posteriors, marginals, the other targets, the
    # other lattice formats, and tempfile (a decode writes no file).
    not_needed = {"arsdecode.methods.ars", "arsdecode.methods.ars_loop",
                  "arsdecode.methods.kbest", "arsdecode.methods.expansion_kbest",
                  "arsdecode.methods.dispatch_kbest", "arsdecode.methods.dispatch_posteriors",
                  "arsdecode.methods.marginals",
                  "arsdecode.methods.full", "arsdecode.core.automaton",
                  "arsdecode.api_targets", "arsdecode.model.loglinear", "arsdecode.model.vpylm",
                  "arsdecode.lattice.fst_text", "arsdecode.lattice.pfsg",
                  "arsdecode.lattice.nbest_formats", "tempfile"}
    assert not loaded & not_needed, sorted(loaded & not_needed)


def test_the_process_entry_resumes_collection_after_freezing_the_imports():
    """`cli.entry` pauses the collector only while the CLI loads: the command itself runs with
    collection on, and the imports' objects are frozen (kept: the main function works)."""
    code = ("import gc\n"
            "from arsdecode.cli.entry import load_main\n"
            "main = load_main()\n"
            "print(gc.isenabled(), gc.get_freeze_count() > 1000, main.__module__)\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout.split()
    assert out == ["True", "True", "arsdecode.cli.main"]


def test_both_process_entries_go_through_cli_entry():
    import tomllib

    root = Path(__file__).resolve().parent.parent
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["arsdecode"] == "arsdecode.cli.entry:main"
    dash_m = (root / "arsdecode" / "__main__.py").read_text()
    assert "from arsdecode.cli.entry import main" in dash_m
    done = subprocess.run([sys.executable, "-m", "arsdecode", "--version"], capture_output=True,
                          text=True)
    assert done.returncode == 0 and done.stdout.startswith("arsdecode ")


def test_the_lazy_model_package_still_exports_every_name():
    import arsdecode.model as model

    for name in model.__all__:
        assert getattr(model, name) is not None
        assert name in dir(model)
    from arsdecode.model.vpylm_train import train_vpylm

    assert model.train_vpylm is train_vpylm
    with pytest.raises(AttributeError):
        _ = model.no_such_name


def test_a_tree_automaton_is_still_accepted_and_anything_else_refused():
    import arsdecode.validate as v
    from arsdecode.trees.automaton import TreeAutomaton

    tree = TreeAutomaton.from_rules("S", [("S", "f", ["A"], 0.0), ("A", "a", [], 0.0)], "m")
    assert v.is_tree_automaton(tree)
    assert v.structure(tree) is tree
    assert not v.is_tree_automaton([["a"]])
    with pytest.raises(v.Refused):
        v.structure([["a"]])


def test_a_mapped_binary_model_decodes_as_the_text_model(tmp_path):
    """The CLI maps a binary --lm (mmap); its answer is the MAX-ARPA text model's."""
    from arsdecode.api import DEFAULT_LM

    model = tmp_path / "lm.npz"
    maxarpa.convert(DEFAULT_LM, model, binary=True)
    lattice = tmp_path / "cn.json"
    lattice.write_text(json.dumps({"positions": [[["the", -0.1], ["a", -2.0]],
                                                 [["united", 0.0], ["union", -0.3]]]}))
    got, log_p = [], []
    for lm in (model, DEFAULT_LM):
        out = subprocess.run([sys.executable, "-m", "arsdecode", "decode", "--lm", str(lm),
                              "--lattice", str(lattice), "--json"], check=True,
                             capture_output=True, text=True).stdout
        result = json.loads(out)
        got.append((result["tokens"], result["certified"]))
        log_p.append(result["log_p"])
    assert got[0] == got[1] == (["the", "united"], True)  # `auto` may pick another method
    assert log_p[0] == pytest.approx(log_p[1], abs=1e-9)
