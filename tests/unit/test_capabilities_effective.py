"""capabilities.set_effective: one thread's effective set lowered and raised again (the
listener's walk as the caller, direct_metadata.MetadataGuard.as_caller)."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from inner import capabilities

DAC = (1 << 1) | (1 << 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH


@pytest.mark.skipif(os.geteuid() != 0 or not capabilities.sets()[0] & DAC,
                    reason="needs root with CAP_DAC_OVERRIDE")
def test_a_thread_walks_without_dac_and_gets_it_back(tmp_path: Path) -> None:
    private = tmp_path / "alice"
    private.mkdir(mode=0o700)
    (private / "file").write_text("alice's\n")
    os.chown(private, 65534, 65534)
    seen: dict[str, int] = {}

    def walk() -> None:
        effective = capabilities.sets()[0]
        capabilities.set_effective(effective & ~DAC)
        try:
            seen["lowered"] = capabilities.sets()[0]
            try:
                os.stat(private / "file")
                seen["stat"] = 0
            except OSError as err:
                seen["stat"] = err.errno or -1
        finally:
            capabilities.set_effective(effective)
        seen["back"] = capabilities.sets()[0]
        seen["effective"] = effective
        seen["permitted"] = capabilities.sets()[1]

    before = capabilities.sets()
    thread = threading.Thread(target=walk)
    thread.start()
    thread.join()
    assert seen["stat"] == errno.EACCES, seen  # EACCES: the mode decided, no capability
    assert not seen["lowered"] & DAC, seen
    assert seen["back"] == seen["effective"], seen
    assert capabilities.sets() == before  # the other threads kept theirs
    assert (private / "file").stat().st_size  # this thread still passes the mode
