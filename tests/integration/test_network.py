"""Network modes in real sandboxes: none, host, and proxy with its helper.

Each test runs a real program inside, as root (root mode) and as the unprivileged test
user, proves it started, and asserts the exact outcome: the errno of a connect, the HTTP
status, the SOCKS5 reply code, the DNS rcode. Servers for the tests listen on the host's
loopback only, and nothing else is contacted: a name the proxy refuses is never looked
up, which the proxy's resolver log (a test seam) shows.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.host_server import HostServer
from support.processes import descendants, wait_gone
from support.sandbox import LNK, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

BODY = "served by the host's loopback\n"
PROXY_SPEC = '[network]\nmode = "proxy"\nallow = ["localhost"]\n'


def proxy_spec(port: int) -> str:
    """`localhost` allowed on `port`: the one way to a service of the host's loopback
    by name (the address guard refuses `localhost` without a port)."""
    return f'[network]\nmode = "proxy"\nallow = ["localhost:{port}"]\n'
REFUSED_NAME = "not-allowed.invalid"
LOG_VARIABLE = "LNK_SANDBOX_TEST_RESOLVER_LOG"


@pytest.fixture
def host_server() -> Iterator[HostServer]:
    with HostServer(body=lambda path: BODY.encode()) as server:
        yield server


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
        "NODE_USE_ENV_PROXY=1",
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
    done = _run(sandbox, script, env={LOG_VARIABLE: str(resolver_log)},
                spec=proxy_spec(host_server.port))
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
        spec=proxy_spec(host_server.port), env={LOG_VARIABLE: str(resolver_log)})
    assert done.stdout.splitlines() == [
        "STARTED",
        "SOCKS localhost reply=0 HTTP/1.0 200 OK",
        f"SOCKS {REFUSED_NAME} reply=2",  # not allowed by ruleset
        "SOCKS 127.0.0.1 reply=2",  # an address is allowed only when listed
    ], done.stderr
    curl = _run(sandbox, f'curl -sS --noproxy "" -x "$ALL_PROXY" http://localhost:{port}/curl',
                env={LOG_VARIABLE: str(resolver_log)}, spec=proxy_spec(host_server.port))
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
        spec=proxy_spec(80), env={LOG_VARIABLE: str(resolver_log)})
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
        address = str(info[4][0])
        if info[0] == family and address not in found:
            found.append(address)
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
        cwd=sandbox.working_directory(PROXY_SPEC), env=sandbox.env(), stdin=subprocess.PIPE,
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
    assert not (left := wait_gone(tree)), [(pid, _cmdline(pid)) for pid in left]


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
    assert not wait_gone(tree)


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


# -- [network] forward and expose ---------------------------------------------------------

CONNECTS = r"""
import errno, socket, sys
print("STARTED", flush=True)
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        try:
            sock.connect((host.strip("[]"), int(port)))
            sock.sendall(b"GET /through-" + port.encode() + b" HTTP/1.0\r\n\r\n")
            data = b""
            while chunk := sock.recv(4096):
                data += chunk
            print(target, data.split(b"\r\n")[0].decode() or "empty", flush=True)
        except OSError as err:
            print(target, errno.errorcode.get(err.errno, err.errno), flush=True)
"""


@pytest.mark.parametrize("mode", ["none", "proxy"])
def test_forward_reaches_the_one_port_and_no_other(sandbox: Sandbox, host_server: HostServer,
                                                   mode: str) -> None:
    other = HostServer()
    report = sandbox.base / "report.jsonl"
    try:
        spec = f'[network]\nmode = "{mode}"\nforward = [{host_server.port}]\n'
        done = sandbox.lnk("run", "--report", str(report), "--", PYTHON_INSIDE, "-c",
                           CONNECTS, f"127.0.0.1:{host_server.port}",
                           f"[::1]:{host_server.port}", f"127.0.0.1:{other.port}",
                           spec=spec)
        assert done.stdout.splitlines() == [
            "STARTED", f"127.0.0.1:{host_server.port} HTTP/1.0 200 OK",
            f"[::1]:{host_server.port} HTTP/1.0 200 OK",
            f"127.0.0.1:{other.port} ECONNREFUSED"], done.stderr
        assert done.returncode == 0
        assert host_server.paths == [f"/through-{host_server.port}"] * 2
        assert other.paths == []
    finally:
        other.close()
    events = [json.loads(line) for line in report.read_text().splitlines()]
    assert [(e["kind"], e["subject"], e["rule"]) for e in events] == [
        ("forward", f"port {host_server.port}", "network.forward")] * 2  # each connection
    assert done.stderr.count(f"the sandbox reached the host's port {host_server.port} "
                             "([network] forward)") == 1


def test_a_forwarded_port_nothing_listens_on_resets(sandbox: Sandbox) -> None:
    port = _free_port()
    done = sandbox.run(PYTHON_INSIDE, "-c", CONNECTS, f"127.0.0.1:{port}",
                       spec=f'[network]\nforward = [{port}]\n')
    assert done.stdout.splitlines() == ["STARTED", f"127.0.0.1:{port} ECONNRESET"], \
        done.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


SERVE_INSIDE = r"""
import http.server, socket, sys, threading
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"served inside the sandbox on {self.server.server_address[1]}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
for port in sys.argv[1:]:
    server = http.server.HTTPServer(("127.0.0.1", int(port)), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
print("STARTED", flush=True)
print("READY", flush=True)
sys.stdin.readline()
"""


def test_expose_serves_a_request_from_the_host(sandbox: Sandbox) -> None:
    exposed, private = _free_port(), _free_port()
    report = sandbox.base / "report.jsonl"
    spec = sandbox.write_spec(f'[network]\nexpose = [{exposed}]\n')
    process = subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--yes", "--spec", str(spec),
         "--report", str(report), "--", PYTHON_INSIDE, "-c", SERVE_INSIDE, str(exposed),
         str(private)],
        cwd=sandbox.working_directory(spec.read_text()), env=sandbox.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    try:
        assert [process.stdout.readline(), process.stdout.readline()] == ["STARTED\n",
                                                                         "READY\n"]
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{exposed}/", timeout=10) as reply:
            assert reply.read() == f"served inside the sandbox on {exposed}\n".encode()
        # The port the sandbox listens on but does not expose is not the host's.
        with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
            sock.connect(("127.0.0.1", private))
        _, stderr = process.communicate("\n", timeout=30)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 0, stderr
    (event,) = [json.loads(line) for line in report.read_text().splitlines()]
    assert (event["kind"], event["subject"], event["rule"]) == (
        "expose", f"port {exposed}", "network.expose")
    assert f"the host reached the sandbox's port {exposed} ([network] expose)" in stderr
    # Gone with the run.
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("127.0.0.1", exposed))


def test_an_exposed_port_the_host_uses_refuses_the_launch(sandbox: Sandbox) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = sandbox.run("/bin/true", spec=f'[network]\nexpose = [{port}]\n')
    assert done.returncode == 125
    assert f"[network] expose: port {port} of the host's loopback cannot be listened on: " \
        "Address already in use" in done.stderr
    assert "Traceback" not in done.stderr


# -- [network] unix: named path sockets, a real ssh-agent ----------------------------------

UNIX_CONNECT = r"""
import errno, os, socket, sys
print("STARTED", os.environ.get("SSH_AUTH_SOCK", "<unset>"), flush=True)
for path in sys.argv[1:]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(path)
            print(path, "connected", flush=True)
        except OSError as err:
            print(path, errno.errorcode.get(err.errno, err.errno), flush=True)
"""


@pytest.fixture
def agent(sandbox: Sandbox) -> Iterator[dict[str, str]]:
    """A real ssh-agent run by the test's user, with one key, its socket where no
    sandbox sees it (the host's /tmp)."""
    folder = sandbox.base / "agent"
    folder.mkdir()
    sandbox.chown(folder)
    sock = folder / "agent.sock"
    run = [*sandbox.who.prefix]
    started = subprocess.run([*run, "ssh-agent", "-a", str(sock), "-s"], capture_output=True,
                             text=True, check=True)
    pid = int(started.stdout.split("SSH_AGENT_PID=")[1].split(";")[0])
    key = folder / "key"
    subprocess.run([*run, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "lnk-test",
                    "-f", str(key)], check=True, capture_output=True)
    env = {"SSH_AUTH_SOCK": str(sock), "PATH": "/usr/bin:/bin"}
    subprocess.run([*run, "ssh-add", "-q", str(key)], check=True, env=env,
                   capture_output=True)
    listed = subprocess.run([*run, "ssh-add", "-l"], env=env, capture_output=True,
                            text=True, check=True).stdout.strip()
    try:
        yield {"socket": str(sock), "listed": listed}
    finally:
        os.kill(pid, signal.SIGTERM)


def test_a_named_agent_socket_works_and_others_stay_closed(
        sandbox: Sandbox, agent: dict[str, str]) -> None:
    other = sandbox.base / "agent" / "other.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(other))
        listener.listen()
        os.chmod(other, 0o777)
        env = {"SSH_AUTH_SOCK": agent["socket"]}
        named = '[network]\nunix = ["$SSH_AUTH_SOCK"]\n'
        done = sandbox.run("/bin/sh", "-c", "echo STARTED; ssh-add -l; echo ssh-add=$?",
                           spec=named, env=env)
        assert done.stdout.splitlines() == ["STARTED", agent["listed"], "ssh-add=0"], \
            done.stderr
        probe = sandbox.run(PYTHON_INSIDE, "-c", UNIX_CONNECT, agent["socket"], str(other),
                            spec=named, env=env)
        assert probe.stdout.splitlines() == [
            f"STARTED {agent['socket']}", f"{agent['socket']} connected",
            f"{other} ENOENT"], probe.stderr
        # Not named: the agent's socket is not there at all, and its variable not passed.
        unnamed = sandbox.run(PYTHON_INSIDE, "-c", UNIX_CONNECT, agent["socket"],
                              spec='[env]\nkeep = ["PATH"]\n', env=env)
        assert unnamed.stdout.splitlines() == ["STARTED <unset>",
                                               f"{agent['socket']} ENOENT"], unnamed.stderr
        kept = sandbox.run("/bin/sh", "-c", "echo STARTED; ssh-add -l; echo ssh-add=$?",
                           spec='[env]\nkeep = ["PATH", "SSH_AUTH_SOCK"]\n', env=env)
        assert kept.stdout.splitlines() == ["STARTED", "ssh-add=2"], kept.stderr
        assert kept.stderr == "Error connecting to agent: No such file or directory\n"


def test_a_socket_inside_a_granted_folder_is_hidden_unless_named(sandbox: Sandbox) -> None:
    """A path socket listening inside a granted folder when the run starts is hidden (an
    empty file over it: connect is refused), with [network] unix or without it; named
    there, it is reached. Below Landlock's RESOLVE_UNIX (ABI 9) a run with the key says
    what stays open (a socket made after the launch)."""
    from support.capabilities import landlock_abi

    inside = sandbox.project / "app.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(inside))
        listener.listen()
        os.chmod(inside, 0o777)
        spec = '[files]\nwrite = ["."]\n[network]\nunix = []\n'
        done = sandbox.run(PYTHON_INSIDE, "-c", UNIX_CONNECT, str(inside), spec=spec)
        without = sandbox.run(PYTHON_INSIDE, "-c", UNIX_CONNECT, str(inside),
                              spec='[files]\nwrite = ["."]\n')
        named = sandbox.run(PYTHON_INSIDE, "-c", UNIX_CONNECT, str(inside),
                            spec=f'[files]\nwrite = ["."]\n[network]\nunix = ["{inside}"]\n')
    gap = "one made there after the launch would be reachable too"
    if sandbox.who.is_root:
        # Run by root the grant is the sandbox's own: a socket root listens on there
        # refuses the launch (docs/root-mode.md), with the key or without it.
        for refused in (done, without):
            assert refused.returncode == 125, refused
            assert "is a socket a root process listens on" in refused.stderr
        return
    for hidden in (done, without):
        assert hidden.stdout.splitlines() == ["STARTED <unset>", f"{inside} ECONNREFUSED"], \
            hidden.stderr
    assert named.stdout.splitlines() == ["STARTED <unset>", f"{inside} connected"]
    assert (gap in done.stderr) == (landlock_abi() < 9)


MOVE_AWAY = r"""
import errno, os, socket, sys
print("STARTED", flush=True)
with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
    sock.connect(sys.argv[1])
    print("connected", flush=True)
for folder in sys.argv[2:]:
    try:
        os.rename(folder, folder + "-moved")
        os.mkdir(folder)  # where a socket of the sandbox's own would go
        print(folder, "OK", flush=True)
    except OSError as err:
        print(folder, errno.errorcode[err.errno], flush=True)
"""


def test_a_named_socket_in_a_written_folder_cannot_be_moved_away(sandbox: Sandbox) -> None:
    """A socket [network] unix names inside a folder the sandbox writes is mounted as
    every mount there is: the folders above it, below the written folder, are mount
    points (`lnk sandbox plan` shows them), so the sandbox cannot rename the one holding
    it away and put a socket of its own at that path for the person's tools to reach.
    Control: a plain folder beside it renames. Outside, after the run, the path is still
    the person's listening socket."""
    project = sandbox.project
    folder, plain = project / "run" / "agent", project / "plain"
    folder.mkdir(parents=True)
    plain.mkdir()
    sandbox.chown()
    sock = folder / "s.sock"
    spec = f'[files]\nwrite = ["."]\n[network]\nunix = ["{sock}"]\n'
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(sock))
        listener.listen(4)
        os.chmod(sock, 0o777)
        inode = os.lstat(sock).st_ino
        shown = sandbox.lnk("plan", "--", "/bin/true", spec=spec)
        assert shown.returncode == 0, shown.stderr
        for above in (project / "run", folder):
            assert (f"bind       {above}    # a mount point, so it cannot be renamed, since "
                    f"it holds {sock}\n") in shown.stdout
        done = sandbox.run(PYTHON_INSIDE, "-c", MOVE_AWAY, str(sock), "run", "run/agent",
                           "plain", spec=spec, cwd=project)
        assert done.stdout.splitlines() == [
            "STARTED", "connected", "run EBUSY", "run/agent EBUSY", "plain OK"], done.stderr
        assert done.returncode == 0, done.stderr
        # The person's side: the socket is where it was, the daemon's, and answers.
        assert os.lstat(sock).st_ino == inode
        assert not (project / "run-moved").exists()
        assert (project / "plain-moved").is_dir()  # the control moved
        listener.settimeout(5)
        listener.accept()[0].close()  # the sandbox's own connect, queued
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(sock))
            listener.accept()[0].close()


def test_a_unix_entry_that_is_no_socket_is_a_spec_error(sandbox: Sandbox) -> None:
    plain = sandbox.base / "plain-file"
    plain.write_text("")
    done = sandbox.run("/bin/true", spec=f'[network]\nunix = ["{plain}"]\n')
    assert done.returncode == 125
    assert done.stderr == (f"lnk-sandbox: {sandbox.base}/spec.toml:2: key network.unix[0]: "
                           f"'{plain}': {plain} is not a socket\n  hint: [network] unix "
                           "names path sockets; grant other files in [files]\n")


# -- decisions at run time: --decide-fd --------------------------------------------------


class Decider:
    """The harness's side of --decide-fd: answers by port, records every line it got.

    `answers`: port -> "yes" (allow, remembered), "no" (deny), "never" (no answer)."""

    def __init__(self, answers: dict[int, str]) -> None:
        self.ours, self.theirs = socket.socketpair()
        self.answers = answers
        self.got: list[dict[str, object]] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        with self.ours.makefile("rwb", buffering=0) as stream:
            for line in stream:
                message = json.loads(line)
                self.got.append(message)
                if message["t"] != "ask":
                    continue
                answer = self.answers.get(int(message["port"]), "no")
                if answer == "never":
                    continue
                verdict: dict[str, object] = {"t": "verdict", "id": message["id"],
                                              "action": "allow" if answer == "yes" else "deny"}
                if answer == "yes":
                    verdict["remember"] = True
                else:
                    verdict["reason"] = "not this one"
                stream.write((json.dumps(verdict) + "\n").encode())

    def run(self, sandbox: Sandbox, spec: str, script: str, *, timeout: float = 1,
            report: Path | None = None) -> subprocess.CompletedProcess[str]:
        path = sandbox.write_spec(spec)
        fd = self.theirs.fileno()
        command = [*sandbox.who.prefix, LNK, "sandbox", "run", "--yes", "--spec", str(path),
                   "--decide-fd", str(fd), "--decide-timeout", str(timeout)]
        if report is not None:
            command += ["--report", str(report)]
        done = subprocess.run([*command, "--", "/bin/sh", "-c", f"echo STARTED; {script}"],
                              cwd=sandbox.working_directory(spec), env=sandbox.env(),
                              capture_output=True,
                              text=True, timeout=60, pass_fds=[fd])
        assert done.stdout.startswith("STARTED\n"), done.stderr
        return done

    def close(self) -> None:
        self.theirs.close()
        self.ours.close()


def _curl(port: int, path: str) -> str:
    return (f'curl -s --noproxy "" -o /dev/null -w "{path} %{{http_code}}\\n" '
            f"http://localhost:{port}/{path}; ")


def test_a_decider_answering_yes_no_and_never(sandbox: Sandbox,
                                             host_server: HostServer) -> None:
    no_port, never_port = _free_port(), _free_port()
    decider = Decider({host_server.port: "yes", no_port: "no", never_port: "never"})
    report = sandbox.base / "report.jsonl"
    # The host's loopback named by address, so that a name the decider allows may lead
    # there (the address guard still judges what the decider allowed).
    spec = '[network]\nmode = "proxy"\nallow = ["127.0.0.1"]\n'
    try:
        done = decider.run(sandbox, spec, _curl(host_server.port, "yes")
                           + _curl(host_server.port, "again") + _curl(no_port, "no")
                           + _curl(never_port, "never"), report=report)
    finally:
        decider.close()
    assert done.stdout.splitlines()[1:] == ["yes 200", "again 200", "no 403", "never 403"]
    assert host_server.paths == ["/yes", "/again"]
    hello, *asks = decider.got
    assert hello == {"t": "hello", "proto": 1, "allow": ["127.0.0.1"], "deny": []}
    # Remembered: the second request to the allowed port was not asked about.
    assert [(a["t"], a["host"], a["port"]) for a in asks] == [
        ("ask", "localhost", host_server.port), ("ask", "localhost", no_port),
        ("ask", "localhost", never_port)]
    for ask in asks:
        process = ask["process"]
        assert isinstance(process, dict)
        assert process["exe"] == "/usr/bin/curl" and process["pid"] > 0
        assert f"http://localhost:{ask['port']}/" in " ".join(process["argv"])
    events = [json.loads(line) for line in report.read_text().splitlines()]
    assert [(e["subject"], e["rule"], e["reason"]) for e in events] == [
        (f"localhost:{no_port}", "network.decide", "the decider refused it: not this one"),
        (f"localhost:{never_port}", "network.decide", "no verdict within 1 seconds")]
    assert f"lnk-sandbox: refused localhost:{never_port}: no verdict within 1 seconds" \
        in done.stderr


def test_nothing_is_looked_up_before_an_allow(sandbox: Sandbox, resolver_log: Path) -> None:
    no_port = _free_port()
    decider = Decider({no_port: "no"})
    spec = '[network]\nmode = "proxy"\nallow = []\n'
    path = sandbox.write_spec(spec)
    fd = decider.theirs.fileno()
    try:
        done = subprocess.run(
            [*sandbox.who.prefix, LNK, "sandbox", "run", "--yes", "--spec", str(path),
             "--decide-fd", str(fd), "--", "/bin/sh", "-c", "echo STARTED; "
             + _curl(no_port, "no") + "getent hosts decided.invalid; echo getent=$?"],
            cwd=sandbox.working_directory(spec),
            env=sandbox.env({LOG_VARIABLE: str(resolver_log)}),
            capture_output=True, text=True, timeout=60, pass_fds=[fd])
    finally:
        decider.close()
    assert done.stdout.splitlines() == ["STARTED", "no 403", "getent=2"], done.stderr
    assert _asked(resolver_log) == []
    # The sandbox's own DNS never asks the decider.
    assert [m["port"] for m in decider.got if m["t"] == "ask"] == [no_port]


class _Closing:
    """A decider that says nothing and closes its end at once, or sends garbage."""

    def __init__(self, send: bytes | None) -> None:
        self.ours, self.theirs = socket.socketpair()
        if send is not None:
            self.ours.sendall(send)
        else:
            self.ours.close()


@pytest.mark.parametrize(("send", "why"), [
    (None, "the decider is gone (it closed its end)"),
    (b"this is not json\n", "the decider is gone (a line that is not JSON)"),
    (b'{"t": "verdict", "id": 99, "action": "allow"}\n',
     "the decider is gone (a verdict for id 99, which no question has)"),
])
def test_a_decider_that_goes_away_or_breaks_the_protocol_fails_closed(
        sandbox: Sandbox, host_server: HostServer, send: bytes | None, why: str) -> None:
    decider = _Closing(send)
    spec = sandbox.write_spec('[network]\nmode = "proxy"\nallow = ["127.0.0.1"]\n')
    fd = decider.theirs.fileno()
    try:
        done = subprocess.run(
            [*sandbox.who.prefix, LNK, "sandbox", "run", "--yes", "--spec", str(spec),
             "--decide-fd", str(fd), "--", "/bin/sh", "-c",
             "echo STARTED; sleep 0.5; " + _curl(host_server.port, "after")],
            cwd=sandbox.working_directory(spec.read_text()), env=sandbox.env(),
            capture_output=True, text=True,
            timeout=60, pass_fds=[fd])
    finally:
        decider.theirs.close()
        if send is not None:
            decider.ours.close()
    assert done.stdout.splitlines() == ["STARTED", "after 403"], done.stderr
    assert done.returncode == 0
    assert host_server.paths == []
    assert f"lnk-sandbox: {why}: destinations outside [network] allow are refused from now " \
        "on" in done.stderr


def test_the_python_api_takes_a_decider_too(sandbox: Sandbox, host_server: HostServer) -> None:
    decider = Decider({host_server.port: "yes"})
    spec = sandbox.write_spec('[network]\nmode = "proxy"\nallow = ["127.0.0.1"]\n')
    fd = decider.theirs.fileno()
    code = ("import sys, supervisor; sys.exit(supervisor.run(sys.argv[3:], spec=sys.argv[1], "
            "yes=True, decide_fd=int(sys.argv[2]), decide_timeout=5))")
    try:
        done = subprocess.run(
            [*sandbox.who.prefix, sys.executable, "-c", code, str(spec), str(fd), "/bin/sh",
             "-c", _curl(host_server.port, "api")],
            cwd=sandbox.working_directory(spec.read_text()), env=sandbox.env(),
            capture_output=True, text=True,
            timeout=60, pass_fds=[fd])
    finally:
        decider.close()
    assert done.stdout == "api 200\n", done.stderr
    assert done.returncode == 0


def test_the_harness_api_takes_a_decider_too(sandbox: Sandbox,
                                             host_server: HostServer) -> None:
    """lnk_sandbox.run with decide_fd: the harness's decider answers for the call's
    supervisor, as --decide-fd does (without it, the same call gets a 403)."""
    decider = Decider({host_server.port: "yes"})
    spec = '{"network": {"mode": "proxy", "allow": ["127.0.0.1"]}, "files": {"read": ["."]}}'
    fd = decider.theirs.fileno()
    code = ("import json, sys, lnk_sandbox\n"
            "done = lnk_sandbox.run_sync(sys.argv[3:], spec=json.loads(sys.argv[1]), "
            "yes=True, decide_fd=int(sys.argv[2]), decide_timeout=5)\n"
            "sys.stdout.write(done.stdout.decode()); sys.exit(done.returncode)\n")
    try:
        done = subprocess.run(
            [*sandbox.who.prefix, sys.executable, "-c", code, spec, str(fd), "/bin/sh",
             "-c", _curl(host_server.port, "api")],
            cwd=sandbox.project, env=sandbox.env(), capture_output=True, text=True,
            timeout=60, pass_fds=[fd])
    finally:
        decider.close()
    assert done.stdout == "api 200\n", done.stderr
    assert done.returncode == 0


@pytest.mark.parametrize(("args", "spec", "message"), [
    (["--decide-fd", "3"], '[network]\nmode = "none"\n',
     "lnk-sandbox: --decide-fd decides on destinations the proxy is asked for, and the "
     "spec's network mode is 'none'\n  hint: set [network] mode = \"proxy\", or leave out "
     "--decide-fd\n"),
    (["--decide-fd", "97"], '[network]\nmode = "proxy"\n',
     "lnk-sandbox: --decide-fd 97: Bad file descriptor\n  hint: pass a descriptor open in "
     "lnk-sandbox: one end of a socket whose other end the harness holds\n"),
    (["--decide-fd", "x"], '[network]\nmode = "proxy"\n',
     "lnk-sandbox: <command line>: --decide-fd 'x' is not a descriptor number\n"),
    (["--decide-fd", "3", "--decide-timeout", "0"], '[network]\nmode = "proxy"\n',
     "lnk-sandbox: --decide-timeout 0: must be more than 0 seconds\n"),
])
def test_decider_options_that_cannot_work_are_refused(sandbox: Sandbox, args: list[str],
                                                      spec: str, message: str) -> None:
    done = sandbox.lnk("run", *args, "--", "/bin/true", spec=spec)
    assert (done.returncode, done.stderr) == (125, message)
