"""Serving proxy mode's listeners.

The listeners are handed in already bound: on Linux the network helper makes them inside
the sandbox's network namespace (127.0.0.1:3128 HTTP, :1080 SOCKS5, :53 DNS over TCP and
UDP) and passes them to the supervisor, which accepts on them itself, so a connection
from the sandbox reaches the proxy with no process in between; on macOS the supervisor
binds them on the host's loopback. Each connection is served in a task of its own, and
one connection's failure is its own.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any

import anyio
import anyio.abc

from ..events import say
from .streams import RawStream, serve_listener
from .upstream import Gate

HTTP, SOCKS, DNS_TCP, DNS_UDP = "http", "socks", "dns-tcp", "dns-udp"
Handler = Callable[[RawStream, Gate], Awaitable[None]]


def handler(kind: str) -> Handler:
    """A protocol's handler, imported on its first connection: h11 and dnspython cost
    about 90 ms to import here, which neither the sandbox's start nor the end of a
    command that never used the network should wait for (the event loop that notices
    the sandbox's end is the one importing)."""
    if kind == HTTP:
        from .http import handle
    elif kind == SOCKS:
        from .socks import handle
    else:
        from .names import handle_tcp as handle
    return handle


# Connections served at once, per run: beyond it a new one is closed at once, so a
# sandbox opening connections in a loop cannot take every descriptor the supervisor has
# (its exec watch needs some too).
MAX_CONNECTIONS = 512

# How a connection ends when its client or its server goes away: no fault of the proxy's.
_ENDED = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError,
          TimeoutError, OSError)


class ProxyServer:
    """One run's proxy: `serve(listeners)` under anyio until cancelled."""

    def __init__(self, gate: Gate):
        self.gate = gate
        self.connections = 0
        self.faults: set[str] = set()

    async def serve(self, listeners: Mapping[str, Sequence[socket.socket]]) -> None:
        """Serve every listener (by kind) until cancelled; the decider's task too."""
        from .names import serve_udp

        async with anyio.create_task_group() as group:
            if self.gate.decider is not None:
                group.start_soon(self.gate.decider.serve)
            for kind, sockets in listeners.items():
                for sock in sockets:
                    if kind == DNS_UDP:
                        group.start_soon(serve_udp, sock, self.gate, group)
                    else:
                        group.start_soon(serve_listener, sock, self._one(kind), group)

    def _one(self, kind: str) -> Callable[[RawStream], Coroutine[Any, Any, None]]:
        found: list[Handler] = []

        async def serve_one(stream: RawStream) -> None:
            try:
                if self.connections >= MAX_CONNECTIONS:
                    return
                self.connections += 1
                try:
                    if not found:
                        found.append(handler(kind))
                    await found[0](stream, self.gate)
                except _ENDED:
                    pass  # a side went away mid-exchange: that connection's own end
                except Exception as err:
                    # A fault of the proxy's own: this connection ends, the others and
                    # the run go on, and it is said once per kind of fault.
                    fault = f"{kind}: {type(err).__name__}"
                    if fault not in self.faults:
                        self.faults.add(fault)
                        say(f"the proxy's {kind} connection failed ({type(err).__name__}: "
                            f"{err}); the sandbox's other connections go on")
                finally:
                    self.connections -= 1
            finally:
                stream.close()

        return serve_one
