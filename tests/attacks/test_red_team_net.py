"""Red team, issue 26 item 3: this host's own services through the proxy, reached by what
the kernel delivers here without the address being one of the host's.

The lab (support/lab.py) stands for the host: an interface with 203.0.113.1 and a
service bound to every address on HOST_PORT, a far network behind it. Before lnk starts,
the host gets one NAT rule of the kind kube-proxy writes for a Service's externalIP or
a LoadBalancer address served on the node (and any port forward written as a DNAT in
OUTPUT): a public address, 198.51.100.7, delivered to the host itself. The route the
kernel answers for that address is unicast (the rule rewrites the packet after the route
is chosen), and no interface holds it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from attacks.test_network_attacks import ATTACKER, LOG_VARIABLE, _results
from support.lab import FAR_V4, HOST_V4
from support.netlab import Lab
from support.red_team import escaped, need
from support.sandbox import PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

HOST_PORT = 8090
FAR_PORT = 8080
NATTED = "198.51.100.7"
ZONE = {"nat.allowed.test.": [[NATTED]], "far.allowed.test.": [[FAR_V4]]}
SPEC = '[network]\nmode = "proxy"\nallow = ["*.allowed.test"]\n'


def _get(url: str, host: str) -> dict[str, str]:
    return {"op": "http", "send": f"GET {url} HTTP/1.1\r\nHost: {host}\r\n\r\n"}


@pytest.fixture
def resolver_log(sandbox: Sandbox) -> Path:
    path = sandbox.base / "resolver.log"
    path.write_text("")
    sandbox.chown(path)
    return path


def _natted_lab(sandbox: Sandbox) -> tuple[Lab, Sandbox, Path]:
    """The lab, with the host's NAT rule added (and proven from the host) right before
    lnk starts there."""
    lab = Lab(sandbox.base, ZONE, [NATTED], port=FAR_PORT, host_port=HOST_PORT)
    supervised = lab.supervised(sandbox)
    proof = sandbox.base / "nat-proof"
    rule = (f"/usr/sbin/iptables -t nat -A OUTPUT -d {NATTED} -p tcp --dport {HOST_PORT} -j DNAT "
            f"--to-destination {HOST_V4}:{HOST_PORT} && curl -s --max-time 10 "
            f"http://{NATTED}:{HOST_PORT}/nat-proof > {proof}; exec \"$@\"")
    prefix = supervised.who.prefix
    split = prefix.index("--") + 1
    who = dataclasses.replace(supervised.who, prefix=(*prefix[:split], "sh", "-c", rule, "sh",
                                                      *prefix[split:]))
    return lab, dataclasses.replace(supervised, who=who), proof


@escaped("proxy/own.py and linux/routes.py judge an address by its route type and the "
         "interfaces' addresses; a DNAT in the host's OUTPUT chain (kube-proxy's "
         "externalIPs and node LoadBalancer addresses, any port forward) delivers a public "
         "address to the host's own service, and the proxy connects to it")
def test_a_public_address_the_host_delivers_to_itself(sandbox: Sandbox,
                                                      resolver_log: Path) -> None:
    lab, supervised, proof = _natted_lab(sandbox)
    attacks = [
        _get(f"http://far.allowed.test:{FAR_PORT}/far", "far.allowed.test"),
        _get(f"http://nat.allowed.test:{HOST_PORT}/natted", "nat.allowed.test"),
        {"op": "socks", "atyp": 3, "host": "nat.allowed.test", "port": HOST_PORT,
         "send": "GET /natted-socks HTTP/1.0\r\n\r\n"},
    ]
    done = supervised.lnk("run", "--", PYTHON_INSIDE, "-c", ATTACKER, json.dumps(attacks),
                          spec=SPEC, env={LOG_VARIABLE: str(resolver_log)}, timeout=180)
    results = _results(done.stdout, len(attacks), done.stderr)
    # From the host: the NAT rule leads the public address to the host's own service.
    need(proof.read_text() == "served by this host\n", proof.read_text())
    need(results[0] == {"status": "HTTP/1.1 200 OK", "body": f"served by {FAR_V4}\n"},
         results[0])
    served = sorted(path for _, _, path in lab.log()["requests"])
    assert results[1]["status"] == "HTTP/1.1 403 Forbidden", (results, served)
    assert results[2]["reply"] == 2, (results, served)
    assert "/natted" not in served and "/natted-socks" not in served, served


def test_a_name_hidden_in_a_urls_user_part(sandbox: Sandbox, resolver_log: Path) -> None:
    """Held: `http://far.allowed.test@127.0.0.1:PORT/` and a CONNECT with the allowed
    name before an `@`: the proxy decides on the host the request reaches, never on the
    allowed name written in front of it."""
    lab = Lab(sandbox.base, ZONE, [NATTED], port=FAR_PORT, host_port=HOST_PORT)
    attacks = [
        _get(f"http://far.allowed.test@127.0.0.1:{FAR_PORT}/userinfo", "far.allowed.test"),
        _get(f"http://far.allowed.test:{FAR_PORT}@{HOST_V4}:{HOST_PORT}/port-userinfo",
             "far.allowed.test"),
        {"op": "http", "send": f"CONNECT far.allowed.test@{HOST_V4}:{HOST_PORT} HTTP/1.1\r\n"
                               f"Host: far.allowed.test\r\n\r\n"},
        _get(f"http://far.allowed.test:{FAR_PORT}/control", "far.allowed.test"),
    ]
    done = lab.supervised(sandbox).lnk(
        "run", "--", PYTHON_INSIDE, "-c", ATTACKER, json.dumps(attacks), spec=SPEC,
        env={LOG_VARIABLE: str(resolver_log)}, timeout=180)
    results = _results(done.stdout, len(attacks), done.stderr)
    need(results[3] == {"status": "HTTP/1.1 200 OK", "body": f"served by {FAR_V4}\n"},
         results[3])
    assert [r["status"].split(" ", 2)[1] for r in results[:3]] == ["403", "403", "403"], \
        results
    served = sorted(path for _, _, path in lab.log()["requests"])
    assert served == ["/control"], served
