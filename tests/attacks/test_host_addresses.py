"""The proxy never leads an allowed name to this host: any address its kernel delivers
locally, whatever range it is in, added whenever.

The lab (support/lab.py) stands for a host on a network: its namespace holds the
supervisor, an interface like eth0 with a public-looking address (203.0.113.1, and
2001:db8:1::1) and a service bound to every address (`::`, dual-stack: 0.0.0.0 too) on
HOST_PORT; the far network behind it serves the names that may be reached. Each attack is
proven possible from the host first (the service answers on each address; the NAT64 form
alone needs a gateway the lab has not), then tried
from inside by HTTP (absolute URI and CONNECT), SOCKS5 and the sandbox's own DNS; the
service's log shows it was never reached but through `[network] forward`, the way to a
port of this host, tried as the control in the same run.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from attacks.test_network_attacks import (
    AAAA,
    ATTACKER,
    LOG_VARIABLE,
    NOERROR,
    REFUSED,
    SOCKS_NOT_ALLOWED,
    A,
    _results,
    asked,
    attack,
)
from support.lab import FAR_V4, HOST_V4, HOST_V6
from support.netlab import Lab
from support.sandbox import PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

HOST_PORT = 8090
FAR_PORT = 8080
PUBLIC = "198.51.100.7"  # a far server no range refuses
FRESH = "198.18.0.7"  # far at first; the host's own once the run adds an interface for it
BROADCAST = "203.0.113.255"  # the host's subnet's broadcast
OWN_NAMES = {  # name -> (its address, how a refusal describes it)
    "self.allowed.test": (HOST_V4, "this host's own address"),
    "self6.allowed.test": (HOST_V6, "this host's own address"),
    "mapped.allowed.test": (f"::ffff:{HOST_V4}",
                            f"the IPv4-mapped form of this host's own address ({HOST_V4})"),
    "nat64.allowed.test": ("64:ff9b::cb00:7101",
                           f"the NAT64 form of this host's own address ({HOST_V4})"),
    "bcast.allowed.test": (BROADCAST, "this host's broadcast address"),
}
ZONE = {
    **{f"{name}.": [[address]] for name, (address, _) in OWN_NAMES.items()},
    "fresh.allowed.test.": [[FRESH]],
    "far.allowed.test.": [[FAR_V4]],
    "ctl.allowed.test.": [[PUBLIC]],
    "public.allowed.test.": [[PUBLIC]],
}
SPEC = (f'[network]\nmode = "proxy"\nallow = ["*.allowed.test"]\nforward = [{HOST_PORT}]\n')


@pytest.fixture
def resolver_log(sandbox: Sandbox) -> Path:
    path = sandbox.base / "resolver.log"
    path.write_text("")
    sandbox.chown(path)
    return path


def host_lab(sandbox: Sandbox) -> Lab:
    return Lab(sandbox.base, ZONE, [PUBLIC, FRESH], port=FAR_PORT, host_port=HOST_PORT,
               add_address=FRESH,
               prove=[f"{HOST_V4}@{HOST_PORT}", f"{HOST_V6}@{HOST_PORT}",
                      f"127.0.0.1@{HOST_PORT}", f"{FRESH}@{HOST_PORT}",
                      f"{PUBLIC}@{HOST_PORT}"])


def _get(name: str, path: str, port: int = HOST_PORT) -> dict[str, Any]:
    return {"op": "http", "send": f"GET http://{name}:{port}{path} HTTP/1.1\r\n"
                                  f"Host: {name}\r\n\r\n"}


def _every_way(name: str) -> list[dict[str, Any]]:
    return [
        _get(name, "/absolute"),
        {"op": "http", "send": f"CONNECT {name}:{HOST_PORT} HTTP/1.1\r\nHost: {name}\r\n\r\n",
         "then": "GET /tunnel HTTP/1.0\r\n\r\n"},
        {"op": "socks", "atyp": 3, "host": name, "port": HOST_PORT,
         "send": "GET /socks HTTP/1.0\r\n\r\n"},
        {"op": "dns", "name": name, "type": A},
        {"op": "dns", "name": name, "type": AAAA, "transport": "tcp"},
    ]


def _served(log: dict[str, Any], server: str) -> list[str]:
    return sorted(path for address, _, path in log["requests"] if address == server)


def test_an_allowed_name_never_leads_to_this_hosts_own_addresses(
        sandbox: Sandbox, resolver_log: Path) -> None:
    """Names leading to the host's interface address (IPv4, IPv6, IPv4-mapped, NAT64)
    and its subnet's broadcast are refused every way; a name leading to an address that
    is far at first is reached, then refused once the host gets an interface holding
    that address mid-run (nothing read at the start stands); a far name, and the
    host's service through `[network] forward`, are reached in the same run."""
    lab = host_lab(sandbox)
    report = sandbox.base / "report.jsonl"
    attacks = [one for name in OWN_NAMES for one in _every_way(name)]
    attacks += [
        _get("fresh.allowed.test", "/before"),
        {"op": "dns", "name": "fresh.allowed.test", "type": A},
        _get("ctl.allowed.test", "/lab/add-interface", FAR_PORT),
        *_every_way("fresh.allowed.test"),
        _get("public.allowed.test", "/public"),
        {"op": "raw_tcp", "port": HOST_PORT,
         "send": b"GET /forwarded HTTP/1.0\r\n\r\n".hex()},
        {"op": "getaddrinfo", "name": "self.allowed.test"},
    ]
    done = lab.supervised(sandbox).lnk(
        "run", "--report", str(report), "--", PYTHON_INSIDE, "-c", ATTACKER,
        json.dumps(attacks), spec=SPEC, env={LOG_VARIABLE: str(resolver_log)}, timeout=180)
    results = _results(done.stdout, len(attacks), done.stderr)
    log = lab.log()
    # From the host itself, each is a real way to its service (or to the far server).
    for address in (HOST_V4, HOST_V6, "127.0.0.1"):
        assert log["proof"][f"{address}@{HOST_PORT}"] == "200 served by this host"
    assert log["proof"][f"{FRESH}@{HOST_PORT}"] == f"200 served by {FRESH}"
    assert log["proof"][f"{PUBLIC}@{HOST_PORT}"] == f"200 served by {PUBLIC}"
    for index, (name, (address, kind)) in enumerate(OWN_NAMES.items()):
        absolute, tunnel, socks, dns_a, dns_aaaa = results[index * 5:index * 5 + 5]
        why = (f"{name}:{HOST_PORT}: it resolves to {address}, {kind}; a port of this host "
               "is reached through [network] forward")
        assert absolute == {"status": "HTTP/1.1 403 Forbidden",
                            "body": f"lnk-sandbox: {why}\n"}, name
        assert tunnel == {"status": "HTTP/1.1 403 Forbidden"}, name
        assert socks == {"reply": SOCKS_NOT_ALLOWED}, name
        assert dns_a == dns_aaaa == {"id": True, "qr": 1, "rcode": REFUSED, "records": []}
        assert f"lnk-sandbox: refused {why}" in done.stderr
    rest = results[len(OWN_NAMES) * 5:]
    before, dns_before, added, *fresh = rest[:3 + 5]
    public, forwarded, resolved = rest[8:]
    assert before == {"status": "HTTP/1.1 200 OK", "body": f"served by {FRESH}\n"}
    assert dns_before == {"id": True, "qr": 1, "rcode": NOERROR,
                          "records": [["fresh.allowed.test", A, FRESH]]}
    assert added["status"] == "HTTP/1.1 200 OK"
    assert added["body"] in ("added dummy\n", "added bridge\n")
    assert fresh[0]["status"] == "HTTP/1.1 403 Forbidden"
    assert f"it resolves to {FRESH}, this host's own address" in fresh[0]["body"]
    assert fresh[1] == {"status": "HTTP/1.1 403 Forbidden"}
    assert fresh[2] == {"reply": SOCKS_NOT_ALLOWED}
    assert fresh[3] == fresh[4] == {"id": True, "qr": 1, "rcode": REFUSED, "records": []}
    assert public == {"status": "HTTP/1.1 200 OK", "body": f"served by {PUBLIC}\n"}
    assert bytes.fromhex(forwarded["received"]).split(b"\r\n")[0] == b"HTTP/1.0 200 OK"
    assert bytes.fromhex(forwarded["received"]).endswith(b"served by this host\n")
    assert resolved == {"gaierror": socket.EAI_AGAIN}
    # The host's service was reached through the forward alone; the far servers served
    # the first look at FRESH, the lab's control and the public name.
    assert _served(log, "::") == ["/forwarded"]
    assert _served(log, FRESH) == ["/before"]
    assert _served(log, PUBLIC) == ["/lab/add-interface", "/public"]
    events = [json.loads(line) for line in report.read_text().splitlines()]
    refused = {e["resolved"] for e in events if e["rule"] == "network.address"}
    assert refused == {address for address, _ in OWN_NAMES.values()} | {FRESH}
    assert "fresh.allowed.test" in asked(resolver_log)
    assert done.returncode == 0


def test_only_the_very_address_opens_this_hosts_own(sandbox: Sandbox,
                                                    resolver_log: Path) -> None:
    """A range in allow opens the network's other addresses, never the host inside it:
    with 203.0.113.0/24 allowed, the far end (203.0.113.2) is reached and the host's
    203.0.113.1 still refused; an entry naming the host's IPv6 address itself opens it,
    on its port."""
    lab = host_lab(sandbox)
    spec = ('[network]\nmode = "proxy"\nallow = ["*.allowed.test", "203.0.113.0/24", '
            f'"[{HOST_V6}]:{HOST_PORT}"]\n')
    attacks = [
        _get("far.allowed.test", "/far"),
        _get("self.allowed.test", "/self"),
        {"op": "socks", "atyp": 1, "host": HOST_V4, "port": HOST_PORT,
         "send": "GET /literal HTTP/1.0\r\n\r\n"},
        {"op": "dns", "name": "self.allowed.test", "type": A},
        _get("self6.allowed.test", "/named"),
        {"op": "dns", "name": "self6.allowed.test", "type": AAAA},
        _get("self6.allowed.test", "/other-port", FAR_PORT),
    ]
    results, done = attack(lab.supervised(sandbox), attacks, spec=spec, log=resolver_log)
    assert results[0] == {"status": "HTTP/1.1 200 OK", "body": f"served by {FAR_V4}\n"}
    assert results[1]["status"] == "HTTP/1.1 403 Forbidden"
    assert f"it resolves to {HOST_V4}, this host's own address" in results[1]["body"]
    assert results[2] == {"reply": SOCKS_NOT_ALLOWED}
    assert results[3] == {"id": True, "qr": 1, "rcode": REFUSED, "records": []}
    assert results[4] == {"status": "HTTP/1.1 200 OK", "body": "served by this host\n"}
    assert results[5]["records"] == [["self6.allowed.test", AAAA, HOST_V6]]
    assert results[6]["status"] == "HTTP/1.1 403 Forbidden"
    log = lab.log()
    assert _served(log, "::") == ["/named"]
    assert _served(log, FAR_V4) == ["/far"]
    assert (f"lnk-sandbox: refused self.allowed.test:{HOST_PORT}: it resolves to {HOST_V4}, "
            "this host's own address") in done.stderr
