"""Reaching an allowed destination: the one way out for HTTP and SOCKS5 alike.

`Gate.open`, in this order:
1. decide on the name as asked (`rules.py`): denied or unlisted is refused, and reported,
   with nothing looked up, unless the run's decider allows an unlisted one (`decider.py`);
2. resolve it here (an address literal is taken as it is);
3. judge every address found (the resolved-address guard, with this host's own
   addresses asked of the kernel now, `own.py`): a refused one is reported, naming the
   address, and never connected to;
4. connect to the addresses left, in order; one the spec did not open as this host's
   with the OS's guard (`Here`: on Linux a socket filter, and sock_diag's answer), so
   that no rule leading it here after the route was chosen (a NAT) reaches this host.
The address connected to is always one this process found and judged itself: a name the
sandbox resolved before (and whose answer may have changed since) plays no part.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import anyio

from ..events import EventLog
from .addresses import DELIVERED, UNCHECKED, Address, Kind
from .decider import Decider
from .own import OwnChecks, bound_here_checks
from .resolver import LookupFailed, Resolver
from .rules import ADDRESS, AddressRefusal, Decision, NetworkLists
from .streams import Abandoned, RawStream, connect_tcp

CONNECT_TIMEOUT = 10.0


class Refused(Exception):
    """The destination is refused (already reported as an event); `text` says why."""

    def __init__(self, decision: Decision, text: str | None = None):
        if text is None:
            text = f"{decision.subject} is not in [network] allow"
            if decision.rule == "network.deny":
                text = f"{decision.subject} is in [network] deny"
            elif decision.reason:
                text = f"{decision.subject}: {decision.reason}"
        super().__init__(text)
        self.decision = decision
        self.text = text


class Unreachable(Exception):
    """An allowed destination could not be reached: `kind` is resolve, refused, timeout."""

    def __init__(self, subject: str, kind: str, reason: str):
        super().__init__(f"{subject}: {reason}")
        self.kind = kind
        self.reason = reason


def address_reason(refusal: AddressRefusal) -> str:
    """Why an address found for a name was refused, and what would open it."""
    if refusal.rule != ADDRESS:
        return f"it resolves to {refusal.address}, {refusal.describe()}"
    if refusal.kind is not None and refusal.kind.own:
        return (f"it resolves to {refusal.address}, {refusal.describe()}; a port of this "
                "host is reached through [network] forward")
    return (f"it resolves to {refusal.address}, {refusal.describe()}; name that address "
            "or its range in [network] allow to reach it")


class Here(Protocol):
    """How this OS keeps a connection from ending at a socket of this host, whatever
    leads its address here (Linux: linux/socket_filter.py and linux/sock_diag.py)."""

    def guard(self, sock: socket.socket) -> None:
        """Before connect(): the socket can finish no handshake with this host.
        OSError where it cannot be made so."""

    def delivered(self, sock: socket.socket) -> bool:
        """While connect() waits: whether a socket of this host is its other end (the
        guard holds it back). OSError where the kernel cannot be asked."""

# Finds the pid of the sandbox's process whose socket has an address ("tcp" or "udp"):
# the Linux supervisor sets one once the sandbox's network namespace is known.
FindPid = Callable[[tuple[str, int], str], "int | None"]


@dataclass
class Gate:
    """The decisions, the lookup and the events of one run, shared by every protocol."""

    lists: NetworkLists
    resolver: Resolver = field(default_factory=Resolver)
    events: EventLog | None = None
    decider: Decider | None = None
    find_pid: FindPid | None = None
    # This host's own addresses, asked of the kernel for each connection (own.py); the
    # Linux backend gives its routing socket's answer.
    own: OwnChecks = bound_here_checks
    # Made part of each connection to an address not opened as this host's: Linux's
    # socket filter and sock_diag. None: this OS has neither (a NAT rule leading an
    # address here is a stated gap on macOS).
    here: Here | None = None

    async def pid_of(self, peer: tuple[str, int] | None, proto: str = "tcp") -> int:
        """The pid a refusal names: the process asking, while it waits for the answer;
        0 where it cannot be known (macOS, or a process already gone)."""
        if peer is None or self.find_pid is None or self.events is None:
            return 0
        try:
            pid = await anyio.to_thread.run_sync(self.find_pid, peer, proto)
        except OSError:
            return 0
        return pid or 0

    def refuse(self, decision: Decision, pid: int = 0) -> None:
        if self.events is not None:
            self.events.add("network", decision.subject, decision.host, decision.rule, pid,
                            reason=decision.reason or "")

    def refuse_address(self, decision: Decision, refusal: AddressRefusal, pid: int = 0
                       ) -> None:
        if self.events is not None:
            self.events.add("network", decision.subject, refusal.address, refusal.rule, pid,
                            reason=address_reason(refusal))

    async def decide(self, host: str, port: int, asking: RawStream | None = None
                     ) -> Decision:
        """The decision on `host`:`port`; Refused (reported) when it is not allowed.
        `asking`: the sandbox's connection, whose peer the decider's question names."""
        decision = self.lists.decide(host, port)
        if decision.unlisted and self.decider is not None:
            peer = asking.peer() if asking is not None else None
            decision = await self.decider.ask(decision, peer)
        if not decision.allowed:
            self.refuse(decision, await self.pid_of(asking.peer() if asking else None))
            raise Refused(decision)
        return decision

    def remembered(self, decision: Decision) -> Decision:
        """A DNS question's decision, with the decider's remembered allows (never asked)."""
        if decision.unlisted and self.decider is not None:
            for (host, _port), allowed in self.decider.remembered.items():
                if allowed and host == decision.host:
                    return decision.verdict(True, "the decider allowed it for the run")
        return decision

    async def open(self, host: str, port: int, asking: RawStream | None = None
                   ) -> RawStream:
        """A connection to `host`:`port` if the lists (or the decider) and the address
        guard let it through."""
        decision = await self.decide(host, port, asking)
        literal = _literal(decision.host)
        addresses = [literal] if literal else []
        if not addresses:
            try:
                addresses = await self.resolver.resolve(decision.host)
            except LookupFailed as err:
                raise Unreachable(decision.subject, "resolve", err.reason) from None
        last: Unreachable | None = None
        refused: AddressRefusal | None = None
        own = self.own()  # asked after the lookup, right before connecting
        for address in addresses:
            local: list[Kind] = []
            refusal = self.lists.judge_address(address, port, decision,
                                               _noting(own, local))
            if refusal is not None:
                self.refuse_address(decision, refusal,
                                    await self.pid_of(asking.peer() if asking else None))
                refused = refused or refusal
                continue
            here = None if local or self.lists.opens_as_local(address, port) else self.here
            held: list[bool] = []
            try:
                with anyio.fail_after(CONNECT_TIMEOUT):
                    stream = await connect_tcp(
                        address, port, prepare=None if here is None else _holding(here, held),
                        stalled=self._stalled if here is not None else None)
                refusal = None if here is None or held else await self._delivered(
                    here, stream, address, port, decision)
                if refusal is None:
                    return stream
                await stream.aclose()
                self.refuse_address(decision, refusal,
                                    await self.pid_of(asking.peer() if asking else None))
                refused = refused or refusal
            except TimeoutError:
                last = Unreachable(decision.subject, "timeout", f"{address}: timed out")
            except Abandoned:
                refusal = self.lists.judge_address(
                    address, port, decision, lambda _address: Kind(DELIVERED)) \
                    or AddressRefusal(address, ADDRESS, Kind(DELIVERED))
                self.refuse_address(decision, refusal,
                                    await self.pid_of(asking.peer() if asking else None))
                refused = refused or refusal
            except OSError as err:
                last = Unreachable(decision.subject, "refused",
                                   f"{address}: {err.strerror or err}")
        if last is not None:
            raise last
        assert refused is not None
        raise Refused(decision, f"{decision.subject}: {address_reason(refused)}")

    async def _delivered(self, here: Here, stream: RawStream, address: str, port: int,
                         decision: Decision) -> AddressRefusal | None:
        """Where the guard could not be set (attaching a socket filter refused, as an
        unprivileged user on some kernels): once connected, before a byte is relayed,
        whether a socket of this host is the other end; refused as this host's if so,
        as unchecked where the kernel cannot be asked. Off the event loop: it walks the
        kernel's table of connections (milliseconds on a large one)."""
        try:
            found = await anyio.to_thread.run_sync(here.delivered, stream.sock)
        except OSError as err:
            kind = Kind(UNCHECKED, None, err.strerror or str(err))
        except BaseException:
            await anyio.aclose_forcefully(stream)
            raise
        else:
            if not found:
                return None
            kind = Kind(DELIVERED)
        return self.lists.judge_address(address, port, decision, lambda _address: kind) \
            or AddressRefusal(address, ADDRESS, kind)

    async def _stalled(self, sock: socket.socket) -> bool:
        """A guarded connect() that has not ended: abandoned where a socket of this host
        is its other end (the guard keeps it from ending; this says so at once rather
        than at the timeout). Asked off the event loop: it walks the kernel's table of
        connections, milliseconds on a large one. Where it cannot be asked, the connect()
        goes on, guarded all the same."""
        if self.here is None:
            return False
        here = self.here
        try:
            return await anyio.to_thread.run_sync(here.delivered, sock,
                                                  abandon_on_cancel=True)
        except OSError:
            return False


def _holding(here: Here, held: list[bool]) -> Callable[[socket.socket], None]:
    """`here.guard`, noting in `held` that it held; where it cannot be set, the
    connection is asked about once connected instead (`Gate._delivered`)."""
    def guard(sock: socket.socket) -> None:
        try:
            here.guard(sock)
        except OSError:
            return
        held.append(True)
    return guard


def _noting(own: Callable[[Address], Kind | None], found: list[Kind]
            ) -> Callable[[Address], Kind | None]:
    """`own`, noting in `found` each address it says is this host's."""
    def judged(address: Address) -> Kind | None:
        kind = own(address)
        if kind is not None:
            found.append(kind)
        return kind
    return judged


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None
