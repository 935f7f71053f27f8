"""The import graph of arsdecode and maxarpa, read from the source, and the layer rules it must
follow (tests/test_imports.py asserts them; this script prints them).

    python scripts/import_graph.py          # module sizes, files per folder, package graph,
                                            # and any cycle or upward import

Why read the source (`ast`) instead of importing: an import inside a function counts as much as
one at the top of a module (it runs the first time the function does), and only the source
shows both. An import under `if TYPE_CHECKING:` never runs, but it still names a module: the
cycle check and the layer rule both count it (a typing-only circle still means neither module
can be read without the other; issue 30 removed the last, core.automaton <-> core.export).
Imports through `importlib.import_module(...)` (the CLI's lazy command table, the package's
lazy exports) are not seen.

The layers, lowest first: a module of arsdecode may import modules of its own layer or of a
lower one, never of a higher one (within a layer both ways are fine, unless they form a cycle).
maxarpa is below all of them and imports nothing of arsdecode.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("arsdecode", "maxarpa")

LAYERS: tuple[tuple[str, ...], ...] = (
    # the compiled core is used by model and core too, so it sits with the error tree
    ("arsdecode.errors", "arsdecode.termination", "arsdecode.native", "arsdecode.lazy_names"),
    ("arsdecode.model",),
    ("arsdecode.lattice",),
    ("arsdecode.core",),
    ("arsdecode.methods",),
    # tree automata (issue 31): their own methods, over the lattice methods' results and trials
    ("arsdecode.trees",),
    # testing (brute force, reference ARS) may use what tasks may use
    ("arsdecode.batch", "arsdecode.tasks", "arsdecode.testing"),
    # the public functions' argument checks (api's), over the types of the layers below
    ("arsdecode.validate",),
    # the target constructors (weighted, interpolate, loglinear), which api re-exports
    ("arsdecode.api_targets",),
    # the package root re-exports api's (and lower) names lazily: importing it is importing api
    ("arsdecode.api", "arsdecode"),
    ("arsdecode.cli", "arsdecode.__main__"),
)
EXEMPT = {"arsdecode"}
"""Importers whose imports are not judged: `arsdecode/__init__` names every public function,
whichever layer it lives in (lazily, PEP 562)."""

_PYX_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+c?import\s+([\w, ]+)|c?import\s+([\w.]+))",
                         re.MULTILINE)


def module_files() -> dict[str, Path]:
    """Every module of both packages (`.py`, and `.pyx` compiled ones), by dotted name."""
    files: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*")):
            if path.suffix not in (".py", ".pyx"):
                continue
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            files[".".join(parts)] = path
    return files


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_names(module: str, path: Path) -> list[tuple[str, bool]]:
    """(name, typing_only) for every name `module` imports: modules, and `module.name` for
    each `from module import name` (a submodule when it is one)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".pyx":  # Cython: its import lines are Python's
        found = []
        for m in _PYX_IMPORT.finditer(text):
            if m.group(3):
                found.append((m.group(3), False))
            else:
                found.append((m.group(1), False))
                found += [(f"{m.group(1)}.{a.strip()}", False) for a in m.group(2).split(",")]
        return found
    tree = ast.parse(text)
    typing_only = {id(n) for block in ast.walk(tree)
                   if isinstance(block, ast.If) and _is_type_checking(block.test)
                   for stmt in block.body for n in ast.walk(stmt)}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        typed = id(node) in typing_only
        if isinstance(node, ast.Import):
            found += [(a.name, typed) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, one level up per extra dot
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.append((base, typed))
            found += [(f"{base}.{a.name}", typed) for a in node.names]
    return found


def import_graph(*, typing_imports: bool = False) -> dict[str, set[str]]:
    """module -> the modules of either package it imports, at any depth in its code.

    Args:
        typing_imports: also count imports under `if TYPE_CHECKING:` (they never run).
    """
    files = module_files()
    graph: dict[str, set[str]] = {m: set() for m in files}
    for module, path in files.items():
        for name, typed in imported_names(module, path):
            if name in files and name != module and (typing_imports or not typed):
                graph[module].add(name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
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


def package_graph(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The part of `graph` between modules of `package`."""
    inside = {m for m in graph if m == package or m.startswith(package + ".")}
    return {m: graph[m] & inside for m in inside}


def layer_of(module: str) -> int | None:
    """The index in LAYERS of the arsdecode module's layer (longest matching prefix); None for
    a module of no layer (maxarpa's, or an arsdecode module LAYERS forgot)."""
    best: tuple[int, int] | None = None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or (prefix != "arsdecode" and module.startswith(prefix + ".")):
                if best is None or len(prefix) > best[1]:
                    best = (index, len(prefix))
    return None if best is None else best[0]


def layer_name(index: int) -> str:
    return "/".join(p.removeprefix("arsdecode.") for p in LAYERS[index])


def unlayered(graph: dict[str, set[str]]) -> list[str]:
    """arsdecode modules that no layer holds (a new folder must be given its place)."""
    return sorted(m for m in graph if m.startswith("arsdecode") and layer_of(m) is None)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every edge from an arsdecode module to a module of a higher layer, as
    'importer -> imported (layer -> layer)' lines."""
    bad = []
    for module in sorted(set(graph) - EXEMPT):
        for target in sorted(graph[module]):
            low, high = layer_of(module), layer_of(target)
            if low is not None and high is not None and high > low:
                bad.append(f"{module} -> {target} ({layer_name(low)} -> {layer_name(high)})")
    return bad


def maxarpa_imports_of_arsdecode(graph: dict[str, set[str]]) -> list[str]:
    """Every edge from maxarpa to arsdecode (maxarpa is a library of its own, below arsdecode)."""
    return [f"{module} -> {target}" for module in sorted(graph) if module.startswith("maxarpa")
            for target in sorted(graph[module]) if target.split(".")[0] == "arsdecode"]


def unit_of(module: str, path: Path) -> str:
    """What a module counts as in the package-level graph: its package (`arsdecode.core`), or
    itself for a top-level module of arsdecode (`arsdecode.api`) or a package's __init__."""
    if path.name == "__init__.py" or (module.count(".") == 1 and module.startswith("arsdecode")):
        return module
    return module.rpartition(".")[0]


def main() -> int:
    files = module_files()
    graph = import_graph()
    print("## Module sizes (lines)\n")
    for module, path in sorted(files.items(), key=lambda kv: (-len(kv[1].read_text(
            encoding="utf-8").splitlines()), kv[0])):
        print(f"{len(path.read_text(encoding='utf-8').splitlines()):6d}  {module}"
              f"{'  (.pyx)' if path.suffix == '.pyx' else ''}")
    print("\n## Source files per folder\n")
    folders = Counter(str(p.parent.relative_to(REPO)) for p in files.values())
    for folder, count in sorted(folders.items()):
        print(f"{count:4d}  {folder}/")
    print("\n## Package-level import graph (importer -> imported)\n")
    units: dict[str, set[str]] = defaultdict(set)
    for module, targets in graph.items():
        unit = unit_of(module, files[module])
        units[unit] |= {unit_of(t, files[t]) for t in targets} - {unit}
    for unit in sorted(units):
        print(f"{unit} -> {', '.join(sorted(units[unit])) or '(nothing)'}")
    everything = import_graph(typing_imports=True)
    print("\n## Checks\n")
    print(f"{len(everything)} modules, {sum(map(len, everything.values()))} import edges "
          "(typing-only ones included)")
    failed = False
    for package in PACKAGES:
        cycle = find_cycle(package_graph(everything, package))
        print(f"cycle in {package}: {' -> '.join(cycle) if cycle else 'none'}")
        failed |= cycle is not None
    problems = upward_imports(everything) + maxarpa_imports_of_arsdecode(everything)
    missing = unlayered(graph)
    print(f"upward imports (maxarpa -> arsdecode included): {len(problems) or 'none'}")
    for line in problems:
        print(f"  {line}")
    if missing:
        print(f"modules in no layer: {', '.join(missing)}")
    return 1 if failed or problems or missing else 0


if __name__ == "__main__":
    sys.exit(main())
