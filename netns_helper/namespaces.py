"""Joining a running sandbox's user and network namespaces, from outside.

Facts (checked on Linux 6.x; see the reference, section 6):
- setns(fd, CLONE_NEWUSER) fails with EINVAL in a process with more than one thread, and
  setns(fd, CLONE_NEWNET) moves only the calling thread: the helper must be a process of
  its own, single-threaded until it has joined both (nothing it imports starts a thread).
- Joining a network namespace needs CAP_SYS_ADMIN in the user namespace that owns it. An
  unprivileged user has it only by joining that user namespace first, which it may as its
  owner; root (run with --cap-drop ALL inside) joins the same way, so both take one path.
- bwrap's pid-1 reaper (`child-pid`) starts in the user namespace that owns the network
  namespace, but with --disable-userns it moves into a nested one soon after bwrap
  reports it (seen here within milliseconds), as the command is. So the user namespace
  joined is the network namespace's owner (NS_GET_USERNS), and the reaper's is checked
  to be that one or below it (NS_GET_PARENT).
- A socket keeps the network namespace it was made in: sockets made after the join are the
  sandbox's. A unix socket with a path is found through the file system, whatever the
  network namespace, so the helper reaches the supervisor's sockets by path afterwards.
- PR_SET_PDEATHSIG fires when the *thread* that forked the helper exits: the supervisor
  spawns it from its main thread, which runs the event loop for the whole run. It is set
  after exec here, so the helper checks its parent is still the supervisor right after.
- Both are joined by descriptor (setns(2) through libc), never by name: nothing is made.
"""

from __future__ import annotations

import ctypes
import os
import signal

from inner.seccomp import CLONE_NEWNET, CLONE_NEWUSER
from inner.syscalls import libc

NS_GET_USERNS = 0xB701  # _IO(0xb7, 0x1)
NS_GET_PARENT = 0xB702  # _IO(0xb7, 0x2)
MAX_NESTING = 32  # the kernel's limit on nested user namespaces
PR_SET_PDEATHSIG = 1



class JoinError(Exception):
    """A step of joining failed: `step` names it, `errno` is the kernel's (or None)."""

    def __init__(self, step: str, message: str, errno: int | None = None):
        super().__init__(message)
        self.step = step
        self.message = message
        self.errno = errno


def die_with_parent(parent: int) -> None:
    """SIGKILL when the supervisor's spawning thread exits; fail if it is gone already."""
    if libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise JoinError("prctl", f"PR_SET_PDEATHSIG: {os.strerror(code)}", code)
    if os.getppid() != parent:
        raise JoinError("prctl", "the supervisor exited before the helper started")


def threads() -> int:
    """How many threads this process has, as the kernel counts them."""
    return len(os.listdir("/proc/self/task"))


class Namespaces:
    """The sandbox's namespaces, opened on the host side before joining. (A plain class:
    dataclasses loads inspect, typing re and enum, 8 and 3 ms of the helper's start,
    which every proxy-mode go waits for.)"""

    __slots__ = ("net", "pidfd", "user")

    def __init__(self, *, pidfd: int, user: int, net: int) -> None:
        self.pidfd = pidfd
        self.user = user
        self.net = net

    def close(self) -> None:
        for fd in (self.user, self.net):
            try:
                os.close(fd)
            except OSError:
                pass


def open_namespaces(pid: int, net_inode: int) -> Namespaces:
    """Open the reaper's pidfd and namespaces, checking they are the sandbox's.

    The pidfd is opened first: the process it names cannot be replaced by a reused pid,
    and the network namespace opened after it must carry the inode bwrap reported.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except OSError as err:
        raise JoinError("pidfd_open", f"the sandbox (pid {pid}) is gone: {err.strerror}",
                        err.errno) from None
    fds: list[int] = []
    try:
        net = _open_ns(pid, "net")
        fds.append(net)
        if os.fstat(net).st_ino != net_inode:
            raise JoinError("open net", f"pid {pid} is no longer in the sandbox's network "
                            "namespace")
        # The owner of the network namespace is the user namespace to join; the reaper's
        # own may be a nested one below it by now (--disable-userns).
        user = _ioctl(net, NS_GET_USERNS, "NS_GET_USERNS")
        fds.append(user)
        _check_below(_open_ns(pid, "user"), os.fstat(user).st_ino)
    except BaseException:
        for fd in (pidfd, *fds):
            os.close(fd)
        raise
    return Namespaces(pidfd=pidfd, user=user, net=net)


def join(namespaces: Namespaces) -> None:
    """Join the user namespace, then the network namespace (by fd, never by name)."""
    count = threads()
    if count != 1:
        raise JoinError("setns user", f"the helper has {count} threads; a threaded process "
                        "cannot join a user namespace")
    if libc().setns(namespaces.user, CLONE_NEWUSER) != 0:
        code = ctypes.get_errno()
        raise JoinError("setns user", f"joining the sandbox's user namespace: "
                        f"{os.strerror(code)}", code)
    if libc().setns(namespaces.net, CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        raise JoinError("setns net", f"joining the sandbox's network namespace: "
                        f"{os.strerror(code)}", code)


def _check_below(fd: int, owner: int) -> None:
    """Check the user namespace `fd` is the one of inode `owner` or nested below it."""
    try:
        for _ in range(MAX_NESTING):
            if os.fstat(fd).st_ino == owner:
                return
            try:
                parent = _ioctl(fd, NS_GET_PARENT, "NS_GET_PARENT")
            except JoinError:
                break
            os.close(fd)
            fd = parent
    finally:
        os.close(fd)
    raise JoinError("open user", "the sandbox's network namespace is not owned by its user "
                    "namespace or one holding it")


def _open_ns(pid: int, name: str) -> int:
    try:
        return os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as err:
        raise JoinError(f"open {name}", f"/proc/{pid}/ns/{name}: {err.strerror}",
                        err.errno) from None


def _ioctl(fd: int, request: int, step: str) -> int:
    result = int(libc().ioctl(fd, request, 0))
    if result < 0:
        code = ctypes.get_errno()
        raise JoinError(step, f"{step}: {os.strerror(code)}", code)
    return result
