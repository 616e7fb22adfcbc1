"""Run a command as on a kernel before Linux 6.3: memfd_create knows no MFD_NOEXEC_SEAL.

A seccomp filter (inherited by everything the command starts) answers memfd_create with
EINVAL when it asks for MFD_NOEXEC_SEAL or MFD_EXEC, the way a kernel that does not know
those flags answers; every other call runs. Usage:
    python no_memfd_seal.py COMMAND [ARG...]
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys

ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}[platform.machine()]
MEMFD_CREATE = {"x86_64": 319, "aarch64": 279}[platform.machine()]
NEW_FLAGS = 0x8 | 0x10  # MFD_NOEXEC_SEAL | MFD_EXEC
ALLOW = 0x7FFF0000


def stmt(code: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, 0, 0, k)


def jump(code: int, k: int, jt: int, jf: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def main() -> None:
    program = b"".join([
        stmt(0x20, 4),                          # A = arch
        jump(0x15, ARCH, 1, 0),                 # native arch: go on
        stmt(0x06, ALLOW),                      # other arch: the sandbox decides
        stmt(0x20, 0),                          # A = nr
        jump(0x15, MEMFD_CREATE, 0, 3),         # memfd_create ...
        stmt(0x20, 24),                         # A = flags (args[1], low word)
        jump(0x45, NEW_FLAGS, 0, 1),            # ... with a flag of Linux 6.3
        stmt(0x06, 0x00050000 | errno.EINVAL),  # EINVAL, as an older kernel answers
        stmt(0x06, ALLOW),
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
