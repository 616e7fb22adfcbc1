"""The allow list of proxy mode, decided on the name as the program asked for it.

Plain data and pure functions: nothing here looks a name up. An address literal is
allowed only when the list names that address; a name only by a name pattern, so
`localhost` does not open 127.0.0.1, nor 127.0.0.1 `localhost`.

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
from dataclasses import dataclass

from ..hostnames import HostPattern, normalize_host, parse_host_pattern

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


@dataclass(frozen=True)
class Decision:
    """The outcome for one destination: `pattern` is the allow entry that matched."""

    host: str
    port: int | None
    pattern: HostPattern | None

    @property
    def allowed(self) -> bool:
        return self.pattern is not None

    @property
    def subject(self) -> str:
        """What was asked, as events name it: `host:port`, or the name alone (DNS)."""
        if self.port is None:
            return self.host
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class Allowlist:
    """`[network] allow`, validated. Empty: every destination is refused."""

    patterns: tuple[HostPattern, ...] = ()

    @staticmethod
    def from_texts(texts: tuple[str, ...] | list[str]) -> Allowlist:
        """From the snapshot's texts (validated when the spec was read)."""
        return Allowlist(tuple(parse_host_pattern(text) for text in texts))

    def decide(self, host: str, port: int) -> Decision:
        """Whether the program may reach `host` on `port`."""
        name = normalize_host(host)
        if not _address_or_host_name(name):
            return Decision(printable(name), port, None)
        for pattern in self.patterns:
            if pattern.matches(name, port):
                return Decision(name, port, pattern)
        return Decision(name, port, None)

    def decide_name(self, host: str) -> Decision:
        """Whether a DNS question for `host` is answered: allowed on some port.

        An address pattern answers no name; a name's port is unknown to DNS, so a name
        allowed only on one port is still answered (the proxy holds the port).
        """
        name = normalize_host(host)
        if not is_host_name(name):
            return Decision(printable(name), None, None)
        for pattern in self.patterns:
            if pattern.address is None and pattern.matches(name, pattern.port or 0):
                return Decision(name, None, pattern)
        return Decision(name, None, None)


def _address_or_host_name(name: str) -> bool:
    if is_host_name(name):
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
