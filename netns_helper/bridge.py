"""The helper's listeners inside the sandbox, each bridged to the supervisor's sockets.

Runs on one asyncio loop in the helper's one thread (nothing here resolves a name, so
asyncio never starts its executor). Each TCP connection to the HTTP or SOCKS5 port gets
its own unix connection to the supervisor's socket of that kind, and bytes flow both ways
with back-pressure: a side whose writes back up pauses reading on the other. DNS, over
UDP and TCP, is parsed here and asked of the supervisor's name service, one JSON line per
question, so a name is decided and looked up in one place only.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
from collections.abc import Callable
from typing import cast

from .protocol import DNS_SOCKET

# Bytes a side may hold for a slow peer before the other side stops reading from it.
WRITE_BUFFER = 1 << 22


class _Half(asyncio.Protocol):
    """One side of a bridged connection; `peer` is the other side, once connected."""

    def __init__(self, on_lost: Callable[[], None] | None = None):
        self.transport: asyncio.Transport | None = None
        self.peer: _Half | None = None
        self.eof = False
        self.closed = False
        self.pending: list[bytes] = []  # what came before the other side was there
        self._on_lost = on_lost

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is no subclass
        self.transport.set_write_buffer_limits(high=WRITE_BUFFER)

    def data_received(self, data: bytes) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.write(data)
        else:
            # asyncio may deliver data even after pause_reading() in connection_made
            # (3.11 adds the reader after that call): keep it for the other side.
            self.pending.append(data)
            if self.transport is not None:
                self.transport.pause_reading()

    def eof_received(self) -> bool:
        self.eof = True
        peer = self.peer
        if peer is not None and peer.transport is not None and not peer.closed:
            if peer.transport.can_write_eof():
                peer.transport.write_eof()
            if peer.eof:
                self.close_both()
        return True  # half-closed: the other direction may still carry the answer

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()
        if self._on_lost is not None:
            self._on_lost()

    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()

    def close_both(self) -> None:
        for side in (self, self.peer):
            if side is not None and side.transport is not None:
                side.transport.close()


class _Client(_Half):
    """A connection from inside the sandbox; it opens its own way to the supervisor."""

    def __init__(self, path: str):
        super().__init__()
        self._path = path

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        assert self.transport is not None
        self.transport.pause_reading()  # nothing to send it to yet
        asyncio.get_running_loop().create_task(self._connect())

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            _, upstream = await loop.create_unix_connection(_Half, self._path)
        except OSError:
            if self.transport is not None:
                self.transport.abort()
            return
        assert isinstance(upstream, _Half)
        if self.closed or self.transport is None:
            if upstream.transport is not None:
                upstream.transport.close()
            return
        self.peer, upstream.peer = upstream, self
        if upstream.transport is not None:
            for data in self.pending:
                upstream.transport.write(data)
            self.pending.clear()
            if self.eof and upstream.transport.can_write_eof():
                upstream.transport.write_eof()
        self.transport.resume_reading()


class NameService:
    """The supervisor's name service: one connection, questions answered by id."""

    def __init__(self, path: str, on_lost: Callable[[], None]):
        self._path = path
        self._on_lost = on_lost
        self._writer: asyncio.StreamWriter | None = None
        self._pending: dict[int, asyncio.Future[dict[str, object]]] = {}
        self._next = 0
        self._lock = asyncio.Lock()

    async def ask(self, name: str, rdtype: int) -> tuple[str, list[str]]:
        async with self._lock:
            if self._writer is None:
                reader, self._writer = await asyncio.open_unix_connection(self._path)
                asyncio.get_running_loop().create_task(self._read(reader))
        self._next += 1
        ident = self._next
        future: asyncio.Future[dict[str, object]] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        line = json.dumps({"id": ident, "name": name, "type": rdtype}) + "\n"
        self._writer.write(line.encode())
        try:
            reply = await asyncio.wait_for(future, timeout=30)
        except TimeoutError:
            return "SERVFAIL", []
        finally:
            self._pending.pop(ident, None)
        addresses = reply.get("addresses")
        return str(reply.get("rcode", "SERVFAIL")), [str(a) for a in addresses or []] \
            if isinstance(addresses, list) else []

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while line := await reader.readline():
                reply = json.loads(line)
                future = self._pending.get(int(reply.get("id", -1)))
                if future is not None and not future.done():
                    future.set_result(reply)
        except (OSError, ValueError):
            pass
        for future in self._pending.values():
            if not future.done():
                future.set_result({"rcode": "SERVFAIL"})
        self._on_lost()


async def _resolve(service: NameService, query: bytes, *, udp: bool) -> bytes | None:
    from . import dns as wire  # loaded by serve(), after ready: off the start's path

    question = wire.read_query(query)
    if not isinstance(question, wire.Question):
        return question
    rcode, addresses = await service.ask(question.name, question.rdtype)
    return wire.answer(question, rcode, addresses, udp=udp)


class _DnsUdp(asyncio.DatagramProtocol):
    def __init__(self, service: NameService):
        self._service = service
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        asyncio.get_running_loop().create_task(self._answer(data, addr))

    async def _answer(self, data: bytes, addr: tuple[str, int]) -> None:
        reply = await _resolve(self._service, data, udp=True)
        if reply is not None and self.transport is not None:
            self.transport.sendto(reply, addr)


async def _dns_tcp(service: NameService, reader: asyncio.StreamReader,
                   writer: asyncio.StreamWriter) -> None:
    """DNS over TCP: two-byte lengths before each message, answered in order."""
    try:
        while True:
            try:
                head = await reader.readexactly(2)
                query = await reader.readexactly(struct.unpack("!H", head)[0])
            except asyncio.IncompleteReadError:
                return
            reply = await _resolve(service, query, udp=False)
            if reply is None:
                return
            writer.write(struct.pack("!H", len(reply)) + reply)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


def listen_tcp(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def listen_udp(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", port))
    sock.setblocking(False)
    return sock


async def serve(
    forwards: list[tuple[socket.socket, str]],
    dns_tcp: socket.socket,
    dns_udp: socket.socket,
    run_dir: str,
    stop: asyncio.Event,
) -> None:
    """Serve every listener until `stop` is set (the sandbox or the supervisor ended)."""
    from . import dns  # noqa: F401 - dnspython, loaded once the target may start

    loop = asyncio.get_running_loop()
    servers = []
    for sock, path in forwards:
        servers.append(await loop.create_server(
            lambda path=path: _Client(path), sock=sock))  # type: ignore[misc]
    service = NameService(os.path.join(run_dir, DNS_SOCKET), stop.set)
    servers.append(await asyncio.start_server(
        lambda r, w: _dns_tcp(service, r, w), sock=dns_tcp))
    udp, _ = await loop.create_datagram_endpoint(lambda: _DnsUdp(service), sock=dns_udp)
    try:
        await stop.wait()
    finally:
        service.close()
        udp.close()
        for server in servers:
            server.close()
