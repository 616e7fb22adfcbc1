"""Capabilities: every one dropped, for good, by a sandbox that has no user namespace.

Without a user namespace of its own (direct mode: supervisor/linux/direct.py), a sandbox
started by root is root of the machine, or of the container it runs in, with what
capabilities that root holds (Docker's default gives 14: DAC_OVERRIDE, FOWNER, CHOWN,
SETUID, MKNOD, KILL...). bwrap drops them with `--cap-drop ALL`; here the inner does.

Facts (checked on Linux 6.18 as root on the host and in Docker 20.10's default profile,
from include/uapi/linux/capability.h, prctl.h and securebits.h):

- capset(2) with _LINUX_CAPABILITY_VERSION_3 (0x20080522) takes a header {u32 version;
  int pid} (pid 0: this thread) and two {u32 effective, permitted, inheritable} words
  (capabilities 0-31, then 32-63). Lowering any set is always allowed; raising is not.
  capget(2) reads them back the same way.
- The bounding set limits what any later execve can give; PR_CAPBSET_DROP (24) takes
  one capability out and needs CAP_SETPCAP in the effective set (EPERM otherwise), so
  it goes before capset empties that set. PR_CAPBSET_READ (23) answers EINVAL past the
  kernel's last capability, which is how the loop knows where to stop.
- PR_CAP_AMBIENT (47) with PR_CAP_AMBIENT_CLEAR_ALL (4) empties the ambient set; no
  capability is needed.
- PR_SET_SECUREBITS (28) needs CAP_SETPCAP. SECBIT_NOROOT (1 << 0) stops execve from
  giving uid 0 the file's full capabilities; SECBIT_NO_SETUID_FIXUP (1 << 2) stops the
  kernel from touching capabilities when uids change; SECBIT_NO_CAP_AMBIENT_RAISE
  (1 << 6) closes the ambient set; each *_LOCKED bit (the next bit up) makes its bit
  permanent, and SECBIT_KEEP_CAPS_LOCKED (1 << 5) keeps KEEP_CAPS off for good. All are
  kept across fork and execve.
- Under no_new_privs, which the inner sets first, execve never gives more than the
  permitted set held before it (commoncap.c: "if NO_NEW_PRIVS, then ensure we get no new
  privs"): an empty permitted set stays empty, root's uid included, even where
  CAP_SETPCAP was never held and the bounding set could not be emptied.
- Without capabilities, uid 0 keeps what the kernel grants by uid and ownership alone:
  owner rights on root's files, /proc/sys's owner write bits, signals to other uid-0
  processes. Landlock (files, /proc) and its signal scope hold those in direct mode.

It imports nothing but the standard library and ctypes and does nothing at import time.
"""

from __future__ import annotations

import ctypes
import errno
import os

from . import syscalls

_VERSION_3 = 0x20080522
CAP_SETPCAP = 8

PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_GET_SECUREBITS = 27
PR_SET_SECUREBITS = 28
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

SECBIT_NOROOT = 1 << 0
SECBIT_NOROOT_LOCKED = 1 << 1
SECBIT_NO_SETUID_FIXUP = 1 << 2
SECBIT_NO_SETUID_FIXUP_LOCKED = 1 << 3
SECBIT_KEEP_CAPS_LOCKED = 1 << 5
SECBIT_NO_CAP_AMBIENT_RAISE = 1 << 6
SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED = 1 << 7
LOCKED_BITS = (SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP
               | SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED
               | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)


class _Header(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _Data(ctypes.Structure):
    _fields_ = (("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32))


def _prctl(option: int, arg2: int = 0, arg3: int = 0) -> int:
    zero = ctypes.c_ulong(0)
    result = int(syscalls.libc().prctl(ctypes.c_int(option), ctypes.c_ulong(arg2),
                                       ctypes.c_ulong(arg3), zero, zero))
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}, {arg2}): {os.strerror(err)}")
    return result


def sets() -> tuple[int, int, int]:
    """(effective, permitted, inheritable) of this thread, as 64-bit masks."""
    header = _Header(_VERSION_3, 0)
    data = (_Data * 2)()
    syscalls.syscall("capget", ctypes.byref(header), ctypes.byref(data))
    effective, permitted, inheritable = (
        int(getattr(data[0], name)) | int(getattr(data[1], name)) << 32
        for name in ("effective", "permitted", "inheritable"))
    return effective, permitted, inheritable


def set_effective(mask: int) -> None:
    """This thread's effective set made `mask` (within its permitted set, which stays:
    a capability lowered so can be raised again). Other threads keep theirs."""
    _, permitted, inheritable = sets()
    header = _Header(_VERSION_3, 0)
    data = (_Data * 2)()
    for word in (0, 1):
        data[word].effective = (mask >> (32 * word)) & 0xFFFFFFFF
        data[word].permitted = (permitted >> (32 * word)) & 0xFFFFFFFF
        data[word].inheritable = (inheritable >> (32 * word)) & 0xFFFFFFFF
    syscalls.syscall("capset", ctypes.byref(header), ctypes.byref(data))


def bounding() -> int:
    """The bounding set as a mask (PR_CAPBSET_READ, up to the kernel's last)."""
    mask = 0
    for cap in range(64):
        try:
            if _prctl(PR_CAPBSET_READ, cap):
                mask |= 1 << cap
        except OSError as err:
            if err.errno == errno.EINVAL:
                break
            raise
    return mask


def drop_all() -> None:
    """Drop every capability of this thread for good (and of all it execs); OSError
    when one is still held after. Call it after no_new_privs, single-threaded."""
    effective, _, _ = sets()
    if effective & (1 << CAP_SETPCAP):
        # Both need CAP_SETPCAP, so both go before capset empties the effective set.
        _prctl(PR_SET_SECUREBITS, _prctl(PR_GET_SECUREBITS) | LOCKED_BITS)
        for cap in range(64):
            try:
                if _prctl(PR_CAPBSET_READ, cap):
                    _prctl(PR_CAPBSET_DROP, cap)
            except OSError as err:
                if err.errno == errno.EINVAL:
                    break  # past the kernel's last capability
                raise
    try:
        _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError as err:
        if err.errno != errno.EINVAL:  # a kernel before 4.3 has no ambient set
            raise
    header = _Header(_VERSION_3, 0)
    empty = (_Data * 2)()
    syscalls.syscall("capset", ctypes.byref(header), ctypes.byref(empty))
    held = sets()
    if any(held):
        raise OSError(errno.EPERM, "capabilities still held after capset: effective "
                      f"{held[0]:#x}, permitted {held[1]:#x}, inheritable {held[2]:#x}")
