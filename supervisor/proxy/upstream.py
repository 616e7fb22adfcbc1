"""Reaching an allowed destination: the one way out for HTTP and SOCKS5 alike.

`Gate.open`, in this order:
1. decide on the name as asked (`rules.py`): denied or unlisted is refused, and reported,
   with nothing looked up, unless the run's decider allows an unlisted one (`decider.py`);
2. resolve it here (an address literal is taken as it is);
3. judge every address found (the resolved-address guard, with this host's own
   addresses asked of the kernel now, `own.py`): a refused one is reported, naming the
   address, and never connected to;
4. connect to the addresses left, in order.
The address connected to is always one this process found and judged itself: a name the
sandbox resolved before (and whose answer may have changed since) plays no part.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

from ..events import EventLog
from .decider import Decider
from .own import OwnChecks, bound_here_checks
from .resolver import LookupFailed, Resolver
from .rules import ADDRESS, AddressRefusal, Decision, NetworkLists
from .streams import RawStream, connect_tcp

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
            refusal = self.lists.judge_address(address, port, decision, own)
            if refusal is not None:
                self.refuse_address(decision, refusal,
                                    await self.pid_of(asking.peer() if asking else None))
                refused = refused or refusal
                continue
            try:
                with anyio.fail_after(CONNECT_TIMEOUT):
                    return await connect_tcp(address, port)
            except TimeoutError:
                last = Unreachable(decision.subject, "timeout", f"{address}: timed out")
            except OSError as err:
                last = Unreachable(decision.subject, "refused",
                                   f"{address}: {err.strerror or err}")
        if last is not None:
            raise last
        assert refused is not None
        raise Refused(decision, f"{decision.subject}: {address_reason(refused)}")


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None
