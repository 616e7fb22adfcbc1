"""Relaying a tunnel's bytes both ways, moved by the kernel where it can (splice).

Facts (Linux; measured with benchmarks/proxy.py, see the README):
- splice(2) moves data between a descriptor and a pipe without copying it to user space:
  socket -> pipe -> socket is two calls per chunk and no copy through Python's objects.
  The pipe is the relay's own, one per direction. A socket read by splice honours the
  socket's own O_NONBLOCK; SPLICE_F_NONBLOCK makes the pipe side non-blocking too.
- A pipe holds 64 KiB by default; F_SETPIPE_SZ raises it up to /proc/sys/fs/pipe-max-size
  (1 MiB by default) for anyone, so a chunk is up to PIPE_SIZE bytes per wake-up.
- splice returns 0 at the socket's end of file: the half-close is passed on with
  shutdown(SHUT_WR), and the other direction may still carry the answer.
- A reset (ECONNRESET, EPIPE: any error of either socket) ends both directions.
- A pipe costs three calls to set up (pipe2, F_SETPIPE_SZ, close) and splice two per
  chunk, where a copy costs recv and send: for the few small chunks of a request and its
  answer, copying is cheaper. So each direction copies through a buffer of FIRST_SIZE
  bytes until a read fills it (a transfer in bulk), and splices from then on.
- Where splice is missing (macOS) every chunk is copied, through a buffer of COPY_SIZE.

`LNK_PROXY_RELAY` (`splice` or `copy`) and `LNK_PROXY_BUFFER` (bytes), read from the
supervisor's own environment, choose the way and the chunk for benchmarks/proxy.py, which
measures each; the defaults are what measured best.
"""

from __future__ import annotations

import fcntl
import os
import socket

import anyio

from .streams import RawStream

PIPE_SIZE = 1 << 20
COPY_SIZE = 1 << 18
FIRST_SIZE = 1 << 16
_WAY = os.environ.get("LNK_PROXY_RELAY", "")
_SPLICE = hasattr(os, "splice") and _WAY in ("", "splice", "hybrid")
if _WAY == "splice":
    FIRST_SIZE = 0  # splice from the first byte
_BUFFER = os.environ.get("LNK_PROXY_BUFFER", "")
if _BUFFER.isdigit() and 4096 <= int(_BUFFER) <= 1 << 24:
    PIPE_SIZE = COPY_SIZE = int(_BUFFER)
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


async def relay(one: RawStream, other: RawStream) -> None:
    """Copy bytes both ways until both directions end; a half-close is passed on.

    What a handshake read past its end (`buffer`) is sent first.
    """
    async with anyio.create_task_group() as group:
        group.start_soon(_direction, one, other, group.cancel_scope)
        group.start_soon(_direction, other, one, group.cancel_scope)


async def relay_one_way(source: RawStream, sink: RawStream, limit: int | None = None
                        ) -> None:
    """Copy `source`'s bytes to `sink` (an answer to pass back): `limit` bytes, or until
    `source` ends, or until `sink`'s own end closes (it has read what it wanted)."""

    async def until_closed(scope: anyio.CancelScope) -> None:
        while True:
            try:
                await sink.receive()  # what a client sends after its request: dropped
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                scope.cancel()
                return

    async with anyio.create_task_group() as group:
        if limit is None:
            group.start_soon(until_closed, group.cancel_scope)
        await _direction(source, sink, group.cancel_scope, limit)
        group.cancel_scope.cancel()


async def _direction(source: RawStream, sink: RawStream, scope: anyio.CancelScope,
                     limit: int | None = None) -> None:
    try:
        if source.buffer:
            data, source.buffer = source.buffer, b""
            if limit is not None:
                data, limit = data[:limit], limit - len(data[:limit])
            await sink.send(data)
        if limit != 0:
            await _move(source.sock, sink.sock, limit)
        sink.sock.shutdown(socket.SHUT_WR)
    except (anyio.BrokenResourceError, OSError):
        scope.cancel()  # a reset: the other direction is over too


async def _move(source: socket.socket, sink: socket.socket, limit: int | None) -> None:
    """Copy while the chunks are small, splice once one fills the first buffer."""
    if not _SPLICE:
        await _copy(source, sink, limit, COPY_SIZE)
        return
    if FIRST_SIZE:
        limit = await _copy(source, sink, limit, FIRST_SIZE, until_full=True)
    if limit is None or limit > 0:
        await _splice(source, sink, limit)


async def _splice(source: socket.socket, sink: socket.socket, limit: int | None) -> None:
    read_end, write_end = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        try:
            size = fcntl.fcntl(write_end, _F_SETPIPE_SZ, PIPE_SIZE)
        except OSError:
            size = 65536
        flags = os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK
        src, dst = source.fileno(), sink.fileno()
        while limit is None or limit > 0:
            try:
                moved = os.splice(src, write_end, size if limit is None else min(size, limit),
                                  flags=flags)
            except BlockingIOError:
                await anyio.wait_readable(source)
                continue
            if moved == 0:
                return
            if limit is not None:
                limit -= moved
            while moved:
                try:
                    moved -= os.splice(read_end, dst, moved, flags=flags)
                except BlockingIOError:
                    await anyio.wait_writable(sink)
    finally:
        os.close(read_end)
        os.close(write_end)


async def _copy(source: socket.socket, sink: socket.socket, limit: int | None, size: int,
                *, until_full: bool = False) -> int | None:
    """Copy through a buffer of `size` bytes until the end (or `limit` bytes); with
    `until_full`, only until a read fills the buffer. What is left of `limit`; 0 at the
    source's end."""
    buffer = bytearray(size)
    view = memoryview(buffer)
    while limit is None or limit > 0:
        try:
            count = source.recv_into(buffer, size if limit is None else min(size, limit))
        except BlockingIOError:
            await anyio.wait_readable(source)
            continue
        if count == 0:
            return 0
        if limit is not None:
            limit -= count
        sent = 0
        while sent < count:
            try:
                sent += sink.send(view[sent:count])
            except BlockingIOError:
                await anyio.wait_writable(sink)
        if until_full and count == size:
            return limit
    return limit
