"""A classic-BPF seccomp filter installed on the calling process, for the scripts that run
a command as on another kernel or under another supervisor (no_landlock.py, no_vm_read.py,
no_memfd_seal.py, userns_restricted.py).

Those scripts are run by path, often by a Python that does not see this checkout's
packages (`python3 -I`), so this module uses nothing but the standard library, and each
script finds it through `beside_support()`.
"""

from __future__ import annotations

import ctypes
import platform
import struct

ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}[platform.machine()]
SECCOMP = {"x86_64": 317, "aarch64": 277}[platform.machine()]
ALLOW = 0x7FFF0000
LOAD = 0x20      # BPF_LD | BPF_W | BPF_ABS: A = seccomp_data[k]
EQUAL = 0x15     # BPF_JMP | BPF_JEQ | BPF_K
ABOVE = 0x25     # BPF_JMP | BPF_JGT | BPF_K
AT_LEAST = 0x35  # BPF_JMP | BPF_JGE | BPF_K
ANY_BIT = 0x45   # BPF_JMP | BPF_JSET | BPF_K
RETURN = 0x06    # BPF_RET | BPF_K
NR = 0           # offsetof(struct seccomp_data, nr)
ARCH_FIELD = 4   # offsetof(struct seccomp_data, arch)


def args_low(index: int) -> int:
    """Offset of seccomp_data.args[index]'s low 32 bits (little-endian)."""
    return 16 + 8 * index


def errno_of(code: int) -> int:
    """SECCOMP_RET_ERRNO with `code`."""
    return 0x00050000 | code


def stmt(code: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, 0, 0, k)


def jump(code: int, k: int, jt: int, jf: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def native_only(*body: bytes) -> bytes:
    """`body` for this machine's own calls; another architecture's calls are allowed (the
    sandbox's own filter decides those)."""
    return b"".join([
        stmt(LOAD, ARCH_FIELD),
        jump(EQUAL, ARCH, 1, 0),
        stmt(RETURN, ALLOW),
        stmt(LOAD, NR),
        *body,
    ])


def install(program: bytes, flags: int = 0) -> int:
    """Set no_new_privs and install `program` on this thread (inherited by all it starts);
    seccomp's answer (a listener's fd with SECCOMP_FILTER_FLAG_NEW_LISTENER)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    buf = ctypes.create_string_buffer(program)

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Fprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if libc.prctl(38, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    answer = int(libc.syscall(SECCOMP, 1, flags, ctypes.byref(fprog)))
    if answer < 0:
        raise OSError(ctypes.get_errno(), "seccomp(SET_MODE_FILTER)")
    return answer
