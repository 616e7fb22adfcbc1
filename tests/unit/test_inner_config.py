"""The inner's configuration (inner/config.py): one record the supervisor builds, one
form both inners read. Exact bytes, the supervisor's own record for a plan (with bwrap
and without namespaces), and the reader refusing every malformed form (the compiled
inner's reader is held to the same answers in tests/integration/test_inner.py)."""

from __future__ import annotations

import os
import resource

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inner import landlock, seccomp, syscalls
from inner.config import (
    DIRECT,
    LANDLOCK,
    LANDLOCK_NOFOLLOW,
    LANDLOCK_OPTIONAL,
    VERSION,
    Config,
    FileOp,
    Landlock,
    Rlimit,
    Seccomp,
    decode,
)
from supervisor.grants import Grant
from supervisor.linux import direct
from supervisor.linux.bwrap import BwrapInfo
from supervisor.linux.confine import Layers, filters, inner_config
from supervisor.linux.direct_rules import filter_rules, landlock_config
from supervisor.linux.plan import HostLayout, build_plan
from support.snapshots import a_snapshot
from support.views import linux_view

from .test_plan import LAYOUT, spec_grant

PROGRAM = bytes(range(16))  # two instructions: the reader checks the size, not the code
EVERYTHING = Config(
    7, ["sh", "-c", "", "é \udcff"],
    seccomp=Seccomp(0xC000003E, PROGRAM, listener=True, fallback=PROGRAM[:8]),
    landlock=Landlock(True, [(0xF, 0, 0, 8), (0xFF, 3, 0, 16), (0xFF, 3, 3, 24)], 0b101,
                      [("/", 8), ("/h", 0x83)], [("/h", ["/h/.ssh", "/h/a/.netrc"])],
                      nofollow=True, optional=True),
    rlimits=[Rlimit("CORE", 4, 0), Rlimit("NOFILE", 7, 1 << 40)],
    watch_mounts=True,
    file=FileOp("read", "out.txt", 0),
    parent=4242,
    reaper=9,
)
INFO = BwrapInfo("/usr/bin/bwrap", "0.8.0", bind_fd=True, disable_userns=True)


def test_a_configuration_reads_back_as_it_was_written() -> None:
    assert decode(EVERYTHING.encode()) == EVERYTHING
    assert decode(EVERYTHING.encode()).parent == 4242
    assert decode(EVERYTHING.encode()).reaper == 9
    with_bwrap = EVERYTHING.replace(parent=None, reaper=None, landlock=Landlock(
        True, [(0xF, 0, 0, 8)], 0b101, [("/", 8)]))
    assert decode(with_bwrap.encode()) == with_bwrap
    assert decode(with_bwrap.encode()).parent is None
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


def test_the_form_without_namespaces_exactly() -> None:
    """Step 0's parent right after the flags, each ABI's network rights after its
    filesystem ones, and the Landlock switches as flags."""
    config = Config(5, ["ls"], parent=77,
                    landlock=Landlock(True, [(0xF, 0x3, 0, 16)], 0b101, [("/h", 0x3)],
                                      nofollow=True, optional=True))

    def u32(value: int) -> bytes:
        return value.to_bytes(4, "little")

    def u64(value: int) -> bytes:
        return value.to_bytes(8, "little")

    assert config.encode() == b"".join([
        b"LNKINNER", u32(VERSION), u32(5),
        u32(DIRECT | LANDLOCK | (1 << 4) | LANDLOCK_NOFOLLOW | LANDLOCK_OPTIONAL),
        u32(77),  # the supervisor's pid
        u32(1), u32(2), b"ls",
        u32(1), u64(0xF), u64(0x3), u64(0), u32(16),  # one ABI: fs, net, scopes, size
        u64(0b101), u32(1), u32(2), b"/h", u64(0x3), u32(0),  # rules, nothing closed
        u32(0),  # no limits
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


def test_the_supervisors_record_without_namespaces() -> None:
    """What linux/direct.py hands over: step 0 with this process as the parent, the
    filter with the mode's own rules in both programs, Landlock on the host's paths with
    every one optional and opened without following a link, and the TCP rights handled
    where the network is none (and only there)."""
    snap = a_snapshot(Grant(".", "/h/p", "write", "files.write[0]", "files.write[0]", 1),
                      home="/h", cwd="/h/p", lnk_home="/h/.lnk")
    layout = HostLayout({"/usr": None, "/etc": None}, "/src/inner", "/usr/bin/python3",
                        "/usr", compiled_inner=True)
    plan = build_plan(linux_view(snap), layout, root_mode=False)
    layers = Layers(landlock_abi=7, memfd="notify", exec_notify=True, listener=True)
    rules = landlock_config(plan, snap, {}, abi=7, tmp=None, terminals=(),
                            listing=lambda _: [])
    config = direct.inner_config(rules, snapshot=snap, layers=layers)
    assert config.parent == os.getpid()
    extra = filter_rules(network_mode="none", unix=False, abi=7, listener=True)
    # Without the listener, what it would do (a file's mode and times) is refused.
    fallback = filter_rules(network_mode="none", unix=False, abi=7, listener=False)
    arch = syscalls.native_arch()
    assert config.seccomp == Seccomp(
        syscalls.AUDIT_ARCH[arch],
        seccomp.build_program(arch, memfd="notify", exec_notify=True, extra=extra),
        listener=True,
        fallback=seccomp.build_program(arch, memfd="enosys", exec_notify=False,
                                       extra=fallback))
    assert config.landlock is not None
    assert config.landlock.nofollow and config.landlock.optional and config.landlock.required
    assert config.landlock.abis == landlock.abi_table(net=True)
    assert [net for _, net, _, _ in config.landlock.abis[:3]] == [0, 0, 0]
    assert {net for _, net, _, _ in config.landlock.abis[3:]} == {
        landlock.NET_BIND_TCP | landlock.NET_CONNECT_TCP}
    assert dict(config.landlock.rules)["/h/p"] & landlock.FS_RIGHTS["make_reg"]
    host = snap._replace(settings=snap.settings._replace(network_mode="host"))
    assert landlock_config(plan, host, {}, abi=7, tmp=None, terminals=(),
                           listing=lambda _: []).abis == landlock.abi_table()
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
    (Config(3, ["true"], landlock=Landlock(False, [(1, 0, 0, 8)], 0, [("/", 2)])), "right"),
    (Config(3, ["true"], landlock=Landlock(False, [(1, 0, 0, 12)], 0, [])), "12 bytes"),
    (Config(3, ["true"], landlock=Landlock(False, [(1, 0, 0, 8)], 0, [("", 1)])), "no path"),
    # A right the attr's size leaves out would go silently unhandled.
    (Config(3, ["true"], landlock=Landlock(False, [(1, 3, 0, 8)], 0, [])), "network"),
    (Config(3, ["true"], landlock=Landlock(False, [(1, 0, 3, 16)], 0, [])), "scopes"),
    (Config(3, ["true"], parent=0), "pid 0"),
    (Config(3, ["true"], parent=1 << 22 | 1), "pid"),
    (Config(3, ["true"], reaper=5), "without namespaces only"),  # bwrap's: no reaper
    (Config(3, ["true"], parent=5, reaper=2), "reaper's pipe as fd 2"),
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
    (8, (1).to_bytes(4, "little"), "of version 1, this inner reads 2"),
    (12, (1).to_bytes(4, "little"), "status socket as fd 1"),
    (16, (1 << 10).to_bytes(4, "little"), "flags"),
    (16, (1 << 2).to_bytes(4, "little"), "flags"),  # a listener without a filter
    (16, LANDLOCK_NOFOLLOW.to_bytes(4, "little"), "flags"),  # without Landlock
    (16, LANDLOCK_OPTIONAL.to_bytes(4, "little"), "flags"),
    (16, DIRECT.to_bytes(4, "little"), "cannot fit"),  # argc read as the pid, then short
    (20, (1 << 31).to_bytes(4, "little"), "cannot fit"),  # a count nothing could hold
])
def test_a_malformed_header_is_named(at: int, value: bytes, message: str) -> None:
    data = bytearray(Config(3, ["true"]).encode())
    data[at:at + len(value)] = value
    with pytest.raises(ValueError, match=message):
        decode(bytes(data))


@pytest.mark.parametrize("pid", [0, (1 << 22) + 1, (1 << 32) - 1])
def test_a_parent_no_kernel_has_is_refused(pid: int) -> None:
    data = bytearray(Config(3, ["true"], parent=5).encode())
    data[20:24] = pid.to_bytes(4, "little")
    with pytest.raises(ValueError, match=f"the supervisor's pid {pid}"):
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
