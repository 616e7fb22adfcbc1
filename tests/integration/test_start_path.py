"""The optional clients stay off the start path: `lnk sandbox run` imports nothing of
Inspect, the MCP SDK or their dependencies (nor lnk_sandbox, the harnesses' API), and
`import lnk_sandbox` loads neither extra. Measured with -X importtime's report, from a
real run, not from reading the code."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support.sandbox import LNK, Sandbox

EXTRAS = {"inspect_ai", "mcp", "mcp_types", "pydantic", "pydantic_core", "starlette",
          "uvicorn", "httpx", "httpx2"}


def imported(report: str) -> set[str]:
    """Top-level packages named in PYTHONPROFILEIMPORTTIME's report."""
    names = set()
    for line in report.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name and name != "package":
                names.add(name.split(".")[0])
    return names


@pytest.mark.requires_bwrap
@pytest.mark.requires_userns
def test_a_run_imports_no_client(sandbox: Sandbox) -> None:
    done = subprocess.run(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--timeout", "30", "--", "true"],
        cwd=sandbox.project, env=sandbox.env({"PYTHONPROFILEIMPORTTIME": "1"}),
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    modules = imported(done.stderr)
    assert "supervisor" in modules  # the report is the run's own
    assert modules & (EXTRAS | {"lnk_sandbox"}) == set()


def test_the_api_loads_no_extra() -> None:
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import lnk_sandbox"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    modules = imported(done.stderr)
    assert "lnk_sandbox" in modules
    assert modules & EXTRAS == set()
