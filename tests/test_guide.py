"""docs/guide.md runs as written: every sh block (as one script, in order) and python block.

Why: a guide whose commands drift from the code is worse than none. The script runs in an
empty folder with `arsdecode`, `maxarpa` and `python` bound to this interpreter; the tagger
section uses the shipped model when the package has one, else the committed fixture models.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pos_fixture_models import build_fixture_models

from arsdecode.tasks.pos.models import ENV_VAR, SHIPPED_DIR, available_orders

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide.md"
BLOCK = re.compile(r"^```(sh|python)\n(.*?)^```", re.S | re.M)


def blocks(kind: str) -> list[str]:
    return [body for k, body in BLOCK.findall(GUIDE.read_text(encoding="utf-8")) if k == kind]


@pytest.mark.slow
def test_guide_commands_run(tmp_path):
    env = dict(os.environ)
    if not (SHIPPED_DIR.is_dir() and available_orders(SHIPPED_DIR)):
        env[ENV_VAR] = str(build_fixture_models(tmp_path / "pos_models"))
    work = tmp_path / "work"
    work.mkdir()
    py = sys.executable
    prelude = (
        "set -euo pipefail\n"
        f'arsdecode() {{ "{py}" -m arsdecode "$@"; }}\n'
        f'maxarpa() {{ "{py}" -m maxarpa "$@"; }}\n'
        f'python() {{ "{py}" "$@"; }}\n'
    )
    script = prelude + "\n".join(blocks("sh"))
    proc = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
    out = proc.stdout
    assert "certified, ln" in out and "UNCERTIFIED" in out and "exit status 3" in out
    assert "DT" in out and (work / "tagged.conll").is_file()
    assert "Traceback" not in proc.stderr
    for body in blocks("python"):
        proc = subprocess.run([py, "-c", body], cwd=work, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
