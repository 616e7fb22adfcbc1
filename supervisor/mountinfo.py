"""/proc/self/mountinfo, read: the mount points of a table, and each with its device.

One reader for the kernel's table (proc(5)): the mount watch compares the sandbox's
table before and after the go; the grants' check asks which folders of this mount
namespace show a folder's own device, where a bind mount shows it again at another
path.
"""

from __future__ import annotations

import os
from typing import NamedTuple

MOUNTINFO = "/proc/self/mountinfo"


class Mount(NamedTuple):
    """One line of the table: where it is mounted, the device it shows, and which folder
    of that device's file system is its top (a bind mount's source, as that file
    system sees it)."""

    point: str
    device: int  # os.makedev(major, minor), as os.stat gives st_dev
    root: str = "/"


def mounts(table: bytes) -> list[Mount]:
    """Each mount of a mountinfo table: its fifth field, third (major:minor) and fourth
    (octal escapes undone)."""
    found = []
    for line in table.splitlines():
        fields = line.split(b" ", 5)
        if len(fields) < 5:
            continue
        major, _, minor = fields[2].partition(b":")
        try:
            device = os.makedev(int(major), int(minor))
        except ValueError:
            device = -1
        found.append(Mount(_path(fields[4]), device, _path(fields[3])))
    return found


def _path(raw: bytes) -> str:
    return os.fsdecode(_unescape(raw) if b"\\" in raw else raw)


def mount_points(table: bytes) -> set[str]:
    """The mount points of a mountinfo table."""
    return {mount.point for mount in mounts(table)}


def read_mounts() -> list[Mount]:
    """This process's mount namespace's mounts; none where there is no such table."""
    try:
        with open(MOUNTINFO, "rb") as table:
            return mounts(table.read())
    except OSError:
        return []


def _unescape(raw: bytes) -> bytes:
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i:i + 1] == b"\\" and raw[i + 1:i + 4].isdigit():
            out.append(int(raw[i + 1:i + 4], 8))
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return bytes(out)
