"""Run a command under a seccomp filter that already has a listener.

A second NEW_LISTENER in one filter chain fails with EBUSY, so the sandbox's own filter
cannot have one: its exec watch is missing, as under another supervisor's listener.
The record says what must hold then: memory files refused with ENOSYS, the program list
still enforced by Landlock. Usage:
    python other_listener.py COMMAND [ARG...]
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys


def main() -> None:
    program = struct.pack("=HBBI", 0x06, 0, 0, 0x7FFF0000)  # allow everything
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    buf = ctypes.create_string_buffer(program)

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Fprog(1, ctypes.cast(buf, ctypes.c_void_p))
    if libc.prctl(38, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    listener = libc.syscall(317, 1, 8, ctypes.byref(fprog))  # NEW_LISTENER
    if listener < 0:
        raise OSError(ctypes.get_errno(), "seccomp(NEW_LISTENER)")
    os.set_inheritable(listener, True)  # kept open: a closed listener frees its place
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
