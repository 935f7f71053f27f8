"""No import cycles inside arsdecode, counting imports inside functions too (issue 13).

Why: a cycle (cli <-> tasks, once) makes the import order matter and hides what depends on
what. Each module's imports are read with `ast`, and the graph must be acyclic.
"""

from __future__ import annotations

import ast
from pathlib import Path

import arsdecode

PACKAGE = Path(arsdecode.__file__).resolve().parent


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {  # `if TYPE_CHECKING:` imports never run, so they make no cycle
            id(n) for block in ast.walk(tree)
            if isinstance(block, ast.If) and getattr(block.test, "id", "") == "TYPE_CHECKING"
            for stmt in block.body for n in ast.walk(stmt)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                if name in modules and name != mod and name != "arsdecode":
                    graph[mod].add(name)
            if isinstance(node, ast.ImportFrom) and node.module == "arsdecode":
                if mod != "arsdecode":  # `from arsdecode import X` runs the package __init__
                    graph[mod].add("arsdecode")
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state and (c := visit(n)):
                return c
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (c := visit(m)):
            return c
    return None


def test_no_import_cycles_in_arsdecode():
    graph = import_graph()
    assert "arsdecode.cli.main" in graph and "arsdecode.cli.tag" in graph
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_tasks_do_not_import_the_cli():
    graph = import_graph()
    for mod, deps in graph.items():
        if mod.startswith("arsdecode.tasks"):
            assert "arsdecode.cli.main" not in deps, mod


def test_public_api():
    for name in ("load_lm", "Lattice", "decode", "sample", "tag", "sms_decode", "DecodeResult",
                 "SampleResult", "ArsDecodeError"):
        assert hasattr(arsdecode, name), name
        assert name in arsdecode.__all__
    for fn in (arsdecode.load_lm, arsdecode.tag, arsdecode.sms_decode):
        assert "Returns" in (fn.__doc__ or ""), fn
