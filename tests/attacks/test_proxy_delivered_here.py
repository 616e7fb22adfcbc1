"""The class of red-team escape 15: whatever leads an address to this host (a netfilter
rule of any form, after the route was chosen), the proxy refuses a connection the
kernel delivered to a socket of this host (linux/sock_diag.py), as it refuses this
host's own addresses.

Each case adds one rule to the lab's host (support/lab.py) right before lnk starts,
proves from the host that the rule leads the address to the host's own service (curl),
then asks the proxy for it by an allowed name, over HTTP and SOCKS5, with a far server
by another allowed name as the control that the proxy still connects elsewhere.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from attacks.test_network_attacks import ATTACKER, LOG_VARIABLE, _results
from support.lab import FAR_V4, HOST_V4, HOST_V6
from support.netlab import Lab
from support.red_team import need
from support.sandbox import PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

HOST_PORT = 8090
FAR_PORT = 8080
NATTED_V4, NATTED_V6 = "198.51.100.9", "2001:db8:99::9"
ASKED_PORT = 7070  # the port the sandbox asks for; the rules lead it to HOST_PORT
ZONE = {"nat.allowed.test.": [[NATTED_V4]], "nat6.allowed.test.": [[NATTED_V6]],
        "far.allowed.test.": [[FAR_V4]]}
SPEC = '[network]\nmode = "proxy"\nallow = ["*.allowed.test"]\n'

RULES = {
    "DNAT to another port": (
        "nat.allowed.test", f"iptables -t nat -A OUTPUT -d {NATTED_V4} -p tcp --dport "
        f"{ASKED_PORT} -j DNAT --to-destination {HOST_V4}:{HOST_PORT}",
        f"http://{NATTED_V4}:{ASKED_PORT}"),
    "REDIRECT": (
        "nat.allowed.test", f"iptables -t nat -A OUTPUT -d {NATTED_V4} -p tcp --dport "
        f"{ASKED_PORT} -j REDIRECT --to-ports {HOST_PORT}", f"http://{NATTED_V4}:{ASKED_PORT}"),
    "DNAT to the loopback": (
        "nat.allowed.test", f"iptables -t nat -A OUTPUT -d {NATTED_V4} -p tcp --dport "
        f"{ASKED_PORT} -j DNAT --to-destination 127.0.0.1:{HOST_PORT}",
        f"http://{NATTED_V4}:{ASKED_PORT}"),
    "IPv6 DNAT": (
        "nat6.allowed.test", f"ip6tables -t nat -A OUTPUT -d {NATTED_V6} -p tcp --dport "
        f"{ASKED_PORT} -j DNAT --to-destination [{HOST_V6}]:{HOST_PORT}",
        f"http://[{NATTED_V6}]:{ASKED_PORT}"),
}


def _lab_with(sandbox: Sandbox, rule: str, url: str) -> tuple[Lab, Sandbox, Path]:
    """The lab, with `rule` added on its host (and `url` fetched there as the proof)
    right before lnk starts."""
    lab = Lab(sandbox.base, ZONE, [NATTED_V4, NATTED_V6], port=FAR_PORT,
              host_port=HOST_PORT)
    supervised = lab.supervised(sandbox)
    proof = sandbox.base / "nat-proof"
    script = (f"PATH=/usr/sbin:/usr/bin:/sbin:/bin; {rule} && curl -gs --max-time 10 "
              f"{url}/proof > {proof}; exec \"$@\"")
    prefix = supervised.who.prefix
    split = prefix.index("--") + 1
    who = dataclasses.replace(supervised.who, prefix=(
        *prefix[:split], "sh", "-c", script, "sh", *prefix[split:]))
    return lab, dataclasses.replace(supervised, who=who), proof


def _attacks(name: str) -> list[dict[str, object]]:
    return [
        {"op": "http", "send": f"GET http://far.allowed.test:{FAR_PORT}/far HTTP/1.1\r\n"
                               "Host: far.allowed.test\r\n\r\n"},
        {"op": "http", "send": f"GET http://{name}:{ASKED_PORT}/by-http HTTP/1.1\r\n"
                               f"Host: {name}\r\n\r\n"},
        {"op": "socks", "atyp": 3, "host": name, "port": ASKED_PORT,
         "send": "GET /by-socks HTTP/1.0\r\n\r\n"},
    ]


@pytest.mark.parametrize("form", list(RULES))
def test_whatever_rule_leads_an_address_here(sandbox: Sandbox, form: str) -> None:
    name, rule, url = RULES[form]
    lab, supervised, proof = _lab_with(sandbox, rule, url)
    log = sandbox.base / "resolver.log"
    log.write_text("")
    sandbox.chown(log)
    attacks = _attacks(name)
    done = supervised.lnk("run", "--", PYTHON_INSIDE, "-c", ATTACKER, json.dumps(attacks),
                          spec=SPEC, env={LOG_VARIABLE: str(log)}, timeout=180)
    results = _results(done.stdout, len(attacks), done.stderr)
    need(proof.exists() and proof.read_text() == "served by this host\n",
         f"the rule did not lead {url} to the host's service: {done.stderr}")
    need(results[0] == {"status": "HTTP/1.1 200 OK", "body": f"served by {FAR_V4}\n"},
         results[0])
    served = sorted(path for _, _, path in lab.log()["requests"])
    assert results[1]["status"] == "HTTP/1.1 403 Forbidden", (results, served)
    assert results[2]["reply"] == 2, (results, served)
    assert "/by-http" not in served and "/by-socks" not in served, served
    assert "delivers to a socket of this host" in done.stderr, done.stderr


def test_an_entry_naming_the_address_opens_it(sandbox: Sandbox) -> None:
    """As for this host's own addresses: an allow entry naming the very address (never
    a range, nor the name) opens what the kernel delivers here; the refusal above is
    the kernel's answer, not a connection that failed."""
    name, rule, url = RULES["DNAT to another port"]
    lab, supervised, proof = _lab_with(sandbox, rule, url)
    spec = f'[network]\nmode = "proxy"\nallow = ["*.allowed.test", "{NATTED_V4}"]\n'
    attacks = _attacks(name)[1:2]
    done = supervised.lnk("run", "--", PYTHON_INSIDE, "-c", ATTACKER, json.dumps(attacks),
                          spec=spec, timeout=180)
    results = _results(done.stdout, len(attacks), done.stderr)
    need(proof.read_text() == "served by this host\n", done.stderr)
    assert results[0] == {"status": "HTTP/1.1 200 OK", "body": "served by this host\n"}, \
        results
    assert "/by-http" in {path for _, _, path in lab.log()["requests"]}
