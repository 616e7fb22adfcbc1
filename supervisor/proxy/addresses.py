"""The resolved-address guard: which addresses the proxy never connects to by a name.

An allowed name is only as safe as the addresses it resolves to: any zone's owner can
point a name at 127.0.0.1, at the cloud's metadata service, or at a printer on the
host's own network, and rebind it after a first lookup. So every address the proxy would
connect to, and every address the sandbox's own DNS would answer, is judged after the
lookup: what is not a public address is refused unless the spec names it (`rules.py`).

Facts (the kernel's and the RFCs'; Python's `ipaddress` flags are not used, since its
`is_private` also covers documentation and benchmarking ranges and misses CGNAT):
- Refused by kind, IPv4: 0.0.0.0/8 (unspecified: Linux connects 0.0.0.0 to the host
  itself), 127.0.0.0/8 loopback, 10/8, 172.16/12 and 192.168/16 (RFC 1918), 100.64/10
  (carrier-grade NAT, RFC 6598: the provider's own network, and Alibaba's metadata at
  100.100.100.200), 169.254/16 link-local (AWS, GCP, Azure, OpenStack metadata at
  169.254.169.254, ECS at 169.254.170.2), 224/4 multicast, 240/4 reserved and
  255.255.255.255 broadcast; and Azure's host service at 168.63.129.16, a metadata
  address with a public number.
- IPv6: :: unspecified, ::1 loopback, fe80::/10 link-local, fec0::/10 the old site-local,
  fc00::/7 unique local (AWS's metadata at fd00:ec2::254), ff00::/8 multicast.
- Other written forms of an IPv4 address are judged by the address they carry: IPv4-mapped
  (::ffff:a.b.c.d, which a dual-stack socket connects to a.b.c.d itself), IPv4-compatible
  (::a.b.c.d), NAT64 (64:ff9b::/96, which a NAT64 gateway turns into a.b.c.d), 6to4
  (2002:AABB:CCDD::/48) and Teredo (the client's address, inverted, in the last 32 bits).
  The local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215) is refused whole: it only ever
  leads into a network of the host's own.
- A scope (`fe80::1%eth0`) does not change the kind.
"""

from __future__ import annotations

import ipaddress
from typing import NamedTuple

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_V4 = tuple((ipaddress.IPv4Network(net), kind) for net, kind in (
    ("169.254.169.254/32", "cloud metadata"),
    ("169.254.170.2/32", "cloud metadata"),
    ("100.100.100.200/32", "cloud metadata"),
    ("168.63.129.16/32", "cloud metadata"),
    ("0.0.0.0/8", "unspecified"),
    ("127.0.0.0/8", "loopback"),
    ("10.0.0.0/8", "private"),
    ("172.16.0.0/12", "private"),
    ("192.168.0.0/16", "private"),
    ("100.64.0.0/10", "carrier-grade NAT"),
    ("169.254.0.0/16", "link-local"),
    ("224.0.0.0/4", "multicast"),
    ("255.255.255.255/32", "broadcast"),
    ("240.0.0.0/4", "reserved"),
))

_V6 = tuple((ipaddress.IPv6Network(net), kind) for net, kind in (
    ("fd00:ec2::254/128", "cloud metadata"),
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("fc00::/7", "unique local"),
    ("ff00::/8", "multicast"),
    ("64:ff9b:1::/48", "local-use NAT64"),
))

_COMPATIBLE = ipaddress.IPv6Network("::/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


# The kinds `own.py` finds by asking the kernel (what it delivers to this host), rather
# than by range; UNCHECKED where it could not be asked, which refuses all the same.
OWN, OWN_BROADCAST, OWN_ANYCAST = "this host's own", "this host's broadcast", \
    "this host's anycast"
UNCHECKED = "unchecked"
# What `Gate.here` finds once connected: the kernel delivered the connection to a socket
# of this host (a NAT rule led the address here; linux/sock_diag.py).
DELIVERED = "delivered here"


class Kind(NamedTuple):
    """Why an address is refused: `kind` ("loopback", "private", ...) and, for another
    form of an IPv4 address, `form` ("IPv4-mapped", "NAT64", ...) and that address
    (UNCHECKED: `carried` is why the kernel could not be asked)."""

    kind: str
    form: str | None = None
    carried: str | None = None

    @property
    def own(self) -> bool:
        """This host's (or not known not to be): only an entry naming the very address
        opens it, never a range."""
        return self.kind in (OWN, OWN_BROADCAST, OWN_ANYCAST, UNCHECKED, DELIVERED)

    def describe(self) -> str:
        """`a loopback address`, `a NAT64 form of the private address 10.0.0.1`,
        `this host's own address`."""
        if self.kind == UNCHECKED:
            return f"an address this host's kernel could not be asked about ({self.carried})"
        if self.kind == DELIVERED:
            return ("an address this host's kernel delivers to a socket of this host (a "
                    "NAT rule, or the like, leads it here)")
        if self.own:
            phrase = f"{self.kind} address"
        else:
            article = "an" if self.kind.startswith(("un", "a", "e", "i", "o")) and \
                not self.kind.startswith("uni") else "a"
            phrase = f"{article} {self.kind} address"
        if self.form is None:
            return phrase
        return f"the {self.form} form of {phrase} ({self.carried})"


def parse(text: str) -> Address | None:
    """An address from its text (a scope dropped), or None when it is not one."""
    try:
        return ipaddress.ip_address(text.partition("%")[0])
    except ValueError:
        return None


def text(address: Address) -> str:
    """An address as events and answers write it: an IPv4-mapped one as ::ffff:a.b.c.d
    (Python before 3.13 writes ::ffff:7f00:1, which hides the address it carries)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return f"::ffff:{address.ipv4_mapped}"
    return str(address)


def canonical(address: Address) -> Address:
    """The destination a socket reaches: an IPv4-mapped address is its IPv4 address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def classify(address: Address) -> Kind | None:
    """The kind that refuses `address`, or None for a public address."""
    if isinstance(address, ipaddress.IPv4Address):
        return _v4_kind(address)
    plain = ipaddress.IPv6Address(int(address))  # without its scope
    for network, kind in _V6:
        if plain in network:
            return Kind(kind)
    for form, carried in carried_forms(plain):
        inner = _v4_kind(carried)
        if inner is not None:
            return Kind(inner.kind, form, str(carried))
    return None


def _v4_kind(address: ipaddress.IPv4Address) -> Kind | None:
    for network, kind in _V4:
        if address in network:
            return Kind(kind)
    return None


def carried_forms(address: ipaddress.IPv6Address
                  ) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses an IPv6 address carries, with the name of the form."""
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    if address.ipv4_mapped is not None:
        found.append(("IPv4-mapped", address.ipv4_mapped))
    low = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _COMPATIBLE:
        found.append(("IPv4-compatible", low))
    if address in _NAT64:
        found.append(("NAT64", low))
    if address.sixtofour is not None:
        found.append(("6to4", address.sixtofour))
    if address.teredo is not None:
        found.append(("Teredo", address.teredo[1]))
    return found
