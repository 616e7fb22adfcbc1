"""The SOCKS5 proxy, served in-process: the reply code for every outcome (RFC 1928).

A name is decided as sent, unresolved; an address only when listed. A refused
destination is never looked up and gets reply 2 (not allowed by ruleset).
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import pytest

from .proxy_support import Running, read_all, serve_proxy

SOCKS = "socks"


def _name(host: str, port: int) -> bytes:
    return b"\x03" + bytes([len(host)]) + host.encode() + struct.pack("!H", port)


def _ipv4(host: str, port: int) -> bytes:
    return b"\x01" + socket.inet_aton(host) + struct.pack("!H", port)


async def _socks(running: Running, address: bytes, *, command: int = 1,
                 methods: bytes = b"\x00", then: bytes = b"") -> tuple[bytes, bytes]:
    """The method answer and the rest of what the proxy sent back."""
    async with await running.connect(SOCKS) as stream:
        await stream.send(b"\x05" + bytes([len(methods)]) + methods)
        method = await stream.receive(2)
        if method != b"\x05\x00":
            return method, b""
        await stream.send(bytes([5, command, 0]) + address + then)
        return method, await read_all(stream)


def test_an_allowed_name_is_connected_and_relayed(tmp_path: Path) -> None:
    async def test(running: Running) -> None:
        # Bytes sent with the request, before the reply, are relayed too.
        _, reply = await _socks(running, _name("localhost", running.upstream_port),
                                then=b"ECHO / HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi")
        assert reply == b"\x05\x00\x00\x01" + bytes(6) + b"echo:hi"
        assert running.names.asked == ["localhost"]

    serve_proxy(tmp_path, ["localhost:{port}"], test)


@pytest.mark.parametrize(("address", "code"), [
    (_name("elsewhere.example", 80), 2),
    (_ipv4("127.0.0.1", 80), 2),  # an address is allowed only when listed
    (b"\x04" + socket.inet_pton(socket.AF_INET6, "::1") + b"\x00\x50", 2),
    (_name("unknown.example.test", 80), 4),  # allowed, but it does not resolve
    (b"\x09\x00", 8),  # an unknown address type
])
def test_reply_codes(tmp_path: Path, address: bytes, code: int) -> None:
    async def test(running: Running) -> None:
        method, reply = await _socks(running, address)
        assert method == b"\x05\x00"
        assert reply == bytes([5, code, 0, 1]) + bytes(6)
        if code == 2:
            assert running.names.asked == []
            assert len(running.refused()) == 1

    serve_proxy(tmp_path, ["localhost:{port}", "*.example.test"], test)


def test_a_listed_address_and_a_refused_port(tmp_path: Path) -> None:
    async def test(running: Running) -> None:
        _, reply = await _socks(running, _ipv4("127.0.0.1", running.upstream_port),
                                then=b"ECHO / HTTP/1.1\r\nContent-Length: 2\r\n\r\nok")
        assert reply.endswith(b"echo:ok")
        _, reply = await _socks(running, _name("localhost", running.upstream_port))
        assert reply[1] == 2  # localhost is allowed on port 443 only
        _, reply = await _socks(running, _ipv4("127.0.0.1", 1))
        assert reply[1] == 5  # allowed, and nothing listens there: connection refused
        assert running.names.asked == []

    serve_proxy(tmp_path, ["127.0.0.1", "localhost:443"], test)


def test_only_connect_and_no_authentication(tmp_path: Path) -> None:
    async def test(running: Running) -> None:
        method, _ = await _socks(running, _name("localhost", 80), methods=b"\x02")
        assert method == b"\x05\xff"  # username/password only: no acceptable method
        _, reply = await _socks(running, _name("localhost", 80), command=2)  # BIND
        assert reply[1] == 7
        assert running.names.asked == []

    serve_proxy(tmp_path, ["localhost:{port}"], test)
