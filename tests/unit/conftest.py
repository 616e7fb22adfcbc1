"""Unit tests see one machine: the default limits follow the machine's memory, and a
plan's or a description's exact form should not change with the box the tests run on."""

from __future__ import annotations

import pytest

from supervisor import limits

MACHINE_MEMORY = 16 * limits.GIB  # the defaults: 8 GiB for a run, /tmp 1 GiB, shm 512 MiB


@pytest.fixture(autouse=True)
def _one_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "machine_memory", lambda: MACHINE_MEMORY)
    monkeypatch.setattr(limits, "file_ceiling", lambda: 1 << 20)
