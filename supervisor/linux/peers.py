"""Which process inside the sandbox opened a connection to the proxy (for the decider).

The proxy accepts on a listener in the sandbox's network namespace, so a connection's
peer is an address and port there. Facts:
- /proc/PID/net/tcp and tcp6 list the sockets of PID's network namespace, each with its
  local and remote address (hex, in the kernel's byte order per 32-bit word) and inode.
- A process holds a socket when one of /proc/PID/fd/* reads `socket:[INODE]`; the
  supervisor may read those of the sandbox's processes: they run as its user, in a user
  namespace it owns.
- /proc/PID/ns/net names a process's network namespace by inode: the sandbox's processes
  are those whose inode is the one bwrap reported.
Best effort, and only when a decider is asked: a process that closed its socket, or
handed it to another, is not found, and the question says `"process": null`.
"""

from __future__ import annotations

import os
import socket
import struct
from typing import Any


def describe_peer(net_inode: int, peer: tuple[str, int]) -> dict[str, Any] | None:
    """{"pid", "exe", "argv"} of the process whose socket is `peer`, or None."""
    pid = pid_of_peer(net_inode, peer)
    return _process(pid) if pid is not None else None


def pid_of_peer(net_inode: int, peer: tuple[str, int], proto: str = "tcp") -> int | None:
    """The pid (as the supervisor sees it) of a process of the sandbox holding the socket
    whose address is `peer`: a TCP one, or with `proto` "udp" the one a DNS question
    came from. None when none is found (it closed the socket, or handed it on)."""
    pids = [pid for pid in _pids() if _net_inode(pid) == net_inode]
    if not pids:
        return None
    inode = _socket_inode(pids[0], *peer, tables=(proto, proto + "6"))
    if inode is None:
        return None
    wanted = f"socket:[{inode}]"
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == wanted:
                    return pid
            except OSError:
                continue
    return None


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _net_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def hex_address(address: str, port: int) -> str:
    """An address and port as /proc/net/tcp{,6} write them."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    packed = socket.inet_pton(family, address)
    words = struct.unpack(f"={len(packed) // 4}I", packed)
    return "".join(f"{word:08X}" for word in words) + f":{port:04X}"


def _socket_inode(pid: int, address: str, port: int,
                  tables: tuple[str, ...] = ("tcp", "tcp6")) -> int | None:
    local = hex_address(address, port)
    for table in tables:
        try:
            with open(f"/proc/{pid}/net/{table}") as handle:
                next(handle, None)
                for line in handle:
                    fields = line.split()
                    if len(fields) > 9 and fields[1] == local:
                        return int(fields[9])
        except OSError:
            continue
    return None


def _process(pid: int) -> dict[str, Any]:
    try:
        exe: str | None = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        exe = None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            argv = [part.decode("utf-8", "replace") for part in
                    handle.read().split(b"\0")[:-1]][:64]
    except OSError:
        argv = []
    return {"pid": pid, "exe": exe, "argv": argv}
