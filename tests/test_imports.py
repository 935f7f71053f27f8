"""The import graph of both packages (issues 13 and 20): no cycle in arsdecode or in maxarpa,
maxarpa never imports arsdecode, and no arsdecode module imports a higher layer (tasks use
methods, methods use core, core uses model; the order is scripts/import_graph.LAYERS).

Why: a cycle (cli <-> tasks, once; maxarpa model -> load -> formats -> model, once) makes the
import order matter and hides what depends on what, and an upward import means a newcomer
cannot change a lower folder without reading a higher one. Imports inside functions count: they
run too. Imports under `if TYPE_CHECKING:` count as well (issue 30): they never run, but a
circle of names (core.automaton <-> core.export, once) still means neither module can be read
without the other. `python scripts/import_graph.py` prints the graph these tests read.

Not counted: the import of a parent package that Python performs before a submodule's
(`arsdecode.lattice` before `arsdecode.lattice.slf`). It always runs first and completes
before any sibling is asked for, so it orders nothing; counting it would call every package
whose __init__ re-exports a submodule a circle.
"""

from __future__ import annotations

import pytest

import arsdecode
from scripts.import_graph import (
    LAYERS,
    PACKAGES,
    find_cycle,
    import_graph,
    imported_names,
    layer_of,
    maxarpa_imports_of_arsdecode,
    package_graph,
    unlayered,
    upward_imports,
)

READERS = {"maxarpa.load", "maxarpa.arpa", "maxarpa.maxarpa_format", "maxarpa.binary_format"}


def test_the_graph_reads_both_packages_and_imports_inside_functions():
    graph = import_graph()
    assert {"arsdecode.cli.main", "arsdecode.cli.tag", "maxarpa.load", "maxarpa.model"} <= set(
        graph)
    assert "maxarpa.native" in graph["maxarpa.arpa"]  # imported inside _parse_native
    assert "arsdecode.errors" in graph["arsdecode.native._core"]  # a compiled (.pyx) module
    assert "arsdecode.core.automaton" not in graph["arsdecode.core.export"]  # TYPE_CHECKING
    assert "arsdecode.core.automaton" in import_graph(typing_imports=True)[
        "arsdecode.core.export"]
    assert "arsdecode.cli.lattice" in graph and len(graph) > 100


def test_relative_imports_are_resolved(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text("from . import dp\nfrom ..lattice import Lattice\n\n\ndef f():\n"
                    "    import arsdecode.methods.ars\n")
    names = {name for name, _ in imported_names("arsdecode.core.probe", path)}
    assert {"arsdecode.core.dp", "arsdecode.lattice", "arsdecode.methods.ars"} <= names


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle(package):
    """Module-level, function-level and typing-only imports alike."""
    cycle = find_cycle(package_graph(import_graph(typing_imports=True), package))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_import_cycle_across_the_packages():
    cycle = find_cycle(import_graph(typing_imports=True))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_automaton_does_not_import_its_exports():
    """core.export reads a QAutomaton (its type, under TYPE_CHECKING); the automaton itself
    names no export, so the exports are functions of it (`export.to_fst(qa)`), not methods."""
    graph = import_graph(typing_imports=True)
    assert "arsdecode.core.export" not in graph["arsdecode.core.automaton"]


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_maxarpa_never_imports_arsdecode():
    edges = maxarpa_imports_of_arsdecode(import_graph(typing_imports=True))
    assert not edges, "maxarpa imports arsdecode:\n" + "\n".join(edges)


def test_the_model_imports_no_reader():
    """`maxarpa.load` builds every model and sits above the readers, which import Model: a
    Model that imported a reader (or load, as `Model.load` once did) would close a cycle."""
    graph = import_graph(typing_imports=True)
    assert not graph["maxarpa.model"] & READERS, sorted(graph["maxarpa.model"] & READERS)


def test_every_arsdecode_module_has_a_layer():
    missing = unlayered(import_graph())
    assert not missing, f"give these a layer in scripts/import_graph.LAYERS: {missing}"


def test_no_module_imports_a_higher_layer():
    """Typing-only imports count: a lower layer should not even name a higher one's types."""
    edges = upward_imports(import_graph(typing_imports=True))
    assert not edges, "imports pointing up the layers:\n" + "\n".join(edges)


def test_the_layer_rule_flags_an_upward_edge_and_allows_the_rest():
    graph: dict[str, set[str]] = {
        "arsdecode.core.dp": {"arsdecode.methods.ars", "arsdecode.model", "arsdecode.errors"},
        "arsdecode.tasks.pos.tag_many": {"arsdecode.methods.dispatch"},
        "arsdecode.methods.ars": {"arsdecode.methods.evidence", "arsdecode"},
        "arsdecode": {"arsdecode.cli.main"},  # the lazy front door is exempt
    }
    assert upward_imports(graph) == [
        "arsdecode.core.dp -> arsdecode.methods.ars (core -> methods)",
        "arsdecode.methods.ars -> arsdecode (methods -> api/arsdecode)",
    ]
    assert layer_of("arsdecode.native._core") == 0 and layer_of("arsdecode.cli.main") == len(
        LAYERS) - 1


def test_public_api():
    for name in ("load_lm", "Lattice", "decode", "sample", "tag", "sms_decode", "DecodeResult",
                 "SampleResult", "ArsDecodeError"):
        assert hasattr(arsdecode, name), name
        assert name in arsdecode.__all__
    for fn in (arsdecode.load_lm, arsdecode.tag, arsdecode.sms_decode):
        assert "Returns" in (fn.__doc__ or ""), fn
