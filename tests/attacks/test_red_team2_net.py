"""Red team 2 (issue 26 item 3's class): this host's own services through the proxy, by
addresses that are the host's in another spelling: an IPv4-mapped IPv6 address of the
host's interface, the unspecified addresses (which the kernel delivers locally), and
the deprecated IPv4-compatible form; a name answering a far address and the host's
together, or the host's on a second question (rebinding). The NAT case is another branch's.

The lab (support/lab.py) stands for the host: 203.0.113.1 and 2001:db8:1::1 on its
interface, a service bound to every address on HOST_PORT; the allowed names are
answered by the lab's DNS server. Each attack runs inside a real sandbox (root only: the
lab needs a network namespace of the test's own).
"""

from __future__ import annotations

import json

import pytest

from attacks.test_network_attacks import ATTACKER, LOG_VARIABLE, _results
from support.lab import FAR_V4, HOST_V4
from support.netlab import Lab
from support.red_team import need
from support.sandbox import PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

HOST_PORT = 8090
FAR_PORT = 8080
SPEC = '[network]\nmode = "proxy"\nallow = ["*.allowed.test"]\n'
FORMS = {
    "mapped": f"::ffff:{HOST_V4}",
    "mapped-hex": "::ffff:cb00:7101",
    "compat": f"::{HOST_V4}",
    "zero": "0.0.0.0",
    "unspecified": "::",
    "zero-net": "0.1.2.3",
}
ZONE = {f"{name}.allowed.test.": [[address]] for name, address in FORMS.items()}
ZONE["far.allowed.test."] = [[FAR_V4]]
# a far address and the host's in one answer; and one answered far first, the host's on
# every later question (rebinding): the far server may answer (it serves every port),
# the host's never
ZONE["two.allowed.test."] = [[FAR_V4, HOST_V4]]
ZONE["rebind.allowed.test."] = [[FAR_V4], [HOST_V4], [HOST_V4], [HOST_V4]]
NAMES = [*FORMS, "two", "rebind"]


def _get(url: str, host: str) -> dict[str, object]:
    return {"op": "http", "send": f"GET {url} HTTP/1.1\r\nHost: {host}\r\n\r\n"}


def test_the_hosts_own_address_in_another_spelling(sandbox: Sandbox) -> None:
    """Held or not: each allowed name answers the host's own address in another form;
    the proxy must refuse every one (HTTP and SOCKS), and the far server still serves."""
    log = sandbox.base / "resolver.log"
    log.write_text("")
    sandbox.chown(log)
    lab = Lab(sandbox.base, ZONE, [], port=FAR_PORT, host_port=HOST_PORT)
    attacks: list[dict[str, object]] = [
        _get(f"http://far.allowed.test:{FAR_PORT}/far", "far.allowed.test")]
    for name in NAMES:
        attacks.append(_get(f"http://{name}.allowed.test:{HOST_PORT}/{name}",
                            f"{name}.allowed.test"))
        attacks.append({"op": "socks", "atyp": 3, "host": f"{name}.allowed.test",
                        "port": HOST_PORT, "send": f"GET /{name}-socks HTTP/1.0\r\n\r\n"})
    done = lab.supervised(sandbox).lnk(
        "run", "--", PYTHON_INSIDE, "-c", ATTACKER, json.dumps(attacks), spec=SPEC,
        env={LOG_VARIABLE: str(log)}, timeout=240)
    results = _results(done.stdout, len(attacks), done.stderr)
    need(results[0] == {"status": "HTTP/1.1 200 OK", "body": f"served by {FAR_V4}\n"},
         results[0])
    requests = lab.log()["requests"]
    need([path for _, _, path in requests if path == "/far"] == ["/far"], requests)
    by_the_host = [r for r in requests if r[0] != FAR_V4]
    assert by_the_host == [], (by_the_host, results)
    for index, name in enumerate(FORMS):
        http, socks = results[1 + 2 * index], results[2 + 2 * index]
        assert http.get("status", "").split(" ")[1:2] != ["200"], (name, http)
        assert socks.get("reply") != 0, (name, socks)


