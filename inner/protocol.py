"""The status socket between the inner confiner and the supervisor.

A SOCK_SEQPACKET socketpair, so each message arrives whole. The inner sends:
`L` with the seccomp listener fd (SCM_RIGHTS), `W` when it waits for the go,
`E<errno> <program>[\0<interpreter>]` when execve failed (the interpreter a script's `#!`
line names, when it is what is missing), `C<text>` when a confinement step failed,
`N<name>` for a notice the supervisor says once (`no-landlock`: the launch goes on with
bwrap and the seccomp filter alone), `M` with an fd of its `/proc/self/mountinfo`
(SCM_RIGHTS) when asked to, before `W`: the supervisor watches the sandbox's mount table
on it (supervisor/linux/mount_watch.py).
The supervisor answers `G` (go). The inner keeps its end close-on-exec: after a
successful execve the target never holds it. Every send is MSG_NOSIGNAL: once the
signals are back to their defaults, a supervisor gone would otherwise be a SIGPIPE,
where the inner exits 125 (the compiled inner, confine.c, speaks the same bytes).
"""

from __future__ import annotations

import _socket
import array
import os

GO = b"G"
WAITING = b"W"
LISTENER = b"L"
EXEC_FAILED = b"E"
CONFINEMENT_FAILED = b"C"
NOTICE = b"N"
MOUNTS = b"M"

# Notices: what the inner found and the supervisor says once on stderr.
NO_LANDLOCK = "no-landlock"
NO_LISTENER = "no-listener"


class Channel:
    """The inner's end of the status socket."""

    def __init__(self, fd: int):
        self.fd = fd
        # _socket, not socket: socket.py pulls in enum and selectors, which only slow the
        # start of every sandbox.
        self._sock = _socket.socket(fileno=fd)

    def send_listener(self, listener_fd: int) -> None:
        self._send_fd(LISTENER, listener_fd)

    def send_mounts(self, table_fd: int) -> None:
        self._send_fd(MOUNTS, table_fd)

    def _send_fd(self, kind: bytes, fd: int) -> None:
        fds = array.array("i", [fd])
        try:
            self._sock.sendmsg([kind], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)],
                               _socket.MSG_NOSIGNAL)
        except OSError:
            os._exit(125)  # the supervisor is gone: nothing may run unsupervised

    def wait_for_go(self) -> bool:
        """True once the supervisor says go; False if it is gone (EOF or error)."""
        try:
            self._sock.send(WAITING, _socket.MSG_NOSIGNAL)
            return self._sock.recv(16) == GO
        except OSError:
            return False

    def send_exec_failure(self, errno: int, program: str, interpreter: str | None = None
                          ) -> None:
        """`interpreter`: the script's `#!` interpreter, when that is what is missing."""
        text = f"{errno} {program}" + (f"\0{interpreter}" if interpreter is not None else "")
        self._send(EXEC_FAILED + text.encode("utf-8", "surrogateescape"))

    def send_notice(self, name: str) -> None:
        self._send(NOTICE + name.encode())

    def send_confinement_failure(self, text: str) -> None:
        self._send(CONFINEMENT_FAILED + text.encode("utf-8", "replace"))

    def _send(self, message: bytes) -> None:
        try:
            self._sock.send(message[:4096], _socket.MSG_NOSIGNAL)
        except OSError:
            pass  # the supervisor is gone; the exit status still tells bwrap's pid 1
