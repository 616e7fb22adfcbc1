"""prctl: the no_new_privs bit, which a seccomp filter needs under it.

Facts:
- PR_SET_NO_NEW_PRIVS (38) with arg2 = 1 sets the bit; arg3 to arg5 must be 0, else
  EINVAL. PR_GET_NO_NEW_PRIVS (39) reads it back (its other arguments must be 0 too).
- The bit can never be cleared, is kept across fork, clone and execve, and makes execve
  grant no privilege: set-user-id and set-group-id bits and file capabilities are
  ignored.
- seccomp(SET_MODE_FILTER) without the bit fails with EACCES unless the caller has
  CAP_SYS_ADMIN in its user namespace: a filter could otherwise refuse a set-user-id
  program's setuid() and leave it privileged where it meant to drop. Root in a sandbox's
  own user namespace has that capability; the inner sets the bit anyway, so that no
  program it runs gains a privilege by execve.
- Landlock's restrict_self has the same rule (EPERM without the bit or the capability).
- PR_SET_PDEATHSIG (1) asks for a signal when the thread that forked this process ends;
  it is kept across execve (but for a set-user-id or file-capability one) and cleared
  in a child at fork. If the parent ended before the call, nothing is ever sent: the
  caller compares getppid() after.
- prctl's arguments are unsigned longs: they go as C longs, never bare ints (see
  syscalls.py).
"""

from __future__ import annotations

import ctypes
import os

from .syscalls import libc

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39


def _prctl(option: int, arg2: int = 0) -> int:
    zero = ctypes.c_ulong(0)
    result = int(libc().prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), zero, zero, zero))
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}): {os.strerror(err)}")
    return result


def set_no_new_privs() -> None:
    """Set no_new_privs for this process and all it runs; OSError with errno on failure."""
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


def no_new_privs() -> bool:
    """Whether no_new_privs is set, so a caller can check before installing a filter."""
    return _prctl(PR_GET_NO_NEW_PRIVS) == 1


def set_parent_death_signal(signal: int) -> None:
    """Ask for `signal` when the parent's thread ends (PR_SET_PDEATHSIG)."""
    _prctl(PR_SET_PDEATHSIG, signal)


PR_SET_CHILD_SUBREAPER = 36


def set_child_subreaper(on: bool) -> None:
    """Make this process a subreaper, or not (PR_SET_CHILD_SUBREAPER): the orphans of
    its descendants are reparented to it instead of the nearest subreaper above or init.
    The supervisor's, without namespaces (supervisor/linux/direct.py); never the inner's."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0)
