"""The layering rule (docs/design.md, "Layout"), held by the code that draws the import
graph (tools/import_graph.py): the shared hall imports neither OS's floor, but for the
chooser (`supervisor/backends.py`), which only the doors import; no floor imports the
other; no two modules import each other, however far round; and the OS is read from
`sys.platform` in its leaf (`supervisor/system.py`) alone, and inside an OS's floor only
where a call there exists on that OS alone."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

TOOL = Path(__file__).resolve().parent.parent.parent / "tools" / "import_graph.py"

# Where the floor itself asks the kernel it runs on, never which backend serves a command:
# libproc and sysctlbyname exist on a Mac alone, and a test that stands on macOS (by
# flipping supervisor.system.SYSTEM) must not call them on Linux.
OS_FACTS = {"supervisor.macos.host", "supervisor.macos.logwatch"}


@pytest.fixture(scope="module")
def graph_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_graph", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_graph"] = module  # dataclasses and the like look it up by name
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["import_graph"]
    return module


@pytest.fixture(scope="module")
def edges(graph_tool: ModuleType) -> dict[str, set[str]]:
    found: dict[str, set[str]] = graph_tool.graph()
    return found


def test_the_graph_sees_the_backends_and_the_chooser(edges: dict[str, set[str]]) -> None:
    """The rule below would hold of an empty graph: the tool must find what is there."""
    assert "supervisor.linux.backend" in edges and "supervisor.macos.backend" in edges
    assert {"supervisor.linux.backend", "supervisor.macos.backend"} <= edges[
        "supervisor.backends"]


def test_no_arrow_runs_from_the_hall_down_but_from_the_chooser(
        graph_tool: ModuleType, edges: dict[str, set[str]]) -> None:
    assert graph_tool.arrows_down(edges) == []


def test_the_os_s_leaf_imports_nothing_of_the_project(edges: dict[str, set[str]]
                                                       ) -> None:
    """Every stage asks it which OS this is, so it must stand below every stage."""
    assert edges["supervisor.system"] == set()


def test_no_arrow_runs_up(graph_tool: ModuleType, edges: dict[str, set[str]]) -> None:
    """Only the doors ask the chooser: a lower module that did would stand on every
    backend, and the house would have a floor above its roof."""
    assert graph_tool.arrows_up(edges) == []


def test_no_circle(graph_tool: ModuleType, edges: dict[str, set[str]]) -> None:
    assert graph_tool.circles(edges) == []


def test_the_os_is_read_in_the_chooser_alone(graph_tool: ModuleType) -> None:
    readers = {name for name, path in graph_tool.modules().items()
               if "sys.platform" in path.read_text()}
    assert readers - OS_FACTS == {"supervisor.system"}
    assert all(name.startswith("supervisor.macos.") for name in OS_FACTS)
