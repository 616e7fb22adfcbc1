"""The start path stays small: a default `lnk sandbox run` imports only the standard
library's modules its stages need (a pinned list) and none of lnk-sandbox's that only
other runs use; nothing of Inspect, the MCP SDK or their dependencies (nor lnk_sandbox,
the harnesses' API); and `import lnk_sandbox` loads neither extra. Measured with -X
importtime's report, from a real run, not from reading the code."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support.sandbox import LNK, Sandbox

EXTRAS = {"inspect_ai", "mcp", "mcp_types", "pydantic", "pydantic_core", "starlette",
          "uvicorn", "httpx", "httpx2"}


# What a default run imports beyond the interpreter's own start, by top-level name (issue
# 21: each module costs every start). A new one fails here, named: import it where it is
# used, in the stage that needs it, unless every run needs it.
DEFAULT_RUN_STDLIB = {
    "__future__", "_collections", "_ctypes", "_functools", "_json", "_operator", "_socket",
    "_sha2", "_sha256",  # the interpreter's own SHA-256 (digests.py), not OpenSSL's hashlib
    "_sre", "_struct", "_typing", "_weakrefset", "array", "collections", "contextlib",
    "copyreg", "ctypes", "enum", "errno", "fcntl", "fnmatch", "functools", "itertools",
    "json", "keyword", "math", "operator", "re", "reprlib", "resource", "select",
    "signal", "struct", "threading", "types", "typing", "warnings"}
# lnk-sandbox's own modules that only other runs need (a spec file, a program list, the
# proxy, macOS, the API) or that cost a start most of all.
NOT_IN_A_DEFAULT_RUN = ("supervisor.proxy", "supervisor.linux.network",
                        "supervisor.linux.watch", "supervisor.describe",
                        "supervisor.permissions", "supervisor.check",
                        "supervisor.linux.check", "supervisor.macos",
                        "supervisor.commit_check", "supervisor.commit_git", "supervisor.learn",
                        "supervisor.hostnames", "netns_helper", "lnk_sandbox")


def imported_modules(report: str) -> set[str]:
    """Every module named in PYTHONPROFILEIMPORTTIME's report."""
    names = set()
    for line in report.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name and name != "package":
                names.add(name)
    return names


def imported(report: str) -> set[str]:
    """Top-level packages named in PYTHONPROFILEIMPORTTIME's report."""
    return {name.split(".")[0] for name in imported_modules(report)}


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


@pytest.mark.requires_bwrap
@pytest.mark.requires_userns
def test_a_default_run_imports_the_pinned_modules_only(sandbox: Sandbox) -> None:
    interpreter = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"],
                                 env=sandbox.env(), capture_output=True, text=True,
                                 timeout=60)
    first = sandbox.run("true")  # the checks made once per boot and $LNK_HOME (bwrap's)
    assert first.returncode == 0, first.stderr
    done = subprocess.run(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--", "true"],
        cwd=sandbox.project, env=sandbox.env({"PYTHONPROFILEIMPORTTIME": "1"}),
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    added = imported_modules(done.stderr) - imported_modules(interpreter.stderr)
    ours = {name for name in added if name.split(".")[0] in ("supervisor", "inner")}
    assert "supervisor.linux.backend" in ours  # the report is the run's own
    assert {name.split(".")[0] for name in added - ours} - DEFAULT_RUN_STDLIB == set()
    assert {name for name in ours if name.startswith(NOT_IN_A_DEFAULT_RUN)} == set()


@pytest.mark.requires_bwrap
@pytest.mark.requires_userns
def test_the_start_server_has_loaded_every_module_a_default_run_imports(
        sandbox: Sandbox) -> None:
    """A module the server has not loaded is imported again by every run it forks (about
    1 ms each): what a default run imports, from its own report, is all in PRELOAD's
    reach."""
    first = sandbox.run("true")
    assert first.returncode == 0, first.stderr
    done = subprocess.run(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--", "true"],
        cwd=sandbox.project, env=sandbox.env({"PYTHONPROFILEIMPORTTIME": "1"}),
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    ours = {name for name in imported_modules(done.stderr)
            if name.split(".")[0] in ("supervisor", "inner")}
    assert "supervisor.linux.backend" in ours  # the report is the run's own
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys\n"
         "from supervisor.linux.startserver import PRELOAD\n"
         "for name in PRELOAD:\n"
         "    __import__(name)\n"
         "print('\\n'.join(sys.modules))"],
        env=sandbox.env(), capture_output=True, text=True, timeout=60, check=True)
    assert ours - set(loaded.stdout.split()) == set()


def test_the_api_loads_no_extra() -> None:
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import lnk_sandbox"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    modules = imported(done.stderr)
    assert "lnk_sandbox" in modules
    assert modules & EXTRAS == set()
