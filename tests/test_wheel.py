"""The built wheel works on its own: installed into a clean virtualenv, outside the source tree,
`arsdecode sms` and `arsdecode tag` run with only the packaged data (no ../shared, no work/).

Slow (builds a wheel and an sdist with `python -m build`, then pip-installs the wheel and its
dependencies, numpy, pynini, networkx and tqdm, from the package index or pip's cache).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]
POS_FILES = ("emissions.json.gz", "tags.3.maxarpa.gz", "README.md")


# No PYTHONPATH (it would put the source tree first) and no model directory from outside.
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "ARSDECODE_POS_MODELS", "VIRTUAL_ENV")}


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, env=CLEAN_ENV, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    pytest.importorskip("build", reason="python -m build needs the 'build' package")
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(REPO)],
         cwd=REPO)
    return out


def test_wheel_and_sdist_carry_the_packaged_models(dist):
    (wheel,) = dist.glob("arsdecode-*.whl")
    (sdist,) = dist.glob("arsdecode-*.tar.gz")
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in POS_FILES:
        assert f"arsdecode/data/pos/{f}" in names
    assert "arsdecode/data/state_union.5gram.maxarpa.gz" in names
    with tarfile.open(sdist) as t:
        members = {m.split("/", 1)[1] for m in t.getnames() if "/" in m}
    for f in POS_FILES:
        assert f"arsdecode/data/pos/{f}" in members


def test_wheel_runs_sms_and_tag_in_a_clean_venv(dist, tmp_path):
    (wheel,) = dist.glob("arsdecode-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    _run([str(py), "-m", "pip", "install", "-q", str(wheel)], cwd=tmp_path)
    exe = env_dir / "bin" / "arsdecode"
    # Run from an empty directory: nothing from the source tree can be picked up.
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    sms = _run([str(exe), "sms", "3637 843 66639 39478 *"], cwd=cwd)
    assert sms.stdout.strip()
    tag = _run([str(exe), "tag", "The dog barked ."], cwd=cwd)
    words = [tok.rsplit("/", 1) for tok in tag.stdout.split()]
    assert [w for w, _ in words] == ["The", "dog", "barked", "."]
    assert words[0][1] == "DT" and words[1][1] == "NN" and words[3][1] == "."
