"""Train ARPA models with KenLM's lmplz, built from the PyPI sdist by build_kenlm_tools.sh.

Why a wrapper: tests, the SMS pipeline and the POS pipeline all train real models, and all of
them must find the same binary and fail with the same clear message when it is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from maxarpa.output import atomic_output

REPO_ROOT = Path(__file__).resolve().parent.parent


class LmplzError(RuntimeError):
    """lmplz is missing or failed."""


def find_tool(name: str) -> Path:
    """Locate `lmplz` or `build_binary`: $KENLM_BIN, then ./.tools/bin, then $PATH."""
    candidates = []
    if os.environ.get("KENLM_BIN"):
        candidates.append(Path(os.environ["KENLM_BIN"]) / name)
    candidates.append(REPO_ROOT / ".tools" / "bin" / name)
    on_path = shutil.which(name)
    if on_path:
        candidates.append(Path(on_path))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    raise LmplzError(
        f"{name} not found; run `bash data_prep/build_kenlm_tools.sh` (or set KENLM_BIN)"
    )


def train_arpa(
    sentences: Iterable[str],
    order: int,
    out_path: str | Path,
    extra_args: Sequence[str] = (),
    memory: str = "1G",
) -> Path:
    """Train a modified Kneser-Ney ARPA model of `order` on whitespace-tokenised sentences.

    The ARPA is written to a temporary file next to `out_path` and renamed, so a failed run
    leaves nothing half-written.
    """
    lmplz = find_tool("lmplz")
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(s.strip() + "\n" for s in sentences if s.strip())
    cmd = [str(lmplz), "-o", str(order), "-S", memory, "-T", str(out_path.parent), *extra_args]
    with atomic_output(out_path) as tmp:
        with open(tmp, "wb") as out:
            proc = subprocess.run(cmd, input=text.encode("utf-8"), stdout=out,
                                  stderr=subprocess.PIPE)
        if proc.returncode != 0:
            tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
            raise LmplzError(f"lmplz -o {order} failed: {' | '.join(tail)}")
    return out_path
