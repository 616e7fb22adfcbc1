"""`[network] forward` and `expose`: single ports between the host's loopback and the
sandbox's own, relayed by the supervisor (Linux; macOS opens them in the profile).

- forward = [5432]: the network helper listens on the sandbox's 127.0.0.1:5432 (and ::1
  where the sandbox has it) and hands the listener over; each connection made there is
  connected by the supervisor to the host's 127.0.0.1:5432 (then ::1), and relayed. A
  port nothing listens on outside resets the connection inside (ECONNRESET), as near to
  "refused" as an accepted connection can come.
- expose = [3000]: the supervisor listens on the host's 127.0.0.1:3000 (and ::1) from
  before the sandbox starts; each connection made there gets a socket the helper made
  inside, which the supervisor connects to the sandbox's 127.0.0.1:3000, and relays. A
  port the sandbox does not listen on yet resets the connection.
Each use is reported once per port (an event, `--report`), as a refusal is: which of the
host's services a sandbox reached, and which of its own the host did.
"""

from __future__ import annotations

import errno
import socket
import struct
from collections.abc import Awaitable, Callable

import anyio
import anyio.abc

from ..events import EventLog
from .relay import relay
from .streams import RawStream, connect_tcp, serve_listener

MAX_CONNECTIONS = 512
LOOPBACKS = ("127.0.0.1", "::1")

MakeSocket = Callable[[int], Awaitable[socket.socket]]


def reset(stream: RawStream) -> None:
    """Close with a reset (SO_LINGER 0): the peer sees ECONNRESET, not an empty answer."""
    try:
        stream.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    stream.close()


class _Counted:
    def __init__(self) -> None:
        self.connections = 0

    def full(self) -> bool:
        return self.connections >= MAX_CONNECTIONS


async def serve_forward(listeners: list[socket.socket], port: int, events: EventLog | None,
                        group: anyio.abc.TaskGroup) -> None:
    """Relay connections to the sandbox's `port` to the host's own, until cancelled."""
    counted = _Counted()

    async def one(inside: RawStream) -> None:
        if counted.full():
            reset(inside)
            return
        counted.connections += 1
        try:
            outside = await _connect_loopback(port)
            if outside is None:
                reset(inside)
                return
            if events is not None:
                events.add("forward", f"port {port}", f"127.0.0.1:{port}", "network.forward",
                           0)
            async with outside:
                await relay(inside, outside)
        finally:
            counted.connections -= 1
            inside.close()

    async with anyio.create_task_group() as own:
        for listener in listeners:
            own.start_soon(serve_listener, listener, one, group)


async def serve_expose(listeners: list[socket.socket], port: int, make_socket: MakeSocket,
                       events: EventLog | None, group: anyio.abc.TaskGroup) -> None:
    """Relay connections to the host's `port` to the sandbox's own, until cancelled."""
    counted = _Counted()

    async def one(outside: RawStream) -> None:
        if counted.full():
            reset(outside)
            return
        counted.connections += 1
        try:
            inside = await _connect_inside(make_socket, port)
            if inside is None:
                reset(outside)
                return
            if events is not None:
                events.add("expose", f"port {port}", f"127.0.0.1:{port}", "network.expose", 0)
            async with inside:
                await relay(outside, inside)
        finally:
            counted.connections -= 1
            outside.close()

    async with anyio.create_task_group() as own:
        for listener in listeners:
            own.start_soon(serve_listener, listener, one, group)


async def _connect_loopback(port: int) -> RawStream | None:
    for address in LOOPBACKS:
        try:
            with anyio.fail_after(5):
                return await connect_tcp(address, port)
        except (OSError, TimeoutError):
            continue
    return None


async def _connect_inside(make_socket: MakeSocket, port: int) -> RawStream | None:
    try:
        sock = await make_socket(4)
    except OSError:
        return None
    stream = RawStream(sock)
    code = sock.connect_ex(("127.0.0.1", port))
    if code == errno.EINPROGRESS:
        with anyio.move_on_after(5):
            await anyio.wait_writable(sock)
        code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) or (
            0 if _connected(sock) else errno.ETIMEDOUT)
    if code:
        stream.close()
        return None
    return stream


def _connected(sock: socket.socket) -> bool:
    try:
        sock.getpeername()
    except OSError:
        return False
    return True
