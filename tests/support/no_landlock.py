"""Run a command as on a kernel without Landlock: its syscalls answer ENOSYS.

A seccomp filter (inherited by everything the command starts, bwrap and the sandbox
included) makes landlock_create_ruleset, landlock_add_rule and landlock_restrict_self
fail with ENOSYS, the way a kernel built without Landlock answers. Usage:
    python no_landlock.py COMMAND [ARG...]
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys

ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}[platform.machine()]
ENOSYS = 38


def stmt(code: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, 0, 0, k)


def jump(code: int, k: int, jt: int, jf: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def main() -> None:
    program = b"".join([
        stmt(0x20, 4),                       # A = arch
        jump(0x15, ARCH, 1, 0),              # native arch: go on
        stmt(0x06, 0x7FFF0000),              # other arch: allowed (the sandbox decides)
        stmt(0x20, 0),                       # A = nr
        jump(0x35, 444, 0, 3),               # nr >= 444 ...
        jump(0x25, 446, 2, 0),               # ... and nr <= 446
        stmt(0x06, 0x00050000 | ENOSYS),     # landlock_*: ENOSYS
        stmt(0x06, 0x7FFF0000),
        stmt(0x06, 0x7FFF0000),
    ])
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    buf = ctypes.create_string_buffer(program)

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Fprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if libc.prctl(38, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.syscall(317, 1, 0, ctypes.byref(fprog)) != 0:
        raise OSError(ctypes.get_errno(), "seccomp(SET_MODE_FILTER)")
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
