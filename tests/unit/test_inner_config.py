"""The inner's configuration (inner/config.py): one record the supervisor builds, one
form both inners read. Exact bytes, the supervisor's own record for a plan, and the
reader refusing every malformed form (the compiled inner's reader is held to the same
answers in tests/integration/test_inner.py)."""

from __future__ import annotations

import resource

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inner import landlock, seccomp, syscalls
from inner.config import (
    VERSION,
    Config,
    FileOp,
    Landlock,
    Rlimit,
    Seccomp,
    decode,
)
from supervisor.linux.bwrap import BwrapInfo
from supervisor.linux.confine import Layers, filters, inner_config
from supervisor.linux.plan import build_plan
from support.snapshots import a_snapshot
from support.views import linux_view

from .test_plan import LAYOUT, spec_grant

PROGRAM = bytes(range(16))  # two instructions: the reader checks the size, not the code
EVERYTHING = Config(
    7, ["sh", "-c", "", "é \udcff"],
    seccomp=Seccomp(0xC000003E, PROGRAM, listener=True, fallback=PROGRAM[:8]),
    landlock=Landlock(True, [(0xF, 0, 8), (0xFF, 3, 24)], 0b101, [("/", 8), ("/h", 0x83)],
                      [("/h", ["/h/.ssh", "/h/a/.netrc"])]),
    rlimits=[Rlimit("CORE", 4, 0), Rlimit("NOFILE", 7, 1 << 40)],
    watch_mounts=True,
    file=FileOp("read", "out.txt", 0),
)
INFO = BwrapInfo("/usr/bin/bwrap", "0.8.0", bind_fd=True, disable_userns=True)


def test_a_configuration_reads_back_as_it_was_written() -> None:
    assert decode(EVERYTHING.encode()) == EVERYTHING
    least = Config(3, ["true"])
    assert decode(least.encode()) == least
    assert decode(least.encode()).seccomp is None and decode(least.encode()).file is None


def test_the_form_exactly() -> None:
    config = Config(5, ["ls", ""], seccomp=Seccomp(0xC00000B7, PROGRAM[:8]),
                    rlimits=[Rlimit("CORE", 4, 0)], watch_mounts=True)

    def u32(value: int) -> bytes:
        return value.to_bytes(4, "little")

    assert config.encode() == b"".join([
        b"LNKINNER", u32(VERSION), u32(5), u32(0b11),  # watch_mounts, seccomp
        u32(2), u32(2), b"ls", u32(0),
        u32(0xC00000B7), u32(8), PROGRAM[:8], u32(0),  # no fallback
        u32(1), u32(4), b"CORE", u32(4), (0).to_bytes(8, "little"),
    ])


def test_the_supervisors_record_for_a_plan() -> None:
    """What linux/confine.py hands over: the filter built here for this machine, every
    rule's rights as the kernel's bits, the limits by number; policy stays here."""
    snap = a_snapshot(spec_grant("~", "/home/u", "read", "files.read[0]"),
                      spec_grant("~/.ssh", "/home/u/.ssh", "hide", "files.hide[0]"),
                      home="/home/u", cwd="/home/u")
    plan = build_plan(linux_view(snap), LAYOUT, root_mode=False)
    layers = Layers(landlock_abi=7, memfd="notify", exec_notify=True, listener=True)
    config = inner_config(plan, snap, layers, {})
    arch = syscalls.native_arch()
    assert config.seccomp == Seccomp(
        syscalls.AUDIT_ARCH[arch],
        seccomp.build_program(arch, memfd="notify", exec_notify=True), listener=True,
        fallback=seccomp.build_program(arch, memfd="enosys", exec_notify=False))
    assert config.landlock is not None
    assert config.landlock.abis == landlock.abi_table()
    assert config.landlock.file_rights == landlock.FILE_MASK
    rules = dict(config.landlock.rules)
    # No program list: EXECUTE wherever reading is allowed.
    assert rules["/home/u"] == landlock.rights_mask(["read_file", "read_dir", "execute"])
    assert dict(config.landlock.closed) == {"/home/u": ("/home/u/.ssh",)}
    assert Rlimit("CORE", resource.RLIMIT_CORE, 0) in config.rlimits
    whole = config.replace(status_fd=4, argv=("true",))
    assert decode(whole.encode()) == whole


def test_learn_has_no_fallback_and_no_list_leaves_memory_files_alone() -> None:
    learn = filters(Layers(landlock_abi=7, exec_notify=True, listener=True,
                           listener_required=True))
    assert learn.listener and learn.fallback is None
    unwatched = filters(Layers(landlock_abi=7))
    assert not unwatched.listener and unwatched.fallback is None
    arch = syscalls.native_arch()
    assert unwatched.program == seccomp.build_program(arch, memfd="allow", exec_notify=False)


@pytest.mark.parametrize(("config", "message"), [
    (Config(3, []), "the command is empty"),
    (Config(3, [""]), "the program's name is empty"),
    (Config(3, ["a\0b"]), "NUL"),
    (Config(2, ["true"]), "status socket as fd 2"),
    (Config(3, ["true"], seccomp=Seccomp(1, b"1234567")), "not 1 to 4096"),
    (Config(3, ["true"], seccomp=Seccomp(1, PROGRAM, fallback=PROGRAM)), "with a listener"),
    (Config(3, ["true"], landlock=Landlock(False, [(1, 0, 8)], 0, [("/", 2)])), "right"),
    (Config(3, ["true"], landlock=Landlock(False, [(1, 0, 12)], 0, [])), "12 bytes"),
    (Config(3, ["true"], landlock=Landlock(False, [(1, 0, 8)], 0, [("", 1)])), "no path"),
    (Config(3, ["true"], rlimits=[Rlimit("X", 1, -1)]), "64 bits"),
    (Config(3, ["true"], file=FileOp("delete", "f")), "no file operation"),
])
def test_what_no_inner_would_read_is_refused_before_the_launch(config: Config,
                                                                message: str) -> None:
    with pytest.raises(ValueError, match=message):
        config.encode()


def test_every_truncation_and_every_extra_byte_is_refused() -> None:
    data = EVERYTHING.encode()
    for size in range(len(data)):
        with pytest.raises(ValueError):
            decode(data[:size])
    with pytest.raises(ValueError, match="after its end"):
        decode(data + b"\0")


@pytest.mark.parametrize(("at", "value", "message"), [
    (0, b"X", "does not start"),
    (8, (2).to_bytes(4, "little"), "of version 2, this inner reads 1"),
    (12, (1).to_bytes(4, "little"), "status socket as fd 1"),
    (16, (1 << 7).to_bytes(4, "little"), "flags"),
    (16, (1 << 2).to_bytes(4, "little"), "flags"),  # a listener without a filter
    (20, (1 << 31).to_bytes(4, "little"), "cannot fit"),  # a count nothing could hold
])
def test_a_malformed_header_is_named(at: int, value: bytes, message: str) -> None:
    data = bytearray(Config(3, ["true"]).encode())
    data[at:at + len(value)] = value
    with pytest.raises(ValueError, match=message):
        decode(bytes(data))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_what_the_reader_takes_it_reads_canonically(data: st.DataObject) -> None:
    """Any bytes changed: refused, or read as a record that is written back the same,
    byte for byte (no two forms of one record, no field read and then dropped)."""
    original = bytearray(EVERYTHING.encode())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(original) - 1))
        original[at] = data.draw(st.integers(0, 255))
    try:
        config = decode(bytes(original))
    except ValueError:
        return
    assert config.encode() == bytes(original)
