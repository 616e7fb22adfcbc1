"""The HTTP proxy, served in-process: what goes upstream, what comes back, what is refused.

A refused name gets 403 and is never looked up (the fake resolver's `asked` stays empty);
an allowed one goes to the address the resolver gave, in origin form, hop-by-hop headers
dropped, `Connection: close` both ways.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import cast

import anyio
import pytest

from supervisor.proxy.http import BadRequest, split_authority
from supervisor.proxy.server import MAX_CONNECTIONS, ProxyServer
from supervisor.proxy.streams import RawStream
from supervisor.proxy.upstream import Gate

from .proxy_support import Running, read_all, serve_proxy

HTTP = "http"


async def _ask(running: Running, request: bytes) -> bytes:
    async with await running.connect(HTTP) as stream:
        await stream.send(request)
        return await read_all(stream)


def test_absolute_uri_goes_upstream_in_origin_form(tmp_path: Path) -> None:
    async def test(running: Running) -> None:
        port = running.upstream_port
        reply = await _ask(running, (
            f"GET http://LocalHost:{port}/path?q=1 HTTP/1.1\r\nHost: wrong.example\r\n"
            "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\n"
            "Connection: X-Private\r\nX-Private: secret\r\nAccept: */*\r\n\r\n").encode())
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.split(b"\r\n")[0] == b"HTTP/1.1 200 OK"
        assert b"connection: close" in head.lower()
        assert b"keep-alive" not in head.lower()
        assert body == b"upstream body"
        assert running.received == [(
            f"GET /path?q=1 HTTP/1.1\r\nhost: LocalHost:{port}\r\naccept: */*\r\n"
            "connection: close\r\n\r\n").encode()]
        assert running.names.asked == ["localhost"]
        assert running.refused() == []

    serve_proxy(tmp_path, ["localhost:{port}"], test)


@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_a_request_body_is_passed_on(tmp_path: Path, framing: str) -> None:
    async def test(running: Running) -> None:
        url = f"http://localhost:{running.upstream_port}/upload"
        if framing == "length":
            request = f"POST {url} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
        else:
            request = (f"POST {url} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                       "5\r\nhello\r\n0\r\n\r\n")
        reply = await _ask(running, request.encode())
        assert reply.startswith(b"HTTP/1.1 200 OK\r\n")
        sent = running.received[0]
        assert sent.startswith(b"POST /upload HTTP/1.1\r\n")
        assert sent.endswith(b"hello" if framing == "length" else b"5\r\nhello\r\n0\r\n\r\n")

    serve_proxy(tmp_path, ["localhost:{port}"], test)


def test_connect_tunnels_bytes_both_ways(tmp_path: Path) -> None:
    async def test(running: Running) -> None:
        async with await running.connect(HTTP) as stream:
            # Bytes sent right behind the CONNECT head go through the tunnel too.
            await stream.send(f"CONNECT localhost:{running.upstream_port} HTTP/1.1\r\n"
                              "Host: localhost\r\n\r\nECHO / HTTP/1.1\r\n"
                              "Content-Length: 4\r\n\r\nping".encode())
            reply = await read_all(stream)
        assert reply == b"HTTP/1.1 200 Connection established\r\n\r\necho:ping"
        assert running.names.asked == ["localhost"]

    serve_proxy(tmp_path, ["localhost:{port}"], test)


@pytest.mark.parametrize("request_line", [
    "GET http://{name}:{port}/ HTTP/1.1",
    "CONNECT {name}:{port} HTTP/1.1",
])
def test_a_name_not_allowed_gets_403_and_is_never_looked_up(tmp_path: Path,
                                                            request_line: str) -> None:
    async def test(running: Running) -> None:
        line = request_line.format(name="elsewhere.example", port=running.upstream_port)
        reply = await _ask(running, f"{line}\r\nHost: x\r\n\r\n".encode())
        assert reply.startswith(b"HTTP/1.1 403 Forbidden\r\n")
        assert b"elsewhere.example:" in reply and b"not in [network] allow" in reply
        assert running.names.asked == []
        assert running.received == []
        assert running.refused() == [(f"elsewhere.example:{running.upstream_port}",
                                      "elsewhere.example", "network.allow")]

    serve_proxy(tmp_path, ["localhost:{port}"], test)


def test_patterns_decide_by_name_port_and_address(tmp_path: Path) -> None:
    async def test(running: Running) -> None:
        port = running.upstream_port

        async def status(host: str) -> bytes:
            reply = await _ask(running, f"GET http://{host}/ HTTP/1.1\r\nHost: x\r\n\r\n"
                               .encode())
            return reply.split(b"\r\n", 1)[0]

        assert await status(f"api.example.test:{port}") == b"HTTP/1.1 200 OK"
        assert await status(f"example.test:{port}") == b"HTTP/1.1 403 Forbidden"
        assert await status(f"localhost:{port}") == b"HTTP/1.1 403 Forbidden"  # port 443 only
        assert await status(f"127.0.0.1:{port}") == b"HTTP/1.1 200 OK"  # listed address
        assert await status(f"127.0.0.2:{port}") == b"HTTP/1.1 403 Forbidden"
        # A listed address is connected to as it is; only the name was looked up.
        assert running.names.asked == ["api.example.test"]

    serve_proxy(tmp_path, ["*.example.test", "localhost:443", "127.0.0.1"], test,
                table={"api.example.test": ["127.0.0.1"]})


@pytest.mark.parametrize(("request_bytes", "status"), [
    (b"GET /origin-form HTTP/1.1\r\nHost: x\r\n\r\n", b"400"),
    (b"GET https://localhost/ HTTP/1.1\r\nHost: x\r\n\r\n", b"400"),
    (b"CONNECT localhost HTTP/1.1\r\nHost: x\r\n\r\n", b"400"),
    (b"CONNECT localhost:99999 HTTP/1.1\r\nHost: x\r\n\r\n", b"400"),
    (b"NOT HTTP AT ALL\r\n\r\n", b"400"),
    (b"GET http://unknown.example.test/ HTTP/1.1\r\nHost: x\r\n\r\n", b"502"),
    (b"GET http://localhost:1/ HTTP/1.1\r\nHost: x\r\n\r\n", b"502"),
])
def test_bad_requests_and_unreachable_names(tmp_path: Path, request_bytes: bytes,
                                            status: bytes) -> None:
    async def test(running: Running) -> None:
        reply = await _ask(running, request_bytes)
        assert reply.split(b" ", 2)[1] == status, reply
        assert b"Connection: close" in reply

    serve_proxy(tmp_path, ["localhost:{port}", "localhost:1", "*.example.test"], test)


@pytest.mark.parametrize(("text", "default", "expected"), [
    ("host:80", None, ("host", 80)),
    ("[::1]:8080", None, ("::1", 8080)),
    ("host", 80, ("host", 80)),
    ("[::1]", 80, ("::1", 80)),
])
def test_split_authority(text: str, default: int | None, expected: tuple[str, int]) -> None:
    assert split_authority(text, default=default) == expected


@pytest.mark.parametrize("text", ["host", ":80", "::1:80", "[::1", "[::1]x", "host:0",
                                  "host:http"])
def test_split_authority_refuses(text: str) -> None:
    with pytest.raises(BadRequest):
        split_authority(text, default=None)


def test_connections_beyond_the_limit_are_closed_at_once(tmp_path: Path) -> None:
    async def test(running: Running) -> None:
        running.server.connections = MAX_CONNECTIONS
        reply = await _ask(running, f"GET http://localhost:{running.upstream_port}/ "
                           "HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert reply == b""
        assert running.names.asked == []
        running.server.connections = 0
        reply = await _ask(running, f"GET http://localhost:{running.upstream_port}/ "
                           "HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert reply.startswith(b"HTTP/1.1 200 OK")
        assert running.server.connections == 0

    serve_proxy(tmp_path, ["localhost:{port}"], test)


def test_a_connections_fault_is_said_once_and_its_end_is_not(
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """One connection's failure is its own, but a fault of the proxy's is said, never
    swallowed; a side going away is how a connection ends, and says nothing."""
    faults = [anyio.EndOfStream(), ValueError("a bug"), ValueError("again"), OSError(104)]

    async def failing(stream: RawStream, gate: object) -> None:
        raise faults.pop(0)

    monkeypatch.setattr("supervisor.proxy.server.handler", lambda kind: failing)
    server = ProxyServer(cast(Gate, None))

    async def main() -> None:
        for _ in range(4):
            near, far = socket.socketpair()
            far.close()
            await server._one(HTTP)(RawStream(near))
            assert near.fileno() == -1  # closed by the server, whatever happened

    anyio.run(main)
    assert capfd.readouterr().err == (
        "lnk-sandbox: the proxy's http connection failed (ValueError: a bug); the "
        "sandbox's other connections go on\n")
    assert server.connections == 0
