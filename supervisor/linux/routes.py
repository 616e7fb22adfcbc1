"""What this host's kernel delivers to itself: asked of the kernel over rtnetlink.

The proxy connects from the supervisor's network namespace, so any address the kernel
delivers locally there reaches this host's own services (one bound to 0.0.0.0 answers on
every one of them), whatever range the address is in. Which addresses those are is the
kernel's to say, not a list's: two questions, each a few structs (no netlink library).

Facts (Linux's rtnetlink, checked on this kernel):
- RTM_GETROUTE with RTA_DST (and no NLM_F_DUMP) looks the destination up as connect()
  from this process would (policy rules, the caller's uid, mark 0) and answers one
  RTM_NEWROUTE whose rtm_type says where it goes: RTN_LOCAL for every address of any
  interface, all of 127/8, 0.0.0.0 and whatever else the `local` table holds (`ip route
  add local 10.9.0.0/16 dev lo`, AnyIP); RTN_BROADCAST for a subnet's broadcast address;
  RTN_ANYCAST for IPv6's subnet-router anycast (where forwarding is on); RTN_UNICAST for
  a destination elsewhere. A destination with no route is answered NLMSG_ERROR
  (-ENETUNREACH): nothing is delivered there at all.
- An IPv4-mapped IPv6 destination is looked up in the IPv6 table, where it is RTN_UNICAST
  even for a local IPv4 address: ask about the IPv4 address it carries instead.
- RTM_GETADDR with NLM_F_DUMP lists every address of every interface, up or down, in
  several messages ending with NLMSG_DONE; IFA_LOCAL is the interface's own address where
  it has a peer (IFA_ADDRESS is then the peer's), IFA_ADDRESS otherwise. An IPv4 address
  of an interface that is down loses its local route but is still this host's.
- Both questions answer for the network namespace the socket was made in (the
  supervisor's), and are answered in the asker's own context: the answer is queued
  before send() returns, so the recv() after it never waits.
- A socket bound to the groups RTMGRP_IPV4_IFADDR and RTMGRP_IPV6_IFADDR (open to
  every user for rtnetlink) is sent a message for every address added or removed, queued
  before the `ip addr add` that made it returns; a queue that overflowed answers ENOBUFS.
  So the address list is kept, and read again whenever anything came on that socket since
  the last read: a change a moment ago is never missed, and an unchanged list costs one
  recv() (reading it again cost about 95 us here; a route lookup about 35).
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import threading

from ..proxy.addresses import OWN, OWN_ANYCAST, OWN_BROADCAST, UNCHECKED, Address, Kind
from ..proxy.own import candidates

NETLINK_ROUTE = 0
RTM_NEWADDR, RTM_GETADDR = 20, 22
RTM_NEWROUTE, RTM_GETROUTE = 24, 26
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
RTA_DST = 1
IFA_ADDRESS, IFA_LOCAL = 1, 2
RTN_UNICAST, RTN_LOCAL, RTN_BROADCAST, RTN_ANYCAST = 1, 2, 3, 4
RTMGRP_IPV4_IFADDR, RTMGRP_IPV6_IFADDR = 0x10, 0x100
ENETUNREACH, ENOBUFS = 101, 105

_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, seq, pid
_RTMSG = struct.Struct("=BBBBBBBBI")  # family, dst_len, src_len, tos, table, protocol,
#                                       scope, type, flags
_IFADDRMSG = struct.Struct("=BBBBI")  # family, prefixlen, flags, scope, index
_ATTR = struct.Struct("=HH")  # rtattr: length, type
_BUFFER = 65536


def _socket() -> socket.socket:
    return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC,
                         NETLINK_ROUTE)


def _family(address: Address) -> int:
    return socket.AF_INET if address.version == 4 else socket.AF_INET6


def route_type(address: Address) -> int | None:
    """The rtm_type of the route this host's kernel would take to `address` (RTN_LOCAL:
    delivered here), or None when there is no route. OSError when it cannot be asked."""
    packed = address.packed
    attribute = _ATTR.pack(_ATTR.size + len(packed), RTA_DST) + packed
    body = _RTMSG.pack(_family(address), len(packed) * 8, 0, 0, 0, 0, 0, 0, 0) + attribute
    with _socket() as sock:
        sock.send(_HEADER.pack(_HEADER.size + len(body), RTM_GETROUTE, NLM_F_REQUEST, 1, 0)
                  + body)
        data = _receive(sock)
    if len(data) < _HEADER.size + 4:
        raise OSError(0, "rtnetlink answered a route lookup with a short message")
    _length, kind, _flags, _seq, _pid = _HEADER.unpack_from(data)
    if kind == NLMSG_ERROR:
        (code,) = struct.unpack_from("=i", data, _HEADER.size)
        if -code == ENETUNREACH:
            return None
        raise OSError(-code, f"rtnetlink's route lookup: {_strerror(-code)}")
    if kind != RTM_NEWROUTE or len(data) < _HEADER.size + _RTMSG.size:
        raise OSError(0, f"rtnetlink answered a route lookup with message type {kind}")
    return int(_RTMSG.unpack_from(data, _HEADER.size)[7])


def interface_addresses() -> frozenset[Address]:
    """Every address of every interface of this network namespace, up or down.
    OSError when the kernel cannot be asked."""
    found: set[Address] = set()
    body = _IFADDRMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)
    with _socket() as sock:
        sock.send(_HEADER.pack(_HEADER.size + len(body), RTM_GETADDR,
                               NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + body)
        while True:
            data = _receive(sock)
            if not data:
                raise OSError(0, "rtnetlink ended the address list early")
            if _addresses_of(data, found):
                return frozenset(found)


def _receive(sock: socket.socket) -> bytes:
    """One datagram, whole: a message cut short (MSG_TRUNC) is an OSError, never read
    as a shorter answer."""
    data, _ancillary, flags, _peer = sock.recvmsg(_BUFFER)
    if flags & socket.MSG_TRUNC:
        raise OSError(0, "rtnetlink sent a message larger than its buffer")
    return data


def _addresses_of(data: bytes, found: set[Address]) -> bool:
    """Add the addresses of one datagram's messages to `found`; True at NLMSG_DONE."""
    offset = 0
    while offset + _HEADER.size <= len(data):
        length, kind, _flags, _seq, _pid = _HEADER.unpack_from(data, offset)
        if length < _HEADER.size or offset + length > len(data):
            raise OSError(0, "rtnetlink sent a malformed address list")
        if kind == NLMSG_DONE:
            return True
        if kind == NLMSG_ERROR:
            (code,) = struct.unpack_from("=i", data, offset + _HEADER.size)
            raise OSError(-code, f"rtnetlink's address list: {_strerror(-code)}")
        if kind == RTM_NEWADDR:
            address = _address(data, offset + _HEADER.size, offset + length)
            if address is not None:
                found.add(address)
        offset += (length + 3) & ~3
    return False


def _address(data: bytes, start: int, end: int) -> Address | None:
    """The interface's own address in one RTM_NEWADDR (IFA_LOCAL, else IFA_ADDRESS)."""
    family = data[start]
    size = {int(socket.AF_INET): 4, int(socket.AF_INET6): 16}.get(family)
    if size is None:
        return None
    values: dict[int, bytes] = {}
    offset = start + _IFADDRMSG.size
    while offset + _ATTR.size <= end:
        length, kind = _ATTR.unpack_from(data, offset)
        if length < _ATTR.size:
            break
        values[kind] = data[offset + _ATTR.size:offset + length]
        offset += (length + 3) & ~3
    value = values.get(IFA_LOCAL) or values.get(IFA_ADDRESS)
    if value is None or len(value) != size:
        return None
    return ipaddress.ip_address(value)


def _strerror(code: int) -> str:
    import os

    return os.strerror(code) if code > 0 else f"error {code}"


class _Watched:
    """The interfaces' addresses, read again when the kernel said that one changed."""

    def __init__(self) -> None:
        self.changes = _socket()
        try:
            self.changes.bind((0, RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR))
            self.changes.setblocking(False)
        except OSError:
            self.changes.close()
            raise
        self.known: frozenset[Address] | None = None
        self.lock = threading.Lock()

    def current(self) -> frozenset[Address]:
        with self.lock:
            changed = self.known is None
            while True:  # drained first: a change after this is in the list read next
                try:
                    self.changes.recv(_BUFFER)
                except BlockingIOError:
                    break
                except OSError as err:
                    if err.errno != ENOBUFS:  # ENOBUFS: changes were lost, read anew
                        raise
                changed = True
            if changed:
                self.known = None
                self.known = interface_addresses()
            assert self.known is not None
            return self.known


_WATCHED: list[_Watched] = []  # made on the first connection judged, kept for the run


def current_addresses() -> frozenset[Address]:
    """`interface_addresses()`, as of now, read again only when one changed."""
    if not _WATCHED:
        _WATCHED.append(_Watched())
    return _WATCHED[0].current()


class KernelOwn:
    """The proxy's `OwnChecks` on Linux (`proxy/own.py`): made for one connection or one
    DNS answer, with the interfaces' addresses read then; a route asked for each address
    judged. Where the kernel cannot be asked, every address is UNCHECKED (refused)."""

    def __init__(self) -> None:
        self.problem: str | None = None
        self.interfaces: frozenset[Address] = frozenset()
        try:
            self.interfaces = current_addresses()
        except OSError as err:
            self.problem = err.strerror or str(err)

    def __call__(self, address: Address) -> Kind | None:
        if self.problem is not None:
            return Kind(UNCHECKED, None, self.problem)
        for destination, form in candidates(address):
            carried = None if form is None else str(destination)
            if destination in self.interfaces:
                return Kind(OWN, form, carried)
            try:
                kind = route_type(destination)
            except OSError as err:
                return Kind(UNCHECKED, None, err.strerror or str(err))
            found = _ROUTE_KINDS.get(kind or 0)
            if found is not None:
                return Kind(found, form, carried)
        return None


_ROUTE_KINDS = {RTN_LOCAL: OWN, RTN_BROADCAST: OWN_BROADCAST, RTN_ANYCAST: OWN_ANYCAST}
