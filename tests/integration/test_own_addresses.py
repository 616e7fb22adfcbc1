"""This host's own addresses as the kernel says them, while they change: in a network
namespace of the test's own, the same process judges an address before and after it is
added to an interface, removed, or made local by a route alone (AnyIP, a router's
anycast), so nothing read earlier stands."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = [pytest.mark.requires_root]

SCRIPT = textwrap.dedent("""
    import ipaddress, json, subprocess
    from supervisor.linux.routes import KernelOwn, current_addresses

    def judged(text):
        found = KernelOwn()(ipaddress.ip_address(text))
        return None if found is None else [found.kind, found.form]

    def ip(*argv):
        subprocess.run(["ip", *argv], check=True)

    seen = {}
    ip("link", "set", "lo", "up")
    ip("link", "add", "lab0", "type", "bridge")
    seen["before"] = [judged("198.18.0.7"), judged("::ffff:198.18.0.7"),
                      judged("2001:db8:7::7")]
    ip("addr", "add", "198.18.0.7/24", "dev", "lab0")
    ip("-6", "addr", "add", "2001:db8:7::7/64", "dev", "lab0", "nodad")
    seen["added, down"] = [judged("198.18.0.7"), judged("::ffff:198.18.0.7"),
                           judged("2001:db8:7::7")]
    ip("link", "set", "lab0", "up")
    seen["up"] = [judged("198.18.0.7"), judged("198.18.0.255"), judged("2001:db8:7::7")]
    ip("addr", "del", "198.18.0.7/24", "dev", "lab0")
    seen["removed"] = [judged("198.18.0.7"), "198.18.0.7" in map(str, current_addresses())]
    ip("route", "add", "local", "198.19.0.0/16", "dev", "lo")
    seen["anyip"] = [judged("198.19.4.4"), "198.19.4.4" in map(str, current_addresses())]
    subprocess.run(["sysctl", "-qw", "net.ipv6.conf.all.forwarding=1"], check=True)
    seen["router"] = [judged("2001:db8:7::"), "2001:db8:7::" in map(str, current_addresses())]
    print(json.dumps(seen))
""")


def test_what_the_host_owns_is_asked_anew_each_time() -> None:
    done = subprocess.run(["unshare", "--net", sys.executable, "-c", SCRIPT],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    own = ["this host's own", None]
    assert seen["before"] == [None, None, None]
    # On an interface that is down: this host's all the same (the list says so).
    assert seen["added, down"] == [own, ["this host's own", "IPv4-mapped"], own]
    assert seen["up"] == [own, ["this host's broadcast", None], own]
    assert seen["removed"] == [None, False]
    # Local by a route alone, on no interface: the route lookup finds it.
    assert seen["anyip"] == [own, False]
    # A router answers its subnet's anycast address itself (RFC 4291's subnet-router
    # anycast): no interface holds it, the local table does.
    assert seen["router"] == [["this host's anycast", None], False]
