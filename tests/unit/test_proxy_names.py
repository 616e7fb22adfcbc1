"""DNS in proxy mode: the helper's wire format, the supervisor's decision and lookup.

Queries in DNS's wire format go through the helper's own code (`netns_helper.bridge`)
to the supervisor's name service, served in-process: an allowed name is answered with
the lookup's addresses of the family asked, any other name REFUSED without a lookup.
"""

from __future__ import annotations

import json
from pathlib import Path

import dns.flags
import dns.message
import dns.opcode
import dns.rcode
import dns.rdatatype
import pytest

from netns_helper import bridge
from netns_helper import dns as wire
from tests.unit.proxy_support import Running, serve_proxy

TABLE = {"localhost": ["127.0.0.1", "::1"], "api.example.test": ["127.0.0.1"]}


async def _resolve(running: Running, query: bytes, *, udp: bool = True) -> bytes | None:
    lost: list[bool] = []
    service = bridge.NameService(str(Path(running.server.folder) / "dns.sock"),
                                 lambda: lost.append(True))
    try:
        return await bridge._resolve(service, query, udp=udp)
    finally:
        service.close()


def _query(name: str, rdtype: str) -> bytes:
    return dns.message.make_query(name, rdtype).to_wire()


@pytest.mark.parametrize(("name", "rdtype", "rcode", "answers"), [
    ("localhost", "A", "NOERROR", ["127.0.0.1"]),
    ("localhost", "AAAA", "NOERROR", ["::1"]),
    ("LOCALHOST.", "A", "NOERROR", ["127.0.0.1"]),
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
        assert running.refused() == ([(name.lower().rstrip("."),) * 2 + ("network.allow",)]
                                     * 2 if refused else [])

    serve_proxy(tmp_path, ["localhost", "*.example.test"], test, table=TABLE)


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

    serve_proxy(tmp_path, ["localhost"], test, table=TABLE)


def test_the_name_service_protocol(tmp_path: Path) -> None:
    async def test(running: Running) -> None:
        async with await running.connect("dns.sock") as stream:
            lines = [{"id": 1, "name": "localhost", "type": 1},
                     {"id": 2, "name": "x" * 300, "type": 1},
                     {"id": 3, "name": 5, "type": 1},
                     {"id": 4, "name": "elsewhere.example", "type": 28}]
            await stream.send(b"not json\n" + "".join(json.dumps(line) + "\n"
                                                      for line in lines).encode())
            data = b""
            while data.count(b"\n") < 4:
                data += await stream.receive()
        replies = sorted((json.loads(line) for line in data.splitlines()),
                         key=lambda reply: reply["id"])
        assert replies == [
            {"id": 1, "rcode": "NOERROR", "addresses": ["127.0.0.1", "::1"]},
            {"id": 2, "rcode": "REFUSED", "addresses": []},
            {"id": 3, "rcode": "REFUSED", "addresses": []},
            {"id": 4, "rcode": "REFUSED", "addresses": []},
        ]
        assert running.names.asked == ["localhost"]

    serve_proxy(tmp_path, ["localhost"], test, table=TABLE)


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
