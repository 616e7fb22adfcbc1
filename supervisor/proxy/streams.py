"""Non-blocking sockets driven by the event loop's readiness, with nothing in between.

The proxy owns every socket it uses as a plain non-blocking socket, waited on with
anyio's `wait_readable`/`wait_writable`, rather than through asyncio's transports
(which anyio's own streams are built on): a transport reads ahead into a buffer of its
own, so once a tunnel is set up the bytes could no longer be moved by the kernel alone
(`relay.py`'s splice). Handshakes read through `RawStream`, whose `buffer` keeps what came
past the part parsed, for the relay to send first.

Facts:
- A non-blocking connect() answers EINPROGRESS; the socket turns writable when it ends,
  and SO_ERROR says how. To a loopback address the handshake is most often over when
  connect() returns (getpeername() answers), and the wait is skipped.
- accept() on a listener other processes also hold (the network helper made the
  sandbox's) is raced by no one here: the helper never accepts, it only made them.
- A socket keeps the network namespace it was made in, whichever process uses it.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import anyio
import anyio.abc

# What a handshake reads at once: a request or response head fits, and the buffer stays
# below malloc's mmap threshold (128 KiB), so a read costs no mmap and munmap of its own.
CHUNK = 65536


class RawStream(anyio.abc.ByteStream):
    """One connection, as a byte stream over its non-blocking socket."""

    def __init__(self, sock: socket.socket):
        sock.setblocking(False)
        self.sock = sock
        self.buffer = b""  # read past what a handshake used: the relay's to send first

    async def receive(self, max_bytes: int = CHUNK) -> bytes:
        if self.buffer:
            data, self.buffer = self.buffer[:max_bytes], self.buffer[max_bytes:]
            return data
        while True:
            try:
                data = self.sock.recv(max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self.sock)
                continue
            except OSError as err:
                raise anyio.BrokenResourceError(str(err)) from err
            if not data:
                raise anyio.EndOfStream
            return data

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            try:
                sent = self.sock.send(view)
            except BlockingIOError:
                await anyio.wait_writable(self.sock)
                continue
            except OSError as err:
                raise anyio.BrokenResourceError(str(err)) from err
            view = view[sent:]

    async def send_eof(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError as err:
            if err.errno != errno.ENOTCONN:
                raise anyio.BrokenResourceError(str(err)) from err

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        if self.sock.fileno() >= 0:
            anyio.notify_closing(self.sock)
            self.sock.close()

    def peer(self) -> tuple[str, int] | None:
        """The other end's address, where it has one (a TCP peer)."""
        try:
            address = self.sock.getpeername()
        except OSError:
            return None
        return (address[0], address[1]) if isinstance(address, tuple) else None


# How long a connect() may take before `stalled` is asked about it: a handshake with a
# socket of this host ends within microseconds, unless `prepare` made it never end.
STALLED_AFTER = 0.05


class Abandoned(Exception):
    """`stalled` said the connection is not to be waited for (its reason is the
    caller's)."""


async def connect_tcp(address: str, port: int, *,
                      prepare: Callable[[socket.socket], None] | None = None,
                      stalled: Callable[[socket.socket], Awaitable[bool]] | None = None
                      ) -> RawStream:
    """A connection to `address` (a literal) on `port`; OSError when it fails.
    `prepare` is given the socket before it connects; `stalled`, once the connect()
    has taken STALLED_AFTER, while it goes on: True abandons it (Abandoned)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)  # close-on-exec: Python's default
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if prepare is not None:
            prepare(sock)
        code = sock.connect_ex((address, port))
        if code == errno.EINPROGRESS and not _connected(sock):
            await _connected_or_abandoned(sock, stalled)
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        elif code == errno.EINPROGRESS:
            code = 0
        if code:
            raise OSError(code, os.strerror(code))
    except BaseException:
        anyio.notify_closing(sock)
        sock.close()
        raise
    return RawStream(sock)


async def _connected_or_abandoned(
        sock: socket.socket, stalled: Callable[[socket.socket], Awaitable[bool]] | None
        ) -> None:
    """Wait for the connect() to end; past STALLED_AFTER, ask `stalled` meanwhile."""
    if stalled is None:
        await anyio.wait_writable(sock)
        return
    with anyio.move_on_after(STALLED_AFTER):
        await anyio.wait_writable(sock)
        return
    abandoned: list[bool] = []
    async with anyio.create_task_group() as group:
        async def ask() -> None:
            if await stalled(sock):
                abandoned.append(True)
                group.cancel_scope.cancel()

        group.start_soon(ask)
        await anyio.wait_writable(sock)
        group.cancel_scope.cancel()
    if abandoned:
        raise Abandoned


def _connected(sock: socket.socket) -> bool:
    try:
        sock.getpeername()
    except OSError:
        return False
    return True


Handler = Callable[[RawStream], Coroutine[Any, Any, None]]


async def serve_listener(listener: socket.socket, handler: Handler,
                         group: anyio.abc.TaskGroup) -> None:
    """Accept on `listener` until cancelled, each connection handled in a task of
    `group`; the handler owns its stream and must close it."""
    listener.setblocking(False)
    while True:
        try:
            sock, _ = listener.accept()
        except BlockingIOError:
            await anyio.wait_readable(listener)
            continue
        except OSError as err:
            if err.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                await anyio.sleep(0.05)  # out of descriptors: let connections end first
                continue
            if err.errno in (errno.ECONNABORTED, errno.EPROTO):
                continue
            raise
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        group.start_soon(handler, RawStream(sock))
