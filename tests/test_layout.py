"""Files with one job (issue 30): the trainers apart from the targets they train, modules of about
400 lines at most where they were split, and bench/ and experiments/ as two independent sets of
runners started as modules from the repository root.

Why tests: a split is undone by one convenient import, and `sys.path.insert` in a runner is
how bench/ and experiments/ came to import each other's folders.
"""

from __future__ import annotations

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
