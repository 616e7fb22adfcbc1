"""The resolved-address guard: every kind of address a name must not lead to, in every
written form, and what an allow entry that names an address or range opens again."""

from __future__ import annotations

import pytest

from supervisor.hostnames import HostPatternError, parse_host_pattern
from supervisor.proxy.addresses import classify, parse
from supervisor.proxy.rules import ADDRESS, DENY, NetworkLists


@pytest.mark.parametrize(("text", "kind", "form"), [
    ("127.0.0.1", "loopback", None),
    ("127.255.255.254", "loopback", None),
    ("::1", "loopback", None),
    ("10.0.0.1", "private", None),
    ("172.16.0.1", "private", None),
    ("172.31.255.255", "private", None),
    ("192.168.1.1", "private", None),
    ("fc00::1", "unique local", None),
    ("fdff:ffff::1", "unique local", None),
    ("fec0::1", "site-local", None),
    ("169.254.1.1", "link-local", None),
    ("fe80::1", "link-local", None),
    ("fe80::1%eth0", "link-local", None),
    ("100.64.0.1", "carrier-grade NAT", None),
    ("100.127.255.255", "carrier-grade NAT", None),
    ("224.0.0.1", "multicast", None),
    ("239.255.255.250", "multicast", None),
    ("ff02::1", "multicast", None),
    ("0.0.0.0", "unspecified", None),
    ("0.1.2.3", "unspecified", None),
    ("::", "unspecified", None),
    ("255.255.255.255", "broadcast", None),
    ("240.0.0.1", "reserved", None),
    ("169.254.169.254", "cloud metadata", None),
    ("169.254.170.2", "cloud metadata", None),
    ("100.100.100.200", "cloud metadata", None),
    ("168.63.129.16", "cloud metadata", None),
    ("fd00:ec2::254", "cloud metadata", None),
    ("::ffff:127.0.0.1", "loopback", "IPv4-mapped"),
    ("::ffff:7f00:1", "loopback", "IPv4-mapped"),
    ("::ffff:169.254.169.254", "cloud metadata", "IPv4-mapped"),
    ("::ffff:10.1.2.3", "private", "IPv4-mapped"),
    ("::127.0.0.1", "loopback", "IPv4-compatible"),
    ("::10.0.0.1", "private", "IPv4-compatible"),
    ("64:ff9b::7f00:1", "loopback", "NAT64"),
    ("64:ff9b::10.0.0.1", "private", "NAT64"),
    ("64:ff9b::169.254.169.254", "cloud metadata", "NAT64"),
    ("64:ff9b:1::1", "local-use NAT64", None),
    ("2002:7f00:1::1", "loopback", "6to4"),
    ("2002:c0a8:101::1", "private", "6to4"),
    ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "private", "Teredo"),  # client 10.0.0.1
])
def test_refused_kinds(text: str, kind: str, form: str | None) -> None:
    address = parse(text)
    assert address is not None
    found = classify(address)
    assert found is not None, text
    assert (found.kind, found.form) == (kind, form)


@pytest.mark.parametrize("text", [
    "1.1.1.1", "8.8.8.8", "93.184.215.14", "172.32.0.1", "172.15.255.255", "100.63.255.255",
    "100.128.0.0", "192.169.0.1", "169.255.0.1", "223.255.255.255", "2606:4700::1111",
    "::ffff:1.1.1.1", "64:ff9b::1.1.1.1", "2002:0101:0101::1", "203.0.113.9",
])
def test_public_addresses_pass(text: str) -> None:
    address = parse(text)
    assert address is not None and classify(address) is None


def test_a_refusal_says_the_form_and_the_address_it_carries() -> None:
    address = parse("64:ff9b::10.0.0.1")
    assert address is not None
    found = classify(address)
    assert found is not None
    assert found.describe() == "the NAT64 form of a private address (10.0.0.1)"
    loopback = classify(parse("127.0.0.1"))  # type: ignore[arg-type]
    assert loopback is not None and loopback.describe() == "a loopback address"
    nat = parse("100.64.0.1")
    assert nat is not None
    assert classify(nat).describe() == "a carrier-grade NAT address"  # type: ignore[union-attr]


LISTS = NetworkLists.from_texts(
    ["*.example.test", "10.1.2.3", "192.168.0.0/16:5432", "[fd00::/8]", "localhost:8080",
     "db.internal"],
    ["*.blocked.example.test", "203.0.113.0/24", "[2001:db8::/32]:443"])


def _judge(address: str, port: int | None, host: str = "x.example.test") -> str | None:
    decision = LISTS.decide(host, port or 1) if port else LISTS.decide_name(host)
    assert decision.allowed
    refusal = LISTS.judge_address(address, port, decision, lambda _: None)
    return None if refusal is None else refusal.rule


@pytest.mark.parametrize(("address", "port", "host", "verdict"), [
    ("93.184.215.14", 443, "x.example.test", None),
    ("127.0.0.1", 443, "x.example.test", ADDRESS),
    ("169.254.169.254", 80, "x.example.test", ADDRESS),
    ("::ffff:127.0.0.1", 80, "x.example.test", ADDRESS),
    ("10.1.2.3", 443, "x.example.test", None),  # named literally, any port
    ("::ffff:10.1.2.3", 443, "x.example.test", None),  # the same destination
    ("10.1.2.4", 443, "x.example.test", ADDRESS),
    ("192.168.7.7", 5432, "x.example.test", None),  # the range, on its port
    ("192.168.7.7", 443, "x.example.test", ADDRESS),
    ("192.168.7.7", None, "x.example.test", None),  # DNS: an entry on any port names it
    ("fd12::1", 443, "x.example.test", None),
    ("fe80::1", 443, "x.example.test", ADDRESS),
    ("127.0.0.1", 8080, "localhost", None),  # localhost with a port: its loopback
    ("::1", 8080, "localhost", None),
    ("127.0.0.1", None, "localhost", None),
    ("10.0.0.9", 8080, "localhost", ADDRESS),  # only its loopback
    ("127.0.0.1", 80, "db.internal", ADDRESS),
    ("203.0.113.5", 80, "x.example.test", DENY),  # a public address in a deny range
    ("2001:db8::1", 443, "x.example.test", DENY),
    ("2001:db8::1", 80, "x.example.test", None),
])
def test_judging_an_address_found(address: str, port: int | None, host: str,
                                  verdict: str | None) -> None:
    assert _judge(address, port, host) == verdict


def test_deny_wins_over_allow_for_names_and_literals() -> None:
    assert LISTS.decide("a.blocked.example.test", 443).rule == DENY
    assert not LISTS.decide("a.blocked.example.test", 443).allowed
    assert LISTS.decide("a.example.test", 443).allowed
    assert LISTS.decide_name("a.blocked.example.test").rule == DENY
    lists = NetworkLists.from_texts(["10.0.0.0/8"], ["10.0.0.5"])
    assert lists.decide("10.0.0.4", 22).allowed
    assert lists.decide("10.0.0.5", 22).rule == DENY
    assert lists.decide("10.0.0.5", 22).subject == "10.0.0.5:22"


def test_unlisted_is_what_a_decider_may_be_asked() -> None:
    assert LISTS.decide("elsewhere.test", 443).unlisted
    assert not LISTS.decide("a.blocked.example.test", 443).unlisted
    assert not LISTS.decide("a.example.test", 443).unlisted


@pytest.mark.parametrize(("text", "message"), [
    ("10.0.0.1/8", "'10.0.0.1/8' has bits set past its prefix; write 10.0.0.0/8"),
    ("10.0.0.0/33", "'10.0.0.0/33' is not an address range"),
    ("0.0.0.0/0", "'0.0.0.0/0' opens every address; list the ranges the command needs"),
    ("[::/0]", "'::/0' opens every address; list the ranges the command needs"),
])
def test_bad_ranges(text: str, message: str) -> None:
    with pytest.raises(HostPatternError) as caught:
        parse_host_pattern(text)
    assert str(caught.value) == message


def test_a_deny_list_may_close_wide() -> None:
    assert parse_host_pattern("*.com", deny=True).wildcard
    assert parse_host_pattern("0.0.0.0/0", deny=True).network == "0.0.0.0/0"
    with pytest.raises(HostPatternError, match="'\\*' alone is no name"):
        parse_host_pattern("*", deny=True)


@pytest.mark.parametrize(("allow", "address", "port", "local"), [
    (["localhost:5432"], "127.0.0.1", 5432, True),  # loopback, opened by its name
    (["127.0.0.1"], "::ffff:127.0.0.1", 80, True),
    (["198.51.100.9"], "198.51.100.9", 7070, True),  # the very address, named
    (["198.51.100.9:443"], "198.51.100.9", 7070, False),  # on another port only
    (["198.51.100.0/24"], "198.51.100.9", 7070, False),  # a range names a network
    (["*.example.org"], "203.0.113.7", 443, False),  # by a name: guarded
    (["2001:db8::9"], "2001:db8::9", 80, True),
])
def test_what_the_proxy_reaches_as_this_hosts_unguarded(allow: list[str], address: str,
                                                        port: int, local: bool) -> None:
    """Only what the spec opened as this host's (loopback, or an entry naming the very
    address on that port) is connected to without the guard against this host
    (upstream.Gate.here): a NAT rule leading anything else here is refused."""
    assert NetworkLists.from_texts(allow).opens_as_local(address, port) is local
