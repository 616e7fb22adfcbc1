"""A network of a test's own for lnk-sandbox's supervisor: `python lab.py CONFIG -- CMD...`.

Run as root by `unshare --mount --net --propagation private`, so nothing of it touches
the host's network. Its network namespace stands for the host (where the supervisor, and
so the proxy, runs); a second one, the far network, stands for everything else, joined
to it by a veth pair as a host's eth0 joins its network:

    this "host"  lo: 127.0.0.1, ::1 (servers), 127.0.0.53 (the DNS server)
                 lab-host: 203.0.113.1/24, 2001:db8:1::1/64 (HOST_V4, HOST_V6), default
                 routes through the far end; a server on every address on CONFIG
                 ["host_port"] (bound to ::, dual-stack: the host's own service on
                 0.0.0.0), when asked for
    far network  lab-far: 203.0.113.2/24 (FAR_V4), 2001:db8:1::2/64; on its loopback
                 the addresses the test wants (private, link-local, metadata, unique
                 local, a public one); an HTTP server on each of those and FAR_V4, on
                 CONFIG["port"] (and CONFIG["host_port"])

The DNS server answers from CONFIG["zone"] (a name's answers may change from one
question to the next); a resolv.conf naming it is bound over /etc/resolv.conf in the
lab's own mount namespace. The lab proves the servers CONFIG["prove"] names (ADDRESS or
ADDRESS@PORT) reachable from the host (outside any sandbox), then runs CMD (lnk-sandbox,
as root or through the test user's prefix) and waits for it. Everything seen (the
proof, every HTTP request with the address it came to, every DNS question) is written
to CONFIG["log"] as JSON when CMD ends; the lab exits with CMD's status.

A GET of /lab/add-interface on any far server (the sandbox asks it through the proxy)
adds an interface to the host while CMD runs (a dummy one, or a bridge where the kernel
has no dummy driver: both are an interface with nothing behind it) holding
CONFIG["add_address"], and answers `added dummy` or `added bridge`.

Zone: {"name.": [[answers of the 1st question], [2nd], ...]}, the last repeated; an
answer is an address (A or AAAA by its form), answered to the question of its type.

CONFIG["https"] (optional): {"address", "root", "cert", "key"}: an HTTPS server on that
address's port 443 (in the far network) serving the files under root (a package
registry's, built by support/registry.py), each GET logged in "requests" as [address,
local, path].
"""

from __future__ import annotations

import http.server
import ipaddress
import json
import os
import socket
import socketserver
import struct
import subprocess
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Callable
from typing import Any

import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset

DNS_ADDRESS = "127.0.0.53"
HOST_V4, FAR_V4 = "203.0.113.1", "203.0.113.2"
HOST_V6, FAR_V6 = "2001:db8:1::1", "2001:db8:1::2"
CLONE_NEWNET = 0x40000000


class Seen:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[list[str]] = []
        self.questions: list[list[str]] = []
        self.counts: dict[tuple[str, str], int] = {}


def http_server(address: str, port: int, seen: Seen, *, served_by: str | None = None,
                control: dict[str, str] | None = None) -> http.server.ThreadingHTTPServer:
    """`address`:`port` answering `served by ADDRESS` (or `served_by`); with `control`,
    /lab/add-interface adds the host's new interface (`add_interface`)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_GET(self) -> None:
            local = self.connection.getsockname()[0]
            with seen.lock:
                seen.requests.append([address, str(local), self.path])
            body = f"served by {served_by or address}\n".encode()
            if control is not None and self.path == "/lab/add-interface":
                body = f"added {add_interface(control)}\n".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    class Server(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in address else socket.AF_INET
        daemon_threads = True

        def server_bind(self) -> None:
            if address == "::":  # the host's own service: every address, both families
                self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            bind_without_lookup(self, address, port)

    server = Server((address, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def bind_without_lookup(server: http.server.HTTPServer, address: str, port: int) -> None:
    """HTTPServer.server_bind without its getfqdn(): a reverse lookup of the address,
    which the far network (no DNS there) would wait out for seconds per server."""
    socketserver.TCPServer.server_bind(server)
    server.server_name, server.server_port = address, port


def add_interface(control: dict[str, str]) -> str:
    """A new interface of the host holding control["address"]: a dummy, or a bridge where
    this kernel has no dummy driver. Run in the host's network namespace (the lab's main
    thread's, which nsenter -t enters: a far server's threads are in the far one)."""
    host = ["nsenter", "-t", control["pid"], "-n", "--"]
    kind = "dummy"
    if subprocess.run([*host, "ip", "link", "add", "lab-new", "type", "dummy"],
                      capture_output=True).returncode:
        kind = "bridge"
        subprocess.run([*host, "ip", "link", "add", "lab-new", "type", "bridge"], check=True)
    address = control["address"]
    suffix = "/128" if ":" in address else "/32"
    subprocess.run([*host, "ip", "addr", "add", address + suffix, "dev", "lab-new",
                    *(["nodad"] if ":" in address else [])], check=True)
    subprocess.run([*host, "ip", "link", "set", "lab-new", "up"], check=True)
    return kind


def far_network() -> tuple[subprocess.Popen[bytes], int]:
    """The far network: a namespace held by a sleeping process, joined to the host by a
    veth pair; the process and an fd of its namespace."""
    # Killed with the lab whatever ends it (pdeathsig), and holding none of its output:
    # whoever reads the lab's output to its end must not wait for the holder.
    holder = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--", "unshare", "--net",
                               "--", "sh", "-c", "echo ready; exec sleep 86400"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    assert holder.stdout is not None and holder.stdout.readline() == b"ready\n"
    far = ["nsenter", "-t", str(holder.pid), "-n", "--"]
    for argv in (
        ["ip", "link", "add", "lab-host", "type", "veth", "peer", "name", "lab-far",
         "netns", str(holder.pid)],
        ["ip", "addr", "add", f"{HOST_V4}/24", "dev", "lab-host"],
        ["ip", "addr", "add", f"{HOST_V6}/64", "dev", "lab-host", "nodad"],
        ["ip", "link", "set", "lab-host", "up"],
        ["ip", "route", "add", "default", "via", FAR_V4],
        ["ip", "-6", "route", "add", "default", "via", FAR_V6],
        [*far, "ip", "link", "set", "lo", "up"],
        [*far, "ip", "addr", "add", f"{FAR_V4}/24", "dev", "lab-far"],
        [*far, "ip", "addr", "add", f"{FAR_V6}/64", "dev", "lab-far", "nodad"],
        [*far, "ip", "link", "set", "lab-far", "up"],
        [*far, "ip", "route", "add", "default", "via", HOST_V4],
        [*far, "ip", "-6", "route", "add", "default", "via", HOST_V6],
    ):
        subprocess.run(argv, check=True)
    return holder, os.open(f"/proc/{holder.pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)


def in_namespace(fd: int, work: Callable[[], None]) -> None:
    """Run `work` in a thread that joined the network namespace `fd`: sockets it makes
    are that namespace's, and so are the threads it starts (a thread's namespaces are
    its own; the lab's main thread stays in the host's)."""
    import ctypes

    failure: list[BaseException] = []

    def joined() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns")
            work()
        except BaseException as err:
            failure.append(err)

    thread = threading.Thread(target=joined)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


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

        def server_bind(self) -> None:
            bind_without_lookup(self, address, 443)

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


def prove(target: str, port: int) -> str:
    """An HTTP GET straight to `target` (an address, or ADDRESS@PORT), from outside any
    sandbox: its first line."""
    address, _, other = target.partition("@")
    port = int(other) if other else port
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
    holder, far = far_network()
    seen = Seen()
    port = int(config["port"])
    host_port = config.get("host_port")
    ports = [port, *([int(host_port)] if host_port else [])]
    control = {"pid": str(os.getpid()), "address": config.get("add_address", "")}

    def far_servers() -> None:
        far_net = ["nsenter", "-t", str(holder.pid), "-n", "--"]
        for address in config["addresses"]:
            suffix = "/128" if ":" in address else "/32"
            extra = ["nodad"] if ":" in address else []
            subprocess.run([*far_net, "ip", "addr", "add", address + suffix, "dev", "lo",
                            *extra], check=True)
            for each in ports:
                http_server(address, each, seen, control=control)
        for each in ports:  # the far end's own address, in the host's subnet
            http_server(FAR_V4, each, seen, control=control)
        if "https" in config:
            https_server(config["https"], seen)

    in_namespace(far, far_servers)
    for address in ["127.0.0.1", "::1"]:
        http_server(address, port, seen)
    if host_port:
        http_server("::", int(host_port), seen, served_by="this host")
    dns_server(config["zone"], seen)
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
    holder.kill()
    holder.wait()
    return status


if __name__ == "__main__":
    sys.exit(main())
