"""Network mode "none": a name looked up inside is said once per run.

Without this, `curl https://example.com` in the default sandbox says only "Could not
resolve host", which reads like a broken network rather than a sandbox without one
(issue 31). So the sandbox's resolv.conf names 127.0.0.1 (run_mounts.py binds it), and a
UDP socket bound at 127.0.0.1:53 inside the sandbox's own network namespace answers every
query REFUSED at once and has the supervisor say, the first time,
`no network in this sandbox ([network] mode = "none")`. Nothing leaves the namespace:
the socket is the sandbox's loopback's, and the answer names no address.

How the socket is made, cheaply (the default start must not slow; benchmarks/start.py):
no helper process is started (proxy mode's netns_helper costs an interpreter's start).
In the status thread, once bwrap reports the sandbox's pid and before the go, the
supervisor forks a child that joins the sandbox's user namespace (the owner of its
network namespace: it holds CAP_NET_BIND_SERVICE there, which port 53 needs) and network
namespace by fd, makes and binds the socket, sends it back on a socketpair and exits. A
socket keeps the namespace it was made in, so the supervisor reads the sandbox's queries
from its own. A thread of its own answers them, waiting on the socket and on bwrap's
pidfd, so that no event loop is loaded for it.

Facts (Linux 6.18, glibc 2.36):
- glibc asks each nameserver of resolv.conf on port 53 (no port can be written there),
  A and AAAA in parallel on one socket, and takes an answer only when its id and
  question match the query's (res_send.c: res_queriesmatch): the answer copies both.
  REFUSED ends the lookup at once with EAI_AGAIN ("Temporary failure in name
  resolution"; curl: "Could not resolve host"); no answer at all would wait 5 s a try.
- A lookup glibc answers from /etc/hosts (localhost) asks no nameserver: nothing is said.
- The child is forked from a threaded process: it makes system calls only (setns through
  libc, socket, sendmsg) and `_exit`s, as idmapped.py's child does. setns(CLONE_NEWUSER)
  needs a single-threaded caller, which a forked child is.
- Where any step fails (a kernel without setns, a namespace gone), no socket comes back:
  the run goes on as it would have, and a lookup fails as it did, unsaid. This is a
  note, never a protection: the sandbox has no route out either way.
"""

from __future__ import annotations

import os
import select
import socket
import struct
import threading
from typing import TYPE_CHECKING

from ..events import say

if TYPE_CHECKING:
    from .supervise import Served, Supervision

NOTE = 'no network in this sandbox ([network] mode = "none")'
RESOLV_CONF_TEXT = "# lnk-sandbox: network mode \"none\"; names are answered REFUSED\n" \
    "nameserver 127.0.0.1\noptions attempts:1\n"
RESOLV_CONF_NAME = "resolv-none.conf"
_REFUSED = 5
_JOIN_TIMEOUT = 5.0


class NoNetworkNote:
    """The DNS note's socket and thread for one run (network mode "none")."""

    def __init__(self) -> None:
        self.said = threading.Event()
        self._thread: threading.Thread | None = None

    def served(self) -> Served:
        from .supervise import Served

        return Served(_never_needed, self.prepare, lambda: ())

    def prepare(self, supervision: Supervision) -> bool:
        """In the status thread before the go: the socket made inside, its thread
        started; False, and no go, when the sandbox ended first."""
        from .network import _read_status_line

        status = _read_status_line(supervision.launched.json_status)
        if status is None:
            return False  # bwrap ended before making the sandbox
        pid, net = status.get("child-pid"), status.get("net-namespace")
        if not isinstance(pid, int) or not isinstance(net, int):
            return True  # no sandbox to join by what bwrap said: no note, the run goes on
        sock = _socket_inside(pid, net)
        if sock is not None:
            self._thread = threading.Thread(target=self._answer, name="lnk-no-network",
                                            args=(sock, supervision.launched.pidfd),
                                            daemon=True)
            self._thread.start()
        return True

    def _answer(self, sock: socket.socket, pidfd: int) -> None:
        """Answer each query REFUSED until the sandbox ends; say the note once."""
        with sock:
            while True:
                try:
                    readable, _, _ = select.select([sock.fileno(), pidfd], [], [])
                except (OSError, ValueError):
                    return  # the pidfd was closed: the run is over
                if pidfd in readable:
                    return
                try:
                    query, peer = sock.recvfrom(4096)
                except OSError:
                    continue
                reply = refused(query)
                if reply is None:
                    continue
                if not self.said.is_set():
                    self.said.set()
                    say(NOTE)  # before the answer: the program's own words come after
                try:
                    sock.sendto(reply, peer)
                except OSError:
                    continue


def resolv_conf_file(lnk_home: str) -> str:
    """`$LNK_HOME/run/resolv-none.conf` (hidden from every sandbox), written once and
    rewritten whenever it is not what it should be; its real path, for the plan's bind
    (pinned by descriptor like every bind's source)."""
    from ..state import private_folder

    with private_folder(lnk_home, "run") as base:
        if base.read(RESOLV_CONF_NAME, limit=4096) != RESOLV_CONF_TEXT.encode():
            base.write_atomically(RESOLV_CONF_NAME, RESOLV_CONF_TEXT.encode(), 0o644)
        return os.path.join(os.readlink(f"/proc/self/fd/{base.fd}"), RESOLV_CONF_NAME)


async def _never_needed(supervision: Supervision) -> None:
    """The note needs no event loop (its thread answers): nothing wakes this service."""


def refused(query: bytes) -> bytes | None:
    """REFUSED for a standard query: its id, opcode, RD bit and question copied (glibc
    takes no answer whose question differs); None for what is not a query with one
    question."""
    if len(query) < 12:
        return None
    ident, flags, qdcount = struct.unpack("!HHH", query[:6])
    if flags & 0x8000 or qdcount != 1:
        return None  # an answer, or not one question
    end = 12
    while True:
        if end >= len(query):
            return None
        length = query[end]
        if length == 0:
            end += 1
            break
        if length & 0xC0:
            return None  # a pointer has no place in a query's only name
        end += 1 + length
    end += 4  # type and class
    if end > len(query):
        return None
    out_flags = 0x8000 | (flags & 0x7900) | _REFUSED  # QR, opcode and RD kept
    return struct.pack("!HHHHHH", ident, out_flags, 1, 0, 0, 0) + query[12:end]


def _socket_inside(pid: int, net_inode: int) -> socket.socket | None:
    """A UDP socket bound at 127.0.0.1:53 in the network namespace of `pid`, made by a
    forked child that joins it; None when it could not be made."""
    from inner.seccomp import CLONE_NEWNET, CLONE_NEWUSER
    from inner.syscalls import libc
    from netns_helper.namespaces import JoinError, open_namespaces

    try:
        namespaces = open_namespaces(pid, net_inode)
    except (JoinError, OSError):
        return None
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        setns = libc().setns
        pid_child = os.fork()
        if pid_child == 0:  # system calls only, then _exit: safe after a fork
            code = 1
            try:
                parent.close()
                if setns(namespaces.user, CLONE_NEWUSER) == 0 and \
                        setns(namespaces.net, CLONE_NEWNET) == 0:
                    made = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    made.bind(("127.0.0.1", 53))
                    socket.send_fds(child, [b"1"], [made.fileno()])
                    code = 0
            finally:
                os._exit(code)
        child.close()
        try:
            readable, _, _ = select.select([parent], [], [], _JOIN_TIMEOUT)
            if not readable:
                return None
            _, fds, _, _ = socket.recv_fds(parent, 1, 1)
        finally:
            os.waitpid(pid_child, 0)
        return socket.socket(fileno=fds[0]) if fds else None
    except OSError:
        return None
    finally:
        parent.close()
        child.close()
        namespaces.close()
        os.close(namespaces.pidfd)
