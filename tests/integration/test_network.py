"""Network modes in real sandboxes: none, host, and proxy with its helper.

Each test runs a real program inside, as root (root mode) and as the unprivileged test
user, proves it started, and asserts the exact outcome: the errno of a connect, the HTTP
status, the SOCKS5 reply code, the DNS rcode. Servers for the tests listen on the host's
loopback only, and nothing else is contacted: a name the proxy refuses is never looked
up, which the proxy's resolver log (a test seam) shows.
"""

from __future__ import annotations

import errno
import http.server
import json
import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.processes import descendants
from support.sandbox import LNK, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

BODY = "served by the host's loopback\n"
PROXY_SPEC = '[network]\nmode = "proxy"\nallow = ["localhost"]\n'
REFUSED_NAME = "not-allowed.invalid"
LOG_VARIABLE = "LNK_SANDBOX_TEST_RESOLVER_LOG"


class HostServer:
    """An HTTP server on the host's 127.0.0.1; `paths` records what it was asked."""

    def __init__(self) -> None:
        paths: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                paths.append(self.path)
                body = BODY.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.paths = paths
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def host_server() -> Iterator[HostServer]:
    server = HostServer()
    yield server
    server.close()


@pytest.fixture
def resolver_log(sandbox: Sandbox) -> Path:
    """The file the proxy's resolver appends each name it looks up to."""
    path = sandbox.base / "resolver.log"
    path.write_text("")
    sandbox.chown(path)
    return path


def _run(sandbox: Sandbox, script: str, *args: str, spec: str | None = PROXY_SPEC,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`sh -c SCRIPT` inside, after proving it started."""
    done = sandbox.run("/bin/sh", "-c", f"echo STARTED; {script}", "sh", *args, spec=spec,
                       env=env)
    assert done.stdout.startswith("STARTED\n"), f"never started:\n{done.stderr}"
    return done


def _asked(log: Path) -> list[str]:
    return log.read_text().split()


# -- none (the default) and host --------------------------------------------------------


def test_none_cannot_reach_the_hosts_loopback(sandbox: Sandbox,
                                              host_server: HostServer) -> None:
    sandbox.probe("connect", "127.0.0.1", str(host_server.port)).expect(errno.ECONNREFUSED)
    spec = '[network]\nmode = "none"\n'
    sandbox.probe("connect", "127.0.0.1", str(host_server.port), spec=spec).expect(
        errno.ECONNREFUSED)
    assert host_server.paths == []


def test_none_cannot_reach_the_hosts_abstract_sockets(sandbox: Sandbox) -> None:
    name = f"lnk-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind("\0" + name)
        listener.listen()
        sandbox.probe("abstract", name).expect(errno.ECONNREFUSED)


OWN_LOOPBACK = r"""
import socket, sys
print("STARTED", flush=True)
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
client = socket.create_connection(server.getsockname(), timeout=5)
peer, _ = server.accept()
client.sendall(b"ping")
peer.sendall(peer.recv(4).upper())
print("ECHO", client.recv(4).decode())
"""


@pytest.mark.kernel_matrix
@pytest.mark.parametrize("mode", ["none", "proxy"])
def test_a_server_on_the_sandboxs_own_loopback_works(sandbox: Sandbox, mode: str) -> None:
    spec = f'[network]\nmode = "{mode}"\n'
    done = sandbox.run(PYTHON_INSIDE, "-c", OWN_LOOPBACK, spec=spec)
    assert done.stdout == "STARTED\nECHO PING\n", done.stderr
    assert done.returncode == 0


def test_host_mode_reaches_the_hosts_loopback(sandbox: Sandbox,
                                              host_server: HostServer) -> None:
    spec = '[network]\nmode = "host"\n'
    sandbox.probe("connect", "127.0.0.1", str(host_server.port), spec=spec).expect(0)


# -- proxy: HTTP, SOCKS5, direct connects -------------------------------------------------


def test_proxy_environment_and_resolv_conf(sandbox: Sandbox) -> None:
    done = _run(sandbox, "env | grep -i _proxy= | sort; cat /etc/resolv.conf")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()[1:]
    http_proxy = "http://127.0.0.1:3128"
    assert [line for line in lines if "=" in line] == sorted([
        "ALL_PROXY=socks5h://127.0.0.1:1080", f"HTTPS_PROXY={http_proxy}",
        f"HTTP_PROXY={http_proxy}", "NO_PROXY=localhost,127.0.0.1,::1",
        "all_proxy=socks5h://127.0.0.1:1080", f"http_proxy={http_proxy}",
        f"https_proxy={http_proxy}", "no_proxy=localhost,127.0.0.1,::1",
    ])
    assert "nameserver 127.0.0.1" in lines


@pytest.mark.kernel_matrix
def test_proxy_http_reaches_an_allowed_name_and_refuses_another(
        sandbox: Sandbox, host_server: HostServer, resolver_log: Path) -> None:
    # NO_PROXY names the sandbox's own loopback, so `localhost` (the host's, allowed)
    # is asked of the proxy explicitly with --noproxy ''.
    url = f"http://localhost:{host_server.port}/absolute"
    script = (
        f'curl -sS --noproxy "" {url}; '
        f'curl -sS --noproxy "" --proxytunnel http://localhost:{host_server.port}/tunnel; '
        f'curl -s --noproxy "" -o /dev/null -w "absolute %{{http_code}}\\n" '
        f"http://{REFUSED_NAME}/; "
        f'curl -s --noproxy "" -p -o /dev/null -w "connect %{{http_connect}}\\n" '
        f"http://{REFUSED_NAME}:8080/; echo curl=$?")
    done = _run(sandbox, script, env={LOG_VARIABLE: str(resolver_log)})
    assert done.stdout.splitlines()[1:] == [
        BODY.strip(), BODY.strip(), "absolute 403", "connect 403", "curl=56"], done.stderr
    assert host_server.paths == ["/absolute", "/tunnel"]
    assert _asked(resolver_log) == ["localhost", "localhost"]
    # Said once per name, whatever the port.
    assert done.stderr.count(f"lnk-sandbox: refused {REFUSED_NAME}:") == 1, done.stderr


SOCKS_CLIENT = r"""
import socket, struct, sys
print("STARTED", flush=True)
for target in sys.argv[1:]:
    kind, host, port = target.split(",")
    s = socket.create_connection(("127.0.0.1", 1080), timeout=10)
    s.sendall(b"\x05\x01\x00")
    assert s.recv(2) == b"\x05\x00"
    if kind == "name":
        address = b"\x03" + bytes([len(host)]) + host.encode()
    else:
        address = b"\x01" + socket.inet_aton(host)
    s.sendall(b"\x05\x01\x00" + address + struct.pack("!H", int(port)))
    reply = s.recv(10)
    line = f"SOCKS {host} reply={reply[1]}"
    if reply[1] == 0:
        s.sendall(f"GET /socks HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(4096):
            data += chunk
        line += " " + data.split(b"\r\n", 1)[0].decode()
    print(line, flush=True)
"""


def test_proxy_socks5_reaches_an_allowed_name_and_refuses_another(
        sandbox: Sandbox, host_server: HostServer, resolver_log: Path) -> None:
    port = str(host_server.port)
    done = sandbox.run(
        PYTHON_INSIDE, "-c", SOCKS_CLIENT, f"name,localhost,{port}",
        f"name,{REFUSED_NAME},{port}", f"address,127.0.0.1,{port}",
        spec=PROXY_SPEC, env={LOG_VARIABLE: str(resolver_log)})
    assert done.stdout.splitlines() == [
        "STARTED",
        "SOCKS localhost reply=0 HTTP/1.0 200 OK",
        f"SOCKS {REFUSED_NAME} reply=2",  # not allowed by ruleset
        "SOCKS 127.0.0.1 reply=2",  # an address is allowed only when listed
    ], done.stderr
    curl = _run(sandbox, f'curl -sS --noproxy "" -x "$ALL_PROXY" http://localhost:{port}/curl',
                env={LOG_VARIABLE: str(resolver_log)})
    assert curl.stdout.splitlines()[1:] == [BODY.strip()], curl.stderr
    assert host_server.paths == ["/socks", "/curl"]
    assert _asked(resolver_log) == ["localhost", "localhost"]


def test_proxy_direct_connects_bypassing_the_proxy_fail(sandbox: Sandbox,
                                                        host_server: HostServer) -> None:
    port = str(host_server.port)
    sandbox.probe("connect", "127.0.0.1", port, spec=PROXY_SPEC).expect(errno.ECONNREFUSED)
    sandbox.probe("connect", "localhost", port, spec=PROXY_SPEC).expect(errno.ECONNREFUSED)
    assert host_server.paths == []


# -- proxy: DNS --------------------------------------------------------------------------

DNS_CLIENT = r"""
import socket, struct, sys
print("STARTED", flush=True)

def skip_name(data, at):
    while data[at]:
        if data[at] & 0xC0 == 0xC0:
            return at + 2
        at += data[at] + 1
    return at + 1

for target in sys.argv[1:]:
    name, qtype, transport = target.split(",")
    question = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    query = struct.pack("!6H", 0x4C4B, 0x0100, 1, 0, 0, 0) + question + \
        struct.pack("!HH", int(qtype), 1)
    if transport == "tcp":
        s = socket.create_connection(("127.0.0.1", 53), timeout=10)
        s.sendall(struct.pack("!H", len(query)) + query)
        data = b""
        while len(data) < 2 or len(data) < 2 + struct.unpack("!H", data[:2])[0]:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        reply = data[2:]
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(10)
        s.sendto(query, ("127.0.0.1", 53))
        reply = s.recv(4096)
    ident, flags, _, count, _, _ = struct.unpack("!6H", reply[:12])
    at = skip_name(reply, 12) + 4
    answers = []
    for _ in range(count):
        at = skip_name(reply, at)
        kind, _, _, length = struct.unpack("!HHIH", reply[at:at + 10])
        data = reply[at + 10:at + 10 + length]
        at += 10 + length
        family = {1: socket.AF_INET, 28: socket.AF_INET6}.get(kind)
        if family:
            answers.append(socket.inet_ntop(family, data))
    print(f"DNS {name} {qtype} {transport} id={ident == 0x4C4B} rcode={flags & 0xF} "
          f"answers={','.join(answers)}", flush=True)
"""


def test_proxy_dns_answers_allowed_names_only(sandbox: Sandbox, resolver_log: Path) -> None:
    done = sandbox.run(
        PYTHON_INSIDE, "-c", DNS_CLIENT, "localhost,1,udp", "localhost,28,udp",
        f"{REFUSED_NAME},1,udp", "localhost,1,tcp", f"{REFUSED_NAME},28,tcp",
        spec=PROXY_SPEC, env={LOG_VARIABLE: str(resolver_log)})
    v4, v6 = _host_addresses("localhost", 4), _host_addresses("localhost", 6)
    assert done.stdout.splitlines() == [
        "STARTED",
        f"DNS localhost 1 udp id=True rcode=0 answers={v4}",
        f"DNS localhost 28 udp id=True rcode=0 answers={v6}",  # none: NOERROR, no record
        f"DNS {REFUSED_NAME} 1 udp id=True rcode=5 answers=",  # REFUSED
        f"DNS localhost 1 tcp id=True rcode=0 answers={v4}",
        f"DNS {REFUSED_NAME} 28 tcp id=True rcode=5 answers=",
    ], done.stderr
    assert REFUSED_NAME not in _asked(resolver_log)
    assert set(_asked(resolver_log)) == {"localhost"}
    assert f"lnk-sandbox: refused {REFUSED_NAME} (not in [network] allow)" in done.stderr


def test_proxy_dns_through_the_c_library(sandbox: Sandbox, resolver_log: Path) -> None:
    """glibc reads the sandbox's resolv.conf: a refused name does not resolve."""
    done = _run(sandbox, f"getent hosts {REFUSED_NAME}; echo getent=$?",
                env={LOG_VARIABLE: str(resolver_log)})
    assert done.stdout.splitlines()[1:] == ["getent=2"], done.stderr
    assert _asked(resolver_log) == []


def _host_addresses(name: str, version: int) -> str:
    """The host's addresses of `name` of one IP version, as the proxy's lookup finds them."""
    family = socket.AF_INET if version == 4 else socket.AF_INET6
    found: list[str] = []
    for info in socket.getaddrinfo(name, None, type=socket.SOCK_STREAM):
        if info[0] == family and info[4][0] not in found:
            found.append(info[4][0])
    return ",".join(found)


# -- the helper's life ---------------------------------------------------------------------

WAITER = r"""
import os, signal, sys
print("STARTED", flush=True)
print("READY", flush=True)
line = sys.stdin.readline().strip()
if line == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
sys.exit(int(line or "0"))
"""


def _start(sandbox: Sandbox) -> tuple[subprocess.Popen[str], int]:
    """A proxy-mode run waiting on its stdin, and the pid of its helper."""
    spec = sandbox.write_spec(PROXY_SPEC)
    process = subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--yes", "--spec", str(spec), "--",
         PYTHON_INSIDE, "-c", WAITER],
        cwd=sandbox.project, env=sandbox.env(), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    lines = [process.stdout.readline(), process.stdout.readline()]
    assert lines == ["STARTED\n", "READY\n"], lines
    helpers = [pid for pid in descendants(process.pid) if b"netns_helper" in _cmdline(pid)]
    assert len(helpers) == 1, helpers
    return process, helpers[0]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _gone(pids: set[int], timeout: float = 10) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not any(Path(f"/proc/{pid}").exists() for pid in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("how", ["normal", "target-sigkill", "supervisor-sigterm"])
def test_the_helper_is_gone_after_the_run(sandbox: Sandbox, how: str) -> None:
    process, helper = _start(sandbox)
    tree = descendants(process.pid)
    assert helper in tree
    expected = {"normal": 7, "target-sigkill": 128 + signal.SIGKILL,
                "supervisor-sigterm": 128 + signal.SIGTERM}[how]
    if how == "supervisor-sigterm":
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)  # stdin stays open: the target ends by the signal only
        process.communicate(timeout=30)
    else:
        process.communicate("7\n" if how == "normal" else "kill\n", timeout=30)
    assert process.returncode == expected
    assert _gone(tree), [(pid, _cmdline(pid)) for pid in tree if Path(f"/proc/{pid}").exists()]


@pytest.mark.kernel_matrix
def test_the_helper_killed_mid_run_ends_the_run_with_125(sandbox: Sandbox) -> None:
    process, helper = _start(sandbox)
    tree = descendants(process.pid)
    os.kill(helper, signal.SIGKILL)
    process.wait(timeout=30)  # stdin stays open: the target ends only if it is ended
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 125, stderr
    assert "the network helper died mid-run (killed by signal 9)" in stderr
    assert "Traceback" not in stderr
    assert _gone(tree)


def test_proxy_refusals_go_to_the_report(sandbox: Sandbox, resolver_log: Path) -> None:
    report = sandbox.base / "report.jsonl"
    done = sandbox.lnk(
        "run", "--report", str(report), "--", "/bin/sh", "-c",
        f'echo STARTED; curl -s --noproxy "" -o /dev/null -w "%{{http_code}}\\n" '
        f"http://{REFUSED_NAME}:81/; getent hosts {REFUSED_NAME}; echo getent=$?",
        spec=PROXY_SPEC, env={LOG_VARIABLE: str(resolver_log)})
    assert done.stdout.splitlines() == ["STARTED", "403", "getent=2"], done.stderr
    events = [json.loads(line) for line in report.read_text().splitlines()]
    assert [(e["kind"], e["subject"], e["resolved"], e["rule"]) for e in events][:2] == [
        ("network", f"{REFUSED_NAME}:81", REFUSED_NAME, "network.allow"),
        ("network", REFUSED_NAME, REFUSED_NAME, "network.allow"),
    ]
    assert done.stderr.count("lnk-sandbox: refused") == 1, done.stderr
    assert _asked(resolver_log) == []
