"""One HTTP server on the host for the tests that reach it from a sandbox (through the
proxy, a forwarded port, or a refused address): in a thread of the test, on loopback
by default or any address of either family, recording what it was asked.

Written once: the network tests, the network attacks and the macOS proxy's each had a
copy of their own.
"""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Callable
from types import TracebackType


def served(path: str) -> bytes:
    """The default body: says which path was served."""
    return f"served {path}\n".encode()


class HostServer:
    """`requests`: (path, Host header) of each GET; `paths`: the paths alone; `port`."""

    def __init__(self, address: str = "127.0.0.1", *,
                 body: Callable[[str], bytes] = served) -> None:
        requests: list[tuple[str, str | None]] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self) -> None:
                requests.append((self.path, self.headers.get("Host")))
                data = body(self.path)
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        class Server(http.server.ThreadingHTTPServer):
            address_family = socket.AF_INET6 if ":" in address else socket.AF_INET

        self.requests = requests
        self.server = Server((address, 0), Handler)
        self.port: int = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> HostServer:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()
