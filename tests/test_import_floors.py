"""The package's import graph has no cycle: no direct import inside ``spikelab`` closes one.

Every import counts: those at the top of a module, inside functions (the lazy ones that keep
start-up fast) and under ``TYPE_CHECKING``. The floors themselves (which package may import
which) are the import-linter contract in pyproject.toml, checked by ``lint-imports``.
"""

from __future__ import annotations

import grimp

PACKAGE = "spikelab"
CORE = "spikelab._core"


def import_graph() -> grimp.ImportGraph:
    graph = grimp.build_graph(PACKAGE, include_external_packages=False, cache_dir=None)
    # The compiled core is no .py file, so grimp records ``from . import _core`` as an import
    # of the package itself (whose __init__ imports scenario/): give the core its own node.
    graph.add_module(CORE)
    for importer in graph.find_modules_that_directly_import(PACKAGE):
        details = graph.get_import_details(importer=importer, imported=PACKAGE)
        if details and all("_core" in d["line_contents"] for d in details):
            graph.remove_import(importer=importer, imported=PACKAGE)
            graph.add_import(importer=importer, imported=CORE)
    return graph


def cycles(graph: grimp.ImportGraph) -> list[str]:
    """Each direct import A -> B whose B leads back to A, as the cycle it closes."""
    found = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                line = graph.get_import_details(importer=importer, imported=imported)
                where = f" (line {line[0]['line_number']})" if line else ""
                found.append(f"{importer} -> {' -> '.join(back)}{where}")
    return found


def test_the_graph_sees_the_package_and_imports_inside_functions():
    graph = import_graph()
    assert {"spikelab.cli", "spikelab.run", "spikelab.store.results"} <= graph.modules
    # cli imports the figures of a sweep only when a command draws them.
    assert graph.direct_import_exists(importer="spikelab.cli", imported="spikelab.figures.sweep")


def test_no_import_inside_the_package_closes_a_cycle():
    found = cycles(import_graph())
    assert not found, "imports that close a cycle:\n  " + "\n  ".join(found)
