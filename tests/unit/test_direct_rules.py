"""The Landlock and filter rules of a run without namespaces (direct_rules.py), pure.

The central claim: Landlock's rules, which add up along a path, give every path there at
launch exactly the rights the deepest rule of the plan gives it (as the mounts would),
and a path made later never more. Checked on exact cases and on random trees."""

from __future__ import annotations

import errno
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inner import seccomp, syscalls
from inner.landlock import abi_table, rights_mask
from supervisor.errors import LaunchError
from supervisor.grants import Grant, Snapshot, depth, is_within
from supervisor.linux.confine import READ, WRITE
from supervisor.linux.direct_rules import (
    AF_UNIX,
    CONNECTED_PAIRS,
    IPC_CALLS,
    METADATA_CALLS,
    NONE,
    Entry,
    Listing,
    complement,
    desired,
    filter_rules,
    landlock_config,
)
from supervisor.linux.plan import HostLayout, LaunchPlan, MountOp, build_plan
from support.snapshots import a_snapshot
from support.views import linux_view

from . import test_seccomp_program as bpf

R = frozenset(READ)
W = frozenset(WRITE)


def tree(*paths: str) -> dict[str, list[Entry]]:
    """Folder -> its entries, from paths (a trailing / marks a folder; `@` a link)."""
    found: dict[str, list[Entry]] = {}
    for raw in paths:
        link = raw.endswith("@")
        path = raw.rstrip("/@")
        folder = raw.endswith("/")
        parent = os.path.dirname(path)
        found.setdefault(parent, []).append(Entry(path, folder, link))
        if folder:
            found.setdefault(path, [])
    return found


def listing_of(folders: dict[str, list[Entry]]) -> Listing:
    def listing(folder: str) -> list[Entry]:
        return folders.get(folder, [])
    return listing


def landlock(rules: list[tuple[str, list[str]]], path: str) -> frozenset[str]:
    """What Landlock grants `path`: every rule on it or a folder holding it, added up."""
    granted: set[str] = set()
    for where, rights in rules:
        if is_within(path, where):
            granted |= set(rights)
    return frozenset(granted)


def mounted(rules: dict[str, frozenset[str]], path: str) -> frozenset[str]:
    """What the mounts grant `path`: the deepest rule holding it."""
    holding = [p for p in rules if is_within(path, p)]
    return rules[max(holding, key=depth)] if holding else NONE


def test_a_written_folder_with_a_dot_file_is_split_into_its_entries() -> None:
    folders = tree("/p/.git/", "/p/.git/config", "/p/src/", "/p/Makefile", "/p/link@")
    rules, listed = complement({"/p": W, "/p/.git": R, "/p/.envrc": R},
                               listing_of(folders))
    assert rules == [
        ("/p", sorted(R)),  # read: nothing can be made, removed or renamed at the top
        ("/p/.git", sorted(R)),
        ("/p/src", sorted(W)),
        ("/p/Makefile", sorted(W)),
    ]  # the link gets no rule; the missing .envrc is in none, and cannot be made
    assert listed == ["/p/src", "/p/Makefile"]


def test_a_hidden_folder_in_a_read_grant_closes_its_holder_to_listing() -> None:
    folders = tree("/h/.ssh/", "/h/.ssh/id", "/h/notes", "/h/.config/", "/h/.config/gh/",
                   "/h/.config/git/")
    rules, _ = complement({"/h": R, "/h/.ssh": NONE, "/h/.config/gh": NONE},
                          listing_of(folders))
    assert rules == [("/h/notes", sorted(R)), ("/h/.config/git", sorted(R))]
    assert landlock(rules, "/h") == NONE  # not even listed: READ_DIR would reach .ssh


def test_a_rule_that_adds_rights_below_needs_no_split() -> None:
    rules, listed = complement({"/h": R, "/h/p": W, "/h/.lnk": NONE, "/h/.lnk/agents/a": W},
                               listing_of(tree("/h/p/", "/h/.lnk/", "/h/x")))
    assert ("/h/p", sorted(W)) in rules and ("/h/.lnk/agents/a", sorted(W)) in rules
    assert landlock(rules, "/h/x") == R and landlock(rules, "/h/.lnk/other") == NONE
    assert "/h/x" in listed  # found by listing: opened without a link, skipped if gone


NAMES = ["a", "b", ".git", ".envrc", "c"]


@st.composite
def trees_and_rules(draw: st.DrawFn) -> tuple[dict[str, list[Entry]], dict[str, frozenset[str]],
                                              list[str]]:
    """A random tree three deep, and rules of random rights on random paths in it (some
    missing): each right set one a plan makes (nothing, read, write)."""
    paths: list[str] = []

    def grow(folder: str, level: int) -> None:
        for name in draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=3)):
            path = f"{folder}/{name}"
            is_folder = level < 3 and draw(st.booleans())
            paths.append(path + ("/" if is_folder else ""))
            if is_folder:
                grow(path, level + 1)

    grow("/t", 1)
    folders = tree("/t/", *paths)
    existing = ["/t", *(p.rstrip("/") for p in paths)]
    candidates = existing + [f"{p}/{n}" for p in existing for n in ("new", ".git")]
    chosen = draw(st.lists(st.sampled_from(candidates), unique=True, min_size=1, max_size=6))
    rights = draw(st.lists(st.sampled_from([NONE, R, W]), min_size=len(chosen),
                           max_size=len(chosen)))
    return folders, dict(zip(chosen, rights, strict=True)), existing


@settings(max_examples=300, deadline=None)
@given(trees_and_rules())
def test_landlock_equals_the_mounts_on_every_path_there_and_never_exceeds_them(
        case: tuple[dict[str, list[Entry]], dict[str, frozenset[str]], list[str]]) -> None:
    """Every path there gets what the mounts give it, but a folder holding a narrower
    rule, which gets only what every path below it keeps; a path made later, never more
    than the mounts would give it."""
    folders, rules, existing = case
    compiled, _ = complement(rules, listing_of(folders))
    for path in existing:
        expected = mounted(rules, path)
        for below in (p for p in rules if p != path and is_within(p, path)):
            expected &= rules[below]
        assert landlock(compiled, path) == expected, path
        if path in folders:  # what a program could make in it later
            made = f"{path}/made-later"
            assert landlock(compiled, made) <= mounted(rules, made), made


def a_plan_snapshot(*grants: Grant) -> tuple[Snapshot, LaunchPlan]:
    snap = a_snapshot(*grants, home="/h", cwd="/h/p", lnk_home="/h/.lnk")

    layout = HostLayout({"/usr": None, "/etc": None, "/bin": "usr/bin"},
                        "/src/inner", "/usr/bin/python3.11", "/usr")
    return snap, build_plan(linux_view(snap), layout, root_mode=False)


def test_the_plan_read_as_rights() -> None:
    snap, plan = a_plan_snapshot(
        Grant("~", "/h", "read", "files.read[0]", "files.read[0]", 1),
        Grant(".", "/h/p", "write", "files.write[0]", "files.write[0]", 1),
        Grant("$LNK_HOME", "/h/.lnk", "hide", "settings", None, None))
    found = desired(plan, snap, extra={"/h/.lnk/run/tmp-1": W})
    x = frozenset({"execute"})
    assert found["/usr"] == R | x and found["/etc"] == R | x
    assert found["/h/p"] == W | x and found["/h"] == R | x
    assert found["/proc"] == R  # the host's /proc: read, written only in its own folder
    assert found["/dev"] == NONE and found["/tmp"] == NONE and found["/h/.lnk"] == NONE
    assert found["/h/.lnk/run/tmp-1"] == W
    assert "/bin" not in found  # the host's own link
    assert "/proc/1" not in found  # bwrap's pid 1: there is none


def test_a_folder_shown_at_another_path_is_refused() -> None:
    snap, plan = a_plan_snapshot(
        Grant(".", "/h/p", "write", "files.write[0]", "files.write[0]", 1))
    plan = plan._replace(ops=(*plan.ops, MountOp("bind", "/h/.cache/pip", "/h/.lnk/c/pip",
                                                 "files.caches: ~/.cache/pip")))
    with pytest.raises(LaunchError, match="needs a mount"):
        desired(plan, snap)


def test_the_inner_settings() -> None:
    snap, plan = a_plan_snapshot(
        Grant(".", "/h/p", "write", "files.write[0]", "files.write[0]", 1))
    config = landlock_config(plan, snap, {}, abi=7, tmp="/h/.lnk/run/t",
                             terminals=["/dev/pts/3"], listing=lambda _: [])
    rules = dict(config.rules)
    assert rules["/dev/null"] == rights_mask(["ioctl_dev", "read_file", "write_file"])
    assert rules["/dev/pts/3"] == rights_mask(["ioctl_dev", "read_file", "write_file"])
    assert rules["/proc/self"] == rights_mask(["read_dir", "read_file", "write_file"])
    assert "/" not in rules  # no READ_DIR on /: it would reach every folder
    assert config.nofollow and config.optional and config.required
    assert config.abis == abi_table(net=True)  # network "none": no TCP bind or connect


def test_the_filter_rules_without_namespaces() -> None:
    opened = filter_rules(network_mode="host", unix=True)
    assert opened[0] == ("prlimit64", errno.EPERM, ((0, "not in", (0,)),))
    assert {r for r in opened if r[0] in IPC_CALLS} == {
        (name, errno.ENOSYS, ()) for name in IPC_CALLS}
    assert not any(r[0] in ("socket", "socketpair") for r in opened)
    closed = filter_rules(network_mode="none", unix=False)
    assert closed[-3:] == (
        ("socket", errno.EACCES, ((0, "in", (AF_UNIX,)),)),
        ("socketpair", errno.EACCES, ((0, "in", (AF_UNIX,)), (1, "not in", CONNECTED_PAIRS))),
        ("socket", errno.EACCES, ((0, "not in", (AF_UNIX,)),)),
    )
    assert CONNECTED_PAIRS == (1, 0x801, 0x80001, 0x80801, 5, 0x805, 0x80005, 0x80805)


AT_FDCWD = 0xFFFFFF9C  # -100, as the filter reads its low word


def _verdict(program: bytes, arch: str, name: str, *args: int) -> int | str:
    """What the filter answers a call: "allow", "notify" or the errno."""
    value: int = bpf.run(program, syscalls.TABLES[arch][name], syscalls.AUDIT_ARCH[arch],
                         args)
    if value == seccomp.SECCOMP_RET_ALLOW:
        return "allow"
    if value == seccomp.SECCOMP_RET_USER_NOTIF:
        return "notify"
    assert value & ~seccomp.SECCOMP_RET_DATA == seccomp.SECCOMP_RET_ERRNO, hex(value)
    return value & seccomp.SECCOMP_RET_DATA


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_what_landlock_does_not_hold_is_the_filters(arch: str) -> None:
    """Red team, issue 30: another process's scheduling, a file's metadata, and below
    Landlock ABI 3 a file cut without a write right. The filter as built, run."""
    def program(*, abi: int = 7, listener: bool = True) -> bytes:
        return seccomp.build_program(arch, memfd="allow", exec_notify=False,
                                     extra=filter_rules(network_mode="host", unix=True,
                                                        abi=abi, listener=listener))

    held = program()

    def verdict(name: str, *args: int) -> int | str:
        return _verdict(held, arch, name, *args)

    # Scheduling: the caller itself only (pid or who 0, PRIO_PROCESS, IOPRIO_WHO_PROCESS).
    assert verdict("setpriority", 0, 0, 10) == "allow"
    assert verdict("setpriority", 0, 4242, 10) == errno.EPERM
    assert verdict("setpriority", 2, 1000, 10) == errno.EPERM  # PRIO_USER
    assert verdict("setpriority", 1, 0, 10) == errno.EPERM  # PRIO_PGRP
    for name in ("sched_setaffinity", "sched_setscheduler", "sched_setparam",
                 "sched_setattr"):
        assert verdict(name, 0, 0, 0) == "allow", name
        assert verdict(name, 4242, 0, 0) == errno.EPERM, name
    assert verdict("ioprio_set", 1, 0, 0) == "allow"
    assert verdict("ioprio_set", 1, 4242, 0) == errno.EPERM
    assert verdict("ioprio_set", 3, 0, 0) == errno.EPERM  # IOPRIO_WHO_USER, uid 0: root's
    # A file's mode and times: the listener's, a set-user-ID bit refused before it.
    assert verdict("fchmodat", AT_FDCWD, 0, 0o755) == "notify"
    assert verdict("fchmodat", AT_FDCWD, 0, 0o4755) == errno.EPERM
    assert verdict("fchmod", 3, 0o644) == "notify"
    assert verdict("utimensat", AT_FDCWD, 0, 0, 0) == "notify"
    assert verdict("fchownat", AT_FDCWD, 0, 0, 0, 0) == "notify"
    assert verdict("fchown", 3, 0, 0) == "notify"
    assert verdict("inotify_add_watch", 3, 0, 0xFFF) == "notify"
    assert _verdict(program(listener=False), arch, "fchmodat", AT_FDCWD, 0, 0o755) == errno.EPERM
    for name in METADATA_CALLS:
        if name in syscalls.TABLES[arch]:
            assert _verdict(program(listener=False), arch, name, 3, 0, 0) == errno.EPERM
    for name in ("setxattr", "lsetxattr", "fsetxattr", "removexattr", "fremovexattr",
                 "setxattrat", "removexattrat"):
        assert verdict(name, 0, 0, 0) == errno.EOPNOTSUPP, name
    # Cutting a file: Landlock's from ABI 3; below it, no cut asks a write right.
    o_trunc, o_wronly = 0o1000, 0o1
    assert verdict("openat", AT_FDCWD, 0, o_trunc) == "allow"
    assert verdict("truncate", 0, 0) == "allow"
    old = program(abi=2)
    assert _verdict(old, arch, "openat", AT_FDCWD, 0, o_trunc) == errno.EACCES
    assert _verdict(old, arch, "openat", AT_FDCWD, 0, o_trunc | o_wronly) == "allow"
    assert _verdict(old, arch, "openat", AT_FDCWD, 0, 0) == "allow"
    assert _verdict(old, arch, "truncate", 0, 0) == errno.EPERM
    # No signal scope below ABI 6: kill(-1) would end every process of the uid.
    assert verdict("kill", 0xFFFFFFFF, 9) == "allow"  # scoped: the sandbox's own
    assert _verdict(program(abi=5), arch, "kill", 0xFFFFFFFF, 9) == errno.EPERM
    assert _verdict(program(abi=5), arch, "kill", 4242, 9) == "allow"


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_filter_builds_with_them_on_each_architecture(arch: str) -> None:
    extra = filter_rules(network_mode="none", unix=False)
    plain = seccomp.build_program(arch, memfd="allow", exec_notify=False)
    program = seccomp.build_program(arch, memfd="allow", exec_notify=False, extra=extra)
    assert len(program) > len(plain) and len(program) % 8 == 0
