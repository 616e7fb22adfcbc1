"""Unit tests see one machine: the default limits follow the machine's memory, and a
plan's or a description's exact form should not change with the box the tests run on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from supervisor import limits

MACHINE_MEMORY = 16 * limits.GIB  # the defaults: 8 GiB for a run, /tmp 1 GiB, shm 512 MiB


@pytest.fixture(autouse=True)
def _one_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "machine_memory", lambda: MACHINE_MEMORY)
    monkeypatch.setattr(limits, "file_ceiling", lambda: 1 << 20)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with `work/` in it and an environment holding nothing of the machine's
    (the launch environment is judged: a variable of the runner's would be too). A
    module's own `home` fixture stands instead where it needs another."""
    folder = tmp_path.resolve() / "home"
    (folder / "work").mkdir(parents=True)
    for variable in list(os.environ):
        if variable not in ("PATH", "LANG", "LC_ALL"):
            monkeypatch.delenv(variable)
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", "/dev/null")
    return folder
