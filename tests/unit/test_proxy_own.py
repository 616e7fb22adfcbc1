"""This host's own addresses: the rule (pure, with a given answer) and the kernel's answer
on this machine, read by `ip` independently of lnk's own netlink code."""

from __future__ import annotations

import ipaddress
import json
import random
import subprocess
import sys
import textwrap

import pytest

from supervisor.linux.routes import KernelOwn, interface_addresses, route_type
from supervisor.proxy.addresses import OWN, OWN_BROADCAST, UNCHECKED, Address, Kind, parse
from supervisor.proxy.own import bound_here, candidates
from supervisor.proxy.rules import ADDRESS, DENY, NetworkLists
from supervisor.proxy.upstream import address_reason

HOST = "192.0.2.2"  # stands for this host's eth0 address in the pure tests


def _own(address: Address) -> Kind | None:
    """A given answer: HOST and 2001:db8::2 are this host's, in every form."""
    for destination, form in candidates(address):
        if str(destination) in (HOST, "2001:db8::2"):
            return Kind(OWN, form, None if form is None else str(destination))
    return None


LISTS = NetworkLists.from_texts(
    ["*.example.test", "localhost:8080", "192.0.2.0/24", "[2001:db8::2]:443", "10.0.0.0/8",
     "198.51.100.9"],
    ["198.51.100.9"])


def _judge(address: str, port: int | None, host: str = "x.example.test") -> str | None:
    decision = LISTS.decide(host, port or 1) if port else LISTS.decide_name(host)
    assert decision.allowed
    refusal = LISTS.judge_address(address, port, decision, _own)
    return None if refusal is None else refusal.rule


@pytest.mark.parametrize(("address", "port", "host", "verdict"), [
    (HOST, 443, "x.example.test", ADDRESS),  # public-looking, but this host's
    (f"::ffff:{HOST}", 443, "x.example.test", ADDRESS),
    ("64:ff9b::c000:202", 443, "x.example.test", ADDRESS),  # NAT64 of HOST
    ("2002:c000:202::1", 443, "x.example.test", ADDRESS),  # 6to4 of HOST
    (HOST, None, "x.example.test", ADDRESS),  # DNS: never answered either
    ("192.0.2.3", 443, "x.example.test", None),  # the same range, another host
    ("2001:db8::2", 443, "x.example.test", None),  # named itself, on its port
    ("2001:db8::2", None, "x.example.test", None),  # DNS: an entry on any port names it
    ("2001:db8::2", 80, "x.example.test", ADDRESS),  # not on another port
    ("127.0.0.1", 8080, "localhost", None),  # loopback keeps its own rule
    ("127.0.0.1", 443, "x.example.test", ADDRESS),
    ("10.1.2.3", 443, "x.example.test", None),  # a range opens what is not this host's
    ("198.51.100.9", 443, "x.example.test", DENY),  # deny first, as ever
])
def test_this_hosts_own_address_is_opened_only_by_naming_it(
        address: str, port: int | None, host: str, verdict: str | None) -> None:
    assert _judge(address, port, host) == verdict


def test_a_range_never_opens_this_host_and_a_refusal_says_the_way_to_its_ports() -> None:
    decision = LISTS.decide("x.example.test", 443)
    refusal = LISTS.judge_address(f"::ffff:{HOST}", 443, decision, _own)
    assert refusal is not None and refusal.kind is not None
    assert address_reason(refusal) == (
        f"it resolves to ::ffff:{HOST}, the IPv4-mapped form of this host's own address "
        f"({HOST}); a port of this host is reached through [network] forward")
    assert Kind(OWN_BROADCAST).describe() == "this host's broadcast address"
    assert Kind(UNCHECKED, None, "Too many open files").describe() == (
        "an address this host's kernel could not be asked about (Too many open files)")


def _candidates(text: str) -> list[tuple[str, str | None]]:
    address = parse(text)
    assert address is not None
    return [(str(found), form) for found, form in candidates(address)]


def test_every_address_a_form_carries_is_a_candidate() -> None:
    assert _candidates("2002:c000:202::1") == [("2002:c000:202::1", None), (HOST, "6to4")]
    assert _candidates(f"::ffff:{HOST}") == [(HOST, "IPv4-mapped")]
    assert _candidates("fe80::1%eth0") == [("fe80::1", None)]


# -- the kernel's answer on this machine --------------------------------------------------


def _ip_addresses() -> list[Address]:
    """Every interface address, as `ip` reads it (not lnk's netlink code)."""
    listed = json.loads(subprocess.run(["ip", "-j", "addr"], capture_output=True,
                                       check=True, text=True).stdout)
    return [ipaddress.ip_address(info["local"]) for link in listed
            for info in link.get("addr_info", ())]


def test_every_interface_address_is_this_hosts_own_in_every_form() -> None:
    addresses = _ip_addresses()
    assert addresses, "no address on any interface"
    assert set(addresses) <= interface_addresses()
    own = KernelOwn()
    for address in addresses:
        found = own(address)
        assert found is not None and found.kind == OWN, address
        assert bound_here(address) is not None, address
        if address.version == 4:
            mapped = ipaddress.IPv6Address(f"::ffff:{address}")
            assert own(mapped) == Kind(OWN, "IPv4-mapped", str(address))
            nat64 = ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::"))
                                          | int(address))
            assert own(nat64) == Kind(OWN, "NAT64", str(address))


def test_what_the_kernel_delivers_locally_is_this_hosts_whatever_is_listed() -> None:
    """All of 127/8 is delivered locally with only 127.0.0.1 on an interface: the route
    lookup, not the list, finds it."""
    own = KernelOwn()
    rng = random.Random()
    for _ in range(20):
        loop = ipaddress.IPv4Address(f"127.{rng.randrange(256)}.{rng.randrange(256)}."
                                     f"{rng.randrange(1, 255)}")
        assert route_type(loop) == 2, loop
        assert own(loop) is not None
    assert route_type(ipaddress.IPv4Address("0.0.0.0")) == 2


def test_addresses_elsewhere_are_not_this_hosts() -> None:
    """A class: random public addresses on no interface of this host."""
    own = KernelOwn()
    mine = set(interface_addresses())
    rng = random.Random()
    tried = 0
    while tried < 50:
        candidate = ipaddress.IPv4Address(rng.randrange(1 << 24, 224 << 24))
        if candidate.is_private or candidate.is_loopback or candidate in mine or \
                not candidate.is_global:
            continue
        tried += 1
        assert own(candidate) is None, candidate
        assert bound_here(candidate) is None, candidate


def test_an_unanswered_kernel_refuses_every_address() -> None:
    """Out of descriptors, the kernel cannot be asked: every address is refused as
    UNCHECKED, never let through (a real EMFILE, in a process of its own)."""
    script = textwrap.dedent("""
        import ipaddress, os, resource
        from supervisor.linux.routes import KernelOwn
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 1, hard))
        while True:
            try:
                os.open("/dev/null", os.O_RDONLY)
            except OSError:
                break
        print(KernelOwn()(ipaddress.ip_address("93.184.215.14")))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == \
        "Kind(kind='unchecked', form=None, carried='Too many open files')"
