"""A proxy of the supervisor's, served in-process, and an upstream on loopback.

`serve_proxy(test)` runs `test(proxy)` under anyio with the proxy's listeners on the
host's loopback (as macOS has them, and as the helper hands them over on Linux) and a
resolver that answers from a table and records what it was asked, so a test sees exactly
which names were looked up (none for a refused one).
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.abc

from supervisor.events import EventLog
from supervisor.proxy.decider import Decider
from supervisor.proxy.resolver import Resolver
from supervisor.proxy.rules import NetworkLists
from supervisor.proxy.server import DNS_TCP, DNS_UDP, HTTP, SOCKS, ProxyServer
from supervisor.proxy.upstream import Gate


@dataclass
class FakeNames:
    """Names resolved from a table; `asked` lists every name looked up, in order."""

    table: dict[str, list[str]]
    asked: list[str] = field(default_factory=list)

    async def __call__(self, name: str, family: int) -> list[str]:
        self.asked.append(name)
        return list(self.table.get(name, []))


@dataclass
class Running:
    server: ProxyServer
    names: FakeNames
    events: EventLog
    upstream_port: int
    received: list[bytes]
    ports: dict[str, int]

    async def connect(self, kind: str) -> anyio.abc.SocketStream:
        """A connection to the proxy's listener of `kind` (http, socks, dns-tcp)."""
        return await anyio.connect_tcp("127.0.0.1", self.ports[kind])

    def refused(self) -> list[tuple[str, str, str]]:
        return [(e.subject, e.resolved, e.rule) for e in self.events.events]


def _listeners() -> dict[str, list[socket.socket]]:
    made: dict[str, list[socket.socket]] = {}
    for kind in (HTTP, SOCKS, DNS_TCP, DNS_UDP):
        sock = socket.socket(socket.AF_INET,
                             socket.SOCK_DGRAM if kind == DNS_UDP else socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        if kind != DNS_UDP:
            sock.listen(64)
        made[kind] = [sock]
    return made


async def read_all(stream: anyio.abc.ByteStream) -> bytes:
    data = b""
    while True:
        try:
            data += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return data


async def _upstream(stream: anyio.abc.SocketStream, received: list[bytes]) -> None:
    """An origin server: records the request head, answers it with a fixed body."""
    async with stream:
        data = b""
        while b"\r\n\r\n" not in data:
            try:
                data += await stream.receive()
            except anyio.EndOfStream:
                return
        head, _, rest = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        chunked = b"transfer-encoding: chunked" in head.lower()
        while (chunked and not rest.endswith(b"0\r\n\r\n")) or len(rest) < length:
            rest += await stream.receive()
        received.append(head + b"\r\n\r\n" + rest)
        if head.startswith(b"ECHO"):
            await stream.send(b"echo:" + rest)
            return
        body = b"upstream body"
        await stream.send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nKeep-Alive: 5\r\n\r\n%s"
                          % (len(body), body))
        try:
            await stream.receive()  # the proxy closes: it asked for Connection: close
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            pass


def serve_proxy(tmp_path: Path, allow: list[str], test: Callable[[Running], Awaitable[None]],
                *, table: dict[str, list[str]] | None = None, deny: list[str] | None = None,
                decider: Decider | None = None) -> None:
    async def main() -> None:
        received: list[bytes] = []
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0,
                                                   family=socket.AF_INET)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        names = FakeNames(table if table is not None else {"localhost": ["127.0.0.1"]})
        events = EventLog(quiet=True)
        # "{port}" in an entry is the upstream's port: `localhost:{port}` reaches it.
        allowed = [text.replace("{port}", str(port)) for text in allow]
        gate = Gate(NetworkLists.from_texts(allowed, deny or []), Resolver(lookup=names),
                    events, decider)
        server = ProxyServer(gate)
        listeners = _listeners()
        ports = {kind: socks[0].getsockname()[1] for kind, socks in listeners.items()}
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(listener.serve, lambda s: _upstream(s, received))
                group.start_soon(server.serve, listeners)
                with anyio.fail_after(10):
                    await test(Running(server, names, events, port, received, ports))
                group.cancel_scope.cancel()
        finally:
            for socks in listeners.values():
                for sock in socks:
                    sock.close()
            await listener.aclose()

    anyio.run(main)
