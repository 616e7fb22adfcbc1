"""The inner confiner starts inside every sandbox: it imports the standard library and
ctypes only, nothing from the supervisor, none of the modules that make a start slow,
and nothing at import time (its steps run from `main`)."""

from __future__ import annotations

import sys

from .test_landlock_imports import imported_by

EVERYTHING_MAIN_LOADS = (
    "import inner.main, inner.protocol, inner.prctl, inner.seccomp, inner.syscalls, "
    "inner.landlock, inner.config, inner.fileop, _signal, array, ctypes, resource"
)
# Slow to import, or a sign the inner grew a dependency it must not have.
FORBIDDEN = {"typing", "dataclasses", "inspect", "ast", "pathlib", "subprocess",
             "threading", "asyncio", "selectors", "tomllib", "cffi", "anyio", "logging",
             "argparse", "tempfile", "shutil", "re", "enum", "json", "signal", "socket"}


def test_the_inner_imports_only_the_standard_library_and_ctypes() -> None:
    added = imported_by(EVERYTHING_MAIN_LOADS) - imported_by("pass")
    foreign = {name for name in added
               if name.split(".")[0] not in sys.stdlib_module_names
               and name.split(".")[0] != "inner"}
    assert foreign == set()
    assert added & FORBIDDEN == set()
    assert not any(name.startswith("supervisor") for name in added)


def test_importing_the_inner_does_nothing_but_define() -> None:
    added = imported_by("import inner.main") - imported_by("pass")
    assert "ctypes" not in added  # loaded by the steps that need it, not at import
