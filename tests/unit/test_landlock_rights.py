"""inner.landlock's pure parts, on any machine: rights per ABI, masks, struct layouts."""

from __future__ import annotations

import ctypes
import errno

import pytest

from inner import landlock
from supervisor.linux import confine

ABI1_RIGHTS = ["execute", "write_file", "read_file", "read_dir", "remove_dir", "remove_file",
               "make_char", "make_dir", "make_reg", "make_sock", "make_fifo", "make_block",
               "make_sym"]


def test_bits_are_the_kernels() -> None:
    assert [landlock.FS_RIGHTS[name] for name in ABI1_RIGHTS] == [1 << n for n in range(13)]
    assert landlock.FS_RIGHTS["refer"] == 1 << 13
    assert landlock.FS_RIGHTS["truncate"] == 1 << 14
    assert landlock.FS_RIGHTS["ioctl_dev"] == 1 << 15
    assert landlock.FS_RIGHTS["resolve_unix"] == 1 << 16
    assert set(landlock.FS_RIGHTS_ABI) == set(landlock.FS_RIGHTS)
    assert sorted(landlock.FILE_RIGHTS) == ["execute", "ioctl_dev", "read_file",
                                            "resolve_unix", "truncate", "write_file"]


@pytest.mark.parametrize(("abi", "added", "handled"), [
    (1, [], (1 << 13) - 1),
    (2, ["refer"], (1 << 14) - 1),
    (3, ["refer", "truncate"], (1 << 15) - 1),
    (4, ["refer", "truncate"], (1 << 15) - 1),   # ABI 4 adds only network rights
    (5, ["refer", "truncate", "ioctl_dev"], (1 << 16) - 1),
    (7, ["refer", "truncate", "ioctl_dev"], (1 << 16) - 1),
    (8, ["refer", "truncate", "ioctl_dev"], (1 << 16) - 1),  # ABI 8 adds TSYNC only
    (9, ["refer", "truncate", "ioctl_dev", "resolve_unix"], (1 << 17) - 1),
    (10, ["refer", "truncate", "ioctl_dev", "resolve_unix"], (1 << 17) - 1),  # UDP only
])
def test_rights_per_abi(abi: int, added: list[str], handled: int) -> None:
    assert landlock.known_rights(abi) == ABI1_RIGHTS + added
    assert landlock.handled_fs(abi) == handled


def test_mask_drops_what_the_abi_lacks() -> None:
    names = [*confine.WRITE, "execute", "ioctl_dev"]
    assert landlock.access_mask(names, abi=1) == (1 << 13) - 1
    assert landlock.access_mask(names, abi=2) == (1 << 14) - 1
    assert landlock.access_mask(names, abi=4) == (1 << 15) - 1
    assert landlock.access_mask(names, abi=5) == (1 << 16) - 1
    assert landlock.access_mask(["refer"], abi=1) == 0


def test_mask_on_a_file_keeps_file_rights_only() -> None:
    everything = list(landlock.FS_RIGHTS)
    assert landlock.access_mask(everything, abi=7, directory=False) == (
        1 << 0 | 1 << 1 | 1 << 2 | 1 << 14 | 1 << 15)
    assert landlock.access_mask(everything, abi=2, directory=False) == 1 << 0 | 1 << 1 | 1 << 2
    assert landlock.access_mask(["read_file", "read_dir"], abi=7, directory=False) == 1 << 2
    assert landlock.access_mask(["read_dir"], abi=7, directory=False) == 0


def test_unknown_right_is_an_error() -> None:
    with pytest.raises(landlock.LandlockError) as raised:
        landlock.access_mask(["read_file", "bind_tcp"], abi=7)
    assert raised.value.errno == errno.EINVAL
    assert "bind_tcp" in str(raised.value)


def test_a_write_grant_holds_every_right_but_running_devices_and_sockets() -> None:
    assert confine.READ == ("read_file", "read_dir")
    write = confine.WRITE
    assert set(write) == set(landlock.FS_RIGHTS) - {"execute", "ioctl_dev", "resolve_unix"}
    assert len(write) == len(set(write))


@pytest.mark.parametrize(("abi", "scopes", "expected"), [
    (5, True, 0), (6, True, 3), (7, True, 3), (7, False, 0)])
def test_scopes_from_abi_6(abi: int, scopes: bool, expected: int) -> None:
    assert landlock.scoped(abi, scopes=scopes) == expected


def test_struct_layouts() -> None:
    assert ctypes.sizeof(landlock._PathBeneathAttr) == 12  # packed
    assert landlock._PathBeneathAttr.parent_fd.offset == 8
    assert ctypes.sizeof(landlock._RulesetAttr) == 24
    assert [landlock.ruleset_attr_size(abi) for abi in range(1, 8)] == [8, 8, 8, 16, 16, 24, 24]


def test_restrict_refuses_abi_0_before_any_syscall() -> None:
    with pytest.raises(landlock.LandlockError) as raised:
        landlock.restrict([], abi=0)
    assert raised.value.errno == errno.EOPNOTSUPP
