"""Files with one job (issue 30): the trainers apart from the targets they train, modules of about
400 lines at most where they were split, and bench/ and experiments/ as two independent sets of
runners started as modules from the repository root.

Why tests: a split is undone by one convenient import, and `sys.path.insert` in a runner is
how bench/ and experiments/ came to import each other's folders.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scripts.import_graph import imported_names

REPO = Path(__file__).resolve().parents[1]
SPLIT = ("arsdecode/model/vpylm.py", "arsdecode/model/vpylm_train.py",
         "arsdecode/model/loglinear.py", "arsdecode/model/feature_file.py",
         "arsdecode/lattice/confusion.py", "arsdecode/lattice/input_files.py")
MAX_LINES = 400


def test_the_vpylm_trainer_is_not_in_the_target_module():
    import arsdecode.model
    from arsdecode.model import vpylm, vpylm_train

    assert not hasattr(vpylm, "VpylmSampler") and not hasattr(vpylm, "train_vpylm")
    assert vpylm_train.train_vpylm.__module__ == "arsdecode.model.vpylm_train"
    assert arsdecode.model.train_vpylm is vpylm_train.train_vpylm  # where it is exported
    assert "arsdecode.model.vpylm_train" not in {n for n, _ in imported_names(
        "arsdecode.model.vpylm", REPO / "arsdecode/model/vpylm.py")}


def test_the_feature_file_parser_is_not_in_the_target_module():
    from arsdecode.model import feature_file, loglinear

    for name in ("read_features", "parse_feature", "as_features", "Feature", "SKIP"):
        assert getattr(loglinear, name) is getattr(feature_file, name), name  # re-exported
    assert loglinear.read_features.__module__ == "arsdecode.model.feature_file"
    source = (REPO / "arsdecode/model/loglinear.py").read_text(encoding="utf-8")
    assert "def read_features" not in source and "def parse_feature" not in source


@pytest.mark.parametrize("path", SPLIT)
def test_split_modules_stay_small(path):
    lines = len((REPO / path).read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path}: {lines} lines"


RUNNER_DIRS = ("bench", "experiments")
SYS_PATH_EDIT = re.compile(r"sys\.path\.(insert|append|extend)\(|sys\.path\s*(\+?=|\[)")


def _sources(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (REPO / folder).rglob("*.py"))


def _module(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_runner_edits_sys_path():
    """They run as modules from the root (`python -m bench.bench_pos`), which puts the root
    on sys.path; the tests get it from pyproject's `pythonpath`."""
    edits = [f"{p.relative_to(REPO)}:{n}" for p in [*_sources("bench", "experiments", "scripts",
                                                               "data_prep"),
                                                     REPO / "tests" / "conftest.py"]
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if SYS_PATH_EDIT.search(line)]
    assert not edits, edits


@pytest.mark.parametrize("folder, other", [("bench", "experiments"), ("experiments", "bench")])
def test_bench_and_experiments_do_not_import_each_other(folder, other):
    """What both need lives where both may import it: data_prep (the SMS subset, the ASR-like
    lattices) or arsdecode.testing (the oracles)."""
    found = [f"{_module(p)} -> {name}" for p in _sources(folder)
             for name, _ in imported_names(_module(p), p)
             if name == other or name.startswith(other + ".")]
    assert not found, found


@pytest.mark.parametrize("path", _sources(*RUNNER_DIRS), ids=lambda p: _module(p))
def test_every_runner_imports_from_the_root(path):
    """Importing a runner as the module `python -m` would run (no __main__ block runs)."""
    import importlib

    try:
        importlib.import_module(_module(path))
    except ModuleNotFoundError as err:
        if err.name and err.name.split(".")[0] in ("bench", "experiments", "data_prep",
                                                    "arsdecode", "maxarpa", "scripts"):
            raise
        pytest.skip(f"optional dependency {err.name} is not installed")
