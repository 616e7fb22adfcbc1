"""The import graph of the supervisor: which module imports which, lazy imports inside
functions included (they are arrows all the same), the arrows that run from the shared
hall down into one OS's floor, and the circles.

The layering rule (docs/design.md): `supervisor/linux/` and `supervisor/macos/` may
import the shared hall; the shared hall imports neither, but for the chooser
(`supervisor/backends.py`, the backend serving each command), which only the doors (the
command line, the API, the run's stages) import. The OS itself is chosen once in
`supervisor/system.py`, a leaf any module may ask. An arrow runs up when a module
imports the chooser without being a door, or the leaf imports anything: the lower
module would then stand on the whole house. tests/unit/test_layers.py holds the rule.

    .venv/bin/python tools/import_graph.py [--edges] [--json]
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("supervisor", "inner", "netns_helper")
CHOOSER = "supervisor.backends"  # the one module of the hall that names a backend
SYSTEM = "supervisor.system"  # the OS chosen once: a leaf
DOORS = frozenset({"supervisor.cli", "supervisor.api", "supervisor.run"})


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "__pycache__" not in path.parts:
                found[module_name(path)] = path
    return found


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The project's modules that `name` imports, anywhere in its body."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str) -> None:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            for alias in node.names:
                full = f"{prefix}.{alias.name}"
                add(full if full in known else prefix)
    return found


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(name, path, known) for name, path in found.items()}


def floor(name: str) -> str:
    """Which floor a module stands on: linux, macos, or the shared hall."""
    for backend in ("linux", "macos"):
        if name.startswith(f"supervisor.{backend}"):
            return backend
    return "hall"


def arrows_down(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports from the hall into one OS's floor (but the chooser's), and between OSes."""
    wrong = []
    for source, targets in edges.items():
        for target in targets:
            here, there = floor(source), floor(target)
            chooser = source == CHOOSER or source.startswith(CHOOSER + ".")
            if there not in ("hall", here) and not chooser:
                wrong.append((source, target))
    return sorted(wrong)


def arrows_up(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports of the chooser from below the doors, and any import of the OS's leaf."""
    wrong = [(source, target) for source, targets in edges.items() for target in targets
             if target == CHOOSER and source not in DOORS]
    wrong += [(SYSTEM, target) for target in edges.get(SYSTEM, ())]
    return sorted(wrong)


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(10000)

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edges", action="store_true", help="print every arrow")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    edges = graph()
    # A package's __init__ importing its own modules is how a package is, not a circle.
    report = {
        "modules": len(edges),
        "arrows": sum(len(t) for t in edges.values()),
        "arrows_down": arrows_down(edges),
        "arrows_up": arrows_up(edges),
        "circles": circles(edges),
        "platform_choices": sorted(
            name for name, path in modules().items() if "sys.platform" in path.read_text()),
    }
    if args.json:
        print(json.dumps({**report, "edges": {k: sorted(v) for k, v in edges.items()}},
                         indent=1))
        return
    if args.edges:
        for source in sorted(edges):
            print(f"{source} -> {', '.join(sorted(edges[source])) or '-'}")
        print()
    print(f"{report['modules']} modules, {report['arrows']} arrows")
    print(f"arrows from the hall down into one OS (or across): {len(report['arrows_down'])}")
    for source, target in report["arrows_down"]:
        print(f"  {source} -> {target}")
    print(f"arrows running up (to the chooser from below the doors, or from the leaf): "
          f"{len(report['arrows_up'])}")
    for source, target in report["arrows_up"]:
        print(f"  {source} -> {target}")
    print(f"circles: {len(report['circles'])}")
    for part in report["circles"]:
        print(f"  {' <-> '.join(part)}")
    print(f"modules reading sys.platform: {', '.join(report['platform_choices'])}")


if __name__ == "__main__":
    main()
