"""Proxy mode's lists, decided on the name as the program asked for it, and on the
addresses an allowed name resolves to.

Plain data and pure functions: nothing here looks a name up. In order:
1. `[network] deny` refuses a name or address it matches, whatever else says;
2. `[network] allow` allows one it matches; a name matches only name patterns and an
   address literal only address patterns, so `localhost` does not open 127.0.0.1, nor
   127.0.0.1 `localhost`;
3. anything else is unlisted: refused, unless the run's decider allows it (`decider.py`).
Then each address found for an allowed name is judged (`judge_address`): an address in a
deny range is refused; one of this host's own (`own.py`: what its kernel delivers to
itself, whatever the range) unless an allow entry names that very address; and one that
is not public (`addresses.py`) unless an allow entry names it or its range (on the port
asked), or it is a loopback address of `localhost` allowed with a port.

A name must be a host name to be allowed at all (labels of letters, digits, `-` and `_`,
1 to 63 bytes, 253 in all), whatever pattern its text would match: the text is what the
lookup is given, and a text that is not a host name is not the name it seems to be. A NUL
ends it for the C library (`<secret>.evil.test\\0.allowed.test`, from SOCKS5, would be
looked up as `<secret>.evil.test`), a `\\.` is a dot inside a label for a DNS library
(`x\\.allowed.test`, the text of DNS's wire name `x.allowed` in `test`, is not in
`allowed.test`). A refused name is kept printable, since it is said on a terminal.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from ..hostnames import HostPattern, normalize_host, parse_host_pattern
from .addresses import Address, Kind, canonical, classify
from .addresses import parse as parse_address

_HOST_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
MAX_NAME = 253  # a name's text without its final dot; 255 bytes in DNS's wire format


def is_host_name(name: str) -> bool:
    """Whether `name` (normalized: lower case, no final dot) is a host name."""
    return 0 < len(name) <= MAX_NAME and all(
        _HOST_LABEL.fullmatch(label) for label in name.split("."))


def printable(text: str) -> str:
    """`text` with every character but printable ASCII (and the backslash) escaped."""
    return "".join(c if " " < c < "\x7f" and c != "\\" else
                   f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
                   for c in text)


ALLOW, DENY, DECIDE, ADDRESS = "network.allow", "network.deny", "network.decide", \
    "network.address"


@dataclass(frozen=True)
class Decision:
    """The outcome for one destination.

    `rule` is the key that decided: ALLOW (allowed by `pattern`, or refused as in no
    list: unlisted), DENY (refused by `pattern`), DECIDE (the run's decider; `reason`
    says how it ended).
    """

    host: str
    port: int | None
    pattern: HostPattern | None
    allowed: bool = False
    rule: str = ALLOW
    reason: str | None = None

    def verdict(self, allowed: bool, reason: str) -> Decision:
        """This destination as the decider's verdict left it."""
        return Decision(self.host, self.port, None, allowed, DECIDE, reason)

    @property
    def unlisted(self) -> bool:
        """In no list: what a decider may be asked about."""
        return not self.allowed and self.rule == ALLOW and self.pattern is None

    @property
    def subject(self) -> str:
        """What was asked, as events name it: `host:port`, or the name alone (DNS)."""
        if self.port is None:
            return self.host
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


class AddressRefusal(NamedTuple):
    """An address refused for an allowed name: `rule` ADDRESS (its `kind`) or DENY."""

    address: str
    rule: str
    kind: Kind | None
    pattern: HostPattern | None = None

    def describe(self) -> str:
        if self.kind is not None:
            return self.kind.describe()
        assert self.pattern is not None
        return f"in [network] deny ({self.pattern.text})"


@dataclass(frozen=True)
class NetworkLists:
    """`[network] allow` and `deny`, validated. Both empty: every destination is
    refused (unless a decider allows it)."""

    patterns: tuple[HostPattern, ...] = ()
    denied: tuple[HostPattern, ...] = ()

    @staticmethod
    def from_texts(texts: tuple[str, ...] | list[str],
                   deny: tuple[str, ...] | list[str] = ()) -> NetworkLists:
        """From the snapshot's texts (validated when the spec was read)."""
        return NetworkLists(tuple(parse_host_pattern(text) for text in texts),
                            tuple(parse_host_pattern(text, deny=True) for text in deny))

    def decide(self, host: str, port: int) -> Decision:
        """Whether the program may reach `host` on `port`."""
        name = normalize_host(host)
        if not _address_or_host_name(name):
            return Decision(printable(name), port, None)
        for pattern in self.denied:
            if pattern.matches(name, port):
                return Decision(name, port, pattern, rule=DENY)
        for pattern in self.patterns:
            if pattern.matches(name, port):
                return Decision(name, port, pattern, allowed=True)
        return Decision(name, port, None)

    def decide_name(self, host: str) -> Decision:
        """Whether a DNS question for `host` is answered: allowed on some port.

        An address pattern answers no name; a name's port is unknown to DNS, so a name
        allowed only on one port is still answered (the proxy holds the port), and one
        denied only on one port is still answered too.
        """
        name = normalize_host(host)
        if not is_host_name(name):
            return Decision(printable(name), None, None)
        for pattern in self.denied:
            if not pattern.is_address and pattern.port is None and pattern.matches(name, 0):
                return Decision(name, None, pattern, rule=DENY)
        for pattern in self.patterns:
            if not pattern.is_address and pattern.matches(name, pattern.port or 0):
                return Decision(name, None, pattern, allowed=True)
        return Decision(name, None, None)

    def opens_as_local(self, text: str, port: int) -> bool:
        """Whether an allowed address is one the proxy reaches as this host's (its kind
        loopback or unspecified, opened by the name or an entry), or one an allow entry
        names on that port: whatever leads it here, the spec asked for this very address."""
        parsed = parse_address(text)
        if parsed is None:
            return False
        kind = classify(parsed)
        if kind is not None and kind.kind in ("loopback", "unspecified"):
            return True
        address = str(canonical(parsed))
        return any(pattern.address == address and _on_port(pattern, port)
                   for pattern in self.patterns)

    def judge_address(self, text: str, port: int | None, decision: Decision,
                      own: Callable[[Address], Kind | None]) -> AddressRefusal | None:
        """Whether an address found for the allowed `decision` may be reached (None) or
        answered (`port` None: DNS, where an entry on any port names it). `own` says
        whether an address is this host's (`own.py` asks the kernel; a test passes its
        own answer): such an address is opened only by an entry naming it, never by a
        range (`10.0.0.0/8` names a network, not the host inside it)."""
        parsed = parse_address(text)
        if parsed is None:
            return AddressRefusal(text, ADDRESS, Kind("unreadable"))
        address = str(canonical(parsed))
        for pattern in self.denied:
            if pattern.is_address and _on_port(pattern, port) and pattern.holds(address):
                return AddressRefusal(text, DENY, None, pattern)
        kind = classify(parsed)
        if kind is None or kind.kind not in ("loopback", "unspecified"):
            # Loopback and 0.0.0.0 are this host's by their kind, described and opened
            # as they always were; every other address is asked about.
            mine = own(parsed)
            if mine is not None:
                for pattern in self.patterns:
                    if pattern.address == address and _on_port(pattern, port):
                        return None
                return AddressRefusal(text, ADDRESS, mine)
        if kind is None:
            return None
        for pattern in self.patterns:
            if pattern.is_address and _on_port(pattern, port) and pattern.holds(address):
                return None
        named = decision.pattern
        if (kind.kind == "loopback" and kind.form is None and named is not None
                and not named.wildcard and named.name == "localhost"
                and named.port is not None and (port is None or port == named.port)):
            return None
        return AddressRefusal(text, ADDRESS, kind)




def _on_port(pattern: HostPattern, port: int | None) -> bool:
    return port is None or pattern.port is None or pattern.port == port


def _address_or_host_name(name: str) -> bool:
    if is_host_name(name):
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
