"""Run bwrap as under Ubuntu 24.04's AppArmor restriction: it makes its user namespace,
and the kernel refuses it the uid map.

Under `kernel.apparmor_restrict_unprivileged_userns = 1`, unshare(CLONE_NEWUSER)
succeeds and the namespace holds no capability, so bwrap's first act there, writing its
uid map, fails: `bwrap: setting up uid map: Permission denied`, exit 1, before any
sandbox exists. This machine's kernel has no AppArmor; a seccomp filter on the real bwrap
makes the kernel refuse the same open with the same errno: bwrap opens its maps (and,
before its sandbox starts, nothing else) with openat(dirfd, "uid_map", O_RDWR |
O_CLOEXEC), and the filter answers an openat with exactly those flags EACCES. Everything
else bwrap does runs as it is: unshare, --version, --help. Usage:

    python userns_restricted.py BWRAP [ARG...]       # bwrap, restricted

`install(folder)` writes `folder/bwrap` starting the real one through this file, to put
first on lnk-sandbox's PATH (it finds bwrap there): only bwrap is restricted, as only
bwrap is under Ubuntu's restriction (lnk-sandbox itself makes no user namespace unless
run by root, and root, holding CAP_SYS_ADMIN, is not restricted).
"""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import struct
import sys
from pathlib import Path

ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}[platform.machine()]
OPENAT = {"x86_64": 257, "aarch64": 56}[platform.machine()]
EACCES = 13
O_RDWR_CLOEXEC = os.O_RDWR | os.O_CLOEXEC
FLAGS_LOW = 16 + 2 * 8  # seccomp_data.args[2], its low 32 bits (little-endian)


def stmt(code: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, 0, 0, k)


def jump(code: int, k: int, jt: int, jf: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def restrict() -> None:
    program = b"".join([
        stmt(0x20, 4),                         # A = arch
        jump(0x15, ARCH, 1, 0),                # native: go on
        stmt(0x06, 0x7FFF0000),                # other arch: allowed
        stmt(0x20, 0),                         # A = nr
        jump(0x15, OPENAT, 0, 3),              # openat ...
        stmt(0x20, FLAGS_LOW),                 # A = flags
        jump(0x15, O_RDWR_CLOEXEC, 0, 1),      # ... with bwrap's flags for its maps
        stmt(0x06, 0x00050000 | EACCES),       # EACCES, as the restriction answers
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
    if libc.syscall(317 if ARCH == 0xC000003E else 277, 1, 0, ctypes.byref(fprog)) != 0:
        raise OSError(ctypes.get_errno(), "seccomp(SET_MODE_FILTER)")


def install(folder: Path) -> Path:
    """`folder/bwrap`: the real bwrap, restricted; readable and runnable by anyone (root
    mode runs bwrap as a uid of its own). This file is copied beside it, so that no
    folder of the checkout needs to be open to that uid."""
    real = shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin")
    assert real is not None, "bwrap is not installed"
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    script = folder / "userns_restricted.py"
    shutil.copyfile(__file__, script)
    script.chmod(0o644)
    wrapper = folder / "bwrap"
    wrapper.write_text(f"#!/bin/sh\nexec /usr/bin/python3 -I {script} {real} \"$@\"\n")
    wrapper.chmod(0o755)
    return wrapper


def main() -> None:
    restrict()
    os.execv(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
