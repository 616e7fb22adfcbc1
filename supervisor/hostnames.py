"""Names a proxy-mode sandbox may reach: `[network] allow` patterns, as plain data.

A pattern is an exact name (`pypi.org`), a wildcard for subdomains only
(`*.githubusercontent.com` matches `raw.githubusercontent.com`, not the bare name), or an
address literal, each with an optional `:port`. The decision is made on the name as the
program asked for it, before any lookup, so a refused name is never resolved.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")

# Suffixes under which anyone can register a name: a wildcard directly above one of
# these would open a whole registry. Not the full public suffix list, only the common
# two-label ones; every single-label suffix (a TLD) is refused by rule.
_SHARED_SUFFIXES = frozenset(
    {
        "co.uk", "org.uk", "ac.uk", "gov.uk", "me.uk", "ltd.uk", "plc.uk", "net.uk",
        "com.au", "net.au", "org.au", "edu.au", "gov.au", "co.nz", "org.nz", "net.nz",
        "co.jp", "ne.jp", "or.jp", "ac.jp", "go.jp", "com.br", "net.br", "org.br",
        "com.cn", "net.cn", "org.cn", "gov.cn", "edu.cn", "co.in", "net.in", "org.in",
        "co.kr", "or.kr", "co.za", "org.za", "com.mx", "com.ar", "com.tr", "com.tw",
        "com.hk", "com.sg", "com.my", "co.id", "co.il", "com.ua", "com.pl", "co.th",
        "github.io", "gitlab.io", "herokuapp.com", "appspot.com", "vercel.app",
        "netlify.app", "pages.dev", "workers.dev", "web.app", "firebaseapp.com",
        "azurewebsites.net", "cloudfront.net", "amazonaws.com", "blogspot.com",
    }
)


class HostPatternError(ValueError):
    """A pattern that is malformed or opens too much; the text says which and why."""


@dataclass(frozen=True)
class HostPattern:
    """One allowed destination.

    `name` is lower-case without a trailing dot; `wildcard` means subdomains of `name`
    only; `port` None means any port; `address` is set for an address literal.
    """

    text: str
    name: str
    wildcard: bool
    port: int | None
    address: str | None

    def matches(self, host: str, port: int) -> bool:
        if self.port is not None and port != self.port:
            return False
        host = normalize_host(host)
        if self.address is not None:
            return _as_address(host) == self.address
        if self.wildcard:
            return host.endswith("." + self.name)
        return host == self.name


def normalize_host(host: str) -> str:
    """Lower-case, no trailing dot, brackets of an IPv6 literal removed."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host


def _as_address(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def _split_port(text: str) -> tuple[str, int | None]:
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise HostPatternError("an IPv6 address in brackets lacks its ']'")
        host, rest = text[: close + 1], text[close + 1 :]
        if not rest:
            return host, None
        if not rest.startswith(":"):
            raise HostPatternError("only ':PORT' may follow a bracketed address")
        return host, _parse_port(rest[1:])
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, _parse_port(port)
    return text, None


def _parse_port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise HostPatternError(f"port {text!r} is not a number from 1 to 65535")
    return int(text)


def parse_host_pattern(text: str) -> HostPattern:
    """Validate one `[network] allow` entry, refusing patterns that open too much."""
    if not text or text != text.strip():
        raise HostPatternError("a pattern must be a non-empty name without spaces")
    host, port = _split_port(text)
    bare = normalize_host(host)
    address = _as_address(bare)
    if address is not None:
        return HostPattern(text, address, False, port, address)
    if bare == "*" or (bare.startswith("*") and not bare.startswith("*.")):
        raise HostPatternError("'*' alone opens every name; list the names the command needs")
    wildcard = bare.startswith("*.")
    name = bare[2:] if wildcard else bare
    if "*" in name:
        raise HostPatternError("a wildcard may only be the first label, as in '*.example.com'")
    labels = name.split(".")
    if not all(_LABEL.match(label) for label in labels):
        raise HostPatternError(f"{name!r} is not a valid host name")
    if wildcard and len(labels) == 1:
        raise HostPatternError(
            f"'*.{name}' opens a whole top-level domain; name the domains inside it"
        )
    if wildcard and name in _SHARED_SUFFIXES:
        raise HostPatternError(
            f"'*.{name}' opens a suffix anyone can register under; name the domains inside it"
        )
    if not wildcard and len(labels) == 1 and name != "localhost":
        raise HostPatternError(f"{name!r} is a bare top-level domain, not a host")
    return HostPattern(text, name, wildcard, port, None)
