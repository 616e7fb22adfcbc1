"""Proxy mode on macOS: the same proxy as on Linux, on loopback ports of the supervisor.

There is no network namespace to put a listener in: the sandbox shares the host's
network stack, and Seatbelt decides which addresses it may reach. So the supervisor binds
the proxy's HTTP and SOCKS5 listeners on 127.0.0.1 at ports the kernel picks, the profile
admits `localhost` on those ports and nothing else (no DNS: names go to the proxy
unresolved), and the environment names them as on Linux (with NODE_USE_ENV_PROXY=1).
Everything the proxy decides (lists, address guard, decider, events) is the Linux code.

Facts and limits (not run on a Mac here):
- A port on the host's loopback is reachable by every local process, not only the
  sandbox's: another user's program could use this run's proxy to reach what the spec
  allows for as long as the run lasts (nothing more: the proxy refuses the rest).
- The sandbox's process is not found for the decider's question (`"process": null`).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence

from ..events import EventLog
from ..grants import Snapshot
from ..netpolicy import Decide, proxy_environment


class MacProxy:
    """One run's proxy on the host's loopback: `ports`, `environment()`, `serve()`."""

    def __init__(self, snapshot: Snapshot, events: EventLog | None,
                 decide: Decide | None = None):
        from ..proxy.gate import open_gate
        from ..proxy.server import HTTP, SOCKS

        self.gate = open_gate(snapshot, events, decide)
        self.listeners: dict[str, list[socket.socket]] = {}
        try:
            for kind in (HTTP, SOCKS):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                self.listeners[kind] = [sock]
                sock.bind(("127.0.0.1", 0))
                sock.listen(1024)
        except BaseException:
            self.close()
            raise
        self.ports = (self.listeners[HTTP][0].getsockname()[1],
                      self.listeners[SOCKS][0].getsockname()[1])

    def environment(self) -> dict[str, str]:
        return proxy_environment(*self.ports)

    async def serve(self) -> None:
        from ..proxy.server import ProxyServer

        listeners: Mapping[str, Sequence[socket.socket]] = self.listeners
        await ProxyServer(self.gate).serve(listeners)

    def close(self) -> None:
        for sockets in self.listeners.values():
            for sock in sockets:
                sock.close()
        self.listeners = {}
