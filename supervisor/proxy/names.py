"""The sandbox's DNS on 127.0.0.1:53 (UDP and TCP): decided here, looked up here, and
the answer judged like any address the proxy would connect to.

A name the lists refuse is answered REFUSED and reported, and nothing is looked up for
it; the decider is never asked (a name is of no use inside but through the proxy, which
asks), though a name it allowed for the run is answered. An allowed name is looked up
once for every address family, and the family asked is kept, so a name with only IPv4
addresses answers AAAA with no records (NOERROR) rather than NXDOMAIN, as a DNS server
would. Every address found is judged by the resolved-address guard with the port unknown
(an allow entry on any port names it): a refused one is left out of the answer and
reported, and a name left with none is answered REFUSED. So a name rebound to 127.0.0.1,
or to any address of this host's interfaces (`own.py`), gives the sandbox no address of
the host's, whatever the proxy would then be asked.
Other record types of an allowed name get no records: the proxy connects by address.
"""

from __future__ import annotations

import socket
import struct

import anyio
import anyio.abc

from .resolver import LookupFailed
from .streams import RawStream
from .upstream import Gate

A, AAAA = 1, 28
MAX_UDP_IN_FLIGHT = 256


async def answer(gate: Gate, name: str, rdtype: int,
                 asking: tuple[tuple[str, int], str] | None = None) -> tuple[str, list[str]]:
    """The rcode and addresses for one question; `asking`: the asker's address and
    protocol ("udp" or "tcp"), for the pid a refusal names."""
    decision = gate.remembered(gate.lists.decide_name(name))
    if not decision.allowed:
        gate.refuse(decision, await gate.pid_of(*asking) if asking else 0)
        return "REFUSED", []
    if rdtype not in (A, AAAA):
        return "NOERROR", []
    try:
        found = await gate.resolver.resolve(decision.host)
    except LookupFailed as err:
        return err.rcode, []
    kept = []
    own = gate.own()
    for address in found:
        refusal = gate.lists.judge_address(address, None, decision, own)
        if refusal is None:
            kept.append(address)
        else:
            gate.refuse_address(decision, refusal,
                                await gate.pid_of(*asking) if asking else 0)
    return ("NOERROR", kept) if kept else ("REFUSED", [])


async def reply(gate: Gate, query: bytes, *, udp: bool,
                asking: tuple[str, int] | None = None) -> bytes | None:
    """The reply to one query in wire format, or None when none is due; `asking`: the
    address the query came from."""
    from . import dnswire as wire  # dnspython: loaded on the first query, not at start

    question = wire.read_query(query)
    if not isinstance(question, wire.Question):
        return question
    if len(question.name) > 255:
        return wire.answer(question, "REFUSED", [], udp=udp)
    rcode, addresses = await answer(gate, question.name, question.rdtype,
                                    (asking, "udp" if udp else "tcp") if asking else None)
    return wire.answer(question, rcode, addresses, udp=udp)


async def serve_udp(sock: socket.socket, gate: Gate, group: anyio.abc.TaskGroup) -> None:
    """Answer datagrams until cancelled, each in a task; beyond MAX_UDP_IN_FLIGHT
    unanswered at once a query is dropped, as a busy server drops it."""
    sock.setblocking(False)
    in_flight = 0

    async def one(data: bytes, peer: tuple[str, int]) -> None:
        nonlocal in_flight
        try:
            answered = await reply(gate, data, udp=True, asking=peer)
            if answered is not None:
                try:
                    sock.sendto(answered, peer)
                except OSError:
                    pass
        finally:
            in_flight -= 1

    while True:
        try:
            data, peer = sock.recvfrom(65535)
        except BlockingIOError:
            await anyio.wait_readable(sock)
            continue
        except OSError:
            continue
        if in_flight >= MAX_UDP_IN_FLIGHT:
            continue
        in_flight += 1
        group.start_soon(one, data, peer)


async def handle_tcp(stream: RawStream, gate: Gate) -> None:
    """DNS over TCP: two-byte lengths before each message, answered in order."""
    data = b""
    while True:
        while len(data) < 2 or len(data) < 2 + struct.unpack("!H", data[:2])[0]:
            try:
                data += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return
        size = struct.unpack("!H", data[:2])[0]
        query, data = data[2:2 + size], data[2 + size:]
        answered = await reply(gate, query, udp=False, asking=stream.peer())
        if answered is None:
            return
        await stream.send(struct.pack("!H", len(answered)) + answered)
