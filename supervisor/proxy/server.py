"""The run's private folder, the proxy's unix listeners in it, and serving them.

The folder is made 0700 in `$LNK_HOME/run` (hidden from every sandbox, so no sandbox
can reach another run's sockets by path, whatever it was granted), named after the
supervisor's pid: a folder whose supervisor is gone (killed) is removed by the next
start. The sockets are bound before bwrap starts, so a connection that comes before the
loop serves them waits in the backlog. Each is bound through /proc/self/fd/N of the
folder, a path short enough for sun_path (108 bytes) however long `$LNK_HOME` is.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Awaitable, Callable

import anyio
import anyio.abc

from netns_helper.protocol import DNS_SOCKET, HTTP_SOCKET, SOCKS_SOCKET

from ..state import ensure_private_dir
from . import http, names, socks
from .upstream import Gate

Handler = Callable[[anyio.abc.ByteStream, Gate], Awaitable[None]]

HANDLERS: dict[str, Handler] = {
    HTTP_SOCKET: http.handle,
    SOCKS_SOCKET: socks.handle,
    DNS_SOCKET: names.handle,
}
RESOLV_CONF = "resolv.conf"
# Connections served at once, per run: beyond it a new one is closed at once, so a
# sandbox opening connections in a loop cannot take every descriptor the supervisor has
# (its exec watch needs some too).
MAX_CONNECTIONS = 512
RESOLV_CONF_TEXT = "# lnk-sandbox, proxy mode: names are answered by the proxy\n" \
    "nameserver 127.0.0.1\n"


class ProxyServer:
    """One run's folder and listeners; `serve()` under anyio, `close()` after the run."""

    def __init__(self, folder: str, dirfd: int, listeners: dict[str, socket.socket],
                 gate: Gate):
        self.folder = folder
        self._dirfd = dirfd
        self._listeners = listeners
        self.gate = gate
        self.connections = 0

    @staticmethod
    def open(lnk_home: str, gate: Gate) -> ProxyServer:
        base = ensure_private_dir(os.path.join(lnk_home, "run"))
        remove_stale(base)
        folder = os.path.realpath(tempfile.mkdtemp(prefix=f"net-{os.getpid()}-", dir=base))
        dirfd = os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        listeners: dict[str, socket.socket] = {}
        try:
            for name in HANDLERS:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                listeners[name] = sock
                sock.bind(f"/proc/self/fd/{dirfd}/{name}")
                sock.listen(1024)
                sock.setblocking(False)
            fd = os.open(os.path.join(folder, RESOLV_CONF),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            with os.fdopen(fd, "w") as handle:
                handle.write(RESOLV_CONF_TEXT)
        except BaseException:
            for sock in listeners.values():
                sock.close()
            os.close(dirfd)
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return ProxyServer(folder, dirfd, listeners, gate)

    @property
    def resolv_conf(self) -> str:
        return os.path.join(self.folder, RESOLV_CONF)

    async def serve(self) -> None:
        """Serve every listener until cancelled; one connection's failure is its own."""
        async with anyio.create_task_group() as group:
            for name, sock in self._listeners.items():
                listener = await anyio.abc.SocketListener.from_socket(sock)
                group.start_soon(listener.serve, self._one(HANDLERS[name]))

    def _one(self, handler: Handler) -> Callable[[anyio.abc.SocketStream], Awaitable[None]]:
        async def serve_one(stream: anyio.abc.SocketStream) -> None:
            async with stream:
                if self.connections >= MAX_CONNECTIONS:
                    return
                self.connections += 1
                try:
                    await handler(stream, self.gate)
                except Exception:
                    pass
                finally:
                    self.connections -= 1

        return serve_one

    def close(self) -> None:
        for sock in self._listeners.values():
            sock.close()
        try:
            os.close(self._dirfd)
        except OSError:
            pass
        shutil.rmtree(self.folder, ignore_errors=True)


def remove_stale(base: str) -> None:
    """Remove the folders of runs whose supervisor is gone (it was killed)."""
    try:
        entries = os.listdir(base)
    except OSError:
        return
    for entry in entries:
        parts = entry.split("-")
        if len(parts) < 3 or parts[0] != "net" or not parts[1].isdigit():
            continue
        try:
            os.kill(int(parts[1]), 0)
            continue  # alive (or not ours to signal): left alone
        except ProcessLookupError:
            shutil.rmtree(os.path.join(base, entry), ignore_errors=True)
        except OSError:
            continue
