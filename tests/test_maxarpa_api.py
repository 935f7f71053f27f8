"""Issue 13 for maxarpa: the public API reads like the docs, and the modules have no import
cycle (each format owns its magic and sniff; `maxarpa.load` dispatches)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import maxarpa
from maxarpa.binary_format import MAGIC, is_binary
from maxarpa.maxarpa_format import MAX_ARPA_MAGIC, is_max_arpa

PACKAGE = Path(maxarpa.__file__).parent


def test_public_entry_points_have_documented_signatures():
    assert list(inspect.signature(maxarpa.load).parameters) == ["path", "mmap", "config"]
    params = inspect.signature(maxarpa.convert).parameters
    assert list(params)[:4] == ["input", "output", "binary", "config"]
    for fn in (maxarpa.load, maxarpa.convert, maxarpa.Model.log10p, maxarpa.Model.word_id,
               maxarpa.binary_format.read_binary, maxarpa.maxarpa_format.write_max_arpa):
        doc = inspect.getdoc(fn) or ""
        assert "Raises:" in doc, fn
    for fn in (maxarpa.load, maxarpa.convert, maxarpa.Model.log10p):
        doc = inspect.getdoc(fn) or ""
        assert "Returns:" in doc and "log10" in doc, fn
    assert maxarpa.Model.load.__doc__ and maxarpa.Config.__doc__


def test_each_format_sniffs_its_own_files(tmp_path):
    from arpa_fixtures import VALID

    arpa = tmp_path / "m.arpa"
    arpa.write_text(VALID)
    text, npz = tmp_path / "m.maxarpa.gz", tmp_path / "m.npz"
    maxarpa.convert(arpa, text)
    maxarpa.convert(arpa, npz, binary=True)
    assert is_max_arpa(text) and not is_max_arpa(arpa) and not is_max_arpa(npz)
    assert is_binary(npz) and not is_binary(text) and not is_binary(arpa)
    assert MAX_ARPA_MAGIC == "\\max-arpa\\" and MAGIC.startswith("maxarpa-binary")


def test_no_module_level_import_cycle():
    """Module-level imports between maxarpa modules form no cycle (Model.load's import of
    maxarpa.load happens only when it is called)."""
    edges: dict[str, set[str]] = {}
    for path in PACKAGE.glob("*.py"):
        deps = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("maxarpa."):
                deps.add(node.module.split(".")[1])
        edges[path.stem] = deps
    state: dict[str, int] = {}

    def visit(mod: str, stack: list[str]) -> None:
        state[mod] = 1
        for dep in edges.get(mod, ()):
            assert state.get(dep) != 1, f"import cycle: {' -> '.join([*stack, mod, dep])}"
            if dep not in state:
                visit(dep, [*stack, mod])
        state[mod] = 2

    for mod in edges:
        if mod not in state:
            visit(mod, [])
    assert "load" not in edges["model"]
