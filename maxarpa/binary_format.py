"""A binary companion of MAX-ARPA: the same table as numpy arrays in one .npz file.

Why: the text format is for exchange and inspection, but parsing millions of lines of text
costs seconds; the arrays load at disk speed. The content is exactly the MAX-ARPA table
(listed and blank nodes, logp, bow, mf, mbow, all log10), so either file can be made from the
other without recomputing a bound. Written atomically (temporary file, then rename).
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from maxarpa.errors import FormatError
from maxarpa.model import Model
from maxarpa.table import OrderNodes, Trie

MAGIC = "maxarpa-binary-1"
FIELDS = ("keys", "rows", "log10p", "log10bow", "listed", "mf", "mbow")


def is_binary(path: str | Path) -> bool:
    """True for a zip (npz) file."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"PK\x03\x04"
    except OSError:
        return False


def write_binary(model: Model, path: str | Path) -> None:
    """Write the model's table as an uncompressed .npz (fast to load)."""
    path = Path(path)
    arrays: dict[str, np.ndarray] = {
        "magic": np.array(MAGIC),
        "vocab": np.array("\n".join(model.vocab)),
        "order": np.array(model.order),
    }
    for k, node in enumerate(model.trie.nodes, start=1):
        for field in FIELDS:
            arrays[f"{field}_{k}"] = getattr(node, field)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_binary(path: str | Path) -> Model:
    """Load a model written by `write_binary`."""
    path = str(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            if "magic" not in z.files or str(z["magic"]) != MAGIC:
                raise FormatError(path, None, "not a maxarpa binary file")
            vocab = str(z["vocab"]).split("\n")
            n = int(z["order"])
            trie = Trie(len(vocab), [])
            for k in range(1, n + 1):
                trie.nodes.append(OrderNodes(**{f: z[f"{f}_{k}"] for f in FIELDS}))
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as err:
        if isinstance(err, FormatError):
            raise
        raise FormatError(path, None, f"corrupt maxarpa binary file ({err})") from None
    return Model(vocab, trie, path)
