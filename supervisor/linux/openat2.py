"""openat2(2): opening a path as another process's root would resolve it.

Facts (checked on this kernel; see the reference, §7):
- openat2(dirfd, path, struct open_how {u64 flags, mode, resolve}, size 24): syscall
  437 on x86_64 and aarch64. A `mode` without O_CREAT, or unknown bits, give EINVAL.
- RESOLVE_IN_ROOT treats dirfd as the root for the whole walk: an absolute link, `..`
  at the top, an absolute path itself, all stay beneath it. With dirfd an open
  /proc/PID/root, a path resolves as the process PID's own lookup would, links followed.
- RESOLVE_NO_MAGICLINKS refuses /proc/*/fd-style links (ELOOP), which point past any
  root.
"""

from __future__ import annotations

import ctypes
import os
import struct

from inner.syscalls import libc

SYS_OPENAT2 = 437
RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
RESOLVE_IN_ROOT = 0x10


def openat2(dirfd: int, path: str, flags: int, resolve: int) -> int:
    """The new fd, or OSError with the kernel's errno."""
    how = ctypes.create_string_buffer(struct.pack("=QQQ", flags | os.O_CLOEXEC, 0, resolve))
    fd = int(libc().syscall(ctypes.c_long(SYS_OPENAT2), ctypes.c_long(dirfd),
                          ctypes.c_char_p(os.fsencode(path)), how, ctypes.c_size_t(24)))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)
    return fd
