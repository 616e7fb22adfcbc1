"""Where the tests of each module live: for every module of the project, the test files
that import it (a test file naming `supervisor.linux.plan` tests that module); a module
no test imports is tested through the command line, by the sandbox tests. Computed from
the tree each time, so it is never stale (CONTRIBUTING.md points here).

    .venv/bin/python tools/test_map.py [MODULE-PREFIX]
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("supervisor", "inner", "netns_helper", "lnk_sandbox")


def modules() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found.append(".".join(parts))
    return found


def imported_by(test: Path) -> set[str]:
    """The project's modules a test file imports (absolute imports, anywhere in it)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(test.read_text(), str(test))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def table(prefix: str = "") -> str:
    known = [m for m in modules() if m.startswith(prefix)]
    tests: dict[str, list[str]] = {module: [] for module in known}
    for test in sorted((ROOT / "tests").rglob("test_*.py")):
        named = imported_by(test)
        for module in known:
            if module in named:
                tests[module].append(str(test.relative_to(ROOT / "tests")))
    lines = ["| module | its tests (files that import it) |", "|---|---|"]
    for module in known:
        where = ", ".join(f"`{t}`" for t in tests[module]) or (
            "through the command line (`tests/integration`, `tests/attacks`)")
        lines.append(f"| `{module}` | {where} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prefix", nargs="?", default="",
                        help="only the modules whose name begins so (supervisor.linux)")
    sys.stdout.write(table(parser.parse_args().prefix))
    return 0


if __name__ == "__main__":
    sys.exit(main())
