"""inner.landlock starts fast: the standard library and ctypes only, and none of the slow ones."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SLOW = {"typing", "dataclasses", "enum", "re", "inspect"}


def imported_by(statement: str) -> set[str]:
    """Every module `python -I -S` imports to run `statement`, from -X importtime."""
    code = f"import sys; sys.path.insert(0, {str(REPO)!r}); {statement}"
    done = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", "-c", code],
                          capture_output=True, text=True, check=True)
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "package":  # the header line
                names.add(name)
    return names


def test_imports_only_stdlib_and_ctypes() -> None:
    baseline = imported_by("pass")
    added = imported_by("import inner.landlock") - baseline
    assert "inner.landlock" in added
    foreign = {name for name in added
               if name.split(".")[0] not in sys.stdlib_module_names
               and name.split(".")[0] != "inner"}  # inner.syscalls: the one libc
    assert foreign == set()
    assert added & SLOW == set()
    assert not any(name.startswith("supervisor") for name in added)
