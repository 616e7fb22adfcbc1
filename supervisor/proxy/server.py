"""Serving proxy mode's listeners, and the run's private folder.

The listeners are handed in already bound: on Linux the network helper makes them inside
the sandbox's network namespace (127.0.0.1:3128 HTTP, :1080 SOCKS5, :53 DNS over TCP and
UDP) and passes them to the supervisor, which accepts on them itself, so a connection
from the sandbox reaches the proxy with no process in between; on macOS the supervisor
binds them on the host's loopback. Each connection is served in a task of its own, and
one connection's failure is its own.

The folder (Linux) holds the sandbox's resolv.conf: it is made 0700 in `$LNK_HOME/run`
(hidden from every sandbox), named after the supervisor's pid, and a folder whose
supervisor is gone (killed) is removed by the next start.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any

import anyio
import anyio.abc

from ..state import ensure_private_dir
from .streams import RawStream, serve_listener
from .upstream import Gate

HTTP, SOCKS, DNS_TCP, DNS_UDP = "http", "socks", "dns-tcp", "dns-udp"
Handler = Callable[[RawStream, Gate], Awaitable[None]]


def handlers() -> dict[str, Handler]:
    """The protocols' handlers, imported when serving starts: h11 and dnspython cost
    about 90 ms here, which the sandbox's start (waiting for its listeners) need not."""
    from . import http, names, socks

    return {HTTP: http.handle, SOCKS: socks.handle, DNS_TCP: names.handle_tcp}
RESOLV_CONF = "resolv.conf"
# Connections served at once, per run: beyond it a new one is closed at once, so a
# sandbox opening connections in a loop cannot take every descriptor the supervisor has
# (its exec watch needs some too).
MAX_CONNECTIONS = 512
RESOLV_CONF_TEXT = "# lnk-sandbox, proxy mode: names are answered by the proxy\n" \
    "nameserver 127.0.0.1\n"


class ProxyServer:
    """One run's proxy: `serve(listeners)` under anyio until cancelled."""

    def __init__(self, gate: Gate):
        self.gate = gate
        self.connections = 0

    async def serve(self, listeners: Mapping[str, Sequence[socket.socket]]) -> None:
        """Serve every listener (by kind) until cancelled; the decider's task too."""
        from . import names

        by_kind = handlers()
        async with anyio.create_task_group() as group:
            if self.gate.decider is not None:
                group.start_soon(self.gate.decider.serve)
            for kind, sockets in listeners.items():
                for sock in sockets:
                    if kind == DNS_UDP:
                        group.start_soon(names.serve_udp, sock, self.gate, group)
                    else:
                        group.start_soon(serve_listener, sock, self._one(by_kind[kind]),
                                         group)

    def _one(self, handler: Handler) -> Callable[[RawStream], Coroutine[Any, Any, None]]:
        async def serve_one(stream: RawStream) -> None:
            try:
                if self.connections >= MAX_CONNECTIONS:
                    return
                self.connections += 1
                try:
                    await handler(stream, self.gate)
                except Exception:
                    pass
                finally:
                    self.connections -= 1
            finally:
                stream.close()

        return serve_one


class RunFolder:
    """The run's private folder in `$LNK_HOME/run`, holding the sandbox's resolv.conf."""

    def __init__(self, folder: str):
        self.folder = folder

    @staticmethod
    def open(lnk_home: str) -> RunFolder:
        base = ensure_private_dir(os.path.join(lnk_home, "run"))
        remove_stale(base)
        folder = os.path.realpath(tempfile.mkdtemp(prefix=f"net-{os.getpid()}-", dir=base))
        try:
            fd = os.open(os.path.join(folder, RESOLV_CONF),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            with os.fdopen(fd, "w") as handle:
                handle.write(RESOLV_CONF_TEXT)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return RunFolder(folder)

    @property
    def resolv_conf(self) -> str:
        return os.path.join(self.folder, RESOLV_CONF)

    def close(self) -> None:
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
