"""Whether a connection the proxy made ends at a socket of this host: asked of the kernel
over sock_diag (NETLINK_SOCK_DIAG, inet_diag), right after connect().

own.py and routes.py judge an address before connecting: what the route says and what
the interfaces hold. Netfilter acts after that: a DNAT in the host's OUTPUT chain (the
rules kube-proxy writes for a Service's externalIP or a node's LoadBalancer address, any
port forward written that way) delivers a public address, whose route is unicast and
which no interface has, to the host's own service. What holds whatever the rules are is
the connection itself: if the kernel delivered it here, the other end is a socket of this
network namespace, whose remote end is this connection's local address and port.

Facts (Linux's inet_diag, checked on this kernel):
- SOCK_DIAG_BY_FAMILY with NLM_F_DUMP and an inet_diag_req_v2 lists a family's TCP
  sockets in the states asked (a bit per state), request sockets (SYN_RECV: a
  connection the listener has not finished) and TIME_WAIT ones included; open to every
  user (ss(8) runs unprivileged), for the network namespace the netlink socket was made
  in (the supervisor's, where the proxy connects from).
- An INET_DIAG_REQ_BYTECODE attribute filters in the kernel, so the answer holds only
  what matches, whatever the count of sockets: one INET_DIAG_BC_D_COND op (the socket's
  remote address and port) whose `yes` jumps to the program's end (accept) and whose
  `no` four bytes past it (reject). A condition of family AF_INET also matches an
  AF_INET6 socket whose remote address is IPv4-mapped (a listener bound to `::` takes
  IPv4 connections as such), so an IPv4 connection is asked of both families.
- The peer's socket exists before connect() returns: the listener's kernel made it (a
  request socket) when it answered the SYN, within the SYN's own delivery. TIME_WAIT is
  left out of the states: the peer reaches it only after this end closed, and one left
  from an earlier connection from the same port would be taken for this one.
- The translated destination is not known here (getpeername() answers the address
  asked, before NAT): so the question names this end only, the remote end of the
  socket sought. A rule that also rewrites the source port (a MASQUERADE on delivery
  here) hides the peer from this question: a stated gap (docs/design.md).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
INET_DIAG_REQ_BYTECODE = 1
INET_DIAG_BC_D_COND = 8
TCP_TIME_WAIT = 6
TCP_STATES = 12  # TCP_ESTABLISHED (1) to TCP_NEW_SYN_RECV (12)
# Every state but TIME_WAIT (and the unused 0).
STATES = ((1 << (TCP_STATES + 1)) - 1) & ~(1 << TCP_TIME_WAIT) & ~1
_BUFFER = 65536

_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, seq, pid
# inet_diag_req_v2: family, protocol, ext, pad, states; inet_diag_sockid: sport, dport
# (big-endian), src[4], dst[4], interface, cookie[2]
_REQUEST = struct.Struct("=BBBBI")
_SOCKID = struct.Struct(">HH16s16sII")
_ATTR = struct.Struct("=HH")
_OP = struct.Struct("=BBH")  # inet_diag_bc_op: code, yes, no
_HOSTCOND = struct.Struct("=BBxxi")  # inet_diag_hostcond: family, prefix_len, port


def _condition(family: int, address: bytes, port: int) -> bytes:
    """The bytecode: accept a socket whose remote end is `address`:`port`, exactly."""
    cond = _HOSTCOND.pack(family, len(address) * 8, port) + address
    size = _OP.size + len(cond)
    return _OP.pack(INET_DIAG_BC_D_COND, size, size + 4) + cond


def _request(family: int, condition: bytes) -> bytes:
    body = (_REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, STATES)
            + _SOCKID.pack(0, 0, bytes(16), bytes(16), 0, 0xFFFFFFFF)
            + struct.pack("=I", 0xFFFFFFFF)
            + _ATTR.pack(_ATTR.size + len(condition), INET_DIAG_REQ_BYTECODE) + condition)
    return _HEADER.pack(_HEADER.size + len(body), SOCK_DIAG_BY_FAMILY,
                        NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + body


def sockets_facing(address: str, port: int) -> int:
    """How many TCP sockets of this network namespace (but in TIME_WAIT) have
    `address`:`port` as their remote end. OSError when the kernel cannot be asked."""
    parsed = ipaddress.ip_address(address.partition("%")[0])
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        parsed = parsed.ipv4_mapped
    families: tuple[int, ...]
    if parsed.version == 4:
        condition = _condition(socket.AF_INET, parsed.packed, port)
        families = (socket.AF_INET, socket.AF_INET6)
    else:
        condition = _condition(socket.AF_INET6, parsed.packed, port)
        families = (socket.AF_INET6,)
    found = 0
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC,
                       NETLINK_SOCK_DIAG) as sock:
        for family in families:
            sock.send(_request(family, condition))
            found += _count(sock)
    return found


def _count(sock: socket.socket) -> int:
    """The messages of one dump, to its NLMSG_DONE."""
    found = 0
    while True:
        data, _ancillary, flags, _peer = sock.recvmsg(_BUFFER)
        if flags & socket.MSG_TRUNC:
            raise OSError(0, "sock_diag sent a message larger than its buffer")
        if not data:
            raise OSError(0, "sock_diag ended a dump early")
        offset = 0
        while offset + _HEADER.size <= len(data):
            length, kind, _flags, _seq, _pid = _HEADER.unpack_from(data, offset)
            if length < _HEADER.size or offset + length > len(data):
                raise OSError(0, "sock_diag sent a malformed message")
            if kind == NLMSG_DONE:
                return found
            if kind == NLMSG_ERROR:
                (code,) = struct.unpack_from("=i", data, offset + _HEADER.size)
                raise OSError(-code, f"sock_diag: {os.strerror(-code)}")
            if kind == SOCK_DIAG_BY_FAMILY:
                found += 1
            offset += (length + 3) & ~3


def delivered_here(sock: socket.socket) -> bool:
    """Whether the connection `sock` made ends at a socket of this network namespace:
    one whose remote end is `sock`'s local address and port. OSError when the kernel
    cannot be asked."""
    local = sock.getsockname()
    return sockets_facing(local[0], local[1]) > 0
