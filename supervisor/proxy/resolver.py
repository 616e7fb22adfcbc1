"""Host-side name lookups for the proxy and the sandbox's DNS, and their test seam.

Only names the allow list let through reach `Resolver.lookup`; a test proves that by
reading what the resolver was asked. The seam is a file named by the supervisor's own
environment (`LNK_SANDBOX_TEST_RESOLVER_LOG`, set only by tests; the sandbox never sees
the supervisor's environment): each name is appended to it before it is looked up.
Names resolve as the host resolves them (its /etc/hosts, its DNS), so an allowed
`localhost` is the host's, but always as the name asked and nothing else: a name the
hosts file does not list is given to the C library as an absolute name (`name.`), so the
host's search list (`search corp.example`, or a pod's `ndots:5`) never makes it look up
`name.corp.example`, a name the allow list never let through. A name the hosts file
lists is answered from the hosts file, as the C library's `files` source answers it,
read here without a worker thread (a lookup on the proxy's every connection to
`localhost:PORT`; the thread's hand-off alone cost about 0.15 ms here). A name that is
not a host name is never given at all (a NUL would end it).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
import anyio.to_thread

from .addresses import text as address_text
from .rules import is_host_name

HOSTS = "/etc/hosts"
LOG_VARIABLE = "LNK_SANDBOX_TEST_RESOLVER_LOG"

Lookup = Callable[[str, int], Awaitable[list[str]]]
_VERSIONS: dict[int, int] = {socket.AF_INET: 4, socket.AF_INET6: 6}


class LookupFailed(Exception):
    """The name did not resolve. `rcode` is what DNS would answer (NXDOMAIN, SERVFAIL)."""

    def __init__(self, name: str, rcode: str, reason: str):
        super().__init__(f"{name}: {reason}")
        self.rcode = rcode
        self.reason = reason


@dataclass
class Resolver:
    """Resolves allowed names; `log_path` (tests) records each name asked, in order."""

    log_path: str | None = None
    lookup: Lookup | None = None

    @staticmethod
    def from_environment() -> Resolver:
        return Resolver(log_path=os.environ.get(LOG_VARIABLE) or None)

    async def resolve(self, name: str, *, family: int = socket.AF_UNSPEC) -> list[str]:
        """The addresses of `name`, IPv4 first; LookupFailed when it has none."""
        if not is_host_name(name):
            raise LookupFailed(name, "NXDOMAIN", "not a host name")
        if self.log_path is not None:
            from ..host_files import open_log

            fd = open_log(self.log_path)
            try:
                os.write(fd, f"{name}\n".encode("utf-8", "replace"))
            finally:
                os.close(fd)
        lookup = self.lookup or _getaddrinfo
        addresses = await lookup(name, family)
        if not addresses:
            raise LookupFailed(name, "NXDOMAIN", "no address")
        return addresses


async def _getaddrinfo(name: str, family: int) -> list[str]:
    listed = hosts_addresses(name, family)
    if listed:
        return listed
    return await anyio.to_thread.run_sync(_lookup, name, family, abandon_on_cancel=True)


def _lookup(name: str, family: int) -> list[str]:
    """getaddrinfo in a worker thread, the name absolute (the search list never added)."""
    try:
        found = socket.getaddrinfo(name + ".", None, family=family, type=socket.SOCK_STREAM)
    except socket.gaierror as err:
        rcode = "NXDOMAIN" if err.errno in (socket.EAI_NONAME, socket.EAI_NODATA) else \
            "SERVFAIL"
        raise LookupFailed(name, rcode, err.strerror or str(err)) from None
    except UnicodeError:
        raise LookupFailed(name, "NXDOMAIN", "not a host name") from None
    addresses: list[str] = []
    for _family, _type, _proto, _name, sockaddr in found:
        written = address_text(ipaddress.ip_address(sockaddr[0]))
        if written not in addresses:
            addresses.append(written)
    addresses.sort(key=lambda a: ipaddress.ip_address(a).version)
    return addresses


def hosts_addresses(name: str, family: int = socket.AF_UNSPEC, path: str = HOSTS
                    ) -> list[str]:
    """The addresses the hosts file gives `name` (lower case, no final dot), IPv4 first,
    of `family` (AF_UNSPEC: both); none when it does not list it."""
    version = _VERSIONS.get(family)
    return [address for address in _hosts_table(path).get(name, ())
            if version is None or ipaddress.ip_address(address).version == version]


# The hosts file read last: (device, inode, size, mtime in ns) -> name -> addresses. One
# stat per lookup tells whether it changed; reading it again cost seven calls.
_HOSTS: dict[str, tuple[tuple[int, int, int, int], dict[str, list[str]]]] = {}


def _hosts_table(path: str) -> dict[str, list[str]]:
    try:
        info = os.stat(path)
    except OSError:
        return {}
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    cached = _HOSTS.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    table: dict[str, list[str]] = {}
    try:
        with open(path, "rb") as handle:
            lines = handle.read(1 << 22).splitlines()
    except OSError:
        return {}
    for line in lines:
        fields = line.split(b"#", 1)[0].split()
        if len(fields) < 2:
            continue
        try:
            written = address_text(ipaddress.ip_address(fields[0].decode("ascii")))
        except (UnicodeDecodeError, ValueError):
            continue
        for field in fields[1:]:
            names = table.setdefault(field.lower().rstrip(b".").decode("ascii", "replace"),
                                     [])
            if written not in names:
                names.append(written)
    for names in table.values():
        names.sort(key=lambda a: ipaddress.ip_address(a).version)
    _HOSTS[path] = (key, table)
    return table
