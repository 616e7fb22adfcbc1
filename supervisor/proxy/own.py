"""This host's own addresses: refused by what the kernel delivers here, not by a range.

The proxy connects from the host's network (the supervisor's namespace), so an allowed
name that resolves to any address this host has (its eth0 address, docker0's, a veth's,
an address added a moment ago) reaches the host's own services: one bound to 0.0.0.0
answers on all of them. Such an address may be in no range `addresses.py` refuses (a
public address on the interface), so it is found by structure instead, asking the kernel
each time the proxy is about to connect or the sandbox's DNS to answer:

- Linux (`linux/routes.py`, which the Linux backend hands its proxy): the route the
  kernel would take to the address is local (RTN_LOCAL: any interface's address, all of
  the `local` table; RTN_BROADCAST; IPv6's RTN_ANYCAST), or the address is on any
  interface, up or down.
- Elsewhere (macOS), and for a proxy made without the backend's answer: binding a socket
  to the address succeeds only where it is one of this host's (EADDRNOTAVAIL otherwise),
  the kernel's own answer without a routing socket (`bound_here`). On Linux it errs only
  towards refusing: `net.ipv4.ip_nonlocal_bind` makes every address bind. Not run on a
  Mac here.

Every form an address takes is asked about: an IPv4-mapped address as the IPv4 address a
dual-stack socket reaches, and the IPv4 address an IPv4-compatible, NAT64, 6to4 or
Teredo address carries. Where the kernel cannot be asked (out of descriptors), the
address is refused as UNCHECKED: the guard fails closed. `[network] forward` is the way
to a port of this host; an allow entry naming the very address (never a range) opens it.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

from .addresses import OWN, UNCHECKED, Address, Kind, canonical, carried_forms

if TYPE_CHECKING:
    from collections.abc import Iterator

# What judges one address: the kind that makes it this host's, or None.
OwnCheck = Callable[[Address], "Kind | None"]
# What makes one: called once per connection (or DNS answer), right before judging.
OwnChecks = Callable[[], OwnCheck]


def candidates(address: Address) -> Iterator[tuple[Address, str | None]]:
    """Each destination `address` stands for, with the name of the form it was in."""
    plain = canonical(address)
    if isinstance(plain, ipaddress.IPv4Address):
        yield plain, None if plain is address else "IPv4-mapped"
        return
    plain = ipaddress.IPv6Address(int(plain))  # without its scope, as the kernel takes it
    yield plain, None
    for form, carried in carried_forms(plain):
        yield carried, form


def bound_here(address: Address) -> Kind | None:
    """Elsewhere than Linux: the address is this host's when a socket binds to it."""
    for destination, form in candidates(address):
        family = socket.AF_INET if destination.version == 4 else socket.AF_INET6
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as sock:
                sock.bind((str(destination), 0))
        except OSError as err:
            if err.errno == errno.EADDRNOTAVAIL:
                continue
            return Kind(UNCHECKED, None, err.strerror or str(err))
        return Kind(OWN, form, None if form is None else str(destination))
    return None


def bound_here_checks() -> OwnCheck:
    """`bound_here`, as an `OwnChecks` gives it (it reads nothing ahead)."""
    return bound_here
