"""Reaching an allowed destination, and relaying bytes between two streams.

`Gate.open` is the one way out for HTTP and SOCKS5 alike, in this order: decide on the
name as asked (a refusal is an event, and nothing is looked up), resolve it here, then
connect to the addresses found, in order. An address literal is connected to as it is,
since only a listed address is allowed at all.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

import anyio
import anyio.abc

from ..events import EventLog
from .resolver import LookupFailed, Resolver
from .rules import Allowlist, Decision

CONNECT_TIMEOUT = 10.0
CHUNK = 262144


class Refused(Exception):
    """The allow list refused the destination (already reported as an event)."""

    def __init__(self, decision: Decision):
        super().__init__(f"{decision.subject} is not in [network] allow")
        self.decision = decision


class Unreachable(Exception):
    """An allowed destination could not be reached: `kind` is resolve, refused, timeout."""

    def __init__(self, subject: str, kind: str, reason: str):
        super().__init__(f"{subject}: {reason}")
        self.kind = kind
        self.reason = reason


@dataclass
class Gate:
    """The decision, the lookup and the events of one run, shared by every protocol."""

    allowlist: Allowlist
    resolver: Resolver = field(default_factory=Resolver)
    events: EventLog | None = None

    def refuse(self, decision: Decision) -> None:
        if self.events is not None:
            self.events.add("network", decision.subject, decision.host, "network.allow", 0)

    def check(self, host: str, port: int) -> Decision:
        decision = self.allowlist.decide(host, port)
        if not decision.allowed:
            self.refuse(decision)
            raise Refused(decision)
        return decision

    async def open(self, host: str, port: int) -> anyio.abc.SocketStream:
        """A connection to `host`:`port` if the allow list lets it through."""
        decision = self.check(host, port)
        literal = _literal(decision.host)
        addresses = [literal] if literal else []
        if not addresses:
            try:
                addresses = await self.resolver.resolve(decision.host)
            except LookupFailed as err:
                raise Unreachable(decision.subject, "resolve", err.reason) from None
        last: Unreachable | None = None
        for address in addresses:
            try:
                with anyio.fail_after(CONNECT_TIMEOUT):
                    return await anyio.connect_tcp(address, port)
            except TimeoutError:
                last = Unreachable(decision.subject, "timeout", f"{address}: timed out")
            except OSError as err:
                last = Unreachable(decision.subject, "refused",
                                   f"{address}: {err.strerror or err}")
        assert last is not None
        raise last


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


async def relay(one: anyio.abc.ByteStream, other: anyio.abc.ByteStream) -> None:
    """Copy bytes both ways until both directions end; a half-close is passed on."""

    async def pump(source: anyio.abc.ByteStream, sink: anyio.abc.ByteStream,
                   group: anyio.abc.TaskGroup) -> None:
        try:
            while True:
                try:
                    chunk = await source.receive(CHUNK)
                except anyio.EndOfStream:
                    break
                await sink.send(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            group.cancel_scope.cancel()  # a reset: the other direction is over too
            return
        try:
            await sink.send_eof()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            group.cancel_scope.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(pump, one, other, group)
        group.start_soon(pump, other, one, group)
