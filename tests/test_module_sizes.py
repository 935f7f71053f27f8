"""Module sizes after issue 30's splits, and the script that prints the before/after table.

Why: a split is undone by the next convenient addition, so the parts stay under the limit by
test (as tests/test_layout.py does for the trainers' splits); and the table for the closing
note is made from git by `scripts.module_sizes`, so it is checked here on a throwaway repo
whose counts are known, not by eye.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from scripts.module_sizes import lines_at, lines_now, main, size_table

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 400
SPLIT = (
    "arsdecode/lattice/slf.py", "arsdecode/lattice/slf_fields.py", "arsdecode/lattice/slf_read.py",
    "arsdecode/lattice/slf_write.py", "arsdecode/tasks/pos/emissions.py",
    "arsdecode/tasks/pos/model_file.py", "arsdecode/tasks/pos/sentence_lattice.py",
    "arsdecode/cli/options.py", "arsdecode/cli/option_types.py",
    "arsdecode/cli/model_options.py")
CORE_PARTS = sorted(p.relative_to(REPO).as_posix() for pattern in ("*.pyx", "*.pxi")
                    for p in (REPO / "arsdecode" / "native").glob(pattern))


@pytest.mark.parametrize("path", [*SPLIT, *CORE_PARTS])
def test_split_modules_and_core_parts_stay_small(path):
    lines = len((REPO / path).read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path}: {lines} lines"


def test_the_core_is_split_into_its_parts():
    """Every part is included once by _core.pyx, and no part is left out of the build."""
    core = (REPO / "arsdecode/native/_core.pyx").read_text(encoding="utf-8")
    included = [line.split('"')[1] for line in core.splitlines() if line.startswith("include ")]
    parts = sorted(Path(p).name for p in CORE_PARTS if p.endswith(".pxi"))
    assert sorted(included) == parts and len(set(included)) == len(included)


def test_moved_names_are_still_importable_where_they_were():
    from arsdecode.cli import model_options, option_types, options
    from arsdecode.lattice import slf, slf_fields, slf_write
    from arsdecode.tasks.pos import emissions, model_file, sentence_lattice

    for name in ("add_mix_options", "mix_models", "lm_config", "add_model_options",
                 "add_lm_weight_option", "add_features_option", "MIX_MISSING", "MIX_SLOTS"):
        assert getattr(options, name) is getattr(model_options, name), name
    for name in ("positive_int", "seed_int", "int_at_least", "unit_fraction",
                 "non_negative_float", "positive_float", "weight_fraction"):
        assert getattr(options, name) is getattr(option_types, name), name
    assert slf.write_slf is slf_write.write_slf and slf.paths_lattice is slf_write.paths_lattice
    assert slf.NULL_WORD == slf_fields.NULL_WORD
    assert emissions.PosModelError is model_file.PosModelError
    assert emissions.emission_lattice is sentence_lattice.emission_lattice


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    *args], check=True, capture_output=True)


def _write(path: Path, n_lines: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"x{i} = {i}\n" for i in range(n_lines)), encoding="utf-8")


def test_the_table_compares_a_revision_with_the_work_tree(tmp_path):
    repo = tmp_path / "repo"
    _write(repo / "pkg" / "big.py", 500)      # split away after the revision
    _write(repo / "pkg" / "kept.py", 350)     # shrinks
    _write(repo / "pkg" / "small.py", 40)     # never listed
    _write(repo / "pkg" / "core.pyx", 310)
    _write(repo / "tests" / "test_x.py", 900)  # not a root: not counted
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "before")
    (repo / "pkg" / "big.py").unlink()
    _write(repo / "pkg" / "kept.py", 120)
    _write(repo / "pkg" / "new_part.pxi", 420)
    _write(repo / "pkg" / "__pycache__" / "junk.py", 999)  # build output: ignored
    before = lines_at("HEAD", repo, ("pkg",))
    now = lines_now(repo, ("pkg",))
    assert before == {"pkg/big.py": 500, "pkg/kept.py": 350, "pkg/small.py": 40,
                      "pkg/core.pyx": 310}
    assert now == {"pkg/kept.py": 120, "pkg/small.py": 40, "pkg/core.pyx": 310,
                   "pkg/new_part.pxi": 420}
    table = size_table(before, now, 300, "HEAD").splitlines()
    assert table[2:6] == ["| `pkg/big.py` | 500 | - |", "| `pkg/new_part.pxi` | - | 420 |",
                          "| `pkg/kept.py` | 350 | 120 |", "| `pkg/core.pyx` | 310 | 310 |"]
    assert table[6] == ""  # small.py is under the threshold on both sides
    assert table[7].startswith("Modules over 400 lines: 1 at HEAD, 1 now")


def test_a_bad_revision_is_one_line_and_status_2(capsys):
    assert main(["--before", "no-such-revision-here"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no-such-revision-here" in err[0]
