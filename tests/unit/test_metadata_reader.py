"""The metadata listener's reader of a caller's memory where process_vm_readv is refused
(Docker's default profile): /proc/PID/mem, read here from this process's own memory."""

from __future__ import annotations

import ctypes
import mmap
import os

import pytest

from supervisor.linux.direct_metadata import Reader

PAGE = mmap.PAGESIZE


@pytest.fixture
def reader(monkeypatch: pytest.MonkeyPatch) -> Reader:
    """A reader whose process_vm_readv fails, as under Docker's profile."""
    found = Reader()
    monkeypatch.setattr(found.fast, "read_bytes", lambda *_: None)
    monkeypatch.setattr(found.fast, "read_string", lambda *_: None)
    return found


@pytest.mark.parametrize("offset", [0, PAGE - 16, PAGE - 1])
def test_times_that_straddle_a_page_are_read_whole(reader: Reader, offset: int) -> None:
    """utimensat's two timespecs hold zeros (86400 s, 0 ns): read on past them, where
    they cross into the next page (an EFAULT, now and then, before)."""
    memory = mmap.mmap(-1, 2 * PAGE)
    try:
        times = (86400).to_bytes(8, "little") + bytes(8) + (86400).to_bytes(8, "little") + \
            bytes(8)
        memory[offset:offset + len(times)] = times
        address = ctypes.addressof(ctypes.c_char.from_buffer(memory)) + offset
        assert reader.read_bytes(os.getpid(), address, len(times)) == times
    finally:
        memory.close()


def test_a_string_ends_at_its_nul_before_a_hole(reader: Reader) -> None:
    """A path's string is read up to its NUL: the page after it may be unmapped."""
    memory = mmap.mmap(-1, 2 * PAGE)
    try:
        ctypes.CDLL(None).mprotect(
            ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(memory)) + PAGE),
            PAGE, 0)
        memory[PAGE - 6:PAGE] = b"/x/y\0\0"
        address = ctypes.addressof(ctypes.c_char.from_buffer(memory)) + PAGE - 6
        assert reader.read_string(os.getpid(), address) == b"/x/y"
    finally:
        memory.close()
