"""Probes of what this kernel offers, each asking the real thing.

Probes that install a filter or leave a namespace run in a forked child, since neither
can be undone: the supervisor itself stays as it was. Each answers a value;
`capabilities.py` keeps the passes for the boot.
"""

from __future__ import annotations

import errno
import os
import select
import socket
import struct
from collections.abc import Callable

from inner import landlock, seccomp, syscalls
from inner.seccomp import CLONE_NEWUSER, MFD_CLOEXEC, MFD_NOEXEC_SEAL

from . import notify


def landlock_abi() -> int:
    """The Landlock ABI, 0 without Landlock (or where a filter hides it)."""
    try:
        return landlock.abi_version()
    except OSError:
        return 0


def memfd_noexec_seal() -> bool:
    """Whether memfd_create takes MFD_NOEXEC_SEAL (Linux 6.3)."""
    try:
        fd = os.memfd_create("lnk-probe", MFD_CLOEXEC | MFD_NOEXEC_SEAL)
    except OSError:
        return False
    os.close(fd)
    return True


def listener() -> bool:
    """Whether a filter can have a listener with WAIT_KILLABLE_RECV (Linux 5.19)."""
    try:
        return seccomp.listener_supported()
    except OSError:
        return False


def listener_free() -> bool:
    """Whether a sandbox started from this process can have a listener of its own.

    One filter chain has one listener: under another (this process inside another
    sandbox's watch) NEW_LISTENER fails with EBUSY, and the inner then runs without the
    exec watch. listener() asks the kernel without installing, so it cannot see that; a
    forked child installs an allow-all filter with a listener to find out.
    """

    def child() -> int:
        from inner import prctl

        prctl.set_no_new_privs()
        program = seccomp.build_program(syscalls.native_arch(), memfd="allow",
                                        exec_notify=False)
        fd = seccomp.install(program, listener=True)
        if fd is not None:
            os.close(fd)
        return 0

    return _forked(lambda: _errno_of(child)) == 0


def _errno_of(call: Callable[[], object]) -> int:
    try:
        call()
    except OSError as err:
        return err.errno or -1
    return 0


def _forked(work: Callable[[], int], parent: Callable[[int], None] | None = None) -> int:
    """`work()` in a forked child, `parent(pid)` here meanwhile; the child's int, or -1."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        code = -1
        try:
            code = work()
        finally:
            os.write(write_end, struct.pack("=i", code))
            os._exit(0)
    os.close(write_end)
    try:
        if parent is not None:
            parent(pid)
        data = os.read(read_end, 4)
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    return int(struct.unpack("=i", data)[0]) if len(data) == 4 else -1


def user_namespaces() -> bool:
    """Whether this user can make a user namespace (bwrap needs one of its own)."""
    return _forked(lambda: _errno_of(lambda: syscalls.syscall("unshare", CLONE_NEWUSER))) == 0


def addfd_send() -> bool:
    """Whether a listener can answer a call with an fd (ADDFD_FLAG_SEND, Linux 5.14).

    A child installs the filter the exec watch uses, hands its listener over and makes
    a plain memory file, which the filter notifies; this process answers with an fd and
    ADDFD_FLAG_SEND. A kernel without the flag answers EINVAL; the call is then failed
    with ENOSYS so the child ends.
    """
    if not listener():
        return False
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    answered: list[bool] = []

    def child() -> int:
        from inner import prctl

        ours.close()
        prctl.set_no_new_privs()
        program = seccomp.build_program(syscalls.native_arch(), memfd="notify",
                                        exec_notify=False)
        fd = seccomp.install(program, listener=True)
        assert fd is not None
        socket.send_fds(theirs, [b"L"], [fd])
        os.close(fd)
        return _errno_of(lambda: os.memfd_create("lnk-probe", 0))

    def parent(pid: int) -> None:
        theirs.close()
        if not select.select([ours], [], [], 5)[0]:
            return
        _, fds, _, _ = socket.recv_fds(ours, 16, 1)
        if not fds:
            return
        listener_fd = fds[0]
        try:
            if not select.select([listener_fd], [], [], 5)[0]:
                return
            notification = notify.receive(listener_fd)
            answer = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
            try:
                notify.add_fd_and_send(listener_fd, notification.id, answer, cloexec=True)
                answered.append(True)
            except OSError as err:
                if err.errno != errno.EINVAL:
                    raise
                notify.send_error(listener_fd, notification.id, errno.ENOSYS)
            finally:
                os.close(answer)
        finally:
            os.close(listener_fd)

    try:
        code = _forked(child, parent)
    finally:
        ours.close()
        theirs.close()
    return bool(answered) and code == 0


def memory_readable() -> bool:
    """Whether this process can read a child's memory with process_vm_readv, as the exec
    watch reads each program's path: Docker's default seccomp profile refuses the call
    without CAP_SYS_PTRACE (EPERM, measured in Docker 20.10), and the watch then cannot
    name what it sees."""
    import ctypes

    marker = ctypes.create_string_buffer(b"lnk-probe")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(write_end)
        os.read(read_end, 1)  # alive, with the same addresses, until the parent is done
        os._exit(0)
    os.close(read_end)
    try:
        from . import notify

        return notify.MemoryReader().read_string(pid, ctypes.addressof(marker)) == b"lnk-probe"
    finally:
        os.close(write_end)
        os.waitpid(pid, 0)
