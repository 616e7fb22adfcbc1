"""DNS in proxy mode: the sandbox's queries in wire format, over UDP and TCP, to the
proxy's DNS served in-process: an allowed name is answered with the lookup's addresses of
the family asked (those the address guard lets through), any other name REFUSED without
a lookup.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import anyio
import dns.flags
import dns.message
import dns.opcode
import dns.rcode
import dns.rdatatype
import pytest

from supervisor.proxy import dnswire as wire

from .proxy_support import Running, serve_proxy

TABLE = {"localhost": ["127.0.0.1", "::1"], "api.example.test": ["203.0.113.7"],
         "rebound.example.test": ["198.51.100.9", "10.1.2.3", "::ffff:127.0.0.1",
                                  "2001:db8::5", "fd00:ec2::254"],
         "private.example.test": ["192.168.1.20"]}


async def _resolve(running: Running, query: bytes, *, udp: bool = True) -> bytes | None:
    """The proxy's reply to one query, or None when it sends none."""
    if udp:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.setblocking(False)
            sock.sendto(query, ("127.0.0.1", running.ports["dns-udp"]))
            with anyio.move_on_after(0.5):
                await anyio.wait_readable(sock)
                return sock.recv(65535)
            return None
    async with await running.connect("dns-tcp") as stream:
        await stream.send(struct.pack("!H", len(query)) + query)
        data = b""
        try:
            while len(data) < 2 or len(data) < 2 + struct.unpack("!H", data[:2])[0]:
                data += await stream.receive()
        except anyio.EndOfStream:
            return None
        return data[2:]


def _query(name: str, rdtype: str) -> bytes:
    return dns.message.make_query(name, rdtype).to_wire()


@pytest.mark.parametrize(("name", "rdtype", "rcode", "answers"), [
    ("localhost", "A", "NOERROR", ["127.0.0.1"]),  # allowed with a port: its loopback
    ("localhost", "AAAA", "NOERROR", ["::1"]),
    ("LOCALHOST.", "A", "NOERROR", ["127.0.0.1"]),
    ("api.example.test", "A", "NOERROR", ["203.0.113.7"]),
    ("api.example.test", "AAAA", "NOERROR", []),  # no IPv6 address: no record, NOERROR
    ("api.example.test", "MX", "NOERROR", []),
    ("elsewhere.example", "A", "REFUSED", []),
    ("example.test", "A", "REFUSED", []),  # the wildcard is for subdomains only
    ("missing.example.test", "A", "NXDOMAIN", []),
])
def test_answers(tmp_path: Path, name: str, rdtype: str, rcode: str,
                 answers: list[str]) -> None:
    async def test(running: Running) -> None:
        for udp in (True, False):
            reply = await _resolve(running, _query(name, rdtype), udp=udp)
            assert reply is not None
            message = dns.message.from_wire(reply)
            assert dns.rcode.to_text(message.rcode()) == rcode
            assert message.flags & dns.flags.QR
            found = [r.to_text() for rrset in message.answer for r in rrset]
            assert found == answers
        refused = rcode == "REFUSED"
        assert running.names.asked == ([] if refused or rdtype == "MX"
                                       else [name.lower().rstrip(".")] * 2)
        # Asked twice (UDP, then TCP) by one process: one refusal, one record.
        assert running.refused() == ([(name.lower().rstrip("."),) * 2 + ("network.allow",)]
                                     if refused else [])

    serve_proxy(tmp_path, ["localhost:8080", "*.example.test"], test, table=TABLE)


def test_answers_leave_out_what_the_address_guard_refuses(tmp_path: Path) -> None:
    """A name rebound to private addresses gives the sandbox only its public ones, and
    one with none left is REFUSED; each refused address is reported."""
    async def test(running: Running) -> None:
        answers = {}
        for name, rdtype in (("rebound.example.test", "A"), ("rebound.example.test", "AAAA"),
                             ("private.example.test", "A"), ("localhost", "A")):
            reply = await _resolve(running, _query(name, rdtype))
            assert reply is not None
            message = dns.message.from_wire(reply)
            answers[(name, rdtype)] = (dns.rcode.to_text(message.rcode()),
                                       [r.to_text() for rrset in message.answer
                                        for r in rrset])
        assert answers == {
            ("rebound.example.test", "A"): ("NOERROR", ["198.51.100.9"]),
            ("rebound.example.test", "AAAA"): ("NOERROR", ["2001:db8::5"]),
            ("private.example.test", "A"): ("REFUSED", []),
            ("localhost", "A"): ("REFUSED", []),  # allowed without a port: the host's
        }
        refused = sorted({(e.resolved, e.rule, e.reason.split(";")[0])
                          for e in running.events.events})
        assert refused == [
            ("10.1.2.3", "network.address", "it resolves to 10.1.2.3, a private address"),
            ("127.0.0.1", "network.address",
             "it resolves to 127.0.0.1, a loopback address"),
            ("192.168.1.20", "network.address",
             "it resolves to 192.168.1.20, a private address"),
            ("::1", "network.address", "it resolves to ::1, a loopback address"),
            ("::ffff:127.0.0.1", "network.address", "it resolves to ::ffff:127.0.0.1, "
             "the IPv4-mapped form of a loopback address (127.0.0.1)"),
            ("fd00:ec2::254", "network.address",
             "it resolves to fd00:ec2::254, a cloud metadata address"),
        ]

    serve_proxy(tmp_path, ["localhost", "*.example.test"], test, table=TABLE)


def test_an_address_named_in_allow_is_answered(tmp_path: Path) -> None:
    async def test(running: Running) -> None:
        reply = await _resolve(running, _query("private.example.test", "A"))
        assert reply is not None
        message = dns.message.from_wire(reply)
        assert [r.to_text() for rrset in message.answer for r in rrset] == ["192.168.1.20"]
        assert running.events.events == []

    serve_proxy(tmp_path, ["*.example.test", "192.168.0.0/16:5432"], test, table=TABLE)


def test_queries_not_asked_of_the_supervisor(tmp_path: Path) -> None:
    async def test(running: Running) -> None:
        chaos = dns.message.make_query("version.bind", "TXT", "CH").to_wire()
        reply = await _resolve(running, chaos)
        assert reply is not None and dns.message.from_wire(reply).rcode() == dns.rcode.REFUSED
        notify = dns.message.make_query("localhost", "A")
        notify.set_opcode(dns.opcode.NOTIFY)
        reply = await _resolve(running, notify.to_wire())
        assert reply is not None and dns.message.from_wire(reply).rcode() == dns.rcode.NOTIMP
        garbage = b"\x12\x34\x01\x00\x00\x01" + b"\xff" * 10
        reply = await _resolve(running, garbage)
        assert reply == b"\x12\x34\x81\x01" + bytes(8)  # FORMERR, id and RD kept
        assert await _resolve(running, b"\x00") is None  # no header to answer
        answer = dns.message.make_response(dns.message.make_query("localhost", "A"))
        assert await _resolve(running, answer.to_wire()) is None  # never answer a reply
        assert running.names.asked == []

    serve_proxy(tmp_path, ["localhost:80"], test, table=TABLE)


def test_dns_over_tcp_answers_each_query_in_order(tmp_path: Path) -> None:
    async def test(running: Running) -> None:
        queries = [_query("localhost", "A"), _query("elsewhere.example", "A"),
                   _query("api.example.test", "A")]
        async with await running.connect("dns-tcp") as stream:
            await stream.send(b"".join(struct.pack("!H", len(q)) + q for q in queries))
            data = b""
            replies: list[dns.message.Message] = []
            while len(replies) < 3:
                data += await stream.receive()
                while len(data) >= 2 and len(data) >= 2 + struct.unpack("!H", data[:2])[0]:
                    size = struct.unpack("!H", data[:2])[0]
                    replies.append(dns.message.from_wire(data[2:2 + size]))
                    data = data[2 + size:]
        assert [dns.rcode.to_text(r.rcode()) for r in replies] == ["NOERROR", "REFUSED",
                                                                  "NOERROR"]
        assert running.names.asked == ["localhost", "api.example.test"]

    serve_proxy(tmp_path, ["localhost:80", "api.example.test"], test, table=TABLE)


def test_a_large_udp_answer_is_truncated() -> None:
    query = dns.message.make_query("localhost", "A", use_edns=False)
    question = wire.read_query(query.to_wire())
    assert isinstance(question, wire.Question)
    many = [f"10.0.0.{i}" for i in range(1, 60)]
    udp = dns.message.from_wire(wire.answer(question, "NOERROR", many, udp=True))
    assert len(list(udp.answer[0])) == wire.MAX_ADDRESSES  # 16 records fit in 512 bytes
    tcp = dns.message.from_wire(wire.answer(question, "NOERROR", many, udp=False))
    assert len(list(tcp.answer[0])) == wire.MAX_ADDRESSES
    assert dns.rdatatype.to_text(tcp.answer[0].rdtype) == "A"
