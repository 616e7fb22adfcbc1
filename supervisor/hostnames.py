"""Names a proxy-mode sandbox may reach: `[network] allow` patterns, as plain data.

A pattern is an exact name (`pypi.org`), a wildcard for subdomains only
(`*.githubusercontent.com` matches `raw.githubusercontent.com`, not the bare name), an
address literal, or an address range (`10.0.0.0/8`, `[fd00::/8]`), each with an optional
`:port`. The decision is made on the name as the program asked for it, before any
lookup, so a refused name is never resolved. An address or range written here is also
what opens a private address a name resolves to (`proxy/addresses.py`).

`[network] deny` takes the same forms, without the checks against opening too much (a
deny of `*.com` closes a top-level domain, which is what it says).
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
    only; `port` None means any port; `address` is set for an address literal, `network`
    (its CIDR text) for a range.
    """

    text: str
    name: str
    wildcard: bool
    port: int | None
    address: str | None
    network: str | None = None

    @property
    def is_address(self) -> bool:
        """An address or a range: it matches literals only, never a name."""
        return self.address is not None or self.network is not None

    def matches(self, host: str, port: int) -> bool:
        if self.port is not None and port != self.port:
            return False
        host = normalize_host(host)
        if self.is_address:
            address = _as_address(host)
            return address is not None and self.holds(address)
        if self.wildcard:
            return host.endswith("." + self.name)
        return host == self.name

    def holds(self, address: str) -> bool:
        """Whether this address pattern names `address` (canonical text), any port."""
        if self.address is not None:
            return address == self.address
        if self.network is None:
            return False
        return ipaddress.ip_address(address) in ipaddress.ip_network(self.network)


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


def _as_network(text: str) -> str:
    """A range's canonical CIDR text; HostPatternError when it is not one."""
    try:
        network = ipaddress.ip_network(text)
    except ValueError as err:
        message = str(err)
        if "has host bits set" in message:
            wide = ipaddress.ip_network(text, strict=False)
            raise HostPatternError(f"{text!r} has bits set past its prefix; write "
                                   f"{wide}") from None
        raise HostPatternError(f"{text!r} is not an address range") from None
    return str(network)


def split_host_port(text: str) -> tuple[str, str | None]:
    """`host:port` or `[v6]:port` (the port optional) into the host, an IPv6 literal's
    brackets dropped, and the port as written (None when no colon asks for one). An IPv6
    address without brackets is all host: the spec's lists take one, a request line's
    caller refuses it. ValueError for brackets left open or followed by other than
    `:PORT`. The spec's patterns and the proxy's requests both split here."""
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise ValueError("an IPv6 address in brackets lacks its ']'")
        host, rest = text[1:close], text[close + 1:]
        if not rest:
            return host, None
        if not rest.startswith(":"):
            raise ValueError("only ':PORT' may follow a bracketed address")
        return host, rest[1:]
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, port
    return text, None


def parse_port(text: str) -> int:
    """A port's number; ValueError unless it is one from 1 to 65535."""
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"port {text!r} is not a number from 1 to 65535")
    return int(text)


def _url_hint(text: str) -> str:
    """What to write for a URL given where a host name is wanted: the proxy decides on
    the host (and port) a connection is for; it never sees a path inside HTTPS."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host:
        return "is a URL, and a host name is wanted here"
    shown = f"[{host}]" if ":" in host else host
    wanted = f"{shown}:{port}" if port else shown
    return (f"is a URL, and a host name is wanted here: write {wanted!r} (the proxy decides "
            "on the host a connection is for, never on a path)")


def parse_host_pattern(text: str, *, deny: bool = False) -> HostPattern:
    """Validate one `[network] allow` entry, refusing patterns that open too much; with
    `deny`, one `[network] deny` entry, which may close as much as it likes."""
    if not text or text != text.strip():
        raise HostPatternError("a pattern must be a non-empty name without spaces")
    if "://" in text:
        raise HostPatternError(_url_hint(text))
    try:
        host, port_text = split_host_port(text)
        port = None if port_text is None else parse_port(port_text)
    except ValueError as err:
        raise HostPatternError(str(err)) from None
    bare = normalize_host(host)
    if "/" in bare:
        network = _as_network(bare)
        if not deny and ipaddress.ip_network(network).prefixlen == 0:
            raise HostPatternError(f"{network!r} opens every address; list the ranges the "
                                   "command needs")
        return HostPattern(text, network, False, port, None, network)
    address = _as_address(bare)
    if address is not None:
        return HostPattern(text, address, False, port, address)
    if bare == "*" or (bare.startswith("*") and not bare.startswith("*.")):
        if deny:
            raise HostPatternError("'*' alone is no name; to reach nothing, leave allow "
                                   "empty or use mode = \"none\"")
        raise HostPatternError("'*' alone opens every name; list the names the command needs")
    wildcard = bare.startswith("*.")
    name = bare[2:] if wildcard else bare
    if "*" in name:
        raise HostPatternError("a wildcard may only be the first label, as in '*.example.com'")
    labels = name.split(".")
    if not all(_LABEL.match(label) for label in labels):
        raise HostPatternError(f"{name!r} is not a valid host name")
    if deny:
        return HostPattern(text, name, wildcard, port, None)
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
