"""A network of a test's own for lnk-sandbox's supervisor: `python lab.py CONFIG -- CMD...`.

Run as root by `unshare --mount --net --propagation private`, so nothing of it touches
the host's network: in a fresh network namespace it brings the loopback up and gives it
the addresses the test wants (private, link-local, metadata, unique local, a public one),
starts an HTTP server on each (port CONFIG["port"]) and a DNS server on 127.0.0.53 that
answers from CONFIG["zone"] (a name's answers may change from one question to the next),
binds a resolv.conf naming that server over /etc/resolv.conf in its own mount namespace,
proves every server reachable from here (outside any sandbox), then runs CMD (lnk-sandbox,
as root or through the test user's prefix) and waits for it. Everything seen (the proof,
every HTTP request with the address it came to, every DNS question) is written to
CONFIG["log"] as JSON when CMD ends; the lab exits with CMD's status.

Zone: {"name.": [[answers of the 1st question], [2nd], ...]}, the last repeated; an
answer is an address (A or AAAA by its form), answered to the question of its type.

CONFIG["https"] (optional): {"address", "root", "cert", "key"}: an HTTPS server on that
address's port 443 serving the files under root (a package registry's, built by
support/registry.py), each GET logged in "requests" as [address, local, path].
"""

from __future__ import annotations

import http.server
import ipaddress
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import urllib.request
from typing import Any

import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset

DNS_ADDRESS = "127.0.0.53"


class Seen:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[list[str]] = []
        self.questions: list[list[str]] = []
        self.counts: dict[tuple[str, str], int] = {}


def http_server(address: str, port: int, seen: Seen) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_GET(self) -> None:
            local = self.connection.getsockname()[0]
            with seen.lock:
                seen.requests.append([address, str(local), self.path])
            body = f"served by {address}\n".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    class Server(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in address else socket.AF_INET
        daemon_threads = True

    server = Server((address, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def https_server(config: dict[str, str], seen: Seen) -> None:
    """Files under config["root"] over TLS on config["address"]:443."""
    import functools
    import ssl

    address, root = config["address"], config["root"]

    class Files(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            local = self.connection.getsockname()[0]
            with seen.lock:
                seen.requests.append([address, str(local), self.path])
            super().do_GET()

        def end_headers(self) -> None:
            if self.path.startswith(("/packages/", "/tarballs/")):
                # As the real registries say of a release's files: they never change.
                self.send_header("Cache-Control", "max-age=31536000, immutable")
            super().end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    class Server(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in address else socket.AF_INET
        daemon_threads = True

    server = Server((address, 443), functools.partial(Files, directory=root))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(config["cert"], config["key"])
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def answer(zone: dict[str, list[list[str]]], seen: Seen, wire: bytes) -> bytes:
    query = dns.message.from_wire(wire)
    question = query.question[0]
    name = question.name.to_text().lower()
    kind = dns.rdatatype.to_text(question.rdtype)
    with seen.lock:
        seen.questions.append([name, kind])
        turn = seen.counts.get((name, kind), 0)
        seen.counts[(name, kind)] = turn + 1
    response = dns.message.make_response(query)
    response.flags |= 0x80
    answers = zone.get(name)
    if answers is None:
        response.set_rcode(dns.rcode.NXDOMAIN)
        return response.to_wire()
    wanted = 4 if kind == "A" else 6 if kind == "AAAA" else 0
    found = [a for a in answers[min(turn, len(answers) - 1)]
             if ipaddress.ip_address(a).version == wanted]
    if found:
        response.answer.append(dns.rrset.from_text_list(name, 1, "IN", kind, found))
    return response.to_wire()


def dns_server(zone: dict[str, list[list[str]]], seen: Seen) -> None:
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((DNS_ADDRESS, 53))
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind((DNS_ADDRESS, 53))
    tcp.listen(64)

    def serve_udp() -> None:
        while True:
            data, peer = udp.recvfrom(65535)
            try:
                udp.sendto(answer(zone, seen, data), peer)
            except Exception:
                continue

    def serve_tcp() -> None:
        while True:
            conn, _ = tcp.accept()
            with conn:
                try:
                    size = struct.unpack("!H", conn.recv(2))[0]
                    data = b""
                    while len(data) < size:
                        data += conn.recv(size - len(data))
                    reply = answer(zone, seen, data)
                    conn.sendall(struct.pack("!H", len(reply)) + reply)
                except Exception:
                    continue

    for target in (serve_udp, serve_tcp):
        threading.Thread(target=target, daemon=True).start()


def prove(address: str, port: int) -> str:
    """An HTTP GET straight to `address`, from outside any sandbox: its first line."""
    host = f"[{address}]" if ":" in address else address
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/proof", timeout=5) as reply:
            return f"{reply.status} {reply.read().decode().strip()}"
    except OSError as err:
        return f"error {err}"


def main() -> int:
    split = sys.argv.index("--")
    with open(sys.argv[1]) as handle:
        config: dict[str, Any] = json.load(handle)
    command = sys.argv[split + 1:]
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    for address in config["addresses"]:
        suffix = "/128" if ":" in address else "/32"
        extra = ["nodad"] if ":" in address else []
        subprocess.run(["ip", "addr", "add", address + suffix, "dev", "lo", *extra], check=True)
    seen = Seen()
    port = int(config["port"])
    for address in ["127.0.0.1", "::1", *config["addresses"]]:
        http_server(address, port, seen)
    dns_server(config["zone"], seen)
    if "https" in config:
        https_server(config["https"], seen)
    fd, resolv = tempfile.mkstemp(suffix=".conf")
    with os.fdopen(fd, "w") as handle:
        handle.write(f"nameserver {DNS_ADDRESS}\noptions timeout:2 attempts:1\n")
    os.chmod(resolv, 0o644)
    subprocess.run(["mount", "--bind", resolv, "/etc/resolv.conf"], check=True)
    proof = {target: prove(target, port) for target in config.get("prove", [])}
    with seen.lock:
        seen.requests.clear()  # what the proof asked is not what the sandbox did
    status = subprocess.run(command).returncode
    with seen.lock, open(config["log"], "w") as handle:
        json.dump({"proof": proof, "requests": seen.requests,
                   "questions": seen.questions}, handle)
    os.unlink(resolv)
    return status


if __name__ == "__main__":
    sys.exit(main())
