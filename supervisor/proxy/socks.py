"""The SOCKS5 proxy (RFC 1928): CONNECT to a name or an address, no authentication.

A name (ATYP 3) is decided as it was sent, unresolved (`socks5h://` clients send names);
an address (ATYP 1 or 4) only when the allow list names that address. Replies: 0 on
success, 2 (not allowed by ruleset) for a refusal, 4 (host unreachable) when an allowed
name does not resolve, 5 (connection refused) or 6 (TTL expired: a timeout) when it does
not answer, 7 for a command other than CONNECT, 8 for an unknown address type.
"""

from __future__ import annotations

import ipaddress
import struct

import anyio
import anyio.abc

from .relay import relay
from .streams import CHUNK, RawStream
from .upstream import Gate, Refused, Unreachable

VERSION = 5
NO_AUTH = 0
NO_METHOD = 0xFF
CONNECT = 1
IPV4, DOMAIN, IPV6 = 1, 3, 4

SUCCEEDED = 0
FAILURE = 1
NOT_ALLOWED = 2
HOST_UNREACHABLE = 4
CONNECTION_REFUSED = 5
TTL_EXPIRED = 6
COMMAND_NOT_SUPPORTED = 7
ADDRESS_NOT_SUPPORTED = 8

HANDSHAKE_TIMEOUT = 60.0


class _Reader:
    """Exact reads from a stream, keeping what came beyond them."""

    def __init__(self, stream: RawStream):
        self.stream = stream
        self.buffer = b""

    async def read(self, size: int) -> bytes:
        while len(self.buffer) < size:
            chunk = await self.stream.receive(CHUNK)
            self.buffer += chunk
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data


async def handle(stream: RawStream, gate: Gate) -> None:
    """Serve one connection from the sandbox."""
    reader = _Reader(stream)
    try:
        with anyio.fail_after(HANDSHAKE_TIMEOUT):
            destination = await _handshake(reader, stream)
    except (anyio.EndOfStream, anyio.BrokenResourceError, TimeoutError, OSError):
        return
    if destination is None:
        return
    host, port = destination
    try:
        upstream = await gate.open(host, port, stream)
    except Refused:
        await _reply(stream, NOT_ALLOWED)
        return
    except Unreachable as err:
        code = {"resolve": HOST_UNREACHABLE, "timeout": TTL_EXPIRED}.get(
            err.kind, CONNECTION_REFUSED)
        await _reply(stream, code)
        return
    async with upstream:
        await _reply(stream, SUCCEEDED)
        stream.buffer = reader.buffer  # sent right behind the request
        await relay(stream, upstream)


async def _handshake(reader: _Reader, stream: anyio.abc.ByteStream) -> tuple[str, int] | None:
    version, count = await reader.read(2)
    if version != VERSION:
        return None
    methods = await reader.read(count)
    if NO_AUTH not in methods:
        await stream.send(bytes([VERSION, NO_METHOD]))
        return None
    await stream.send(bytes([VERSION, NO_AUTH]))
    version, command, _reserved, kind = await reader.read(4)
    if version != VERSION:
        return None
    if kind == IPV4:
        host = str(ipaddress.IPv4Address(await reader.read(4)))
    elif kind == IPV6:
        host = str(ipaddress.IPv6Address(await reader.read(16)))
    elif kind == DOMAIN:
        (length,) = await reader.read(1)
        host = (await reader.read(length)).decode("ascii", "replace")
    else:
        await _reply(stream, ADDRESS_NOT_SUPPORTED)
        return None
    (port,) = struct.unpack("!H", await reader.read(2))
    if command != CONNECT:
        await _reply(stream, COMMAND_NOT_SUPPORTED)
        return None
    return host, port


async def _reply(stream: anyio.abc.ByteStream, code: int) -> None:
    # The bound address is not the sandbox's business: 0.0.0.0:0.
    try:
        await stream.send(bytes([VERSION, code, 0, IPV4, 0, 0, 0, 0, 0, 0]))
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
