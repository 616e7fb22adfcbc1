"""A harness's call served by a start server: the supervisor is forked, not started.

The API's calls go to the same per-user start server the command line's do (a server
of its own kind: its runs start as the API's supervisor always did, `python -I` with
this installation's `supervisor` first on the path), instead of starting
`python -I -c supervisor.child` for each. The call hands the server the request the
child always read, this process's environment and working directory, and the call's
standard files (pipes this process reads and writes, or its own) and decider; the run
(`supervisor/linux/startrun.py`) answers with the result `supervisor.child.answer`
gives. Cancelling the call asks the run to end (SIGTERM, passed to the command), then
kills it after the grace, as it did the child; this process gone, the run is ended as
the child was when its harness went (SIGTERM, then the grace).

Off by default (`LNK_START_SERVER=1` turns it on). Where no server can serve (it is off,
not Linux, it refused this process: confined otherwise), `connection` returns None and
the call starts its own supervisor; with `LNK_START_SERVER=required` the call fails
instead (`required`).
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from supervisor import startsocket, startwire


def required() -> bool:
    """Whether a call no server served must fail (LNK_START_SERVER=required)."""
    return startwire.switch() == "required"


async def connection(lnk_home: str, root: str) -> Served | None:
    """A connection to this process's start server (started when there is none, in a
    worker thread: a start takes a while), or None where none can serve."""
    if startwire.switch() == "0" or not startwire.available():
        return None

    def reach() -> tuple[Any, str]:
        return startsocket.reach("api", lnk_home, root)

    own = startwire.confinement()
    key = startwire.server_key(own, startwire.code_identity("api", root))
    folder = startsocket.open_folder(lnk_home)
    raw = None
    if folder is not None:
        try:
            raw = startsocket.connect(folder, key, own)
        finally:
            os.close(folder)
    if raw is None:
        raw, _ = await anyio.to_thread.run_sync(reach)
        if raw is None:
            return None
    sock = socket.socket(fileno=raw.detach())
    sock.setblocking(False)
    return Served(sock, key)


async def _next(sock: socket.socket, inbox: startwire.Inbox) -> dict[bytes, bytes] | None:
    """The next message on `sock`, waiting without blocking the loop."""
    while (message := inbox.take()) is None:
        try:
            if not inbox.receive():
                return None
        except BlockingIOError:
            await anyio.wait_readable(sock)
        except OSError:
            return None
    return message


class Served:
    """One call on a connection: `start` hands it over (False: not taken, nothing
    ran), `result` waits for its end; `end` asks a cancelled one to end."""

    def __init__(self, sock: socket.socket, key: str) -> None:
        self.sock = sock
        self.key = key
        self.inbox = startwire.Inbox(sock)

    async def start(self, request: dict[str, Any], fds: dict[int, int]) -> bool:
        """Send `request` with `fds` (the run's descriptor number -> this process's)."""
        cwd = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        proof = os.pidfd_open(os.getpid())  # this process sends it (startrun._sent_by)
        numbers = sorted(fds)
        fields = {b"protocol": startwire.PROTOCOL, b"kind": b"api",
                  b"key": self.key.encode(),
                  b"request": json.dumps(request).encode(),
                  b"env": b"\0".join(k + b"=" + v for k, v in os.environb.items()),
                  b"fds": b",".join(str(n).encode() for n in numbers),
                  # every one inheritable, as the child's standard files and decider were
                  b"cloexec": b",".join(b"0" for _ in numbers)}
        try:
            self.sock.setblocking(True)  # one message, taken at once by a local socket
            startwire.send(self.sock, fields, [proof, *(fds[n] for n in numbers), cwd])
            self.sock.setblocking(False)
        except OSError:
            return False
        finally:
            os.close(cwd)
            os.close(proof)
        first = await _next(self.sock, self.inbox)
        return first is not None and b"accepted" in first

    async def result(self) -> dict[str, Any] | None:
        """The run's result (`supervisor.child.answer`'s), or None when its supervisor
        ended without one (killed)."""
        message = await _next(self.sock, self.inbox)
        if message is not None and b"result" in message:
            found: dict[str, Any] = json.loads(message[b"result"])
            return found
        return None

    def signal(self, number: int) -> None:
        self._say({b"signal": str(number).encode()})

    def kill(self) -> None:
        self._say({b"kill": b""})

    def _say(self, fields: dict[bytes, bytes]) -> None:
        try:
            self.sock.send(startwire.pack(fields), socket.MSG_NOSIGNAL)
        except OSError:
            pass  # the run is gone

    async def end(self, grace: float, wait: Callable[[], Awaitable[object]]) -> None:
        """A cancelled call: SIGTERM to the command (its handler runs), the whole tree
        killed after `grace` seconds, and `wait` (the run's end) awaited either way."""
        import signal

        with anyio.CancelScope(shield=True):
            self.signal(signal.SIGTERM)
            with anyio.move_on_after(grace):
                await wait()
                return
            self.kill()
            with anyio.move_on_after(grace * 10):
                await wait()

    def close(self) -> None:
        self.inbox.close_fds()
        anyio.notify_closing(self.sock)
        self.sock.close()
